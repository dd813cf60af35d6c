/* test_heat.c — the explorer's heat map (tui/heat.h) against hand-worked cases: the range of the
 * measured scores, the level of a head on the square-root scale, the cycle of H and the legend.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "heat.h"

static void test_range(void **st) {
    (void)st;
    const float v[] = {NAN, 0.5f, -0.25f, 2.0f, INFINITY};
    double lo = 9, hi = 9;
    assert_int_equal(heat_range(v, 5, &lo, &hi), 3); /* NAN and inf are not measured */
    assert_true(lo == -0.25 && hi == 2.0);
    assert_int_equal(heat_range(v, 1, &lo, &hi), 0);
    assert_true(lo == 0 && hi == 0);
    assert_int_equal(heat_range(v + 1, 1, &lo, &hi), 1);
    assert_true(lo == 0.5 && hi == 0.5);
}

static void test_levels(void **st) {
    (void)st;
    /* lo 0, hi 16, 4 levels: f = sqrt(v / 16), level floor(4 f) */
    assert_int_equal(heat_level(0, 0, 16, 4), 0);
    assert_int_equal(heat_level(0.99, 0, 16, 4), 0); /* f = 0.2487 */
    assert_int_equal(heat_level(1, 0, 16, 4), 1);    /* f = 0.25 */
    assert_int_equal(heat_level(3.9, 0, 16, 4), 1);  /* f = 0.4937 */
    assert_int_equal(heat_level(4, 0, 16, 4), 2);    /* f = 0.5 */
    assert_int_equal(heat_level(9, 0, 16, 4), 3);    /* f = 0.75 */
    assert_int_equal(heat_level(16, 0, 16, 4), 3);   /* the top: f = 1 */
    assert_int_equal(heat_level(-1, 0, 16, 4), 0);   /* clamped */
    assert_int_equal(heat_level(20, 0, 16, 4), 3);
    assert_int_equal(heat_level(NAN, 0, 16, 4), -1);
    /* a negative minimum (a drop can be): lo -1, hi 3: v = 0 is f = sqrt(1/4) = 0.5 */
    assert_int_equal(heat_level(0, -1, 3, 4), 2);
    assert_int_equal(heat_level(-1, -1, 3, 4), 0);
    /* all equal: every measured head the lowest level */
    assert_int_equal(heat_level(0.3, 0.3, 0.3, 4), 0);
}

static void test_cycle(void **st) {
    (void)st;
    /* 4 scores: off -> 1 -> 2 -> 3 -> 4 -> off */
    int h = 0, seen[6] = {0};
    for (int i = 0; i < 5; i++) seen[i] = h = heat_next(h, 4);
    assert_int_equal(seen[0], 1);
    assert_int_equal(seen[3], 4);
    assert_int_equal(seen[4], 0);
    assert_int_equal(heat_next(-3, 4), 0);
    assert_int_equal(heat_next(9, 4), 0);
    assert_int_equal(heat_next(0, 0), 0); /* no score at all: stays off */
}

static void test_legend(void **st) {
    (void)st;
    char b[128];
    assert_string_equal(heat_legend(b, sizeof b, "fisher", ".:*#", 90, 0.000123, 0.0456, NULL),
                        "fisher: .:*# 0.000123..0.0456 sqrt");
    assert_string_equal(heat_legend(b, sizeof b, "ablation", ".:*#", 3, -0.0114, 0.033, "x"),
                        "ablation: .:*# -0.0114..0.033 sqrt");
    assert_string_equal(heat_legend(b, sizeof b, "echo", ".:*#", 0, 0, 0, "computing 3/93 evals"),
                        "echo: computing 3/93 evals");
    assert_string_equal(heat_legend(b, sizeof b, "echo", ".:*#", 0, 0, 0, NULL), "echo: not measured");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_legend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
