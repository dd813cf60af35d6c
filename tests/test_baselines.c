/* test_baselines.c — the comparison baselines (search/search_baseline.c): layer-level patterns
 * worked out by hand, and the evaluation-driven rankings (NLL, ablation, Fisher) on a synthetic
 * objective whose per-head costs are known, checked against rankings the test computes itself. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search.h"

#define L 6
#define H 3
#define NS 2

/* per-sample NLL_s(z) = sum over SWA heads of b[s][l][h]; S = mean_s exp(-NLL_s) */
typedef struct {
    double b[NS][L][H];
    double nll[NS];
} synth;

static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    synth *s = ctx;
    double S = 0, nll = 0;
    for (int k = 0; k < NS; k++) {
        s->nll[k] = 0;
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++)
                if (mask_get(m, l, h) == ATTN_SWA) s->nll[k] += s->b[k][l][h];
        S += exp(-s->nll[k]) / NS;
        nll += s->nll[k] / NS;
    }
    *out = (search_eval){S, S > 0.5, nll, 0.0, NS, s->nll};
    return 0;
}

static void synth_init(synth *s, search_objective *o) {
    uint64_t x = 2024;
    for (int k = 0; k < NS; k++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                s->b[k][l][h] = 0.01 + (double)(x >> 40) / (double)(1 << 24);
            }
    *o = (search_objective){.score = synth_score, .ctx = s};
}

