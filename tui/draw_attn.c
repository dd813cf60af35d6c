/* draw_attn.c — the attention view (UI_ATTN): for the KV head under the cursor, one heat strip per
 * query head of its GQA group over the whole prompt (attn_view.h buckets and levels), under full
 * attention and as an SWA head, with the needle's span and the window's edge marked above them,
 * the share of the attention inside the window and on the needle, the sample's answer probability
 * under the working mask, and the head's score and rank in each static ranking of the method
 * registry (search_methods.h). The numbers
 * come from the worker (snapshot attn, worker_attn.c); this file only lays them out. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_view.h"
#include "explorer_ui.h"

#define LABEL_W 9  /* "q0  full " */
#define STATS_W 23 /* " in 100.0% ndl 100.0%" */

static const char *level_glyph(const ui_state *u, int level) {
    static const char *const utf8[ATTN_LEVELS] = {" ", "░", "▒", "▓", "█"};
    static const char *const ascii[ATTN_LEVELS] = {" ", ".", ":", "*", "#"};
    return (u->utf8 ? utf8 : ascii)[level];
}

/* One strip: bucket masses in[EX_ATTN_BUCKETS] drawn in w columns at (y, x). */
static void draw_strip(ui_state *u, int y, int x, int w, const float *in, int attr) {
    double src[EX_ATTN_BUCKETS], col[512], max = 0;
    if (w > 512) w = 512;
    for (int b = 0; b < EX_ATTN_BUCKETS; b++) src[b] = in[b];
    attn_strip_resample(src, EX_ATTN_BUCKETS, col, w);
    for (int c = 0; c < w; c++) max = col[c] > max ? col[c] : max;
    attron(attr);
    for (int c = 0; c < w; c++) mvaddstr(y, x + c, level_glyph(u, attn_strip_level(col[c], max)));
    attroff(attr);
}

/* The marks over the strips: s the sinks, = the needle's span, | the window's edge and - the
 * window (the keys an SWA head at the answer position sees). */
static void draw_marks(ui_state *u, int y, int x, int w, const ex_attn *a) {
    char row[512];
    if (w > 511) w = 511;
    memset(row, ' ', (size_t)w);
    row[w] = '\0';
    const int n = a->n_keys, edge = n - a->window; /* first key of the window */
    for (int c = edge > 0 ? attn_strip_col(edge, n, w) : 0; c < w; c++) row[c] = '-';
    if (edge > 0) row[attn_strip_col(edge, n, w)] = '|';
    for (int c = 0; a->sinks > 0 && c <= attn_strip_col(a->sinks - 1, n, w); c++) row[c] = 's';
    int c0 = attn_strip_col(a->needle_pos, n, w),
        c1 = attn_strip_col(a->needle_pos + a->needle_len - 1, n, w);
    for (int c = c0; c <= c1; c++) row[c] = '=';
    draw_text(y, x, w, ui_attr(u, PAIR_ACCENT, A_BOLD), "%s", row);
}

/* "12.3%" or "-" */
static void fmt_share(double v, char *buf, size_t cap) {
    if (isfinite(v))
        snprintf(buf, cap, "%5.1f%%", 100 * v);
    else
        snprintf(buf, cap, "    -");
}

static void draw_heads(ui_state *u, int y, int x, int w, int max_rows, const ex_attn *a) {
    const int sw = w - LABEL_W - STATS_W;
    for (int q = 0; q < a->n_q && 2 * q + 1 < max_rows; q++) {
        char in[16], nd[16];
        for (int s = 0; s < 2; s++) {
            int yy = y + 2 * q + s;
            if (s == 0)
                draw_text(yy, x, LABEL_W, A_BOLD, "q%-2d full ", a->q0 + q);
            else
                draw_text(yy, x, LABEL_W, A_NORMAL, "    SWA  ");
            draw_strip(u, yy, x + LABEL_W, sw, s ? a->swa[q] : a->full[q],
                       ui_attr(u, s ? PAIR_SWA : PAIR_FULL, s ? A_NORMAL : A_BOLD));
            fmt_share(s ? a->in_swa[q] : a->in_full[q], in, sizeof in);
            fmt_share(s ? a->needle_swa[q] : a->needle_full[q], nd, sizeof nd);
            draw_text(yy, x + LABEL_W + sw, STATS_W, A_NORMAL, " in %s ndl %s", in, nd);
        }
    }
}

static void draw_ranks(ui_state *u, int y, int x, int w, const ex_attn *a) {
    draw_text(y++, x, w, A_BOLD, "static rankings: score, rank of %d (1 = kept full first)", a->rank_n);
    for (int k = 0; k < ex_n_ranks(); k++) {
        char cell[64];
        if (a->rank_state[k] == EX_RANK_READY)
            snprintf(cell, sizeof cell, "%-8s %9.3g #%-3d", ex_rank_name(k), a->rank_score[k], a->rank[k]);
        else if (a->rank_state[k] == EX_RANK_RUNNING)
            snprintf(cell, sizeof cell, "%-8s computing %ld/%ld", ex_rank_name(k), a->rank_evals,
                     a->rank_budget);
        else
            snprintf(cell, sizeof cell, "%-8s %s", ex_rank_name(k),
                     a->rank_state[k] == EX_RANK_FAILED ? "failed (log)" : "pending");
        int half = w / 2;
        draw_text(y + k / 2, x + (k % 2) * half, half, A_NORMAL, "%s", cell);
    }
}

