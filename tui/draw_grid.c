/* draw_grid.c — the layer x head grid with its per-layer statistics (delta, weight, ratio, bucket,
 * SWA heads). One row per layer; one 2-column cell per KV head (or one 1-column cell per query
 * head, grouped by KV head). Full heads are blue '█' ('#'), SWA heads red '░' ('.'), so the grid
 * reads the same without colour. The cursor is a pair of brackets around its cell; the layer the
 * search's phase is working on has '▶' before its number, the layers of a group searched together
 * a '•' (progress_layer_mark: from the plan and the events, whatever the method). */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "explorer_ui.h"
#include "heat.h"

static void fmt_stat(char *buf, size_t cap, double v, int width, int prec, int utf8) {
    if (isnan(v)) /* pad by columns: the UTF-8 dot is 2 bytes but 1 column */
        snprintf(buf, cap, "%*s%s", width - 1, "", utf8 ? "\u00b7" : "-");
    else
        snprintf(buf, cap, "%*.*f", width, prec, v);
}

static int layer_swa(const ex_mask *m, int l) {
    int n = 0;
    for (int h = 0; h < m->n_head_kv; h++) n += m->z[l * m->n_head_kv + h] == ATTN_SWA;
    return n;
}

/* The panel title: a shown comparison, the cursor's head and the scroll position. */
static void draw_grid_title(ui_state *u, const lay_rect *r, int group) {
    const layout *lay = &u->lay;
    const ex_snapshot *s = &u->snap;
    const ex_mask *m = &u->mask;
    int L = m->n_layer, H = m->n_head_kv;
    char title[160];
    int q0 = u->cur_head * group, q1 = q0 + group - 1;
    const char *what = m->z[u->cur_layer * H + u->cur_head] == ATTN_FULL ? "full" : "SWA";
    int n = 0;
    /* the grid panel is narrow: a shown comparison goes first so that truncation cuts the cursor
       summary, not the count of differing heads */
    if (u->have_cmp)
        n = snprintf(title, sizeof title, "vs %s: %d differ | ", u->cmp_name, ui_compare_n_diff(u));
    if (u->heat) n += snprintf(title + n, sizeof title - (size_t)n, "heat: %s | ", ex_heat_name(u->heat - 1));
    n += snprintf(title + n, sizeof title - (size_t)n, "L%d kv%d (q%d-%d) %s", u->cur_layer, u->cur_head, q0,
                  q1, what);
    if (lay->visible_layers < L && n > 0)
        snprintf(title + n, sizeof title - (size_t)n, " %s %d-%d/%d",
                 u->follow && s->have_search ? "live" : "edit", u->top, u->top + lay->visible_layers - 1, L);
    else if (n > 0)
        snprintf(title + n, sizeof title - (size_t)n, " %s", u->follow && s->have_search ? "live" : "edit");
    draw_panel_title(r, u, title);
}

/* The column header: layer, one number per head, the statistics' names. */
static void draw_grid_header(ui_state *u, const lay_rect *r) {
    const layout *lay = &u->lay;
    int hy = r->y + 1;
    draw_text(hy, r->x + 1, lay->label_w, A_BOLD, "%*s", lay->label_w, "L");
    for (int h = 0; h < u->mask.n_head_kv; h++) {
        int cx = r->x + layout_cell_x(lay, h) + 1;
        if (u->query_view)
            draw_text(hy, cx, lay->cell_glyph_w, A_BOLD, "%-*d", lay->cell_glyph_w, h);
        else
            draw_text(hy, cx, 2, A_BOLD, "%2d", h);
    }
    if (lay->stats_w)
        draw_text(hy, r->x + lay->stats_x, lay->stats_w, A_BOLD, " %s %4s %4s %1s %3s",
                  u->utf8 ? "     \u03b4" : " delta", "w", "r", "g", "swa");
}

/* A value in [0, 1] as a bar of w cells with eighth steps (UTF-8), or '#' / '-' cells (ASCII). */
static void fmt_bar(char *buf, size_t cap, double v, int w, int utf8) {
    static const char *const eighths[] = {" ",      "\u258f", "\u258e", "\u258d",
                                          "\u258c", "\u258b", "\u258a", "\u2589"};
    size_t o = 0;
    buf[0] = '\0';
    if (!isfinite(v)) {
        snprintf(buf, cap, "%*s%s", w - 1, "", utf8 ? "\u00b7" : "-");
        return;
    }
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    int units = (int)lround(v * w * (utf8 ? 8 : 1));
    for (int c = 0; c < w && o + 4 < cap; c++) {
        int here = utf8 ? units - 8 * c : units - c;
        const char *g = utf8 ? (here >= 8  ? "\u2588"
                                : here > 0 ? eighths[here]
                                           : " ")
                             : (here >= 1 ? "#" : "-");
        o += (size_t)snprintf(buf + o, cap - o, "%s", g);
    }
}

