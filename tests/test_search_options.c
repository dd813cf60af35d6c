/* test_search_options.c — the one table of search-shaping options (search/search_options.h) and the
 * strict number parsers under it (base/parse.h):
 *  1. each option is accepted at both ends of its documented range and refused just outside, with
 *     the message "bad value 'V' (need ...)" quoting that range;
 *  2. search_opts_config builds the same configuration as the sequence of search.h calls the
 *     documentation gives (defaults, paper structure, preset, ratio, sizes, variant, structure
 *     options), written out here by hand as the reference;
 *  3. the --window / --sinks check against the calibration length, and the comparison's subset;
 *  4. the presets (tiny, demo, default, paper): their values, names and help.
 */
#define _GNU_SOURCE /* fmemopen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"
#include "search_options.h"

static int set(search_opts *o, const char *name, const char *v, char *err, size_t errlen) {
    int id = search_opts_lookup(name, SOPT_ALL);
    assert_true(id >= 0);
    return search_opts_set(o, (search_opt_id)id, v, err, errlen);
}

/* name min max: min and max accepted, min-1 and max+1 refused with the range in the message. */
static void check_int_range(const char *name, long min, long max) {
    search_opts o = {0};
    char v[64], err[256], want[256];
    snprintf(v, sizeof v, "%ld", min);
    assert_int_equal(set(&o, name, v, err, sizeof err), 0);
    snprintf(v, sizeof v, "%ld", max);
    assert_int_equal(set(&o, name, v, err, sizeof err), 0);
    assert_int_equal(o.num[search_opts_lookup(name, SOPT_ALL)], max);
    snprintf(v, sizeof v, "%ld", min - 1);
    assert_int_equal(set(&o, name, v, err, sizeof err), -1);
    snprintf(want, sizeof want, "bad value '%ld' (need an integer in [%ld, %ld])", min - 1, min, max);
    assert_string_equal(err, want);
    if (max < 2147483647L) {
        snprintf(v, sizeof v, "%ld", max + 1);
        assert_int_equal(set(&o, name, v, err, sizeof err), -1);
    }
    assert_int_equal(set(&o, name, "1x", err, sizeof err), -1);
    assert_int_equal(set(&o, name, " 1", err, sizeof err), -1);
}

static void test_ranges(void **state) {
    (void)state;
    check_int_range("--window", 1, 1L << 24);
    check_int_range("--sinks", 0, 1L << 24);
    check_int_range("--budget1", 1, 2147483647L);
    check_int_range("--budget3", 1, 2147483647L);
    check_int_range("--restarts", 0, 2147483647L);
    check_int_range("--buckets", 2, 2147483647L);
    check_int_range("--samples", 1, 2147483647L);
    search_opts o = {0};
    char err[256];
    assert_int_equal(set(&o, "--length", "1k", err, sizeof err), 0);
    assert_int_equal(o.num[SOPT_LENGTH], 1024);
    assert_int_equal(set(&o, "--length", "127", err, sizeof err), -1);
    assert_string_equal(err, "bad value '127' (need a token count in [128, 16777216], e.g. 512 or 1k)");
    assert_int_equal(set(&o, "--length", "16385k", err, sizeof err), -1);
    for (const char *const *r = (const char *const[]){"nan", "inf", "-0.5", "1.5", "0.5x", "", " 0.5", NULL};
         *r; r++) {
        assert_int_equal(set(&o, "--ratio", *r, err, sizeof err), -1);
        char want[128];
        snprintf(want, sizeof want, "bad value '%s' (need a number in [0, 1])", *r);
        assert_string_equal(err, want);
    }
    assert_int_equal(set(&o, "--ratio", "1", err, sizeof err), 0);
    assert_true(o.ratio == 1.0);
    assert_int_equal(set(&o, "--seed", "18446744073709551615", err, sizeof err), 0);
    assert_true(o.seed == 18446744073709551615ULL);
    assert_int_equal(set(&o, "--seed", "18446744073709551616", err, sizeof err), -1);
    assert_int_equal(set(&o, "--seed", "-1", err, sizeof err), -1);
    assert_int_equal(set(&o, "--calib", "Mix", err, sizeof err), -1);
    assert_string_equal(err, "bad value 'Mix' (need single or mix)");
    assert_int_equal(set(&o, "--preset", "huge", err, sizeof err), -1);
    assert_string_equal(err, "bad value 'huge' (need tiny, demo, default or paper)");
    assert_int_equal(set(&o, "--method", "nope", err, sizeof err), -1);
    assert_non_null(strstr(err, "bad value 'nope' ("));
    assert_int_equal(set(&o, "--method", "Fisher", err, sizeof err), 0); /* names parse case-insensitively */
    assert_int_equal(set(&o, "--stage2", "ranks", err, sizeof err), 0);
    assert_int_equal(o.num[SOPT_STAGE2], 1);
}