static search_state *run(search_method me, double ratio, synth *s, search_objective *o) {
    search_config cfg;
    search_config_default(&cfg);
    cfg.method = me;
    cfg.ratio = ratio;
    cfg.window = 8;
    synth_init(s, o);
    search_state *st;
    char err[256];
    assert_int_equal(search_create(&st, &cfg, L, H, o, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    return st;
}

/* Expected mask: the T entries of smallest key go SWA (ties by index). */
static void expect_cut(const double *key, int n, int T, uint8_t *z) {
    for (int i = 0; i < n; i++) z[i] = ATTN_FULL;
    for (int c = 0; c < T; c++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (z[i] == ATTN_FULL && (best < 0 || key[i] < key[best])) best = i;
        z[best] = ATTN_SWA;
    }
}

static void test_layer_patterns_by_hand(void **state) {
    (void)state;
    uint8_t swa[30];
    /* BME, 30 layers, rho .5: 15 full = 5 begin (0-4), 5 centred ((30-5)/2 = 12: 12-16), 5 end */
    assert_int_equal(search_layer_pattern(SEARCH_METHOD_BME, 30, 0.5, 1, NULL, swa), 0);
    for (int l = 0; l < 30; l++) {
        int full = l <= 4 || (l >= 12 && l <= 16) || l >= 25;
        assert_int_equal(swa[l], !full);
    }
    /* INTR, 30 layers, rho .5: full layers floor((j+.5)*2) = 2j+1: the odd layers */
    assert_int_equal(search_layer_pattern(SEARCH_METHOD_INTR, 30, 0.5, 1, NULL, swa), 0);
    for (int l = 0; l < 30; l++) assert_int_equal(swa[l], l % 2 == 0);
    /* INTR, 30 layers, rho .875: round(26.25) = 26 SWA, 4 full at floor((j+.5)*7.5) = 3 11 18 26 */
    assert_int_equal(search_layer_pattern(SEARCH_METHOD_INTR, 30, 0.875, 1, NULL, swa), 0);
    for (int l = 0; l < 30; l++) assert_int_equal(swa[l], !(l == 3 || l == 11 || l == 18 || l == 26));
    /* BME, 30 layers, rho .25: round(7.5) = 8 SWA, 22 full = 8 begin, 7 centre (11-17), 7 end */
    assert_int_equal(search_layer_pattern(SEARCH_METHOD_BME, 30, 0.25, 1, NULL, swa), 0);
    for (int l = 0; l < 30; l++) {
        int full = l <= 7 || (l >= 11 && l <= 17) || l >= 23;
        assert_int_equal(swa[l], !full);
    }
    /* RAND: right count, reproducible from the seed, seed-dependent */
    uint8_t a[30], b[30], c[30];
    search_layer_pattern(SEARCH_METHOD_RAND, 30, 0.5, 7, NULL, a);
    search_layer_pattern(SEARCH_METHOD_RAND, 30, 0.5, 7, NULL, b);
    search_layer_pattern(SEARCH_METHOD_RAND, 30, 0.5, 8, NULL, c);
    int na = 0;
    for (int l = 0; l < 30; l++) na += a[l];
    assert_int_equal(na, 15);
    assert_memory_equal(a, b, 30);
    assert_true(memcmp(a, c, 30) != 0);
}

static void test_nll_guided(void **state) {
    (void)state;
    synth s;
    search_objective o;
    search_state *st = run(SEARCH_METHOD_NLL, 0.5, &s, &o);
    /* layer l alone SWA raises the mean NLL by mean_s sum_h b[s][l][h]; 3 smallest go SWA */
    double key[L];
    for (int l = 0; l < L; l++) {
        key[l] = 0;
        for (int k = 0; k < NS; k++)
            for (int h = 0; h < H; h++) key[l] += s.b[k][l][h] / NS;
    }
    uint8_t zl[L];
    expect_cut(key, L, 3, zl);
    const attn_mask *m = search_result_mask(st);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) assert_int_equal(mask_get(m, l, h), zl[l]);
    int n;
    const double *imp = search_importance(st, &n);
    assert_int_equal(n, L);
    for (int l = 0; l < L; l++) assert_true(fabs(imp[l] - key[l]) < 1e-12);
    assert_int_equal(search_n_evals(st), 2 + L + 1);
    search_free(st);
}

static void test_ablation_and_fisher(void **state) {
    (void)state;
    synth s;
    search_objective o;
    /* ablation: drop S_full - S(head) = 1 - mean_s exp(-b[s][l][h]) */
    search_state *st = run(SEARCH_METHOD_ABLATION, 0.5, &s, &o);
    double key[L * H];
    for (int i = 0; i < L * H; i++) {
        key[i] = 0;
        for (int k = 0; k < NS; k++) key[i] += (1.0 - exp(-s.b[k][i / H][i % H])) / NS;
    }
    uint8_t z[L * H];
    expect_cut(key, L * H, 9, z);
    assert_memory_equal(search_result_mask(st)->z, z, L * H);
    const double *imp = search_head_importance(st);
    for (int i = 0; i < L * H; i++) assert_true(fabs(imp[i] - key[i]) < 1e-12);
    search_free(st);
    /* Fisher: mean_s (b[s][l][h])^2 (the per-sample NLL difference of that head's gate) */
    st = run(SEARCH_METHOD_FISHER, 0.25, &s, &o);
    for (int i = 0; i < L * H; i++) {
        key[i] = 0;
        for (int k = 0; k < NS; k++) key[i] += s.b[k][i / H][i % H] * s.b[k][i / H][i % H] / NS;
    }
    expect_cut(key, L * H, (int)lround(0.25 * L * H), z);
    assert_memory_equal(search_result_mask(st)->z, z, L * H);
    /* a ranking search has its own ranking's scores (search_head_ranking), and with the default
       options' head scores also ablation's, from the same single-head probes; no locality without
       the model */
    assert_ptr_equal(search_head_ranking(st, SEARCH_METHOD_FISHER), search_head_importance(st));
    const double *drop = search_head_ranking(st, SEARCH_METHOD_ABLATION);
    assert_non_null(drop);
    for (int i = 0; i < L * H; i++) {
        double want = 0;
        for (int k = 0; k < NS; k++) want += (1.0 - exp(-s.b[k][i / H][i % H])) / NS;
        assert_true(fabs(drop[i] - want) < 1e-12);
    }
    assert_null(search_head_ranking(st, SEARCH_METHOD_LOCALITY));
    search_free(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_patterns_by_hand),
        cmocka_unit_test(test_nll_guided),
        cmocka_unit_test(test_ablation_and_fisher),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