/* Layer l's statistics at row y: delta, weight, ratio, bucket, SWA heads. Stage 2's weight w and
 * ratio r are bars (u->stat_bars, the default; b shows the numbers); r and g are stage 2's plan,
 * drawn dim once the mask's count for the layer (swa, drawn bold then) differs from it: stage 3 or
 * the refinement moved heads, or the mask was edited. */
static void draw_layer_stats(ui_state *u, const lay_rect *r, int l, int y) {
    const ex_snapshot *s = &u->snap;
    const layout *lay = &u->lay;
    char d[16], wt[40], rt[40], bk[8];
    /* delta is known as soon as stage 1 has probed the layer: S_full - s_best (docs/design.md §6) */
    double dl = l < EX_MAX_LAYERS ? s->delta[l] : NAN;
    if (isnan(dl) && l < EX_MAX_LAYERS && s->probed[l] && isfinite(s->s_best[l]) && isfinite(s->full_raw))
        dl = s->full_raw - s->s_best[l];
    fmt_stat(d, sizeof d, dl, 6, 3, u->utf8);
    const double wv = l < EX_MAX_LAYERS ? s->weight[l] : NAN, rv = l < EX_MAX_LAYERS ? s->ratio[l] : NAN;
    if (u->stat_numbers) {
        fmt_stat(wt, sizeof wt, wv, 4, 2, u->utf8);
        fmt_stat(rt, sizeof rt, rv, 4, 2, u->utf8);
    } else {
        fmt_bar(wt, sizeof wt, wv, 4, u->utf8);
        fmt_bar(rt, sizeof rt, rv, 4, u->utf8);
    }
    if (l < EX_MAX_LAYERS && s->bucket[l] >= 0)
        snprintf(bk, sizeof bk, "%d", s->bucket[l] % 10);
    else
        snprintf(bk, sizeof bk, "%s", u->utf8 ? "\u00b7" : "-");
    int ns = layer_swa(&u->mask, l);
    const int moved = l < EX_MAX_LAYERS && s->n_swa[l] >= 0 && ns != s->n_swa[l];
    int x = r->x + lay->stats_x;
    /* δ grey when within its noise: |δ| < 2 x the paired standard error of its probe (progress.h) */
    const int noise = l < EX_MAX_LAYERS && progress_within_noise(dl, s->progress.layer_se[l]);
    draw_text(y, x, 8, noise ? ui_attr(u, PAIR_DIM, A_DIM) : (int)A_NORMAL, " %s", d);
    draw_text(y, x + 8, 5, ui_attr(u, PAIR_ACCENT, A_NORMAL), "%s", wt);
    draw_text(y, x + 13, 5, moved ? ui_attr(u, PAIR_DIM, A_NORMAL) : ui_attr(u, PAIR_ACCENT, A_BOLD), "%s",
              rt);
    draw_text(y, x + 18, 1, moved ? ui_attr(u, PAIR_DIM, A_NORMAL) : (int)A_NORMAL, "%s", bk);
    draw_text(y, x + 1 + 6 + 1 + 4 + 1 + 4 + 1 + 1 + 1, 3,
              moved ? ui_attr(u, PAIR_ACCENT, A_BOLD) | (int)A_BOLD
              : ns  ? ui_attr(u, PAIR_SWA, A_NORMAL)
                    : ui_attr(u, PAIR_DIM, A_NORMAL),
              "%3d", ns);
}

/* Layer l at row y: its marker and label, a cell per head (a differing head marked when `diff`),
 * the cursor's brackets. */
