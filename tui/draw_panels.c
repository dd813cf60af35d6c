/* draw_panels.c — the explorer's right-hand panels (stage + progress, score sparkline, current
 * mask with KV-cache bytes, teaching text, event log), the title row and the footer of keys. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "explorer_ui.h"
#include "heat.h"
#include "kv_cache.h"
#include "clock.h"

static const char *phase_name(const ex_snapshot *s) {
    switch (s->phase) {
    case EX_LOADING:
        return "loading";
    case EX_READY:
        return "ready";
    case EX_PREPARING:
        return "preparing";
    case EX_RUNNING:
        return "searching";
    case EX_PAUSED:
        return "paused";
    case EX_DONE:
        return "done";
    case EX_FAILED:
        return "failed";
    }
    return "?";
}

void draw_title(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_TITLE];
    if (!r.h) return;
    int attr = ui_attr(u, PAIR_TITLE, A_REVERSE) | A_BOLD;
    attron(attr);
    move(r.y, r.x);
    for (int i = 0; i < r.w; i++) addch(' ');
    attroff(attr);
    const ex_snapshot *s = &u->snap;
    static const char *spin_u[] = {"\u280b", "\u2819", "\u2839", "\u2838",
                                   "\u283c", "\u2834", "\u2826", "\u2827"};
    static const char *spin_a[] = {"|", "/", "-", "\\", "|", "/", "-", "\\"};
    int busy = s->busy || s->phase == EX_LOADING || s->phase == EX_PREPARING || s->phase == EX_RUNNING;
    int k = (int)(base_now_s() * 8) & 7;
    /* the state, with the method and its phase while a search is there (progress.h) */
    char state[96];
    const int ph = s->have_search ? progress_phase(&s->progress) : -1;
    if (s->have_search && s->progress.active && !s->progress.done && ph >= 0)
        snprintf(state, sizeof state, "%s] %s, phase %d/%d", phase_name(s), s->method, ph + 1,
                 s->progress.plan.n_phases);
    else if (s->have_search && s->method[0])
        snprintf(state, sizeof state, "%s] %s", phase_name(s), s->method);
    else
        snprintf(state, sizeof state, "%s]", phase_name(s));
    /* the longest form that fits: the model's shape in words, in numbers, or none (never cut
       mid-word) */
    const char *name = u->have_model ? s->model_name : s->model_path;
    char line[512];
    for (int form = 0; form < 3; form++) {
        char shape[96] = "";
        if (u->have_model && form == 0)
            snprintf(shape, sizeof shape, " %d layers x %d KV heads (%d query heads)", s->hp.n_layer,
                     s->hp.n_head_kv, s->hp.n_head);
        else if (u->have_model && form == 1)
            snprintf(shape, sizeof shape, " %dx%d", s->hp.n_layer, s->hp.n_head_kv);
        snprintf(line, sizeof line, " BOSCH Explorer [%s%s%s %s %s%s", state, busy ? " " : "",
                 busy ? (u->utf8 ? spin_u[k] : spin_a[k]) : "", u->utf8 ? "\u2502" : "|", name, shape);
        if (draw_cols(line) <= r.w) break;
    }
    draw_text(r.y, r.x, r.w, attr, "%s", line);
}

static void progress_bar(ui_state *u, int y, int x, int w, double frac) {
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    if (w <= 0) return;
    if (!(frac >= 0)) frac = 0;
    if (frac > 1) frac = 1;
    int on = (int)lround(frac * w);
    attron(ui_attr(u, PAIR_GOOD, A_BOLD));
    for (int i = 0; i < on; i++) mvaddstr(y, x + i, g->bar_on);
    attroff(ui_attr(u, PAIR_GOOD, A_BOLD));
    attron(ui_attr(u, PAIR_DIM, A_NORMAL));
    for (int i = on; i < w; i++) mvaddstr(y, x + i, g->bar_off);
    attroff(ui_attr(u, PAIR_DIM, A_NORMAL));
}

