/* test_stage2.c — BOSCH stage 2 (search_stage2_assign) and the static ranking cut
 * (search_cut_heads) on hand-worked cases. Each expected value below is worked out by hand from
 * the rule in search/stage2.c (also docs/search.md); the working is in the comments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "search.h"

static int sum_int(const int *a, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}

/* L=4, H=3, rho=0.5 -> T = 6. delta = .1 .3 .2 .1 -> w = 0 1 .5 0, tolerance t = 1 0 .5 1.
 * Water-filling 3c*(1+0+.5+1) = 6 -> c = .8 -> x = 2.4 0 1.2 2.4; floors 2 0 1 2 (sum 5);
 * one head left: largest fraction .4 tied between layers 0 and 3 (same w) -> layer 0.
 * n = 3 0 1 2; levels 3,2,1,0 all used -> buckets 0 3 2 1. */
static void test_basic_with_tie(void **state) {
    (void)state;
    double delta[4] = {0.1, 0.3, 0.2, 0.1}, w[4];
    int n[4], b[4];
    assert_int_equal(search_stage2_assign(delta, 4, 3, 0.5, 4, w, n, b), 0);
    int en[4] = {3, 0, 1, 2}, eb[4] = {0, 3, 2, 1};
    double ew[4] = {0, 1, 0.5, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(n[i], en[i]);
        assert_int_equal(b[i], eb[i]);
        assert_true(fabs(w[i] - ew[i]) < 1e-12);
    }
    assert_int_equal(sum_int(n, 4), 6);
}

/* All-equal drops: every w = 0, x = 1.5 each, floors 1 (sum 4), two heads left, all fractions
 * equal -> lowest layers 0 and 1: n = 2 2 1 1; levels {2,1} -> buckets 0 0 1 1. */
static void test_all_equal_drops(void **state) {
    (void)state;
    double delta[4] = {0.2, 0.2, 0.2, 0.2}, w[4];
    int n[4], b[4];
    assert_int_equal(search_stage2_assign(delta, 4, 3, 0.5, 4, w, n, b), 0);
    int en[4] = {2, 2, 1, 1}, eb[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(n[i], en[i]);
        assert_int_equal(b[i], eb[i]);
        assert_true(w[i] == 0.0);
    }
}

/* rho needing rounding: L=5, H=3, rho=.25 -> 3.75 -> T = 4. delta = 0 .5 1 .25 .75 = w;
 * t = 1 .5 0 .75 .25 (sum 2.5): 7.5c = 4 -> c = .5333, x = 1.6 .8 0 1.2 .4; floors 1 0 0 1 0 (2);
 * two heads left by fraction: layer 1 (.8), layer 0 (.6) -> n = 2 1 0 1 0. */
static void test_rounding(void **state) {
    (void)state;
    double delta[5] = {0, 0.5, 1, 0.25, 0.75};
    int n[5], b[5];
    assert_int_equal(search_stage2_assign(delta, 5, 3, 0.25, 4, NULL, n, b), 0);
    int en[5] = {2, 1, 0, 1, 0}, eb[5] = {0, 1, 2, 1, 2};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(n[i], en[i]);
        assert_int_equal(b[i], eb[i]);
    }
}

/* Caps: L=4, H=3, rho=.875 -> 10.5 -> T = 11 (halves away from zero). delta .3 .1 .2 .4 ->
 * t = 1/3 1 2/3 0: layers 1, 2 and 0 saturate at 3 heads (9), the most sensitive layer 3 takes
 * the remaining 2 -> n = 3 3 3 2; levels {3,2} -> buckets 0 0 0 1. */
static void test_caps_and_half_rounding(void **state) {
    (void)state;
    double delta[4] = {0.3, 0.1, 0.2, 0.4};
    int n[4], b[4];
    assert_int_equal(search_stage2_assign(delta, 4, 3, 0.875, 4, NULL, n, b), 0);
    int en[4] = {3, 3, 3, 2}, eb[4] = {0, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(n[i], en[i]);
        assert_int_equal(b[i], eb[i]);
    }
}

/* More levels than buckets: L=5, H=8, rho=.5 -> T = 20; delta 0..4 -> t = 1 .75 .5 .25 0,
 * 20c = 20 -> x = 8 6 4 2 0. Five levels in use, 4 buckets: bucket = floor(j*4/5) for the j-th
 * level (highest first): 0 0 1 2 3. */
static void test_bucket_merge(void **state) {
    (void)state;
    double delta[5] = {0, 1, 2, 3, 4};
    int n[5], b[5];
    assert_int_equal(search_stage2_assign(delta, 5, 8, 0.5, 4, NULL, n, b), 0);
    int en[5] = {8, 6, 4, 2, 0}, eb[5] = {0, 0, 1, 2, 3};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(n[i], en[i]);
        assert_int_equal(b[i], eb[i]);
    }
}

