/* test_pin_compare.c — the numbers of the explorer's pinned-vs-working panel (tui/pin_compare.h)
 * against a case worked by hand:
 *   pinned  exact = 1 1 1 1 1 1 0 0  (6/8),  working exact = 1 1 1 1 1 0 1 1 (7/8)
 *   discordant pairs: pinned right and working wrong b = 1 (sample 5), the reverse c = 2 (6, 7);
 *   exact McNemar p = 2 * (C(3,0) + C(3,1)) / 2^3 = 2 * 4/8 = 1 (capped);
 *   6/8 vs 8/8: b = 0, c = 2, p = 2 * C(2,0) / 2^2 = 0.5; 0/8 vs 8/8: p = 2 / 2^8 = 0.0078125.
 *   Wilson 95 % of 6/8 (z = 1.959964, z^2 = 3.8414588): d = 1 + z^2/8 = 1.4801824,
 *   centre = (0.75 + z^2/16) / d = 0.6688981, half = z * sqrt(0.75*0.25/8 + z^2/256) / d
 *   = 0.2596227, so [0.4092754, 0.9285208]; of 8/8: [0.6755924, 1] (checked with Python's
 *   float arithmetic on the same formula).
 *   S-hat of raw S 0.6 between all full 0.8 and all SWA 0.2: (0.6 - 0.2) / 0.6 = 2/3.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pin_compare.h"

static void side(ex_pin_side *s, const char *bits, double score) {
    uint8_t e[EX_PIN_SAMPLES];
    int n = (int)strlen(bits);
    for (int i = 0; i < n; i++) e[i] = bits[i] == '1';
    memset(s, 0, sizeof *s);
    pin_side_heldout(s, e, n, score);
}

static void test_heldout_and_wilson(void **st) {
    (void)st;
    ex_pin_side p;
    side(&p, "11111100", 0.7);
    assert_int_equal(p.hits, 6);
    assert_int_equal(p.n, 8);
    assert_true(p.heldout_score == 0.7);
    assert_true(fabs(p.wilson_lo - 0.4092754) < 1e-6);
    assert_true(fabs(p.wilson_hi - 0.9285208) < 1e-6);
    side(&p, "11111111", 0.9);
    assert_true(fabs(p.wilson_lo - 0.6755924) < 1e-6);
    assert_true(p.wilson_hi == 1.0);
}

static void test_mcnemar(void **st) {
    (void)st;
    ex_pin_side p, w;
    long b, c;
    double pv;
    side(&p, "11111100", 0), side(&w, "11111011", 0);
    assert_int_equal(pin_mcnemar(&p, &w, &b, &c, &pv), 0);
    assert_int_equal(b, 1);
    assert_int_equal(c, 2);
    assert_true(pv == 1.0);
    side(&w, "11111111", 0);
    pin_mcnemar(&p, &w, &b, &c, &pv);
    assert_int_equal(b, 0);
    assert_int_equal(c, 2);
    assert_true(fabs(pv - 0.5) < 1e-12);
    side(&p, "00000000", 0);
    pin_mcnemar(&p, &w, &b, &c, &pv);
    assert_int_equal(c, 8);
    assert_true(fabs(pv - 0.0078125) < 1e-12);
    /* not known yet, or scored on different samples: no test */
    side(&w, "1111", 0);
    assert_int_equal(pin_mcnemar(&p, &w, &b, &c, &pv), -1);
    assert_int_equal(b, -1);
    assert_true(isnan(pv));
    w.n = -1;
    assert_int_equal(pin_mcnemar(&p, &w, &b, &c, &pv), -1);
}

static void test_norm_score(void **st) {
    (void)st;
    assert_true(fabs(pin_norm_score(0.6, 0.8, 0.2) - 2.0 / 3.0) < 1e-12);
    assert_true(pin_norm_score(0.8, 0.8, 0.2) == 1.0);
    assert_true(pin_norm_score(0.2, 0.8, 0.2) == 0.0);
    assert_true(fabs(pin_norm_score(0.5, 0.3, 0.3) - 0.2) < 1e-12); /* no spread: S - S_swa, as the search */
    assert_true(isnan(pin_norm_score(NAN, 0.8, 0.2)));
    assert_true(isnan(pin_norm_score(0.6, NAN, 0.2)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heldout_and_wilson),
        cmocka_unit_test(test_mcnemar),
        cmocka_unit_test(test_norm_score),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