/* The reference: what `bosch search` did before the table, step by step (search.h). */
static void reference_config(search_config *cfg, const char *preset, double ratio, int window, long b3,
                             const char *method, int stage1_independent) {
    char err[256];
    search_config_default(cfg);
    search_config_paper_options(cfg);
    assert_int_equal(search_preset_apply(cfg, preset, 8192, err, sizeof err), 0);
    cfg->ratio = ratio;
    if (window > 0) cfg->window = window;
    if (b3 > 0) cfg->stage3_budget_per_group = b3;
    assert_int_equal(search_variant_apply(cfg, method, err, sizeof err), 0);
    if (stage1_independent >= 0) cfg->stage1_independent = stage1_independent;
}

static void test_config_order(void **state) {
    (void)state;
    char err[256];
    search_config got, want;
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    /* only the ratio: preset default, method bosch */
    search_opts o = {0};
    assert_int_equal(set(&o, "--ratio", "0.75", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &got, err, sizeof err), 0);
    reference_config(&want, "default", 0.75, 0, 0, "bosch", -1);
    assert_memory_equal(&got, &want, sizeof got);
    /* a variant after the budget (the refinement takes its share), then a structure override */
    search_opts p = {0};
    assert_int_equal(set(&p, "--stage1", "independent", err, sizeof err), 0); /* order of options: free */
    assert_int_equal(set(&p, "--method", "bosch_plus", err, sizeof err), 0);
    assert_int_equal(set(&p, "--budget3", "40", err, sizeof err), 0);
    assert_int_equal(set(&p, "--preset", "tiny", err, sizeof err), 0);
    assert_int_equal(set(&p, "--window", "32", err, sizeof err), 0);
    assert_int_equal(set(&p, "--ratio", "0.5", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&p, 8192, &got, err, sizeof err), 0);
    reference_config(&want, "tiny", 0.5, 32, 40, "bosch_plus", 1);
    assert_memory_equal(&got, &want, sizeof got);
    assert_true(got.refine_budget > 0); /* bosch_plus: the budget was split */
}

/* --granularity layer after the variant (the refinement's share back to stage 3, independent
 * probes), before the structure options (an explicit --stage1 cascade still wins); not for a
 * baseline. The reference: the search.h calls by hand. */
