/* test_layout.c — the explorer's pure layout (tui/layout.h), without curses.
 * Checks, for many terminal sizes and model shapes: panels stay on screen and never overlap, the
 * grid row holds label + cells + stats, the minimum size (80x24) fits the default model's shape
 * (30 layers, 3 KV heads, GQA group 3) with the numbers worked out by hand below, and scrolling
 * keeps the cursor (and the probed layer when possible) visible.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "layout.h"

static int overlap(lay_rect a, lay_rect b) {
    if (!a.h || !a.w || !b.h || !b.w) return 0;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static void check_invariants(const layout_input *in, const layout *l) {
    for (int p = 0; p < LAY_N; p++) {
        lay_rect r = l->panel[p];
        if (!r.h) continue;
        assert_true(r.y >= 0 && r.x >= 0);
        assert_true(r.y + r.h <= in->rows);
        assert_true(r.x + r.w <= in->cols);
        for (int q = p + 1; q < LAY_N; q++)
            if (overlap(r, l->panel[q]))
                fail_msg("panels %d and %d overlap at %dx%d", p, q, in->cols, in->rows);
    }
    if (l->fits) {
        /* a grid row: marker, label, space, cells, stats — inside the grid rect */
        assert_int_equal(l->cells_x, 1 + l->label_w + 1);
        assert_true(l->stats_x + l->stats_w <= l->panel[LAY_GRID].w);
        assert_true(layout_cell_x(l, in->n_head_kv - 1) + l->cell_pitch < l->stats_x + 1);
        assert_int_equal(l->visible_layers,
                         in->n_layer < l->panel[LAY_GRID].h - 2 ? in->n_layer : l->panel[LAY_GRID].h - 2);
        assert_true(l->panel[LAY_LOG].h >= 3);
        assert_true(l->panel[LAY_TEACH].h >= 4);
        /* the right column panels are stacked without gaps down to the footer */
        int y = 1;
        const int order[] = {LAY_STAGE, LAY_SCORE, LAY_MASK, LAY_TEACH, LAY_LOG};
        for (int i = 0; i < 5; i++) {
            assert_int_equal(l->panel[order[i]].y, y);
            y += l->panel[order[i]].h;
        }
        assert_int_equal(y, in->rows - 1);
    }
}

static void test_minimum_size_default_model(void **state) {
    (void)state;
    layout_input in = {.rows = 24, .cols = 80, .n_layer = 30, .n_head_kv = 3, .group = 3};
    layout l;
    assert_int_equal(layout_compute(&in, &l), 1);
    check_invariants(&in, &l);
    /* By hand: label "29" = 2 columns; cells start at 1+2+1 = 4; 3 KV heads x 3 + 1 = 10 columns;
     * stats 24 columns; grid width 38; right column from x = 39, 41 wide; 22 main rows, 20 layers. */
    assert_int_equal(l.label_w, 2);
    assert_int_equal(l.cells_x, 4);
    assert_int_equal(l.cells_w, 10);
    assert_int_equal(l.stats_x, 14);
    assert_int_equal(l.panel[LAY_GRID].w, 38);
    assert_int_equal(l.panel[LAY_STAGE].x, 39);
    assert_int_equal(l.panel[LAY_STAGE].w, 41);
    assert_int_equal(l.visible_layers, 20);
    assert_int_equal(l.panel[LAY_FOOTER].y, 23);
    /* short terminal: stage 3, score 3, mask 4 rows; 12 left: teaching text 7, log 5 */
    assert_int_equal(l.panel[LAY_STAGE].h, 3);
    assert_int_equal(l.panel[LAY_SCORE].h, 3);
    assert_int_equal(l.panel[LAY_MASK].h, 4);
    assert_int_equal(l.panel[LAY_TEACH].h, 7);
    assert_int_equal(l.panel[LAY_LOG].h, 5);
    assert_int_equal(layout_cell_x(&l, 0), 4);
    assert_int_equal(layout_cell_x(&l, 2), 10);

    in.query_view = 1; /* 3 groups of 3 one-column glyphs: 4*3+1 = 13 columns */
    assert_int_equal(layout_compute(&in, &l), 1);
    check_invariants(&in, &l);
    assert_int_equal(l.cells_w, 13);
    assert_int_equal(l.cell_glyph_w, 3);
    assert_int_equal(layout_cell_x(&l, 1), 8);
}

