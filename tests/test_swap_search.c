/* test_swap_search.c — the guided swap local search (search/swap_search.h) on objectives whose
 * optimum is known: a separable cost (the optimum puts SWA on the cheapest units of each block),
 * with and without a priority, and the invariants: every asked solution keeps each block's SWA
 * count, no solution is asked twice, the budget is respected, the run is deterministic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "swap_search.h"

#define N 24

static double cost_of(const uint8_t *s, const double *a) {
    double c = 0;
    for (int i = 0; i < N; i++) c += s[i] ? a[i] : 0;
    return c;
}

/* Run to the end maximizing -cost; checks the invariants; returns the evaluations made. */
static long run(const int *block, const uint8_t *init, const double *prio, long budget, const double *a,
                uint8_t *best) {
    swap_search *s = swap_create(N, block, init, prio, budget, 42);
    assert_non_null(s);
    static uint8_t asked[4096][N];
    long n = 0;
    uint8_t sol[N];
    while (swap_ask(s, sol)) {
        for (int b = 0; b < 3; b++) { /* block counts preserved */
            int k0 = 0, k1 = 0;
            for (int i = 0; i < N; i++)
                if ((block ? block[i] : 0) == b) k0 += init[i], k1 += sol[i];
            assert_int_equal(k0, k1);
        }
        for (long j = 0; j < n; j++) assert_memory_not_equal(asked[j], sol, N);
        if (n < 4096) memcpy(asked[n], sol, N);
        n++;
        swap_tell(s, -cost_of(sol, a));
    }
    assert_true(n <= budget);
    assert_int_equal(swap_n_evals(s), n);
    memcpy(best, swap_best(s), N);
    assert_true(fabs(swap_best_score(s) + cost_of(best, a)) < 1e-12);
    swap_free(s);
    return n;
}

static void test_separable_optimum(void **state) {
    (void)state;
    double a[N];
    int block[N];
    uint8_t init[N], best[N], want[N];
    for (int i = 0; i < N; i++) {
        a[i] = 1.0 + (double)((i * 7919) % 23) / 10.0; /* distinct costs */
        block[i] = i % 3;
        init[i] = i < 12; /* 4 SWA units in each block */
    }
    /* the optimum: in each block its 4 cheapest units */
    memset(want, 0, N);
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 4; c++) {
            int m = -1;
            for (int i = b; i < N; i += 3)
                if (!want[i] && (m < 0 || a[i] < a[m])) m = i;
            want[m] = 1;
        }
    /* random order, a large budget: reaches a local optimum of the swap neighbourhood, which for a
     * separable cost is the global one */
    run(block, init, NULL, 4000, a, best);
    assert_memory_equal(best, want, N);
    /* priority = the true per-unit cost (high = keep full): every first move improves */
    long guided = run(block, init, a, 4000, a, best);
    assert_memory_equal(best, want, N);
    long random_evals = run(block, init, NULL, 4000, a, best);
    assert_true(guided <= random_evals);
    /* a budget of 5 stops after 5 */
    assert_int_equal(run(block, init, a, 5, a, best), 5);
}

static void test_deterministic(void **state) {
    (void)state;
    double a[N];
    uint8_t init[N], b1[N], b2[N];
    for (int i = 0; i < N; i++) a[i] = (double)((i * 31) % 17), init[i] = i % 2;
    long n1 = run(NULL, init, NULL, 30, a, b1), n2 = run(NULL, init, NULL, 30, a, b2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, N);
}

/* swap_peek (batched evaluation's look-ahead): with falling scores no move is accepted after the
 * init, so every peek must be exactly the next asks, and consecutive peeks must agree. */
static void test_peek_is_the_next_asks(void **state) {
    (void)state;
    int block[N];
    uint8_t init[N];
    double prio[N];
    for (int i = 0; i < N; i++) block[i] = i % 3, init[i] = i % 2, prio[i] = (double)((i * 7) % 11);
    for (int guided = 0; guided < 2; guided++) {
        swap_search *s = swap_create(N, block, init, guided ? prio : NULL, 60, 3);
        assert_non_null(s);
        uint8_t sol[N], peek[5][N], prev[5][N];
        int n_prev = 0;
        long asks = 0, checked = 0;
        double score = 0;
        while (swap_ask(s, sol)) {
            if (n_prev > 0) assert_memory_equal(prev[0], sol, N), checked++;
            int n = swap_peek(s, &peek[0][0], 5);
            for (int j = 1; j < n_prev && j - 1 < n; j++) assert_memory_equal(prev[j], peek[j - 1], N);
            memcpy(prev, peek, sizeof peek);
            n_prev = n;
            swap_tell(s, score -= 1.0);
            asks++;
        }
        assert_true(asks > 20 && asks <= 60);
        assert_true(checked >= asks - 2); /* all but the init and the one after it */
        swap_free(s);
    }
}

/* No move at all (the one SWA unit and the one full unit in different blocks, as when pins leave
 * no free pair): the init is asked and scored, then the search is over, and the best is the init.
 * Under UBSan this failed before 93d043e (qsort of the empty, NULL move list). */
static void test_no_moves(void **state) {
    (void)state;
    const int block[2] = {0, 1};
    const uint8_t init[2] = {1, 0};
    uint8_t sol[2];
    swap_search *s = swap_create(2, block, init, NULL, 5, 1);
    assert_non_null(s);
    assert_int_equal(swap_ask(s, sol), 1);
    assert_memory_equal(sol, init, 2);
    swap_tell_accept(s, 1.0, 1);
    assert_int_equal(swap_ask(s, sol), 0);
    assert_memory_equal(swap_best(s), init, 2);
    assert_int_equal(swap_n_evals(s), 1);
    swap_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separable_optimum), cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_peek_is_the_next_asks), cmocka_unit_test(test_no_moves)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