/* The progress panel: the phase of the plan (progress.h) as its title, a bar of the planned
 * evaluations, the phase's counter with the measured seconds per evaluation and the time left, the
 * target. */
void draw_stage(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_STAGE];
    if (!r.h) return;
    const ex_snapshot *s = &u->snap;
    const ex_progress *pg = &s->progress;
    char line[160];
    if (!s->have_search || !pg->active)
        snprintf(line, sizeof line, "%s",
                 s->phase == EX_LOADING ? "Search: loading the model"
                 : s->have_search       ? "Search: preparing"
                                        : "Search: none yet (s starts one)");
    else
        progress_title(pg, line, sizeof line);
    line[0] = (char)(line[0] >= 'a' && line[0] <= 'z' ? line[0] - 'a' + 'A' : line[0]);
    draw_panel_title(&r, u, line);
    if (r.h < 2) return;
    const long planned = pg->active ? progress_evals_planned(pg) : 0;
    char cnt[64];
    if (planned > 0 && !pg->done)
        snprintf(cnt, sizeof cnt, " evals %ld/%ld", s->n_evals, planned);
    else
        snprintf(cnt, sizeof cnt, " evals %ld", s->n_evals);
    int cw = (int)strlen(cnt);
    progress_bar(u, r.y + 1, r.x, r.w - cw, progress_fraction(pg));
    draw_text(r.y + 1, r.x + r.w - cw, cw, A_BOLD, "%s", cnt);
    if (r.h < 3) return;
    if (s->have_search && pg->active) {
        char c[128], eta[32], spe[32] = "";
        progress_counter(pg, c, sizeof c);
        const double sec = progress_sec_per_eval(pg);
        if (isfinite(sec)) snprintf(spe, sizeof spe, "  %.2f s/eval", sec);
        if (pg->done)
            draw_text(r.y + 2, r.x, r.w, A_NORMAL, "all %ld evaluations made%s", s->n_evals, spe);
        else {
            const double left = progress_eta_s(pg);
            progress_fmt_duration(left, eta, sizeof eta);
            draw_text(r.y + 2, r.x, r.w, A_NORMAL, "%s%s  left %s", c, spe, isfinite(left) ? eta : "?");
        }
    }
    if (r.h < 4) return;
    if (s->have_search)
        draw_text(r.y + 3, r.x, r.w, ui_attr(u, PAIR_DIM, A_NORMAL),
                  "%s  target %s %.3f  preset %s  W %d  S %d", s->method, u->utf8 ? "\u03c1" : "ratio",
                  s->target_ratio, s->preset, s->window, s->sinks);
    else if (s->busy)
        draw_text(r.y + 3, r.x, r.w, ui_attr(u, PAIR_DIM, A_NORMAL), "%s", s->busy_what);
    if (s->have_search && s->busy)
        draw_text(r.y + 3, r.x, r.w, ui_attr(u, PAIR_ACCENT, A_BOLD), "%s", s->busy_what);
    if (u->pause_pending)
        draw_text(r.y + 3, r.x, r.w, ui_attr(u, PAIR_ACCENT, A_BOLD), "pausing after this evaluation...");
}

