/* draw_pin.c — the pinned-vs-working panel (`=`, `:pin`): the pinned mask and the working mask side
 * by side in the rows of the teaching text and the event log, so the grid (with the heads that
 * differ marked) stays in view while you edit. KV bytes are computed here from the masks
 * (kv_cache_bytes at the KV line's context, as the mask panel); the evaluations come from the
 * worker (snap.pin, worker_pin.c) and are shown only for the masks they were made with. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "explorer_ui.h"
#include "kv_cache.h"

/* The side's mask as the panel shows it: 0 the pinned mask, 1 the working mask. */
static ex_mask *side_mask(ui_state *u, int s) {
    return s == 0 ? &u->cmp_mask : &u->mask;
}

/* 1 when the worker's numbers of side s are of the mask shown. */
static int side_current(ui_state *u, int s) {
    const ex_pin_side *d = &u->snap.pin.side[s];
    ex_mask *m = side_mask(u, s);
    attn_mask am;
    ex_mask_view(m, &am);
    return (s == 1 || u->have_cmp) && d->hash == mask_hash(&am) && d->window == m->window &&
           d->sinks == m->sinks;
}

/* "90.00 MiB" */
static void mib(uint64_t bytes, char *buf, size_t cap) {
    snprintf(buf, cap, "%.2f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* Row `label` with the two sides' texts in columns of width cw after a label of width lw. */
static void row(int y, int x, int lw, int cw, int attr, const char *label, const char *a, const char *b) {
    draw_text(y, x, lw, A_BOLD, "%s", label);
    draw_text(y, x + lw, cw, attr, "%s", a);
    draw_text(y, x + lw + cw, cw, attr, "%s", b);
}

/* The status line: what is being computed, why it stopped, or that it is done. */
static void status_line(ui_state *u, char *buf, size_t cap, int current) {
    const ex_pin *p = &u->snap.pin;
    if (u->pin_making && p->state != EX_PIN_FAILED)
        snprintf(buf, cap, "%.150s...", p->state == EX_PIN_MAKING ? p->msg : "making the baseline's mask");
    else if (u->follow && u->snap.have_search && u->snap.phase == EX_RUNNING)
        snprintf(buf, cap, "the working mask follows the search: p pauses it to compare");
    else if (p->state == EX_PIN_FAILED)
        snprintf(buf, cap, "failed: %.150s", p->msg);
    else if (!current || p->state == EX_PIN_IDLE)
        snprintf(buf, cap, "computing...");
    else if (p->state == EX_PIN_COMPUTING)
        snprintf(buf, cap, "%.150s...", p->msg);
    else
        snprintf(buf, cap, "done: %d evaluations (cached per mask)", p->total);
}

void draw_pin(ui_state *u) {
    const lay_rect t = u->lay.panel[LAY_TEACH], lg = u->lay.panel[LAY_LOG];
    if (!t.h && !lg.h) return;
    lay_rect r = t.h ? t : lg;
    r.h = (lg.h ? lg.y + lg.h : t.y + t.h) - r.y;
    char title[96], a[64], b[64], line[EX_LINE];
    snprintf(title, sizeof title, "Pinned %s vs working (=: hide)",
             u->have_cmp || u->pin_making ? u->cmp_name : "-");
    draw_panel_title(&r, u, title);
    const ex_snapshot *s = &u->snap;
    const ex_pin *p = &s->pin;
    const int x = r.x, cw = (r.w - 12) / 2 > 16 ? 16 : (r.w - 12) / 2, lw = r.w - 2 * cw;
    const int have[2] = {u->have_cmp && u->cmp_mask.n_layer == u->mask.n_layer, 1};
    const int cur[2] = {have[0] && side_current(u, 0), side_current(u, 1)};
    const int dim = ui_attr(u, PAIR_DIM, A_NORMAL), y1 = r.y + r.h;
    int y = r.y + 1;
    char txt[2][5][32]; /* per side: SWA heads, KV, servable KV, S-hat, held-out */
    for (int sd = 0; sd < 2; sd++) {
        for (int k = 0; k < 5; k++) snprintf(txt[sd][k], sizeof txt[sd][k], "%s", "-");
        if (!have[sd]) continue;
        ex_mask *m = side_mask(u, sd);
        attn_mask am, proj;
        ex_mask_view(m, &am);
        const int units = m->n_layer * m->n_head_kv, n_swa = ex_mask_count_swa(m);
        snprintf(txt[sd][0], sizeof txt[sd][0], "%d/%d %.3f", n_swa, units,
                 units ? (double)n_swa / units : 0.0);
        mib(kv_cache_bytes(&s->hp, &am, u->ctx_tokens, u->kv_elem), txt[sd][1], sizeof txt[sd][1]);
        if (mask_servable(&proj, &am) == 0) {
            mib(kv_cache_bytes(&s->hp, &proj, u->ctx_tokens, u->kv_elem), txt[sd][2], sizeof txt[sd][2]);
            mask_free(&proj);
        }
        const ex_pin_side *d = &p->side[sd];
        if (cur[sd] && isfinite(d->calib_norm))
            snprintf(txt[sd][3], sizeof txt[sd][3], "%.3f", d->calib_norm);
        if (cur[sd] && d->n > 0)
            snprintf(txt[sd][4], sizeof txt[sd][4], "%d/%d %.3f", d->hits, d->n, (double)d->hits / d->n);
    }
    char ctx[16];
    if (u->ctx_tokens % 1024 == 0)
        snprintf(ctx, sizeof ctx, "%dk", u->ctx_tokens / 1024);
    else
        snprintf(ctx, sizeof ctx, "%d", u->ctx_tokens);
    char kv[40], skv[40];
    snprintf(kv, sizeof kv, "KV@%s", ctx);
    snprintf(skv, sizeof skv, "servable");
    const char *shat = u->utf8 ? "calib \u015c" : "calib S^";
    row(y++, x, lw, cw, A_BOLD, "", "pinned", "working");
    const char *labels[5] = {u->utf8 ? "SWA, \u03c1" : "SWA, rho", kv, skv, shat, "held-out"};
    for (int k = 0; k < 5 && y < y1; k++) row(y++, x, lw, cw, A_NORMAL, labels[k], txt[0][k], txt[1][k]);
    for (int sd = 0; sd < 2; sd++) {
        const ex_pin_side *d = &p->side[sd];
        if (cur[sd] && d->n > 0)
            snprintf(sd ? b : a, sizeof a, "%.3f-%.3f", d->wilson_lo, d->wilson_hi);
        else
            snprintf(sd ? b : a, sizeof a, "-");
    }
    if (y < y1) row(y++, x, lw, cw, dim, " Wilson 95%", a, b);
    const int both = cur[0] && cur[1];
    snprintf(a, sizeof a, "-"), snprintf(b, sizeof b, "-");
    if (both && p->mc_b >= 0) snprintf(a, sizeof a, "%ld", p->mc_b), snprintf(b, sizeof b, "%ld", p->mc_c);
    if (y < y1) row(y++, x, lw, cw, dim, " right only", a, b);
    if (y < y1) {
        if (both && p->mc_b >= 0)
            snprintf(line, sizeof line, "McNemar p %.4f (exact, %d pairs)", p->mc_p, p->side[1].n);
        else
            snprintf(line, sizeof line, "McNemar p: -");
        draw_text(y++, x, r.w, A_BOLD, "%s", line);
    }
    if (y < y1) {
        snprintf(line, sizeof line, "held-out %d x %d tok, calib %d x %d; W %d S %d", p->heldout_samples,
                 p->heldout_tokens, p->calib_samples, p->calib_tokens, u->mask.window, u->mask.sinks);
        draw_text(y++, x, r.w, dim, "%s", line);
    }
    if (have[0] && u->cmp_mask.window != u->mask.window && y < y1) {
        snprintf(line, sizeof line, "the pinned mask's window: W %d S %d", u->cmp_mask.window,
                 u->cmp_mask.sinks);
        draw_text(y++, x, r.w, dim, "%s", line);
    }
    if (y < y1) {
        status_line(u, line, sizeof line, both);
        draw_text_words(y++, x, r.w, p->state == EX_PIN_FAILED ? ui_attr(u, PAIR_BAD, A_BOLD) : dim,
                        u->utf8 ? "\u2026" : "...", line);
    }
}
