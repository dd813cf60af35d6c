/* draw_dialogs.c — overlays of the explorer: help (keys and colours), the start-a-search form, the
 * file-name prompt, the quit confirmation, the ask-the-model result, and the too-small screen. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "explorer_ui.h"

/* After the keys (generated from the table, keymap.h): the colours. */
static const char *const colour_lines[] = {
    "Colours",
    "  FULL  blue: full attention, sees every earlier token, caches them all",
    "  SWA   red: sliding window, sees the last W tokens (+ S sinks)", /* orange: blue-orange */
    "  MARK  the layer the search's phase works on / the layers of a group (P: the plan)",
    "  delta w r g: drop, weight, ratio, bucket; grey: noise; dim r g: moved",
    "Press any key to close; :help lists the commands.",
};
#define N_COLOUR_LINES ((int)(sizeof colour_lines / sizeof colour_lines[0]))

/* Two cells of glyph gl in colour pair `pair` at (y, x), then the legend text t + 8. */
static void legend_cells(ui_state *u, int y, int x, int w, int pair, int mono_attr, const char *gl,
                         const char *t) {
    attron(ui_attr(u, pair, mono_attr));
    mvaddstr(y, x + 2, gl);
    mvaddstr(y, x + 3, gl);
    attroff(ui_attr(u, pair, mono_attr));
    draw_text(y, x + 8, w - 8, A_NORMAL, "%s", t + 8);
}

/* One line of the colour legend, its glyphs drawn in their colours. */
static void draw_colour_line(ui_state *u, int y, int x, int w, const char *t) {
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    if (!strncmp(t, "  FULL", 6)) {
        legend_cells(u, y, x, w, PAIR_FULL, A_BOLD, g->full, t);
    } else if (!strncmp(t, "  SWA", 5)) {
        if (u->palette == UI_PALETTE_BLUE_ORANGE)
            legend_cells(u, y, x, w, PAIR_SWA, A_NORMAL, g->swa,
                         "  SWA   orange: sliding window, sees the last W tokens (+ S sinks)");
        else
            legend_cells(u, y, x, w, PAIR_SWA, A_NORMAL, g->swa, t);
    } else if (!strncmp(t, "  MARK", 6)) {
        draw_text(y, x + 2, 5, ui_attr(u, PAIR_PROBE, A_BOLD) | A_BOLD, "%s %s", g->probe, g->group);
        draw_text(y, x + 8, w - 8, A_NORMAL, "%s", t + 8);
    } else {
        draw_text(y, x, w, t[0] != ' ' ? A_BOLD : A_NORMAL, "%s", t);
    }
}

/* Help page 1 (:help): the commands of the ':' line, then the config file's key bindings. */
static void draw_help_commands(ui_state *u) {
    int nc;
    const cmdline_help_line *c = cmdline_help(&nc);
    char line[256];
    size_t o = (size_t)snprintf(line, sizeof line, "Keys of explorer.conf:");
    for (int i = 0; i < u->n_binds && o < sizeof line; i++) {
        char label[32];
        keymap_key_label(u->binds[i].key, label, sizeof label);
        o += (size_t)snprintf(line + o, sizeof line - o, " %s %s", label,
                              keymap_request_name((ui_request)u->binds[i].req));
    }
    const int w_max = 74, n_bind_lines = u->n_binds ? (int)(strlen(line) + w_max - 1) / w_max + 1 : 0;
    lay_rect r = layout_center(u->rows, u->cols, nc + 4 + n_bind_lines, w_max + 4);
    draw_box(&r, u, "Commands (: then Enter; / N jumps to layer N)");
    int x = r.x + 2, w = r.w - 4, y = r.y + 1;
    for (int i = 0; i < nc && y < r.y + r.h - 1; i++, y++)
        draw_text(y, x, w, A_NORMAL, "  :%-19s %s", c[i].usage, c[i].help);
    if (u->n_binds) draw_wrap(y + 1, x, w, 3, A_NORMAL, line);
    draw_text(r.y + r.h - 2, x, w, A_BOLD, "Press any key to close.");
}