void draw_score(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_SCORE];
    if (!r.h) return;
    const ex_snapshot *s = &u->snap;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    draw_panel_title(&r, u, "Scores (0 all-SWA..1 full, dim: noise)");
    if (r.h < 2) return;
    int w = r.w;
    long n = s->hist_n < EX_HIST ? s->hist_n : EX_HIST;
    long shown = n < w ? n : w;
    for (long i = 0; i < shown; i++) {
        long idx = s->hist_n - shown + i;
        double v = s->hist[idx % EX_HIST];
        double best = s->hist_best[idx % EX_HIST];
        if (!isfinite(v)) v = 0;
        double c = v < 0 ? 0 : v > 1 ? 1 : v;
        int lvl = (int)lround(c * 7);
        int at_best = isfinite(best) && v >= best && idx >= 2;
        int attr = s->hist_noise[idx % EX_HIST] ? ui_attr(u, PAIR_DIM, A_DIM)
                   : at_best                    ? ui_attr(u, PAIR_GOOD, A_BOLD)
                                                : ui_attr(u, PAIR_ACCENT, A_NORMAL);
        attron(attr);
        mvaddstr(r.y + 1, r.x + (int)i, g->spark[lvl]);
        attroff(attr);
    }
    if (shown == 0) draw_text(r.y + 1, r.x, w, ui_attr(u, PAIR_DIM, A_NORMAL), "(no evaluations yet)");
    if (r.h < 3) return;
    /* the best is of the masks at the target ratio only (progress.h): a stage-1 probe with fewer SWA
       heads scores better and says nothing of the result; the longest form that fits */
    const ex_progress *pg = &s->progress;
    char best[64] = "none at the target yet", line[3][160];
    if (pg->best_target_eval > 0)
        snprintf(best, sizeof best, "best at target %.3f (eval %ld)", pg->best_target, pg->best_target_eval);
    if (pg->done && isfinite(pg->final_score)) {
        snprintf(line[0], sizeof line[0], "final %.3f, %s", pg->final_score, best);
        snprintf(line[1], sizeof line[1], "final %.3f", pg->final_score);
    } else {
        /* the last score with its noise: the paired standard error of its drop from all full */
        char last[48];
        const double se = progress_score_se(pg);
        if (isfinite(se))
            snprintf(last, sizeof last, "last %.3f%s%.3f", s->last_score, u->utf8 ? "\u00b1" : "+-", se);
        else
            snprintf(last, sizeof last, "last %.3f", s->last_score);
        snprintf(line[0], sizeof line[0], "%s acc %.2f, %s", last, s->last_accuracy, best);
        snprintf(line[1], sizeof line[1], "%s, %s", last, best);
    }
    snprintf(line[2], sizeof line[2], "%s", line[1]);
    int k = 0;
    while (k < 2 && draw_cols(line[k]) > w) k++;
    if (s->hist_n > 0 && isfinite(s->last_score)) draw_text_words(r.y + 2, r.x, w, A_NORMAL, "", line[k]);
    if (r.h < 4) return;
    if (isfinite(s->full_raw)) {
        char swa[16] = "?", cur[16] = "none yet";
        if (isfinite(s->swa_raw)) snprintf(swa, sizeof swa, "%.3f", s->swa_raw);
        if (isfinite(s->best_score)) snprintf(cur, sizeof cur, "%.3f", s->best_score);
        draw_text(r.y + 3, r.x, w, ui_attr(u, PAIR_DIM, A_NORMAL),
                  "raw S: full %.3f, all-SWA %s; this step's best %s", s->full_raw, swa, cur);
    }
}

/* Byte scale of the KV line: the unit and divisor that keep `bytes` under 1024. */
static const char *kv_unit(uint64_t bytes, double *scale) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int ui = 0;
    *scale = 1;
    while ((double)bytes / *scale >= 1024 && ui < 4) {
        *scale *= 1024;
        ui++;
    }
    return unit[ui];
}

/* The KV line: the mask's KV bytes at the context length against all full, and what a per-layer
 * engine keeps with the servable projection (kv_cache_bytes of both), in the longest form that
 * fits w columns. */