static void test_granularity(void **state) {
    (void)state;
    char err[256];
    search_config got, want;
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    search_opts o = {0};
    assert_int_equal(set(&o, "--granularity", "layer", err, sizeof err), 0);
    assert_int_equal(set(&o, "--preset", "tiny", err, sizeof err), 0);
    assert_int_equal(set(&o, "--ratio", "0.5", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &got, err, sizeof err), 0);
    reference_config(&want, "tiny", 0.5, 0, 0, "bosch", -1);
    search_config_set_granularity(&want, SEARCH_GRANULARITY_LAYER);
    assert_memory_equal(&got, &want, sizeof got);
    assert_int_equal(got.granularity, SEARCH_GRANULARITY_LAYER);
    assert_int_equal(got.stage3_budget_per_group, 16); /* tiny's, whole */
    assert_int_equal(got.refine_budget, 0);
    assert_int_equal(set(&o, "--stage1", "cascade", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &got, err, sizeof err), 0);
    assert_int_equal(got.stage1_independent, 0);
    assert_int_equal(set(&o, "--method", "intr", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &got, err, sizeof err), -1);
    assert_string_equal(err, "--granularity layer is for BOSCH, not the baseline 'intr'");
    assert_int_equal(set(&o, "--granularity", "rows", err, sizeof err), -1);
    assert_string_equal(err, "bad value 'rows' (need head or layer)");
}

static void test_length_checks(void **state) {
    (void)state;
    char err[512];
    search_opts o = {0};
    search_config cfg;
    assert_int_equal(set(&o, "--preset", "tiny", err, sizeof err), 0); /* 512-token calibration */
    assert_int_equal(set(&o, "--window", "512", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &cfg, err, sizeof err), -1);
    assert_non_null(
        strstr(err, "--window 512: bad value (need fewer tokens than the calibration length, 512"));
    /* the comparison's subset: sizes only, no ratio, preset or method */
    assert_true(search_opts_lookup("--ratio", SOPT_COMPARE) < 0);
    assert_true(search_opts_lookup("--method", SOPT_COMPARE) < 0);
    assert_int_equal(search_opts_lookup("--sinks", SOPT_COMPARE), SOPT_SINKS);
    search_opts c = {0};
    assert_int_equal(set(&c, "--length", "256", err, sizeof err), 0);
    assert_int_equal(set(&c, "--sinks", "300", err, sizeof err), 0);
    search_config_default(&cfg);
    assert_int_equal(search_opts_apply_sizes(&c, &cfg, err, sizeof err), -1);
    assert_non_null(
        strstr(err, "--sinks 300: bad value (need fewer tokens than the calibration length, 256"));
}

/* Issue 31: --race, --accept-k and --length2 reach the config (and a comparison's); the window must
 * be shorter than the shorter calibration length; --length2 is 0 or a probe length. */