/* Help page 2 (P): the search's plan (progress.h): every phase with its state, units and
 * evaluations done of planned, then the explanation of the phase running (or, before and after,
 * of every phase in turn as far as the box holds). */
static void draw_help_plan(ui_state *u) {
    const ex_snapshot *s = &u->snap;
    const ex_progress *pg = &s->progress;
    const search_plan *p = &pg->plan;
    lay_rect r = layout_center(u->rows, u->cols, u->rows - 2, 100);
    char title[160];
    if (s->have_search && pg->active)
        snprintf(title, sizeof title, "The plan of %s at %s %.3f", s->method, u->utf8 ? "\u03c1" : "rho",
                 s->target_ratio);
    else
        snprintf(title, sizeof title, "The plan");
    draw_box(&r, u, title);
    int x = r.x + 2, w = r.w - 4, y = r.y + 1, bottom = r.y + r.h - 2;
    if (!s->have_search || !pg->active) {
        draw_wrap(y, x, w, bottom - y, A_NORMAL,
                  "No search yet. Start one with s: the search publishes its plan (the phases it will run, "
                  "each with what it does and how many evaluations it plans) and this page shows it.");
        draw_text(bottom, x, w, A_BOLD, "Press any key to close.");
        return;
    }
    const int cur = progress_phase(pg);
    draw_text(y++, x, w, ui_attr(u, PAIR_DIM, A_NORMAL), "     %-34s %17s %15s", "phase",
              "units done/planned", "evaluations");
    for (int i = 0; i < p->n_phases && y < bottom - 2; i++, y++) {
        const search_plan_phase *ph = &p->phase[i];
        const char *mark = ph->state == SEARCH_PHASE_DONE      ? (u->utf8 ? "\u2713" : "+")
                           : ph->state == SEARCH_PHASE_RUNNING ? (u->utf8 ? "\u25b6" : ">")
                                                               : (u->utf8 ? "\u00b7" : "-");
        draw_text(y, x, w, i == cur && !pg->done ? A_BOLD : A_NORMAL, "%s %d. %-34s %5d/%-5d %-9s %6ld/%-6ld",
                  mark, i + 1, ph->label, ph->units_done, ph->n_units, search_unit_name(ph->unit),
                  ph->evals_done, ph->evals_planned);
    }
    y++;
    for (int i = cur >= 0 && !pg->done ? cur : 0; i < p->n_phases && y < bottom - 1; i++) {
        draw_text(y++, x, w, A_BOLD, "%d. %s", i + 1, p->phase[i].label);
        y += draw_wrap(y, x, w, bottom - y, A_NORMAL, p->phase[i].text);
        if (cur >= 0 && !pg->done) break; /* running: its phase only */
    }
    draw_text(bottom, x, w, A_BOLD, "Press any key to close.");
}

static void draw_help(ui_state *u) {
    if (u->help_page == 1) {
        draw_help_commands(u);
        return;
    }
    if (u->help_page == 2) {
        draw_help_plan(u);
        return;
    }
    /* the keys, then the colours; the last line ("Press any key ...") always on the box's last row,
       so a short terminal cuts the legend above it, never the way out */
    int nk = keymap_help_lines(), n = nk + N_COLOUR_LINES;
    lay_rect r = layout_center(u->rows, u->cols, n + 2, 78); /* every line fits 74 columns */
    draw_box(&r, u, "Help: keys and colours");
    int x = r.x + 2, w = r.w - 4;
    for (int i = 0; i < n - 1 && i < r.h - 3; i++) {
        int y = r.y + 1 + i;
        char line[160];
        if (i < nk) {
            keymap_help_line(i, line, sizeof line);
            draw_text(y, x, w, A_NORMAL, "%s", line);
        } else {
            draw_colour_line(u, y, x, w, colour_lines[i - nk]);
        }
    }
    draw_text(r.y + r.h - 2, x, w, A_BOLD, "%s", colour_lines[N_COLOUR_LINES - 1]);
}

