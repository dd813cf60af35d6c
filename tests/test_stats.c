/* test_stats.c — Wilson intervals and the exact McNemar test against values worked by hand.
 *
 * Wilson (z = 1.959964, z^2 = 3.841459; the same numbers from Python's math module, 6 digits):
 *   8/16:  d = 1.240091, centre = (0.5 + 0.120046) / d = 0.5,
 *          half = 1.959964 * sqrt(0.015625 + 0.0037512) / d = 0.220004  -> [0.279996, 0.720004]
 *   0/16:  centre = 0.120046 / d = 0.096804, half = 1.959964 * 0.061247 / d = 0.096804 -> [0, 0.193608]
 *   16/16: the mirror image -> [0.806392, 1]
 *   1/10:  d = 1.384146, centre = (0.1 + 0.192073) / d = 0.211013,
 *          half = 1.959964 * sqrt(0.009 + 0.00960365) / d = 0.193137 -> [0.017876, 0.404150]
 * McNemar, exact, two-sided: b = 7, c = 1: 2 * (1 + 8) / 2^8 = 0.0703125; b = 10, c = 0:
 *   2 / 2^10 = 0.001953125; b = 3, c = 3: min(1, 2 * (1+6+15+20)/64) = 1; b = 0, c = 0: 1;
 *   b = 20, c = 5: 2 * sum_{i<=5} C(25,i) / 2^25 = 2 * 68406 / 33554432 = 0.004077315.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stats.h"

static void near(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol)) fail_msg("got %.9f, want %.9f", got, want);
}

static void test_wilson(void **state) {
    (void)state;
    double lo, hi;
    stats_wilson95(8, 16, &lo, &hi);
    near(lo, 0.279996, 2e-6), near(hi, 0.720004, 2e-6);
    stats_wilson95(0, 16, &lo, &hi);
    near(lo, 0.0, 1e-12), near(hi, 0.193608, 2e-6);
    stats_wilson95(16, 16, &lo, &hi);
    near(lo, 0.806392, 2e-6), near(hi, 1.0, 1e-12);
    stats_wilson95(1, 10, &lo, &hi);
    near(lo, 0.017876, 2e-6), near(hi, 0.404150, 2e-6);
    stats_wilson95(0, 0, &lo, &hi);
    near(lo, 0.0, 0), near(hi, 1.0, 0);
}

static void test_mcnemar(void **state) {
    (void)state;
    near(stats_mcnemar_exact(7, 1), 0.0703125, 1e-12);
    near(stats_mcnemar_exact(1, 7), 0.0703125, 1e-12);
    near(stats_mcnemar_exact(10, 0), 0.001953125, 1e-12);
    near(stats_mcnemar_exact(3, 3), 1.0, 1e-12);
    near(stats_mcnemar_exact(0, 0), 1.0, 0);
    near(stats_mcnemar_exact(20, 5), 2.0 * 68406.0 / 33554432.0, 1e-12);
    uint8_t a[6] = {1, 1, 0, 0, 1, 0}, b[6] = {1, 0, 1, 0, 0, 0};
    long x, y;
    stats_discordant(a, b, 6, &x, &y);
    assert_int_equal(x, 2);
    assert_int_equal(y, 1);
}

/* Hand-worked: d = a - b = {0.1, 0.3, -0.1, 0.5}, mean 0.2, deviations {-0.1, 0.1, -0.3, 0.3},
 * sum of squares 0.2, s^2 = 0.2/3, se = sqrt(0.2/3/4) = 0.1290994. */
static void test_paired_diff(void **state) {
    (void)state;
    const double a[4] = {0.9, 0.8, 0.4, 1.0}, b[4] = {0.8, 0.5, 0.5, 0.5};
    double m, se;
    stats_paired_diff(a, b, 4, &m, &se);
    near(m, 0.2, 1e-15), near(se, 0.12909944487358056, 1e-15);
    stats_paired_diff(b, a, 4, &m, &se); /* antisymmetric mean, same noise */
    near(m, -0.2, 1e-15), near(se, 0.12909944487358056, 1e-15);
    stats_paired_diff(a, a, 4, &m, &se); /* a mask against itself: no difference, no noise */
    near(m, 0.0, 0), near(se, 0.0, 0);
    stats_paired_diff(a, b, 1, &m, &se);
    near(m, 0.1, 1e-15);
    assert_true(isinf(se));
    stats_paired_diff(a, b, 0, &m, &se);
    assert_true(isnan(m) && isnan(se));
    near(stats_sample_score(0.0), 1.0, 0), near(stats_sample_score(log(4.0)), 0.25, 1e-15);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_wilson), cmocka_unit_test(test_mcnemar),
                                       cmocka_unit_test(test_paired_diff)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