static void draw_kv_line(int y, int x, int w, const ui_state *u, uint64_t b, uint64_t bs, uint64_t bf) {
    double scale;
    const char *unit = kv_unit(bf, &scale);
    char ctx[16];
    if (u->ctx_tokens % 1024 == 0)
        snprintf(ctx, sizeof ctx, "%dk", u->ctx_tokens / 1024);
    else
        snprintf(ctx, sizeof ctx, "%d", u->ctx_tokens);
    const double save = bf ? 100.0 * (1.0 - (double)b / (double)bf) : 0.0,
                 save_s = bf ? 100.0 * (1.0 - (double)bs / (double)bf) : 0.0;
    char line[160];
    snprintf(line, sizeof line, "KV@%s: %.1f of %.1f %s (-%.1f%%), per-layer engine %.1f (-%.1f%%)", ctx,
             (double)b / scale, (double)bf / scale, unit, save, (double)bs / scale, save_s);
    if ((int)strlen(line) > w)
        snprintf(line, sizeof line, "KV@%s: %.1f of %.1f %s (-%.1f%%) layers -%.1f%%", ctx, (double)b / scale,
                 (double)bf / scale, unit, save, save_s);
    if ((int)strlen(line) > w)
        snprintf(line, sizeof line, "KV@%s -%.1f%% of %.1f %s, layers -%.1f%%", ctx, save, (double)bf / scale,
                 unit, save_s);
    draw_text(y, x, w, A_NORMAL, "%s", line);
}

/* The held-out line: the mask's result (v) and its servable projection's (V) when they are of the
 * mask shown (hash of the mask / of its projection), else how to get them. */
static void draw_heldout_line(int y, int x, int w, const ui_state *u, uint64_t hash, uint64_t hash_s) {
    const ex_heldout *h = &u->snap.heldout, *hs = &u->snap.heldout_servable;
    const int same = h->seq > 0 && h->mask_hash == hash, same_s = hs->seq > 0 && hs->mask_hash == hash_s;
    const int good = ui_attr(u, PAIR_GOOD, A_BOLD), dim = ui_attr(u, PAIR_DIM, A_NORMAL);
    if (same && same_s)
        draw_text(y, x, w, good, "held-out: acc %.2f, per-layer acc %.2f", h->accuracy, hs->accuracy);
    else if (same)
        draw_text(y, x, w, good, "held-out: acc %.2f, S %.3f (%d x %d)", h->accuracy, h->score, h->n_samples,
                  h->length_tokens);
    else if (same_s)
        draw_text(y, x, w, good, "held-out per-layer: acc %.2f, S %.3f (v)", hs->accuracy, hs->score);
    else if (h->seq > 0)
        draw_text(y, x, w, dim, "held-out, earlier mask: acc %.2f (v, V)", h->accuracy);
    else
        draw_text(y, x, w, dim, "held-out: v (per-layer: V)  context: c");
}

void draw_mask(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_MASK];
    if (!r.h) return;
    const ex_snapshot *s = &u->snap;
    draw_panel_title(&r, u,
                     u->follow && s->have_search ? "Mask (following the search)" : "Mask (working copy)");
    if (r.h < 2 || !u->have_model) return;
    int units = u->mask.n_layer * u->mask.n_head_kv;
    int n_swa = ex_mask_count_swa(&u->mask);
    char sinks[24] = "";
    if (u->mask.sinks) snprintf(sinks, sizeof sinks, " S %d", u->mask.sinks);
    draw_text(r.y + 1, r.x, r.w, A_BOLD, "%s %.3f: %d/%d KV heads SWA, W %d%s", u->utf8 ? "\u03c1" : "rho",
              units ? (double)n_swa / units : 0.0, n_swa, units, u->mask.window, sinks);
    if (r.h < 3) return;
    attn_mask am, full, proj;
    ex_mask_view(&u->mask, &am);
    if (mask_servable(&proj, &am)) return; /* out of memory: nothing more to show */
    uint64_t b = kv_cache_bytes(&s->hp, &am, u->ctx_tokens, u->kv_elem),
             bs = kv_cache_bytes(&s->hp, &proj, u->ctx_tokens, u->kv_elem);
    static ex_mask all_full;
    all_full = u->mask;
    memset(all_full.z, ATTN_FULL, (size_t)units);
    ex_mask_view(&all_full, &full);
    uint64_t bf = kv_cache_bytes(&s->hp, &full, u->ctx_tokens, u->kv_elem);
    draw_kv_line(r.y + 2, r.x, r.w, u, b, bs, bf);
    if (r.h >= 4) draw_heldout_line(r.y + 3, r.x, r.w, u, mask_hash(&am), mask_hash(&proj));
    mask_free(&proj);
}