/* The start form: its fields, then what the search will do, from the plan it would publish
 * (ui_form_plan): the SWA KV heads of the final mask, the phases and evaluations, and the time they
 * take at the seconds per evaluation measured on the last search (none claimed before one ran). */
static void draw_start(ui_state *u) {
    lay_rect r = layout_center(u->rows, u->cols, 14, 70);
    draw_box(&r, u, "Start a search (BOSCH or a baseline)");
    int x = r.x + 2, w = r.w - 4;
    char ratio[16], win[48];
    snprintf(ratio, sizeof ratio, "%.3f", u->form_ratio);
    const int preset_w = ui_form_preset_window(u, u->form_preset_i);
    if (u->form_window == preset_w)
        snprintf(win, sizeof win, "%d tokens (%s's)", u->form_window, ui_form_preset(u));
    else
        snprintf(win, sizeof win, "%d tokens (yours; %s's: %d)", u->form_window, ui_form_preset(u), preset_w);
    const int usable = ui_form_start_usable(u);
    const char *vals[6] = {ratio,
                           ui_form_preset(u),
                           win,
                           ui_form_method(u),
                           u->form_granularity ? "whole layers" : "KV heads",
                           !usable         ? "nothing (a baseline cannot use a mask)"
                           : u->form_start ? "the working mask"
                                           : "nothing"};
    const char *names[6] = {"ratio (SWA share)", "preset (budget)", "window W", "method",
                            "granularity",       "start from"};
    for (int f = 0; f < 6; f++) {
        int sel = f == u->form_field;
        const int grey = f == 5 && !usable; /* a static ranking or layer heuristic: no start */
        draw_text(r.y + 2 + f, x, 20,
                  grey  ? ui_attr(u, PAIR_DIM, A_DIM)
                  : sel ? (int)A_BOLD
                        : (int)A_NORMAL,
                  "%s %s", sel ? ">" : " ", names[f]);
        draw_text(r.y + 2 + f, x + 21, w - 21,
                  grey  ? ui_attr(u, PAIR_DIM, A_DIM) | (sel ? A_REVERSE : 0)
                  : sel ? (A_REVERSE | A_BOLD)
                        : A_NORMAL,
                  " < %s > ", vals[f]);
    }
    char preset_help[160]; /* from the preset's values (search_preset_describe) */
    search_preset_describe(u->form_preset_i, u->snap.hp.n_ctx_train, preset_help, sizeof preset_help);
    draw_text(r.y + 8, x, w, ui_attr(u, PAIR_DIM, A_NORMAL), "%s", preset_help);
    search_plan plan;
    search_config cfg;
    const int H = u->snap.hp.n_head_kv, LH = u->snap.hp.n_layer * H;
    if (ui_form_plan(u, &plan, &cfg) != 0) {
        draw_text(r.y + 9, x, w, ui_attr(u, PAIR_BAD, A_BOLD),
                  u->n_pin ? "A field is out of range or the pins (F) cannot be kept (Enter says why)."
                           : "A field is out of range (Enter says which).");
    } else {
        if (u->form_granularity && H > 0)
            draw_text(r.y + 9, x, w, A_NORMAL, "%ld of %d layers (all their KV heads) will become SWA.",
                      plan.target_swa / H, u->snap.hp.n_layer);
        else if (cfg.n_pins > 0) {
            char f[64], s[64];
            int nf = 0, ns = 0;
            for (int i = 0; i < cfg.n_pins; i++) cfg.pins[i].swa ? ns++ : nf++;
            snprintf(f, sizeof f, "%d full", nf);
            snprintf(s, sizeof s, "%d SWA", ns);
            draw_text(r.y + 9, x, w, A_NORMAL, "%ld of %d KV heads will become SWA; pinned (F): %s, %s.",
                      plan.target_swa, LH, f, s);
        } else
            draw_text(r.y + 9, x, w, A_NORMAL, "%ld of %d KV heads will become SWA.", plan.target_swa, LH);
        const double sec = ui_form_seconds(u, &plan, &cfg);
        char t[32];
        progress_fmt_duration(sec, t, sizeof t);
        if (isfinite(sec))
            draw_text(r.y + 10, x, w, A_NORMAL,
                      "%d phases, at most %ld evaluations: about %s (%.2f s/eval measured)", plan.n_phases,
                      plan.evals_planned, t, progress_sec_per_eval(&u->snap.progress));
        else
            draw_text(r.y + 10, x, w, A_NORMAL,
                      "%d phases, at most %ld evaluations (time: measured once one runs)", plan.n_phases,
                      plan.evals_planned);
    }
    if (ui_search_unsaved(u))
        draw_text(r.y + 11, x, w, ui_attr(u, PAIR_BAD, A_BOLD),
                  "Replaces the current search (%ld evals, not exported).", u->snap.n_evals);
    draw_text(r.y + r.h - 2, x, w, A_BOLD, "Enter start   Esc cancel   Up/Down field   Left/Right value");
}