static void test_large_terminal_shows_all_layers(void **state) {
    (void)state;
    layout_input in = {.rows = 45, .cols = 140, .n_layer = 30, .n_head_kv = 3, .group = 3};
    layout l;
    assert_int_equal(layout_compute(&in, &l), 1);
    check_invariants(&in, &l);
    assert_int_equal(l.visible_layers, 30);
    assert_int_equal(l.panel[LAY_STAGE].h, 4);
    assert_int_equal(l.panel[LAY_TEACH].h, 8);
    assert_int_equal(l.panel[LAY_LOG].h, 43 - 12 - 8);
    assert_int_equal(l.panel[LAY_STAGE].w, 140 - 39);
}

static void test_too_small(void **state) {
    (void)state;
    layout l;
    layout_input in = {.rows = 23, .cols = 80, .n_layer = 30, .n_head_kv = 3, .group = 3};
    assert_int_equal(layout_compute(&in, &l), 0);
    check_invariants(&in, &l);
    in.rows = 24;
    in.cols = 79;
    assert_int_equal(layout_compute(&in, &l), 0);
    check_invariants(&in, &l);
    in.rows = 0;
    in.cols = 0;
    assert_int_equal(layout_compute(&in, &l), 0);
    /* 32 KV heads at 80 columns: the cells alone leave no right column */
    layout_input wide = {.rows = 24, .cols = 80, .n_layer = 30, .n_head_kv = 32, .group = 1};
    assert_int_equal(layout_compute(&wide, &l), 0);
    check_invariants(&wide, &l);
}

static void test_sweep_sizes_and_shapes(void **state) {
    (void)state;
    const int shapes[][3] = {{30, 3, 3}, {1, 1, 1}, {24, 8, 4}, {36, 8, 2}, {128, 2, 8}, {12, 4, 4}};
    int n_fit = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rows = 1; rows <= 70; rows += 3)
            for (int cols = 1; cols <= 220; cols += 7)
                for (int qv = 0; qv < 2; qv++) {
                    layout_input in = {rows, cols, shapes[s][0], shapes[s][1], shapes[s][2], qv};
                    layout l;
                    n_fit += layout_compute(&in, &l);
                    check_invariants(&in, &l);
                    if (l.fits) assert_true(cols >= 80 && rows >= 24);
                }
    assert_true(n_fit > 100);
}

static void test_grid_scroll(void **state) {
    (void)state;
    /* everything visible: always 0 */
    assert_int_equal(layout_grid_top(30, 30, 5, 29, 0), 0);
    /* 20 of 30 rows: cursor below the window scrolls down just enough */
    assert_int_equal(layout_grid_top(30, 20, 0, 19, -1), 0);
    assert_int_equal(layout_grid_top(30, 20, 0, 20, -1), 1);
    assert_int_equal(layout_grid_top(30, 20, 0, 29, -1), 10);
    assert_int_equal(layout_grid_top(30, 20, 10, 3, -1), 3);
    /* the probed layer (focus) is brought into view when the cursor stays visible */
    assert_int_equal(layout_grid_top(30, 20, 0, 15, 27), 8);
    /* ...but never at the cursor's expense */
    assert_int_equal(layout_grid_top(30, 20, 0, 2, 27), 0);
    /* out-of-range tops are clamped */
    assert_int_equal(layout_grid_top(30, 20, 99, 29, -1), 10);
    assert_int_equal(layout_grid_top(30, 20, -4, 0, -1), 0);
}

static void test_center(void **state) {
    (void)state;
    lay_rect r = layout_center(24, 80, 10, 40);
    assert_int_equal(r.y, 7);
    assert_int_equal(r.x, 20);
    assert_int_equal(r.h, 10);
    assert_int_equal(r.w, 40);
    r = layout_center(24, 80, 40, 100); /* clipped to leave a margin */
    assert_int_equal(r.h, 22);
    assert_int_equal(r.w, 78);
    assert_int_equal(r.y, 1);
    assert_int_equal(r.x, 1);
}

