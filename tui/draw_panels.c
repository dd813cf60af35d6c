/* draw_panels.c — the explorer's right-hand panels (stage + progress, score sparkline, current
 * mask with KV-cache bytes, teaching text, event log), the title row and the footer of keys. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "explorer_ui.h"
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
    char shape[96] = "";
    if (u->have_model)
        snprintf(shape, sizeof shape, " %d layers x %d KV heads (%d query heads)", s->hp.n_layer,
                 s->hp.n_head_kv, s->hp.n_head);
    draw_text(r.y, r.x, r.w, attr, " BOSCH Explorer [%s]%s%s %s %s%s", phase_name(s), busy ? " " : "",
              busy ? (u->utf8 ? spin_u[k] : spin_a[k]) : "", u->utf8 ? "\u2502" : "|",
              u->have_model ? s->model_name : s->model_path, shape);
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

void draw_stage(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_STAGE];
    if (!r.h) return;
    const ex_snapshot *s = &u->snap;
    char line[160];
    if (!s->have_search) {
        snprintf(line, sizeof line, "%s",
                 s->phase == EX_LOADING ? "Stage: loading the model" : "Stage: no search yet (s starts)");
    } else if (s->stage == 0) {
        snprintf(line, sizeof line, "Stage 0/3: normalizing");
    } else if (s->stage == 1) {
        snprintf(line, sizeof line, "Stage 1/3: probing layer %d", s->probe_layer);
    } else if (s->stage == 2) {
        snprintf(line, sizeof line, "Stage 2/3: ratios from drops");
    } else if (s->stage == 3 && s->granularity) {
        snprintf(line, sizeof line, "Stage 3/3: swapping whole layers");
    } else if (s->stage == 3) {
        snprintf(line, sizeof line, "Stage 3/3: bucket %d", s->group);
    } else {
        snprintf(line, sizeof line, "Stage: search done");
    }
    draw_panel_title(&r, u, line);
    if (r.h < 2) return;
    long budget = s->eval_budget;
    char cnt[64];
    if (s->phase == EX_DONE)
        snprintf(cnt, sizeof cnt, " %ld", s->n_evals);
    else if (budget > 0)
        snprintf(cnt, sizeof cnt, " %ld/%ld", s->n_evals, budget);
    else
        snprintf(cnt, sizeof cnt, " %ld", s->n_evals);
    int cw = (int)strlen(cnt);
    progress_bar(u, r.y + 1, r.x, r.w - cw,
                 s->phase == EX_DONE ? 1.0
                 : budget > 0        ? (double)s->n_evals / budget
                                     : 0);
    draw_text(r.y + 1, r.x + r.w - cw, cw, A_BOLD, "%s", cnt);
    if (r.h < 3) return;
    if (s->have_search && s->phase == EX_DONE) {
        draw_text(r.y + 2, r.x, r.w, A_NORMAL, "evals %ld, done", s->n_evals);
    } else if (s->have_search) {
        char st[64];
        const char *what = s->stage == 1 ? "layer" : s->stage == 3 ? "group" : "stage";
        if (s->stage_budget > 0)
            snprintf(st, sizeof st, "%s %ld/%ld", what, s->stage_evals, s->stage_budget);
        else
            snprintf(st, sizeof st, "%s %ld", what, s->stage_evals);
        draw_text(r.y + 2, r.x, r.w, A_NORMAL, "evals %ld  %s  %.2f s/eval", s->n_evals, st,
                  isnan(s->last_seconds) ? 0.0 : s->last_seconds);
    }
    if (r.h < 4) return;
    if (s->have_search)
        draw_text(r.y + 3, r.x, r.w, ui_attr(u, PAIR_DIM, A_NORMAL), "target %s %.3f  preset %s  W %d  S %d",
                  u->utf8 ? "\u03c1" : "ratio", s->target_ratio, s->preset, s->window, s->sinks);
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
    draw_panel_title(&r, u, "Probe scores (0 all-SWA .. 1 full)");
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
        int attr = at_best ? ui_attr(u, PAIR_GOOD, A_BOLD) : ui_attr(u, PAIR_ACCENT, A_NORMAL);
        attron(attr);
        mvaddstr(r.y + 1, r.x + (int)i, g->spark[lvl]);
        attroff(attr);
    }
    if (shown == 0) draw_text(r.y + 1, r.x, w, ui_attr(u, PAIR_DIM, A_NORMAL), "(no evaluations yet)");
    if (r.h < 3) return;
    if (s->hist_n > 0 && s->phase == EX_DONE) {
        draw_text(r.y + 2, r.x, w, A_NORMAL, "final %.3f  best seen %.3f (eval %ld)", s->best_score,
                  s->best_overall, s->best_eval);
    } else if (s->hist_n > 0) {
        if (s->best_eval > 0)
            draw_text(r.y + 2, r.x, w, A_NORMAL, "best %.3f (eval %ld)  last %.3f acc %.2f", s->best_overall,
                      s->best_eval, s->last_score, s->last_accuracy);
        else
            draw_text(r.y + 2, r.x, w, A_NORMAL, "last %.3f acc %.2f", s->last_score, s->last_accuracy);
    }
    if (r.h < 4) return;
    if (!isnan(s->full_raw))
        draw_text(r.y + 3, r.x, w, ui_attr(u, PAIR_DIM, A_NORMAL),
                  "raw S: full %.3f, all-SWA %.3f, cur best %.3f", s->full_raw,
                  isnan(s->swa_raw) ? 0.0 : s->swa_raw, isnan(s->best_score) ? 0.0 : s->best_score);
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

/* The teaching text of a search over whole layers (search.h: granularity), stages 1 to 3. */
static void teach_layers(const ex_snapshot *s, const char *delta, char *buf, size_t cap) {
    if (s->stage == 1)
        snprintf(buf, cap,
                 "Stage 1, whole layers: layer %d goes SWA alone, all its KV heads; the others stay full. "
                 "The score lost is the layer's drop %s.",
                 s->probe_layer, delta);
    else if (s->stage == 2)
        snprintf(buf, cap,
                 "Stage 2: the %ld layers that lost least (smallest %s) go SWA, every KV head: a mask a "
                 "per-layer engine can serve.",
                 lround(s->target_ratio * s->hp.n_layer), delta);
    else
        snprintf(buf, cap,
                 "Stage 3: swap one SWA layer with one full layer, the number of SWA layers fixed; a swap "
                 "that scores better is kept.");
}