/* Exact total and monotonicity on many pseudo-random cases (SmolLM2 shape: 30 x 3). */
static void test_exact_total_random(void **state) {
    (void)state;
    const double ratios[] = {0.0, 0.1, 0.25, 0.5, 0.6, 0.75, 0.875, 1.0};
    uint64_t x = 12345;
    for (int trial = 0; trial < 200; trial++) {
        double delta[30];
        int n[30], b[30];
        for (int l = 0; l < 30; l++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            delta[l] = (double)(x >> 40) / (double)(1 << 24) * (trial % 3 ? 1.0 : 0.0);
        }
        double rho = ratios[trial % 8];
        assert_int_equal(search_stage2_assign(delta, 30, 3, rho, 4, NULL, n, b), 0);
        assert_int_equal(sum_int(n, 30), (int)lround(rho * 90));
        for (int i = 0; i < 30; i++) {
            assert_true(n[i] >= 0 && n[i] <= 3);
            for (int j = 0; j < 30; j++)
                if (delta[i] < delta[j]) assert_true(n[i] >= n[j]); /* tolerant -> higher ratio */
        }
    }
}

/* Static ranking cut: importance [2][3]; rho .5 -> 3 SWA heads: .1 (l0h1), .1 (l1h0, tie after
 * by index), .2 (l1h2). */
static void test_cut_heads(void **state) {
    (void)state;
    double imp[6] = {0.5, 0.1, 0.3, 0.1, 0.9, 0.2};
    attn_mask m;
    assert_int_equal(mask_init(&m, 2, 3, 16, 0, ATTN_FULL), 0);
    assert_int_equal(search_cut_heads(imp, 0.5, &m), 0);
    uint8_t expect[6] = {ATTN_FULL, ATTN_SWA, ATTN_FULL, ATTN_SWA, ATTN_FULL, ATTN_SWA};
    assert_memory_equal(m.z, expect, 6);
    mask_free(&m);
}

/* Rank ladder, 30 layers x 3 KV heads, rho .5 -> T = 45; delta = layer index (w = l/29, layer 0
 * most tolerant). Chunks of 8, 8, 7, 7 by rank at levels 3, 2, 1, 0: sum 24+16+7 = 47. Over by 2:
 * levels 3 and 2 tie at 8 layers -> the higher (3) moves its least tolerant layer (7) down to 2;
 * now level 2 has 9 -> its least tolerant layer (15) moves to 1. Result: layers 0-6 at 3, 7-14 at
 * 2, 15-22 at 1, 23-29 at 0; buckets 0, 1, 2, 3. */
static void test_ranks_ladder(void **state) {
    (void)state;
    double delta[30];
    int n[30], b[30];
    for (int l = 0; l < 30; l++) delta[l] = l;
    assert_int_equal(search_stage2_assign_ranks(delta, 30, 3, 0.5, 4, NULL, n, b), 0);
    for (int l = 0; l < 30; l++) {
        int e = l <= 6 ? 3 : l <= 14 ? 2 : l <= 22 ? 1 : 0;
        assert_int_equal(n[l], e);
        assert_int_equal(b[l], 3 - e);
    }
    /* all-equal drops: ties by lower layer, so the same ladder by layer index */
    for (int l = 0; l < 30; l++) delta[l] = 0.3;
    assert_int_equal(search_stage2_assign_ranks(delta, 30, 3, 0.5, 4, NULL, n, b), 0);
    for (int l = 0; l < 30; l++) assert_int_equal(n[l], l <= 6 ? 3 : l <= 14 ? 2 : l <= 22 ? 1 : 0);
    /* L=4, H=3, rho=.875 -> T = 11; delta .3 .1 .2 .4 -> order 1, 2, 0, 3 at levels 3, 2, 1, 0
     * (sum 6). Under by 5, one head at a time: all levels tie at 1 layer -> the lowest level < 3
     * (0) moves its most tolerant layer (3) to 1; then level 1 (layers 0, 3) -> layer 0 to 2;
     * then level 2 (2, 0) -> layer 2 to 3; levels 2 and 1 tie (1 each) -> level 1: layer 3 to 2;
     * level 2 (0, 3) -> layer 0 to 3. n = 3 3 3 2. */
    double d4[4] = {0.3, 0.1, 0.2, 0.4};
    assert_int_equal(search_stage2_assign_ranks(d4, 4, 3, 0.875, 4, NULL, n, b), 0);
    int e4[4] = {3, 3, 3, 2};
    for (int l = 0; l < 4; l++) assert_int_equal(n[l], e4[l]);
}

/* The rank ladder keeps the exact total and monotonicity on pseudo-random cases. */
static void test_ranks_exact_total_random(void **state) {
    (void)state;
    const double ratios[] = {0.0, 0.1, 0.25, 0.5, 0.6, 0.75, 0.875, 1.0};
    uint64_t x = 777;
    for (int trial = 0; trial < 200; trial++) {
        double delta[30];
        int n[30], b[30];
        for (int l = 0; l < 30; l++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            delta[l] = (double)(x >> 40) / (double)(1 << 24);
        }
        double rho = ratios[trial % 8];
        int H = 2 + trial % 7;
        assert_int_equal(search_stage2_assign_ranks(delta, 30, H, rho, 4, NULL, n, b), 0);
        assert_int_equal(sum_int(n, 30), (int)lround(rho * 30 * H));
        for (int i = 0; i < 30; i++)
            for (int j = 0; j < 30; j++)
                if (delta[i] < delta[j]) assert_true(n[i] >= n[j]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_with_tie),
        cmocka_unit_test(test_all_equal_drops),
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_caps_and_half_rounding),
        cmocka_unit_test(test_bucket_merge),
        cmocka_unit_test(test_exact_total_random),
        cmocka_unit_test(test_cut_heads),
        cmocka_unit_test(test_ranks_ladder),
        cmocka_unit_test(test_ranks_exact_total_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