static void test_race_and_length2(void **state) {
    (void)state;
    char err[512];
    search_config cfg;
    search_opts o = {0};
    search_opts_config(&o, 8192, &cfg, err, sizeof err);
    assert_int_equal(cfg.race, 1); /* the default */
    assert_true(cfg.accept_k == 0.0);
    assert_int_equal(cfg.calib_tokens2, 0);
    assert_int_equal(set(&o, "--race", "check", err, sizeof err), 0);
    assert_int_equal(set(&o, "--accept-k", "2.5", err, sizeof err), 0);
    assert_int_equal(set(&o, "--length2", "1k", err, sizeof err), 0);
    assert_int_equal(set(&o, "--length", "256", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.race, 2);
    assert_true(cfg.accept_k == 2.5);
    assert_int_equal(cfg.calib_tokens2, 1024);
    assert_int_equal(set(&o, "--race", "fast", err, sizeof err), -1);
    assert_string_equal(err, "bad value 'fast' (need off, on or check)");
    assert_int_equal(set(&o, "--accept-k", "101", err, sizeof err), -1);
    assert_int_equal(set(&o, "--accept-k", "-1", err, sizeof err), -1);
    assert_int_equal(search_opts_lookup("--race", SOPT_COMPARE), SOPT_RACE);
    assert_int_equal(search_opts_lookup("--accept-k", SOPT_COMPARE), SOPT_ACCEPT_K);
    assert_int_equal(search_opts_lookup("--length2", SOPT_COMPARE), SOPT_LENGTH2);
    /* the window against the shorter length */
    search_opts w = {0};
    assert_int_equal(set(&w, "--length", "1k", err, sizeof err), 0);
    assert_int_equal(set(&w, "--length2", "256", err, sizeof err), 0);
    assert_int_equal(set(&w, "--window", "300", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&w, 8192, &cfg, err, sizeof err), -1);
    assert_non_null(
        strstr(err, "--window 300: bad value (need fewer tokens than the calibration length, 256"));
    search_opts s = {0};
    assert_int_equal(set(&s, "--length2", "8", err, sizeof err), 0); /* parsed as a token count */
    assert_int_equal(search_opts_config(&s, 8192, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "--length2 8: bad value (need 0 or at least"));
}

/* --confirm and --confirm-length reach a comparison's plan (search_opts_apply_sizes) as they reach a
 * search's config; a too-short confirmation length is refused there too, and so is a length with
 * no confirmation to apply it to. */
static void test_confirm_in_compare(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(search_opts_lookup("--confirm", SOPT_COMPARE), SOPT_CONFIRM);
    assert_int_equal(search_opts_lookup("--confirm-length", SOPT_COMPARE), SOPT_CONFIRM_LENGTH);
    search_opts o = {0};
    assert_int_equal(set(&o, "--confirm", "36", err, sizeof err), 0);
    assert_int_equal(set(&o, "--confirm-length", "2k", err, sizeof err), 0);
    search_config cfg;
    search_config_default(&cfg);
    cfg.calib_tokens = 256;
    assert_int_equal(search_opts_apply_sizes(&o, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.confirm_samples, 36);
    assert_int_equal(cfg.confirm_tokens2, 2048);
    search_opts s = {0};
    assert_int_equal(set(&s, "--confirm-length", "8", err, sizeof err), 0);
    assert_int_equal(search_opts_apply_sizes(&s, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "--confirm-length 8: bad value (need 0 or at least"));
    /* without a confirmation (the ci preset's plan; bosch search's default method) it is refused,
     * not ignored; --confirm N or bosch_confirm make it count */
    search_opts q = {0};
    assert_int_equal(set(&q, "--confirm-length", "1k", err, sizeof err), 0);
    search_config_default(&cfg);
    cfg.calib_tokens = 256;
    assert_int_equal(search_opts_apply_sizes(&q, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "--confirm-length 1024: nothing to confirm"));
    assert_int_equal(search_opts_config(&q, 8192, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "--confirm-length 1024: nothing to confirm"));
    assert_int_equal(set(&q, "--method", "bosch_confirm", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&q, 8192, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.confirm_tokens2, 1024);
    assert_true(cfg.confirm_samples > 0);
}

/* Issue 28 item 2: the demo preset (docs/search.md "The demo preset") is a preset like the others:
 * `--preset demo` parses, its values (written out here by hand from the doc's table) reach the
 * configuration, options given after it win, every list of presets names it, and a preset applied
 * after it leaves nothing of its calibration split. */
static void test_presets(void **state) {
    (void)state;
    char err[512];
    search_config cfg;
    search_opts o = {0};
    assert_int_equal(set(&o, "--preset", "demo", err, sizeof err), 0);
    assert_int_equal(set(&o, "--ratio", "0.5", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &cfg, err, sizeof err), 0);
    assert_string_equal(cfg.preset, "demo");
    assert_int_equal(cfg.calib_samples, 12);
    assert_int_equal(cfg.calib_tokens, 256);
    assert_int_equal(cfg.calib_mix, 1); /* niah_single, niah_multikey and passkey */
    assert_int_equal(cfg.calib_tokens2, 0);
    assert_int_equal(cfg.window, 32);
    assert_int_equal(cfg.stage1_budget_per_layer, 3);
    assert_int_equal(cfg.stage3_budget_per_group, 8); /* 16 per group, half to the refinement */
    assert_int_equal(cfg.refine_budget, 8);
    assert_int_equal(cfg.restarts, 1);
    assert_int_equal(cfg.race, 1);
    assert_int_equal(cfg.method, SEARCH_METHOD_BOSCH);
    /* options after the preset win */
    assert_int_equal(set(&o, "--calib", "single", err, sizeof err), 0);
    assert_int_equal(set(&o, "--window", "64", err, sizeof err), 0);
    assert_int_equal(search_opts_config(&o, 8192, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.calib_mix, 0);
    assert_int_equal(cfg.window, 64);
    /* tiny after demo: tiny's split, single task (every preset sets calib_mix and calib_tokens2) */
    search_config c;
    search_config_default(&c);
    assert_int_equal(search_preset_apply(&c, "demo", 8192, err, sizeof err), 0);
    c.calib_tokens2 = 1024;
    assert_int_equal(search_preset_apply(&c, "tiny", 8192, err, sizeof err), 0);
    assert_int_equal(c.calib_samples, 4);
    assert_int_equal(c.calib_mix, 0);
    assert_int_equal(c.calib_tokens2, 0);
    assert_int_equal(c.window, 64);
    /* the lists: the table's order, in the option help, the refusals and the form's line */
    const char *want[] = {"tiny", "demo", "default", "paper", NULL};
    for (int i = 0; i < 5; i++) {
        if (want[i]) {
            assert_string_equal(search_preset_name(i), want[i]);
            assert_int_equal(search_preset_find(want[i]), i);
        } else {
            assert_null(search_preset_name(i));
        }
    }
    assert_int_equal(search_preset_find("Demo"), -1);
    assert_int_equal(search_preset_apply(&c, "huge", 8192, err, sizeof err), -1);
    assert_string_equal(err, "unknown preset 'huge' (valid: tiny, demo, default, paper)");
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    search_opts_usage(f, SOPT_BIT(SOPT_PRESET));
    fclose(f);
    assert_non_null(strstr(buf, "--preset P       tiny, demo, default or paper: "));
    char line[160];
    assert_string_equal(search_preset_describe(1, 8192, line, sizeof line),
                        "demo: 12 probes x 256 tokens, 3 tasks, W 32; drops above noise");
    assert_string_equal(search_preset_describe(3, 8192, line, sizeof line),
                        "paper: 64 probes x 8192 tokens, W 256; meant for a GPU");
    assert_string_equal(search_preset_describe(4, 8192, line, sizeof line), "");
}

static void test_base_parsers(void **state) {
    (void)state;
    long x = 7;
    double d = 7;
    int i = 7;
    char err[128];
    assert_int_equal(base_parse_long("-3", -5, 5, &x, err, sizeof err), 0);
    assert_int_equal(x, -3);
    assert_int_equal(base_parse_long("9223372036854775808", 0, 9, &x, err, sizeof err), -1); /* overflow */
    assert_int_equal(x, -3);                                                                 /* untouched */
    assert_int_equal(base_parse_tokens("8K", 0, 1L << 20, &x, NULL, 0), 0);
    assert_int_equal(x, 8192);
    assert_int_equal(base_parse_tokens("9007199254740993k", 0, 1L << 62, &x, err, sizeof err), -1);
    assert_int_equal(base_parse_real("+.5", 0, 1, &d, NULL, 0), 0);
    assert_true(d == 0.5);
    assert_int_equal(base_parse_real("1e999", 0, 1, &d, err, sizeof err), -1);
    const char *names[3] = {"a", "b", "c"};
    assert_int_equal(base_parse_choice("c", names, 3, &i, NULL, 0), 0);
    assert_int_equal(i, 2);
    assert_int_equal(base_parse_choice("d", names, 3, &i, err, sizeof err), -1);
    assert_string_equal(err, "bad value 'd' (need a, b or c)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_config_order),
        cmocka_unit_test(test_granularity),
        cmocka_unit_test(test_length_checks),
        cmocka_unit_test(test_base_parsers),
        cmocka_unit_test(test_race_and_length2),
        cmocka_unit_test(test_confirm_in_compare),
        cmocka_unit_test(test_presets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