/* The ':' and '/' prompts, vi-like on the footer row. */
static void draw_line_prompt(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_FOOTER];
    move(r.y, r.x);
    clrtoeol();
    const char *lead = u->prompt == PROMPT_COMMAND ? ":" : "/";
    int fw = r.w - 3;
    const char *shown = u->input_len > fw ? u->input + (u->input_len - fw) : u->input;
    draw_text(r.y, r.x, r.w - 1, A_BOLD, "%s%s", lead, shown);
    int cx = r.x + 1 + (int)strlen(shown);
    if (cx < r.x + r.w - 1) draw_text(r.y, cx, 1, A_REVERSE, " ");
    if (u->prompt == PROMPT_JUMP && cx + 3 < r.x + r.w - 1)
        draw_text(r.y, cx + 2, r.x + r.w - 1 - (cx + 2), ui_attr(u, PAIR_DIM, A_NORMAL),
                  "layer 0-%d, Enter jumps, Esc cancels", u->mask.n_layer - 1);
}

static void draw_prompt(ui_state *u) {
    if (u->prompt == PROMPT_COMMAND || u->prompt == PROMPT_JUMP) {
        draw_line_prompt(u);
        return;
    }
    lay_rect r = layout_center(u->rows, u->cols, 6, 70);
    static const char *const titles[] = {"Export the mask (CSV)",
                                         "Export the search trace (CSV)",
                                         "Export the per-layer table (CSV)",
                                         "Load a mask (CSV, or a DuoAttention folder[@ratio])",
                                         "Open a bosch compare folder",
                                         "Export for DuoAttention (folder)",
                                         "Export a Hugging Face config patch (servable layers)",
                                         "Export TensorRT-LLM kv_cache_config (servable layers)",
                                         "Export the static rankings' scores (folder)",
                                         "Save the workspace (a folder)"};
    draw_box(&r, u, titles[u->prompt]);
    draw_text(r.y + 2, r.x + 2, r.w - 4, A_NORMAL,
              u->prompt == PROMPT_COMPARE_DIR || u->prompt == PROMPT_EXPORT_DUO ||
                      u->prompt == PROMPT_EXPORT_SCORES || u->prompt == PROMPT_WORKSPACE
                  ? "dir:  "
                  : "file: ");
    int fw = r.w - 4 - 6;
    const char *shown = u->input;
    if (u->input_len > fw - 1) shown = u->input + (u->input_len - (fw - 1));
    draw_text(r.y + 2, r.x + 8, fw, A_BOLD | A_UNDERLINE, "%-*s", fw, shown);
    int cx = r.x + 8 + (int)strlen(shown);
    if (cx < r.x + r.w - 2) draw_text(r.y + 2, cx, 1, A_REVERSE, " ");
    if (u->prompt_refused) /* the path given was refused (worker_io): say why, under it */
        draw_text(r.y + 3, r.x + 2, r.w - 4, ui_attr(u, PAIR_BAD, A_BOLD), "%s", u->msg);
    draw_text(r.y + 4, r.x + 2, r.w - 4, ui_attr(u, PAIR_DIM, A_NORMAL),
              "Enter accept   Esc cancel   Ctrl-U clear");
}

