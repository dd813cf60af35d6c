/* test_attn_view.c — the attention view's pure parts (tui/attn_view.h) against hand-computed cases:
 * resampling a distribution into strip buckets (exact sums, fractional overlaps, mass kept), the
 * heat levels of the logarithmic scale, marker columns, the mass inside an SWA head's visibility
 * and on a span, the restriction to the window, and ranks against search_cut_heads (the cut's SWA
 * heads are exactly those ranked below n - round(rho n)). Then the engine's forward_attn_probs_mask
 * on the real model (skipped without it): with a NULL mask it equals forward_attn_probs; the
 * probabilities of layer l depend only on the mask's layers before l; an SWA layer upstream
 * changes them; every visited row sums to 1.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_view.h"
#include "forward.h"
#include "mask.h"
#include "model.h"
#include "search.h"

static void test_resample(void **st) {
    (void)st;
    const double in[4] = {1, 2, 3, 4};
    double out[8];
    attn_strip_resample(in, 4, out, 2); /* runs of two */
    assert_float_equal(out[0], 3, 1e-12);
    assert_float_equal(out[1], 7, 1e-12);
    attn_strip_resample(in, 4, out, 4); /* a copy */
    for (int i = 0; i < 4; i++) assert_float_equal(out[i], in[i], 1e-12);
    attn_strip_resample(in, 4, out, 3); /* bins of 4/3: 1 + 2/3*... by hand */
    assert_float_equal(out[0], 1 + 2.0 / 3, 1e-12);
    assert_float_equal(out[1], 2 * 2.0 / 3 + 3 * 2.0 / 3, 1e-12);
    assert_float_equal(out[2], 3.0 / 3 + 4, 1e-12);
    attn_strip_resample(in, 4, out, 8); /* each element split in halves */
    const double halves[8] = {0.5, 0.5, 1, 1, 1.5, 1.5, 2, 2};
    for (int i = 0; i < 8; i++) assert_float_equal(out[i], halves[i], 1e-12);
    /* a long prompt into a strip: the mass is kept */
    double big[1000], strip[37], sum = 0;
    for (int i = 0; i < 1000; i++) big[i] = 1.0 / (i + 1);
    attn_strip_resample(big, 1000, strip, 37);
    for (int b = 0; b < 37; b++) sum += strip[b];
    double want = 0;
    for (int i = 0; i < 1000; i++) want += big[i];
    assert_float_equal(sum, want, 1e-9);
}

static void test_levels_cols(void **st) {
    (void)st;
    assert_int_equal(attn_strip_level(1.0, 1.0), 4);
    assert_int_equal(attn_strip_level(0.1, 1.0), 3);    /* 1 + floor(4 * 2/3) */
    assert_int_equal(attn_strip_level(0.01, 1.0), 2);   /* 1 + floor(4 * 1/3) */
    assert_int_equal(attn_strip_level(0.0011, 1.0), 1); /* just above the floor */
    assert_int_equal(attn_strip_level(0.001, 1.0), 0);  /* at max / 1000: blank */
    assert_int_equal(attn_strip_level(0, 1.0), 0);
    assert_int_equal(attn_strip_level(0.5, 0), 0); /* no strip */
    assert_int_equal(attn_strip_col(0, 256, 64), 0);
    assert_int_equal(attn_strip_col(128, 256, 64), 32);
    assert_int_equal(attn_strip_col(255, 256, 64), 63);
    assert_int_equal(attn_strip_col(300, 256, 64), 63);
    assert_int_equal(attn_strip_col(377, 505, 52), 38); /* 377 * 52 / 505 = 38.8 */
}

static void test_window_mass(void **st) {
    (void)st;
    float p[10];
    for (int j = 0; j < 10; j++) p[j] = (float)(j + 1) / 55.0f;
    /* query 9, window 3, sinks 2: keys 0 1 | 7 8 9 */
    for (int j = 0; j < 10; j++) assert_int_equal(attn_visible(j, 9, 3, 2), j < 2 || j >= 7);
    assert_int_equal(attn_visible(9, 8, 3, 2), 0); /* a future key */
    assert_float_equal(attn_window_mass(p, 9, 3, 2), 30.0 / 55, 1e-6);
    assert_float_equal(attn_window_mass(p, 9, 10, 0), 1.0, 1e-6);
    assert_float_equal(attn_span_mass(p, 9, 2, 3), 12.0 / 55, 1e-6);
    assert_float_equal(attn_span_mass(p, 5, 4, 4), 11.0 / 55, 1e-6); /* keys 4, 5 only */
    double in = attn_restrict_window(p, 9, 3, 2);
    assert_float_equal(in, 30.0 / 55, 1e-6);
    assert_float_equal(p[7], 8.0 / 30, 1e-6);
    assert_float_equal(p[0], 1.0 / 30, 1e-6);
    assert_float_equal(p[3], 0, 0);
    double sum = 0;
    for (int j = 0; j < 10; j++) sum += p[j];
    assert_float_equal(sum, 1.0, 1e-6);
}

