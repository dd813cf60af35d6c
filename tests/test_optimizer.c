/* test_optimizer.c — the cardinality-preserving local search / exhaustive optimizer
 * (search/optimizer.h) on synthetic black-box objectives whose optimum is known by construction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "optimizer.h"
#include "rng.h"

#define MAXM 16

/* planted objective: sum over layers of |sol & planted| (overlap), plus a small deterministic
 * pseudo-random term in [0, 0.01) so ties are broken in an objective-defined way. The planted
 * solution is the unique maximum: any other solution loses >= 1 on overlap. */
static double planted_score(const uint64_t *sol, const uint64_t *planted, int m) {
    double s = 0;
    uint64_t h = 7;
    for (int i = 0; i < m; i++) {
        s += __builtin_popcountll(sol[i] & planted[i]);
        uint64_t x = h ^ sol[i];
        h = rng_splitmix64(&x);
    }
    return s + (double)(h >> 11) / (double)(1ull << 53) * 0.01;
}

static void random_subset(rng_state *r, int H, int k, uint64_t *out) {
    *out = 0;
    while (__builtin_popcountll(*out) < k) *out |= 1ull << rng_below(r, (uint64_t)H);
}

static void test_planted_optimum_found(void **state) {
    (void)state;
    const int m = 10, H = 8;
    int k[MAXM];
    uint64_t planted[MAXM], sol[MAXM];
    rng_state r;
    rng_seed(&r, 42);
    int max_overlap = 0;
    for (int i = 0; i < m; i++) {
        k[i] = 1 + (int)rng_below(&r, 7);
        random_subset(&r, H, k[i], &planted[i]);
        max_overlap += k[i];
    }
    const long budget = 3000;
    optimizer *o = opt_create(m, k, H, NULL, budget, 3, 123);
    assert_non_null(o);
    assert_false(opt_is_exhaustive(o)); /* space is prod C(8,k) >> budget */
    long asked = 0;
    while (opt_ask(o, sol)) {
        for (int i = 0; i < m; i++) {
            assert_int_equal(__builtin_popcountll(sol[i]), k[i]); /* cardinality kept */
            assert_int_equal(sol[i] >> H, 0);
        }
        opt_tell(o, planted_score(sol, planted, m));
        asked++;
    }
    assert_true(asked <= budget);
    assert_int_equal(opt_n_evals(o), asked);
    const uint64_t *best = opt_best(o);
    for (int i = 0; i < m; i++) assert_int_equal(best[i], planted[i]);
    assert_true(opt_best_score(o) >= max_overlap);
    opt_free(o);
}

/* Exhaustive when the space fits the budget: every solution exactly once, best = true max. */
static void test_exhaustive_small_space(void **state) {
    (void)state;
    int k[2] = {1, 2};
    uint64_t sol[2], seen[16][2];
    int n_seen = 0;
    assert_int_equal(opt_space_size(2, k, 3), 9);
    optimizer *o = opt_create(2, k, 3, NULL, 9, 0, 5);
    assert_non_null(o);
    assert_true(opt_is_exhaustive(o));
    assert_int_equal(opt_planned(o), 9);
    double best = -1;
    uint64_t best_sol[2] = {0, 0};
    while (opt_ask(o, sol)) {
        assert_true(n_seen < 9);
        for (int j = 0; j < n_seen; j++) assert_false(seen[j][0] == sol[0] && seen[j][1] == sol[1]);
        seen[n_seen][0] = sol[0], seen[n_seen][1] = sol[1], n_seen++;
        uint64_t x = sol[0] * 31 + sol[1];
        double s = (double)(rng_splitmix64(&x) >> 11);
        if (s > best) best = s, best_sol[0] = sol[0], best_sol[1] = sol[1];
        opt_tell(o, s);
    }
    assert_int_equal(n_seen, 9);
    assert_int_equal(opt_best(o)[0], best_sol[0]);
    assert_int_equal(opt_best(o)[1], best_sol[1]);
    opt_free(o);
}

/* Same seed -> same sequence of asked solutions; no solution is asked twice. */
static void run_sequence(uint64_t seed, uint64_t *trace, long *n) {
    int k[4] = {2, 3, 1, 4};
    uint64_t planted[4] = {0x3, 0x70, 0x8, 0xf0}, sol[4];
    optimizer *o = opt_create(4, k, 8, NULL, 200, 2, seed);
    assert_non_null(o);
    *n = 0;
    while (opt_ask(o, sol)) {
        uint64_t h = 0;
        for (int i = 0; i < 4; i++) h = h * 0x100000001b3ull ^ sol[i];
        for (long j = 0; j < *n; j++) assert_true(trace[j] != h);
        trace[(*n)++] = h;
        opt_tell(o, planted_score(sol, planted, 4));
    }
    opt_free(o);
}