static void draw_layer_row(ui_state *u, const lay_rect *r, int l, int y, int diff) {
    const layout *lay = &u->lay;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    const ex_snapshot *s = &u->snap;
    const ex_mask *m = &u->mask;
    int H = m->n_head_kv;
    const progress_mark mark = s->have_search ? progress_layer_mark(&s->progress, l) : PROGRESS_MARK_NONE;
    int probed_now = mark == PROGRESS_MARK_UNIT;
    int in_group = mark == PROGRESS_MARK_GROUP;
    if (probed_now)
        draw_text(y, r->x, 1, ui_attr(u, PAIR_PROBE, A_BOLD) | A_BOLD, "%s", g->probe);
    else if (in_group)
        draw_text(y, r->x, 1, ui_attr(u, PAIR_PROBE, A_BOLD), "%s", g->group);
    int lab_attr = probed_now || in_group ? (ui_attr(u, PAIR_PROBE, A_REVERSE) | (int)A_BOLD)
                                          : ui_attr(u, PAIR_DIM, A_NORMAL);
    if (l == u->cur_layer) lab_attr |= A_BOLD | A_UNDERLINE;
    draw_text(y, r->x + 1, lay->label_w, lab_attr, "%*d", lay->label_w, l);
    int full_attr = ui_attr(u, PAIR_FULL, A_BOLD), swa_attr = ui_attr(u, PAIR_SWA, A_NORMAL);
    for (int h = 0; h < H; h++) {
        int x0 = r->x + layout_cell_x(lay, h);
        int full = m->z[l * H + h] == ATTN_FULL;
        const char *gl = full ? g->full : g->swa;
        int attr = full ? full_attr : swa_attr;
        if (u->heat) { /* the glyph says the score (heat.h's scale), the colour full / SWA */
            static const char *const lv_u[] = {"\u2591", "\u2592", "\u2593", "\u2588"}, *const lv_a[] = {
                                                                                            ".", ":", "*",
                                                                                            "#"};
            const int k = u->heat - 1;
            const int lv = s->heat_src[k] ? heat_level(s->heat[k][l * H + h], u->heat_lo, u->heat_hi, 4) : -1;
            gl = lv < 0 ? (u->utf8 ? "\u00b7" : "-") : (u->utf8 ? lv_u : lv_a)[lv];
        }
        /* comparison diff: the other method decides differently here */
        if (diff && u->cmp_mask.z[l * H + h] != m->z[l * H + h]) gl = g->diff, attr |= A_REVERSE | A_BOLD;
        attron(attr);
        for (int k = 0; k < lay->cell_glyph_w; k++) mvaddstr(y, x0 + 1 + k, gl);
        attroff(attr);
        /* a pinned head (F): its first column says the pin, F full or S SWA, the rest its state */
        const uint8_t pin = l < EX_MAX_LAYERS && h < EX_MAX_KV ? u->pin[l * H + h] : 0;
        if (pin)
            draw_text(y, x0 + 1, 1, ui_attr(u, PAIR_ACCENT, A_BOLD) | A_BOLD, "%s", pin == 2 ? "S" : "F");
    }
    if (l == u->cur_layer) {
        int x0 = r->x + layout_cell_x(lay, u->cur_head);
        int ca = A_BOLD | (u->color ? (int)COLOR_PAIR(PAIR_ACCENT) : 0);
        draw_text(y, x0, 1, ca, "[");
        draw_text(y, x0 + lay->cell_pitch, 1, ca, "]");
    }
    if (lay->stats_w) draw_layer_stats(u, r, l, y);
}

void draw_grid(ui_state *u) {
    const layout *lay = &u->lay;
    lay_rect r = lay->panel[LAY_GRID];
    if (!r.h || !u->have_model || u->mask.n_layer == 0) return;
    const ex_snapshot *s = &u->snap;
    int L = u->mask.n_layer;
    int group = s->hp.n_head_kv > 0 ? s->hp.n_head / s->hp.n_head_kv : 1;
    u->top = layout_grid_top(L, lay->visible_layers, u->top, u->cur_layer,
                             s->have_search && !s->progress.done ? s->progress.layer : -1);
    draw_grid_title(u, &r, group);
    draw_grid_header(u, &r);
    const int diff = ui_compare_n_diff(u) > 0 || (u->have_cmp && u->cmp_mask.n_layer == L);
    if (u->heat > ex_n_heat()) u->heat = 0;
    u->heat_n = 0;
    if (u->heat && s->heat_src[u->heat - 1])
        u->heat_n = heat_range(s->heat[u->heat - 1], L * u->mask.n_head_kv, &u->heat_lo, &u->heat_hi);
    for (int i = 0; i < lay->visible_layers && u->top + i < L; i++)
        draw_layer_row(u, &r, u->top + i, r.y + 2 + i, diff);
}