static void draw_confirm(ui_state *u) {
    lay_rect r = layout_center(u->rows, u->cols, 6, 60);
    draw_box(&r, u, "Quit?");
    draw_text(r.y + 2, r.x + 2, r.w - 4, A_BOLD, "The search (%ld evaluations) is not exported.",
              u->snap.n_evals);
    draw_text(r.y + 3, r.x + 2, r.w - 4, A_NORMAL, "y quit and lose it   n stay   x export first");
}

static void draw_ask(ui_state *u) {
    const ex_ask *a = &u->snap.ask;
    lay_rect r = layout_center(u->rows, u->cols, 12, 76);
    draw_box(&r, u, "Ask the model (greedy answer with the current mask)");
    int x = r.x + 2, w = r.w - 4, y = r.y + 1;
    draw_text(y++, x, w, ui_attr(u, PAIR_DIM, A_NORMAL), "held-out sample %d, %d prompt tokens, %.1f s",
              a->sample + 1, a->n_tokens, a->seconds);
    draw_text(y, x, 10, A_BOLD, "question:");
    y += draw_wrap(y, x + 10, w - 10, 4, A_NORMAL, a->question);
    y++;
    draw_text(y++, x, w, A_BOLD, "needle:  %s", a->needle);
    draw_text(y, x, 10, A_BOLD, "answer:");
    draw_text(y++, x + 9, w - 9, a->correct ? ui_attr(u, PAIR_GOOD, A_BOLD) : ui_attr(u, PAIR_BAD, A_BOLD),
              "%s", a->answer[0] ? a->answer : "(nothing)");
    draw_text(y++, x, w, A_BOLD, "%s", a->correct ? "correct: the answer starts with the needle" : "wrong");
    draw_text(r.y + r.h - 2, x, w, ui_attr(u, PAIR_DIM, A_NORMAL),
              "a: ask the next sample   any other key: close");
}

void draw_dialogs(ui_state *u) {
    switch (u->mode) {
    case UI_HELP:
        draw_help(u);
        break;
    case UI_START:
        draw_start(u);
        break;
    case UI_PROMPT:
        draw_prompt(u);
        break;
    case UI_CONFIRM_QUIT:
        draw_confirm(u);
        break;
    case UI_COMPARE:
        draw_compare(u);
        break;
    case UI_ASK:
        draw_ask(u);
        break;
    case UI_ATTN:
        draw_attn(u);
        break;
    default:
        break;
    }
}

void draw_too_small(ui_state *u) {
    char what[96], need[96];
    const char *keys = u->mode == UI_CONFIRM_QUIT ? "The search is not exported: y quits anyway, n stays."
                                                  : "Resize, or press q to quit; other keys wait.";
    snprintf(what, sizeof what, "Terminal %dx%d is too small.", u->cols, u->rows);
    snprintf(need, sizeof need, "The explorer needs at least %dx%d.", LAYOUT_MIN_COLS, LAYOUT_MIN_ROWS);
    const int w = u->cols > 0 ? u->cols : 1;
    int n = draw_wrap_lines(w, what) + draw_wrap_lines(w, need) + draw_wrap_lines(w, keys);
    if (n > u->rows) { /* a tiny window (20x5): the same in fewer words, wrapped, never cut */
        snprintf(what, sizeof what, "Too small: %dx%d, need %dx%d.", u->cols, u->rows, LAYOUT_MIN_COLS,
                 LAYOUT_MIN_ROWS);
        keys = u->mode == UI_CONFIRM_QUIT ? "y: quit, n: stay." : "q quits.";
        need[0] = '\0';
        n = draw_wrap_lines(w, what) + draw_wrap_lines(w, keys);
    }
    int y = (u->rows - n) / 2;
    if (y < 0) y = 0;
    y += draw_wrap(y, 0, w, u->rows - y, A_BOLD, what);
    if (need[0]) y += draw_wrap(y, 0, w, u->rows - y, A_NORMAL, need);
    draw_wrap(y, 0, w, u->rows - y, u->mode == UI_CONFIRM_QUIT ? A_BOLD : A_NORMAL, keys);
}