static void test_deterministic_given_seed(void **state) {
    (void)state;
    uint64_t a[256], b[256], c[256];
    long na, nb, nc;
    run_sequence(9, a, &na);
    run_sequence(9, b, &nb);
    run_sequence(10, c, &nc);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof(uint64_t) * (size_t)na);
    int differ = na != nc;
    for (long j = 0; !differ && j < na; j++) differ = a[j] != c[j];
    assert_true(differ);
}

/* The init solution is the first one asked; a repeated ask returns the same solution. */
static void test_init_and_repeat_ask(void **state) {
    (void)state;
    int k[2] = {2, 2};
    uint64_t init[2] = {0x5, 0x3}, s1[2], s2[2];
    optimizer *o = opt_create(2, k, 6, init, 10, 0, 1);
    assert_non_null(o);
    assert_int_equal(opt_ask(o, s1), 1);
    assert_int_equal(opt_ask(o, s2), 1);
    assert_memory_equal(s1, init, sizeof init);
    assert_memory_equal(s2, init, sizeof init);
    opt_free(o);
    uint64_t bad[2] = {0x7, 0x3}; /* popcount 3 != k */
    assert_null(opt_create(2, k, 6, bad, 10, 0, 1));
}

/* The local search stops at the budget even when it could go on. */
static void test_budget_respected(void **state) {
    (void)state;
    int k[6] = {3, 3, 3, 3, 3, 3};
    uint64_t sol[6];
    optimizer *o = opt_create(6, k, 8, NULL, 17, 100, 77);
    long n = 0;
    while (opt_ask(o, sol)) {
        uint64_t x = sol[0] ^ sol[5] << 8;
        opt_tell(o, (double)(rng_splitmix64(&x) >> 11));
        n++;
    }
    assert_int_equal(n, 17);
    assert_int_equal(opt_ask(o, sol), 0);
    opt_free(o);
}

/* opt_peek (the look-ahead of batched evaluation, search.h search_set_batch): with scores that
 * only ever fall, no move is ever accepted, so after every ask the peeked solutions must be
 * exactly the next asks, in order (restarts and remembered solutions included), and a peek made
 * one ask later must continue the same list. Local search (restarts that revisit remembered
 * solutions of higher score, which end a peek) and exhaustive enumeration. */
static void check_peek_run(optimizer *o, int m) {
    uint64_t sol[MAXM], peek[6][MAXM], prev[6][MAXM];
    int n_prev = 0;
    long asks = 0, checked = 0;
    double score = 0;
    while (opt_ask(o, sol)) {
        if (n_prev > 0) { /* the last peek's first solution is this ask */
            assert_memory_equal(prev[0], sol, sizeof(uint64_t) * (size_t)m);
            checked++;
        }
        int n = opt_peek(o, &peek[0][0], 6);
        assert_true(n >= 0 && n <= 6);
        const uint64_t *flat = &peek[0][0]; /* n solutions of m words, packed */
        for (int j = 0; j < n; j++)         /* valid solutions: each layer keeps its popcount */
            for (int i = 0; i < m; i++)
                assert_int_equal(__builtin_popcountll(flat[(size_t)j * m + i]), __builtin_popcountll(sol[i]));
        for (int j = 1; j < n_prev && j - 1 < n; j++) /* the lists agree where both reach */
            assert_memory_equal(prev[j], flat + (size_t)(j - 1) * m, sizeof(uint64_t) * (size_t)m);
        for (int j = 0; j < n; j++) memcpy(prev[j], flat + (size_t)j * m, sizeof(uint64_t) * (size_t)m);
        n_prev = n;
        opt_tell(o, score -= 1.0);
        asks++;
    }
    assert_true(asks > 10);
    assert_true(checked > asks / 2); /* the look-ahead is not empty most of the time */
}

static void test_peek_is_the_next_asks(void **state) {
    (void)state;
    int k[4] = {2, 1, 3, 2};
    optimizer *o = opt_create(4, k, 5, NULL, 300, 3, 11);
    assert_non_null(o);
    assert_false(opt_is_exhaustive(o));
    check_peek_run(o, 4);
    opt_free(o);
    int k2[2] = {2, 1};
    o = opt_create(2, k2, 4, NULL, 1000, 0, 5);
    assert_non_null(o);
    assert_true(opt_is_exhaustive(o));
    check_peek_run(o, 2);
    opt_free(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_optimum_found),    cmocka_unit_test(test_exhaustive_small_space),
        cmocka_unit_test(test_deterministic_given_seed), cmocka_unit_test(test_init_and_repeat_ask),
        cmocka_unit_test(test_budget_respected),         cmocka_unit_test(test_peek_is_the_next_asks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
