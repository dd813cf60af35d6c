/* layout.c — the explorer's screen layout as a pure function (see layout.h). */
#include "layout.h"

#include <string.h>

#define RIGHT_MIN_W 30

static int digits(int v) {
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

static lay_rect rect(int y, int x, int h, int w) {
    lay_rect r = {y, x, h > 0 ? h : 0, w > 0 ? w : 0};
    if (r.h == 0 || r.w == 0) r.h = r.w = 0;
    return r;
}

int layout_compute(const layout_input *in, layout *out) {
    memset(out, 0, sizeof *out);
    int rows = in->rows > 0 ? in->rows : 0, cols = in->cols > 0 ? in->cols : 0;
    int n_layer = in->n_layer > 0 ? in->n_layer : 1;
    int n_kv = in->n_head_kv > 0 ? in->n_head_kv : 1;
    int group = in->group > 0 ? in->group : 1;

    out->label_w = digits(n_layer - 1) < 2 ? 2 : digits(n_layer - 1);
    if (in->query_view) {
        out->cell_glyph_w = group;
        out->cell_pitch = group + 1;
    } else {
        out->cell_glyph_w = 2;
        out->cell_pitch = 3;
    }
    out->cells_x = 1 + out->label_w + 1;
    out->cells_w = out->cell_pitch * n_kv + 1;
    out->stats_x = out->cells_x + out->cells_w;
    out->stats_w = LAYOUT_STATS_W;

    int left_w = out->stats_x + out->stats_w;
    if (cols - left_w - 1 < RIGHT_MIN_W) { /* drop the stats block before giving up */
        out->stats_w = 0;
        left_w = out->stats_x;
    }
    int right_x = left_w + 1;
    int right_w = cols - right_x;
    int main_h = rows - 2;

    out->fits =
        cols >= LAYOUT_MIN_COLS && rows >= LAYOUT_MIN_ROWS && right_w >= RIGHT_MIN_W && out->stats_w > 0;

    out->panel[LAY_TITLE] = rect(0, 0, rows > 0 ? 1 : 0, cols);
    out->panel[LAY_FOOTER] = rect(rows - 1, 0, rows > 1 ? 1 : 0, cols);
    out->panel[LAY_GRID] = rect(1, 0, main_h, left_w < cols ? left_w : cols);
    out->visible_layers = main_h - 2 > 0 ? main_h - 2 : 0;
    if (out->visible_layers > n_layer) out->visible_layers = n_layer;

    /* Right column, top to bottom: stage, score, mask (4 rows each; stage and score 3 on short
     * terminals, dropping their least important line), then the teaching text and the log. */
    int y = 1;
    int small = main_h < 26;
    const int fixed[3] = {LAY_STAGE, LAY_SCORE, LAY_MASK};
    const int fixed_h[3] = {small ? 3 : 4, small ? 3 : 4, 4};
    for (int i = 0; i < 3; i++) {
        int h = main_h - (y - 1) >= fixed_h[i] ? fixed_h[i] : main_h - (y - 1);
        out->panel[fixed[i]] = rect(y, right_x, h, right_w);
        y += h > 0 ? h : 0;
    }
    int rest = main_h - (y - 1);
    if (rest < 0) rest = 0;
    int teach = rest - 5; /* the log keeps 5 rows (title + 4 events) while the text grows to 8 */
    if (teach > 8) teach = 8;
    if (teach < 4) teach = rest >= 7 ? 4 : rest;
    int log_h = rest - teach;
    if (log_h < 3 && rest >= 7) {
        teach = rest - 3;
        log_h = 3;
    }
    out->panel[LAY_TEACH] = rect(y, right_x, teach, right_w);
    y += teach;
    out->panel[LAY_LOG] = rect(y, right_x, log_h, right_w);
    out->spark_w = right_w - 1 > 0 ? right_w - 1 : 0;
    return out->fits;
}

int layout_grid_top(int n_layer, int visible, int top, int cursor, int focus) {
    if (visible <= 0 || n_layer <= visible) return 0;
    int max_top = n_layer - visible;
    if (top < 0) top = 0;
    if (top > max_top) top = max_top;
    /* Bring the focus (probed layer) into view first, then make sure the cursor wins. */
    if (focus >= 0 && focus < n_layer) {
        int t = top;
        if (focus < t) t = focus;
        if (focus >= t + visible) t = focus - visible + 1;
        if (cursor >= t && cursor < t + visible) top = t;
    }
    if (cursor < top) top = cursor;
    if (cursor >= top + visible) top = cursor - visible + 1;
    if (top < 0) top = 0;
    if (top > max_top) top = max_top;
    return top;
}

int layout_cell_x(const layout *l, int kv_head) {
    return l->cells_x + kv_head * l->cell_pitch;
}

lay_hit layout_hit(const layout *l, int n_layer, int n_head_kv, int top, int y, int x) {
    lay_hit none = {LAY_HIT_NONE, -1, -1};
    lay_rect g = l->panel[LAY_GRID];
    int row = y - (g.y + 2);
    if (!l->fits || n_head_kv < 1 || row < 0 || row >= l->visible_layers || x < g.x || x >= g.x + g.w)
        return none;
    int layer = top + row;
    if (layer < 0 || layer >= n_layer) return none;
    int rel = x - g.x - l->cells_x;
    if (rel < 0 || rel >= l->cell_pitch * n_head_kv + 1) return (lay_hit){LAY_HIT_LAYER, layer, -1};
    int h = rel / l->cell_pitch;
    return (lay_hit){LAY_HIT_CELL, layer, h < n_head_kv ? h : n_head_kv - 1};
}

lay_rect layout_center(int rows, int cols, int h, int w) {
    if (h > rows - 2) h = rows - 2;
    if (w > cols - 2) w = cols - 2;
    int y = (rows - h) / 2, x = (cols - w) / 2;
    return rect(y < 0 ? 0 : y, x < 0 ? 0 : x, h, w);
}