/* Mouse hit-testing at 80x24 on the default model, worked out by hand from the layout: the grid
 * panel starts on row 1 (its title), row 2 is the column header, layer rows are 3..22 (20 visible);
 * label_w 2, cells_x 4, pitch 3: KV head h owns columns 4+3h .. 6+3h (gap then 2 glyph columns),
 * and head 2 also the closing bracket at 13; the stats follow from 14; the right column from 39. */
static void test_hit(void **state) {
    (void)state;
    layout_input in = {.rows = 24, .cols = 80, .n_layer = 30, .n_head_kv = 3, .group = 3};
    layout l;
    assert_true(layout_compute(&in, &l));
    const int top = 10;
    struct {
        int y, x;
        lay_hit_kind kind;
        int layer, head;
    } cases[] = {
        {3, 5, LAY_HIT_CELL, 10, 0},    {3, 4, LAY_HIT_CELL, 10, 0},    {3, 6, LAY_HIT_CELL, 10, 0},
        {3, 7, LAY_HIT_CELL, 10, 1},    {12, 11, LAY_HIT_CELL, 19, 2},  {22, 13, LAY_HIT_CELL, 29, 2},
        {22, 12, LAY_HIT_CELL, 29, 2},  {5, 0, LAY_HIT_LAYER, 12, -1},  {5, 2, LAY_HIT_LAYER, 12, -1},
        {5, 14, LAY_HIT_LAYER, 12, -1}, {5, 37, LAY_HIT_LAYER, 12, -1}, {5, 38, LAY_HIT_NONE, -1, -1},
        {5, 60, LAY_HIT_NONE, -1, -1},  {2, 5, LAY_HIT_NONE, -1, -1},   {1, 5, LAY_HIT_NONE, -1, -1},
        {23, 5, LAY_HIT_NONE, -1, -1},  {0, 5, LAY_HIT_NONE, -1, -1},
    };
    assert_int_equal(l.panel[LAY_GRID].w, 38);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lay_hit h = layout_hit(&l, 30, 3, top, cases[i].y, cases[i].x);
        if (h.kind != cases[i].kind || h.layer != cases[i].layer || h.kv_head != cases[i].head)
            fail_msg("(%d,%d): got %d L%d h%d, want %d L%d h%d", cases[i].y, cases[i].x, h.kind, h.layer,
                     h.kv_head, cases[i].kind, cases[i].layer, cases[i].head);
    }
    /* scrolled to the top, the same row is layer 0; a model of 12 layers leaves rows below empty */
    assert_int_equal(layout_hit(&l, 30, 3, 0, 3, 5).layer, 0);
    in.n_layer = 12;
    assert_true(layout_compute(&in, &l));
    assert_int_equal(layout_hit(&l, 12, 3, 0, 14, 5).layer, 11);
    assert_int_equal(layout_hit(&l, 12, 3, 0, 15, 5).kind, LAY_HIT_NONE);
    /* query view: group 3, pitch 4: KV head 1 owns columns 8..11 */
    in.n_layer = 30, in.query_view = 1;
    assert_true(layout_compute(&in, &l));
    assert_int_equal(layout_hit(&l, 30, 3, 0, 3, 8).kv_head, 1);
    assert_int_equal(layout_hit(&l, 30, 3, 0, 3, 11).kv_head, 1);
    assert_int_equal(layout_hit(&l, 30, 3, 0, 3, 12).kv_head, 2);
    /* a layout that does not fit hits nothing */
    in.rows = 20;
    layout_compute(&in, &l);
    assert_int_equal(layout_hit(&l, 30, 3, 0, 3, 5).kind, LAY_HIT_NONE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimum_size_default_model),
        cmocka_unit_test(test_large_terminal_shows_all_layers),
        cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_sweep_sizes_and_shapes),
        cmocka_unit_test(test_grid_scroll),
        cmocka_unit_test(test_center),
        cmocka_unit_test(test_hit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