/* The cut of a ranking sends exactly the heads of rank > n - round(rho n) to SWA. */
static void test_rank_matches_cut(void **st) {
    (void)st;
    enum { LL = 4, HH = 3, N = LL * HH };
    const double imp[N] = {0.5, 0.1, 0.1, 0.9, 0.3, 0.1, 0.7, 0.5, 0.2, 0.0, 0.6, 0.1};
    int seen[N + 1] = {0};
    for (int u = 0; u < N; u++) seen[attn_rank(imp, N, u)]++;
    for (int r = 1; r <= N; r++) assert_int_equal(seen[r], 1); /* a permutation */
    assert_int_equal(attn_rank(imp, N, 3), 1);                 /* 0.9 */
    assert_int_equal(attn_rank(imp, N, 9), N);                 /* 0.0 */
    for (int k = 0; k <= 4; k++) {
        double ratio = k / 4.0;
        attn_mask m;
        assert_int_equal(mask_init(&m, LL, HH, 8, 0, ATTN_FULL), 0);
        assert_int_equal(search_cut_heads(imp, ratio, &m), 0);
        int n_swa = (int)lround(ratio * N);
        for (int u = 0; u < N; u++) assert_int_equal(m.z[u] == ATTN_SWA, attn_rank(imp, N, u) > N - n_swa);
        mask_free(&m);
    }
}

/* ---- the engine's probabilities under a mask (real model) ---------------------------------- */

typedef struct {
    int layer, pos, n_head;
    float *p; /* [n_head][pos + 1] */
    double worst_sum;
} grab;

static void visit(void *user, int layer, int h, int pos, const float *p) {
    grab *g = user;
    double s = 0;
    for (int j = 0; j <= pos; j++) s += p[j];
    if (fabs(s - 1) > g->worst_sum) g->worst_sum = fabs(s - 1);
    if (layer == g->layer && pos == g->pos)
        memcpy(g->p + (size_t)h * (pos + 1), p, sizeof(float) * (pos + 1));
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

static void test_probs_mask(void **st) {
    (void)st;
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    FILE *f = fopen(path, "rb");
    if (!f) skip();
    fclose(f);
    model *m;
    char err[512];
    assert_int_equal(model_load(&m, path, err, sizeof err), 0);
    const model_hparams *hp = &m->hp;
    enum { T = 48 };
    int32_t tok[T];
    for (int i = 0; i < T; i++) tok[i] = 100 + 37 * i;
    const int layer = 3, n = hp->n_head * T;
    grab g[4];
    for (int k = 0; k < 4; k++) g[k] = (grab){layer, T - 1, hp->n_head, calloc((size_t)n, sizeof(float)), 0};
    attn_mask later, early;
    assert_int_equal(mask_init(&later, hp->n_layer, hp->n_head_kv, 8, 0, ATTN_FULL), 0);
    assert_int_equal(mask_init(&early, hp->n_layer, hp->n_head_kv, 8, 0, ATTN_FULL), 0);
    for (int l = layer; l < hp->n_layer; l++)
        for (int h = 0; h < hp->n_head_kv; h++) mask_set(&later, l, h, ATTN_SWA); /* at and after the layer */
    for (int h = 0; h < hp->n_head_kv; h++) mask_set(&early, 0, h, ATTN_SWA);     /* upstream */
    assert_int_equal(forward_attn_probs(m, tok, T, T - 1, T, visit, &g[0], err, sizeof err), 0);
    assert_int_equal(forward_attn_probs_mask(m, NULL, tok, T, T - 1, T, visit, &g[1], err, sizeof err), 0);
    assert_int_equal(forward_attn_probs_mask(m, &later, tok, T, T - 1, T, visit, &g[2], err, sizeof err), 0);
    assert_int_equal(forward_attn_probs_mask(m, &early, tok, T, T - 1, T, visit, &g[3], err, sizeof err), 0);
    assert_true(max_diff(g[0].p, g[1].p, (size_t)n) == 0);   /* NULL: every head full, bitwise */
    assert_true(max_diff(g[0].p, g[2].p, (size_t)n) == 0);   /* only layers before l matter */
    assert_true(max_diff(g[0].p, g[3].p, (size_t)n) > 1e-4); /* an SWA layer 0 changes layer 3 */
    for (int k = 0; k < 4; k++) assert_true(g[k].worst_sum < 1e-4);
    attn_mask bad;
    assert_int_equal(mask_init(&bad, hp->n_layer - 1, hp->n_head_kv, 8, 0, ATTN_FULL), 0);
    assert_int_equal(forward_attn_probs_mask(m, &bad, tok, T, T - 1, T, visit, &g[0], err, sizeof err), -1);
    assert_non_null(strstr(err, "mask is"));
    mask_free(&bad), mask_free(&later), mask_free(&early);
    for (int k = 0; k < 4; k++) free(g[k].p);
    model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resample),    cmocka_unit_test(test_levels_cols),
        cmocka_unit_test(test_window_mass), cmocka_unit_test(test_rank_matches_cut),
        cmocka_unit_test(test_probs_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