/* The teaching text for the current state: what is happening and why, in plain words. While a
 * search runs it is the explanation its plan gives of the phase running (progress_text), so it
 * says what that method does, not what another one would. */
static void teach_text(const ui_state *u, char *buf, size_t cap) {
    const ex_snapshot *s = &u->snap;
    const char *phase_text = progress_text(&s->progress);
    if (s->phase == EX_LOADING) {
        snprintf(buf, cap,
                 "Loading the model: reading the GGUF file and turning its quantized weights into "
                 "floats. A few seconds.");
    } else if (s->phase == EX_FAILED) {
        snprintf(buf, cap, "The model could not be loaded: %s", s->status);
    } else if (!s->have_search || s->phase == EX_PREPARING) {
        snprintf(buf, cap,
                 "Rows are layers, cells KV heads. A full head sees every earlier token; an SWA head only "
                 "the last W, so its KV cache stays small. s: let BOSCH find which heads can go local.");
    } else if (phase_text) { /* paused too: the title says so, the footer how to go on */
        snprintf(buf, cap, "%s", phase_text);
    } else if (s->phase == EX_PAUSED) {
        snprintf(buf, cap,
                 "Paused. Edit the mask (space, T, f), score it on held-out probes (v) or ask the model "
                 "(a). p resumes; the grid then follows the search again.");
    } else if (s->phase == EX_DONE || s->progress.done) {
        snprintf(buf, cap,
                 "Done: the grid shows the final mask. Check it on held-out probes (v), ask the model (a), "
                 "export it (x).");
    } else {
        snprintf(buf, cap, "Starting the search: it publishes its plan, then scores the reference masks.");
    }
}

/* What the heat map's score k is waiting for when none of it is measured: the attention view's
 * ranking that computes it (worker_attn.c). */
static void heat_status(const ui_state *u, int k, char *buf, size_t cap) {
    const ex_attn *a = &u->snap.attn;
    const int j = ex_heat_rank(k);
    const int st = j >= 0 ? a->rank_state[j] : EX_RANK_FAILED;
    if (st == EX_RANK_RUNNING && a->rank_budget > 0)
        snprintf(buf, cap, "computing %ld/%ld evals", a->rank_evals, a->rank_budget);
    else if (st == EX_RANK_RUNNING || st == EX_RANK_PENDING)
        snprintf(buf, cap, "computing (queued)");
    else if (st == EX_RANK_FAILED)
        snprintf(buf, cap, "not available (see the events)");
    else
        snprintf(buf, cap, "not measured");
}