void draw_attn(ui_state *u) {
    const ex_attn *a = &u->snap.attn;
    const int want = 13 + 2 * (a->n_q > 0 ? a->n_q : 3); /* header 5, strips, text 2, legend, rankings 4 */
    int h = u->rows - 2 < want ? u->rows - 2 : want, w = u->cols - 2;
    lay_rect r = layout_center(u->rows, u->cols, h, w);
    /* the title names the head whose numbers are below (the cursor's once they come); a
       computation in flight is said on the first row, in place of the sample line, so the box keeps
       its rows */
    ex_mask cur = u->mask;
    attn_mask cv;
    ex_mask_view(&cur, &cv);
    int current = a->seq > 0 && a->layer == u->cur_layer && a->kv_head == u->cur_head &&
                  a->split == u->attn_split && a->sample_asked == u->attn_sample &&
                  a->mask_hash == mask_hash(&cv);
    const int shown = a->seq > 0 && a->ok;
    char title[96];
    snprintf(title, sizeof title, "Attention of L%d kv%d at the answer position",
             shown ? a->layer : u->cur_layer, shown ? a->kv_head : u->cur_head);
    draw_box(&r, u, title);
    int x = r.x + 2, iw = r.w - 4, y = r.y + 1;
    if (!current || u->snap.busy) {
        draw_text(y, x, iw, ui_attr(u, PAIR_ACCENT, A_BOLD), "computing L%d kv%d on the %s split...%s",
                  u->cur_layer, u->cur_head, u->attn_split ? "held-out" : "calibration",
                  shown ? " (below: the last one computed)" : "");
        if (!shown) {
            if (a->seq > 0) draw_wrap(y + 1, x, iw, 3, ui_attr(u, PAIR_BAD, A_BOLD), a->msg);
            return;
        }
        y++;
    } else if (!a->ok) {
        draw_wrap(y, x, iw, 3, ui_attr(u, PAIR_BAD, A_BOLD), a->msg);
        return;
    } else {
        draw_text(y++, x, iw, A_NORMAL,
                  "L%d kv%d, query heads %d-%d, %s sample %d of %d, %d tokens, W %d, S %d", a->layer,
                  a->kv_head, a->q0, a->q0 + a->n_q - 1, a->split ? "held-out" : "calibration", a->sample + 1,
                  a->n_samples, a->n_keys, a->window, a->sinks);
    }
    draw_text(y++, x, iw, A_BOLD, "p(answer %s): %.3f with the mask%s, %.3f all full", a->needle, a->p_answer,
              a->exact ? " (exact)" : "", a->p_answer_full);
    draw_text(y, x, LABEL_W, ui_attr(u, PAIR_DIM, A_NORMAL), "0");
    draw_text(y, x + iw - STATS_W - 6, 6, ui_attr(u, PAIR_DIM, A_NORMAL), "%5d", a->n_keys - 1);
    draw_text(y++, x + iw - STATS_W, STATS_W, ui_attr(u, PAIR_DIM, A_NORMAL), " window  needle");
    draw_marks(u, y++, x + LABEL_W, iw - LABEL_W - STATS_W, a);
    int rows_left = r.y + r.h - 1 - y - 7; /* the text, the legend and the rankings below */
    draw_heads(u, y, x, iw, rows_left, a);
    y += 2 * a->n_q < rows_left ? 2 * a->n_q : rows_left - rows_left % 2;
    draw_text(y++, x, iw, ui_attr(u, PAIR_DIM, A_NORMAL), "= needle  s sinks  |--- window (last W)  %s",
              u->utf8 ? "░▒▓█ more attention" : ".:*# more attention");
    /* the text: the needle's sentence, and the words either side of the window's edge */
    draw_text(y, x, 8, A_BOLD, "needle ");
    draw_text_words(y++, x + 8, iw - 8, A_NORMAL, u->utf8 ? "\u2026" : "...", a->text_needle);
    if (a->text_after_edge[0]) {
        char edge[2 * EX_LINE + 8];
        const int half = (iw - 8 - 3) / 2, bl = (int)strlen(a->text_before_edge);
        /* the end of the words before the edge, then the start of the window's */
        snprintf(edge, sizeof edge, "%s%s | %s", bl > half ? "..." : "",
                 bl > half ? a->text_before_edge + bl - half + 3 : a->text_before_edge, a->text_after_edge);
        draw_text(y, x, 8, A_BOLD, "edge ");
        draw_text_words(y++, x + 8, iw - 8, A_NORMAL, u->utf8 ? "\u2026" : "...", edge);
    } else {
        draw_text(y++, x, iw, ui_attr(u, PAIR_DIM, A_NORMAL), "the window covers the whole prompt");
    }
    draw_ranks(u, y, x, iw, a);
}