/* The teaching text for the current state: what is happening and why, in plain words. Kept short
 * enough for 5 lines of 40 columns (the right column at 80x24). */
static void teach_text(const ui_state *u, char *buf, size_t cap) {
    const ex_snapshot *s = &u->snap;
    int k = (int)ceil(s->target_ratio * s->hp.n_head_kv - 1e-9);
    const char *delta = u->utf8 ? "\u03b4" : "delta", *rho = u->utf8 ? "\u03c1" : "rho";
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
    } else if (s->phase == EX_PAUSED) {
        snprintf(buf, cap,
                 "Paused. Edit the mask (space, T, f), score it on held-out probes (v) or ask the model "
                 "(a). p resumes; the grid then follows the search again.");
    } else if (s->stage == 0) {
        snprintf(buf, cap,
                 "Measuring both ends: the probe score with every head full, then every head SWA. Later "
                 "scores are placed between: 1 = as good as full, 0 = as bad as all-SWA.");
    } else if (s->stage >= 1 && s->stage <= 3 && s->granularity) {
        teach_layers(s, delta, buf, cap);
    } else if (s->stage == 1) {
        snprintf(buf, cap,
                 "Stage 1: probing layer %d - which %d of its %d KV heads can go local? Layers above keep "
                 "their best choice. The score lost here is the layer's drop %s.",
                 s->probe_layer, k, s->hp.n_head_kv, delta);
    } else if (s->stage == 2) {
        snprintf(buf, cap,
                 "Stage 2: layers that lost little (small %s, weight w near 0) get more SWA heads (ratio r), "
                 "fragile ones fewer; the total is exactly %s. g = bucket.",
                 delta, rho);
    } else if (s->stage == 3) {
        snprintf(buf, cap,
                 "Stage 3: the layers of bucket %d (marked) are searched together: each keeps its number of "
                 "SWA heads; swaps decide which heads are local.",
                 s->group);
    } else {
        snprintf(buf, cap,
                 "Done: the grid shows the final mask. Check it on held-out probes (v), ask the model (a), "
                 "export it (x).");
    }
}

void draw_teach(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_TEACH];
    if (!r.h) return;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    draw_panel_title(&r, u, "What is happening");
    char text[640];
    teach_text(u, text, sizeof text);
    int body = r.h - 2; /* last row: the colour legend */
    if (body < 1) body = r.h - 1;
    draw_wrap(r.y + 1, r.x, r.w, body, A_NORMAL, text);
    if (r.h >= 3) {
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
        draw_text(y, x + 11, r.w - 11, A_NORMAL, "SWA  %s probed  [ ] cursor", g->probe);
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
        draw_text(r.y + 1 + (int)i, r.x, r.w, i == shown - 1 ? A_BOLD : A_NORMAL, "%s", s->log[idx % EX_LOG]);
    }
}

void draw_footer(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_FOOTER];
    if (!r.h) return;
    int attr = ui_attr(u, PAIR_TITLE, A_REVERSE);
    attron(attr);
    move(r.y, r.x);
    for (int i = 0; i < r.w - 1; i++) addch(' ');
    attroff(attr);
    if (u->snap.busy && !(u->msg[0] && base_now_s() - u->msg_t < 2.0)) {
        draw_text(r.y, r.x, r.w - 1, attr, " ?:help q:quit %s %s...", u->utf8 ? "\u2502" : "|",
                  u->snap.busy_what);
        return;
    }
    if (u->msg[0] && base_now_s() - u->msg_t < 6.0) {
        draw_text(r.y, r.x, r.w - 1, attr, " ?:help q:quit %s %s", u->utf8 ? "\u2502" : "|", u->msg);
        return;
    }
    char keys[256];
    keymap_footer(u->mode, keys, sizeof keys);
    draw_text(r.y, r.x, r.w - 1, attr, "%s", keys);
}