void draw_teach(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_TEACH];
    if (!r.h) return;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    draw_panel_title(&r, u, "What is happening");
    char text[1024];
    teach_text(u, text, sizeof text);
    int body = r.h - 2; /* last row: the colour legend */
    if (body < 1) body = r.h - 1;
    if (body >= 2 && draw_wrap_lines(r.w, text) > body) { /* cut: the plan page has it all */
        draw_wrap(r.y + 1, r.x, r.w, body - 1, A_NORMAL, text);
        draw_text(r.y + body, r.x, r.w, ui_attr(u, PAIR_ACCENT, A_BOLD), "%s more: P shows the whole plan",
                  u->utf8 ? "\u2026" : "...");
    } else {
        draw_wrap(r.y + 1, r.x, r.w, body, A_NORMAL, text);
    }
    if (r.h >= 3 && u->heat) { /* H: glyph = the score (heat.h's scale), colour = full / SWA */
        char leg[160], st[64];
        heat_status(u, u->heat - 1, st, sizeof st);
        heat_legend(leg, sizeof leg, ex_heat_name(u->heat - 1), u->utf8 ? "\u2591\u2592\u2593\u2588" : ".:*#",
                    u->heat_n, u->heat_lo, u->heat_hi, st);
        draw_text(r.y + r.h - 1, r.x, r.w, ui_attr(u, PAIR_ACCENT, A_BOLD), "%s", leg);
    } else if (r.h >= 3) {
        int y = r.y + r.h - 1, x = r.x;
        attron(ui_attr(u, PAIR_FULL, A_BOLD));
        mvaddstr(y, x, g->full);
        mvaddstr(y, x + 1, g->full);
        attroff(ui_attr(u, PAIR_FULL, A_BOLD));
        draw_text(y, x + 3, 5, A_NORMAL, "full");
        attron(ui_attr(u, PAIR_SWA, A_NORMAL));
        mvaddstr(y, x + 8, g->swa);
        mvaddstr(y, x + 9, g->swa);
        attroff(ui_attr(u, PAIR_SWA, A_NORMAL));
        draw_text(y, x + 11, r.w - 11, A_NORMAL, "SWA  %s now %s group  %s", g->probe, g->group,
                  u->n_pin ? "F S pinned" : "[ ] cursor");
    }
}

void draw_log(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_LOG];
    if (!r.h) return;
    const ex_snapshot *s = &u->snap;
    draw_panel_title(&r, u, "Events");
    int lines = r.h - 1;
    long n = s->log_n < EX_LOG ? s->log_n : EX_LOG;
    long shown = n < lines ? n : lines;
    for (long i = 0; i < shown; i++) {
        long idx = s->log_n - shown + i;
        draw_text_words(r.y + 1 + (int)i, r.x, r.w, i == shown - 1 ? A_BOLD : A_NORMAL,
                        u->utf8 ? "\u2026" : "...", s->log[idx % EX_LOG]);
    }
}

/* The footer: a dialog's keys while one is open (a message never hides them), else the worker's
 * job or a recent message, else the main keys; whole items only (never cut mid-word). */
void draw_footer(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_FOOTER];
    if (!r.h) return;
    int attr = ui_attr(u, PAIR_TITLE, A_REVERSE);
    attron(attr);
    move(r.y, r.x);
    for (int i = 0; i < r.w - 1; i++) addch(' ');
    attroff(attr);
    const char *ell = u->utf8 ? "\u2026" : "...";
    char line[512];
    const int dialog = u->mode != UI_NORMAL;
    if (!dialog && u->snap.busy && !(u->msg[0] && base_now_s() - u->msg_t < 2.0)) {
        snprintf(line, sizeof line, " ?:help q:quit %s %s...", u->utf8 ? "\u2502" : "|", u->snap.busy_what);
    } else if (!dialog && u->msg[0] && base_now_s() - u->msg_t < 6.0) {
        snprintf(line, sizeof line, " ?:help q:quit %s %s", u->utf8 ? "\u2502" : "|", u->msg);
    } else {
        keymap_footer(u->mode, line, sizeof line);
        /* whole key items: cut at the last item separator that fits */
        if (draw_cols(line) > r.w - 1) {
            const char *sep = strstr(line, "  ") ? "  " : " ";
            char *cut = NULL;
            for (char *p = strstr(line + 1, sep); p && draw_cols(line) > 0; p = strstr(p + 1, sep)) {
                char keep = *p;
                *p = '\0';
                int fits = draw_cols(line) <= r.w - 1;
                *p = keep;
                if (!fits) break;
                cut = p;
            }
            if (cut) *cut = '\0';
        }
        draw_text(r.y, r.x, r.w - 1, attr, "%s", line);
        return;
    }
    draw_text_words(r.y, r.x, r.w - 1, attr, ell, line);
}
