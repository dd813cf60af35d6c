/* test_compare.c — the comparison's pieces that do not need the model: the persistent cache
 * (compare/compare_cache.h) written, read back bit for bit, a truncated last line (a killed run)
 * ignored, another plan's fingerprint refused; the turnover T and T~ of compare.h worked by hand.
 * (The whole protocol on the real model runs in tests/test_compare.sh.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "compare.h"
#include "compare_cache.h"
#include "compare_internal.h" /* compare_method_index */

static void test_cache_roundtrip(void **state) {
    (void)state;
    char dir[] = "/tmp/test_compare_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char err[512];
    compare_cache c;
    assert_int_equal(cache_open(&c, dir, 0xabcdef0123456789ull, err, sizeof err), 0);
    double nll[3] = {0.1, 1.0 / 3.0, 2.5e-17};
    search_eval e = {0.123456789012345678, 0.5, 1.25, 3.0, 3, nll};
    assert_int_equal(cache_put_calib(&c, 0x1111, &e, err, sizeof err), 0);
    uint8_t bits[4] = {1, 0, 1, 1};
    double p[4] = {0.9, 0.01, 0.75, 1.0 / 7.0};
    assert_int_equal(cache_put_cell(&c, "heldout:passkey:noise:256:4", 0x2222, 4, bits, p, err, sizeof err),
                     0);
    cache_close(&c);
    /* a killed run: half a record at the end */
    char path[4200];
    snprintf(path, sizeof path, "%s/cache.tsv", dir);
    FILE *f = fopen(path, "a");
    fputs("C 0000000000003333 0.5 1 0.2 2 0.1", f); /* no second NLL, no newline */
    fclose(f);
    assert_int_equal(cache_open(&c, dir, 0xabcdef0123456789ull, err, sizeof err), 0);
    assert_int_equal(c.calib_n, 1);
    assert_int_equal(c.cells_n, 1);
    const cache_calib *k = cache_get_calib(&c, 0x1111);
    assert_non_null(k);
    assert_true(k->e.score == e.score && k->e.accuracy == e.accuracy && k->e.nll == e.nll);
    assert_int_equal(k->e.n_samples, 3);
    for (int i = 0; i < 3; i++) assert_true(k->e.sample_nll[i] == nll[i]); /* %.17g is exact */
    assert_null(cache_get_calib(&c, 0x3333));
    const cache_cell *cc = cache_get_cell(&c, "heldout:passkey:noise:256:4", 0x2222);
    assert_non_null(cc);
    assert_int_equal(cc->n, 4);
    assert_memory_equal(cc->exact, bits, 4);
    for (int i = 0; i < 4; i++) assert_true(cc->p[i] == p[i]);
    assert_null(cache_get_cell(&c, "heldout:passkey:noise:512:4", 0x2222));
    cache_close(&c);
    /* another plan in the same folder */
    assert_int_equal(cache_open(&c, dir, 0x1ull, err, sizeof err), -1);
    assert_non_null(strstr(err, "other settings"));
    unlink(path);
    rmdir(dir);
}

/* lo: SWA {0,1,2,3}; hi: SWA {2,3,4,5,6} of 8 heads. T = |{0,1}| = 2 (SWA at lo, full at hi);
 * |SWA_lo| = 4, |FULL_hi| = 3, T~ = 2 / sqrt(12) = 0.577350. */
static void test_turnover(void **state) {
    (void)state;
    uint8_t zl[8] = {0, 0, 0, 0, 1, 1, 1, 1}, zh[8] = {1, 1, 0, 0, 0, 0, 0, 1};
    attn_mask lo = {4, 2, 8, 0, zl}, hi = {4, 2, 8, 0, zh};
    int t = -1;
    double tn = compare_turnover(&lo, &hi, &t);
    assert_int_equal(t, 2);
    assert_true(fabs(tn - 2.0 / sqrt(12.0)) < 1e-12);
    assert_true(compare_turnover(&lo, &lo, &t) == 0.0 && t == 0);
}

/* bosch_layer is a method of the documented comparison, listed before the layer-level baselines,
 * and a plan naming it passes the check with its granularity (search_variant_apply). */
static void test_plan_has_bosch_layer(void **state) {
    (void)state;
    char err[512];
    static compare_plan p;
    assert_int_equal(compare_plan_preset(&p, "bench", NULL, err, sizeof err), 0);
    const int li = compare_method_index(&p, "bosch_layer"), ri = compare_method_index(&p, "rand");
    assert_true(li >= 0 && ri == li + 1);
    assert_int_equal(compare_plan_check(&p, err, sizeof err), 0);
    search_config c = p.cfg;
    assert_int_equal(search_variant_apply(&c, p.methods[li], err, sizeof err), 0);
    assert_int_equal(c.granularity, SEARCH_GRANULARITY_LAYER);
}

/* The transfer split of the presets (issue 31): bench scores the three held-out tasks at 2k and
 * 4k, 16 samples each (48 per mask and length), BOSCH and the two best other methods on
 * validation; ci at 384 tokens with the best other one; quick has none. A plan that picks the
 * others on validation without a validation split is refused, naming the option to use. */
static void test_plan_transfer(void **state) {
    (void)state;
    char err[512];
    static compare_plan p;
    assert_int_equal(compare_plan_preset(&p, "bench", NULL, err, sizeof err), 0);
    assert_int_equal(p.n_transfer, 6);
    assert_int_equal(p.transfer_others, 2);
    int per_length[2] = {0, 0};
    for (int c = 0; c < p.n_transfer; c++) {
        assert_true(p.transfer[c].length == 2048 || p.transfer[c].length == 4096);
        per_length[p.transfer[c].length == 4096] += p.transfer[c].n_samples;
        assert_int_equal(p.transfer[c].task, p.heldout[c / 2 * 2].task);
        assert_int_equal(p.transfer[c].haystack, p.heldout[c / 2 * 2].haystack);
    }
    assert_int_equal(per_length[0], 48), assert_int_equal(per_length[1], 48);
    assert_int_equal(compare_plan_check(&p, err, sizeof err), 0);
    p.n_valid = 0;
    assert_int_equal(compare_plan_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "--transfer 0"));
    p.transfer_others = 0; /* every method on transfer: no validation needed */
    assert_int_equal(compare_plan_check(&p, err, sizeof err), 0);
    assert_int_equal(compare_plan_preset(&p, "ci", NULL, err, sizeof err), 0);
    assert_int_equal(p.n_transfer, 3);
    assert_int_equal(p.transfer_others, 1);
    assert_int_equal(p.transfer[0].length, 384);
    assert_int_equal(compare_plan_preset(&p, "quick", NULL, err, sizeof err), 0);
    assert_int_equal(p.n_transfer, 0);
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) assert_int_equal(fwrite(buf, 1, n, b), n);
    fclose(a);
    fclose(b);
}

/* The Python-written fixtures (scripts/fixtures/make_compare_fixtures.py) read back with the values
 * Python wrote; the bounds of both files are enforced with a message naming file, line and limit. */
static void test_readers_fixtures_and_bounds(void **state) {
    (void)state;
    char dir[] = "/tmp/test_compare_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/cache.tsv", dir);
    copy_file(BOSCH_SOURCE_DIR "/tests/fixtures/compare_cache.tsv", path);
    compare_cache c;
    assert_int_equal(cache_open(&c, dir, 0x0123456789abcdefull, err, sizeof err), 0);
    assert_int_equal(c.calib_n, 3);
    assert_int_equal(c.cells_n, 2);
    const cache_calib *k = cache_get_calib(&c, 0x1818e811892f902bull);
    assert_non_null(k);
    assert_true(k->e.score == 0.36568891691258554);
    assert_int_equal(k->e.n_samples, 4);
    assert_true(k->e.sample_nll[3] == 0.31006523133587399);
    cache_close(&c);

    /* a line longer than any record (30 MiB) is refused, not read whole */
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("C 0123 ", f);
    for (long i = 0; i < (CACHE_MAX_LINE + 4096) / 8; i++) fputs("0.12345 ", f);
    fputs("\n", f);
    fclose(f);
    assert_int_equal(cache_open(&c, dir, 0x0123456789abcdefull, err, sizeof err), -1);
    if (!strstr(err, "cache.tsv: line 7: longer than") || !strstr(err, "samples"))
        fail_msg("message '%s'", err);

    /* results.csv: the held-out rows at the ratio asked for, then a line over the bound */
    snprintf(path, sizeof path, "%s/results.csv", dir);
    copy_file(BOSCH_SOURCE_DIR "/tests/fixtures/compare_results.csv", path);
    compare_row rows[COMPARE_MAX_METHODS];
    int n = 0;
    double used = 0;
    assert_int_equal(compare_folder_rows(dir, 0.5, rows, COMPARE_MAX_METHODS, &n, &used, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_true(used == 0.5);
    assert_string_equal(rows[0].method, "full");
    assert_string_equal(rows[2].method, "bosch");
    f = fopen(path, "a");
    fputs("heldout,full,0.5000,all,all,0,16,3,0.1875,0,1,0.5,", f);
    for (int i = 0; i < 5000; i++) fputc('9', f);
    fputs("\n", f);
    fclose(f);
    assert_int_equal(compare_folder_rows(dir, 0.5, rows, COMPARE_MAX_METHODS, &n, &used, err, sizeof err),
                     -1);
    if (!strstr(err, "results.csv: line 38: longer than 4096 bytes")) fail_msg("message '%s'", err);
    /* a method names a file of the folder (mask_METHOD_RATIO.csv): a path in it is refused */
    copy_file(BOSCH_SOURCE_DIR "/tests/fixtures/compare_results.csv", path);
    f = fopen(path, "a");
    fputs("heldout,../../etc/x,0.5000,all,all,0,16,3,0.1875,0,1,0.5,1\n", f);
    fclose(f);
    assert_int_equal(compare_folder_rows(dir, 0.5, rows, COMPARE_MAX_METHODS, &n, &used, err, sizeof err),
                     -1);
    if (!strstr(err, "results.csv: line 38: method '../../etc/x' is not a method name"))
        fail_msg("message '%s'", err);

    /* hash 0 marks an empty slot of the cache's table: such records are not kept (found by
     * fuzz_compare: the second one overwrote the first and leaked its NLLs) */
    snprintf(path, sizeof path, "%s/cache.tsv", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("bosch-compare-cache 1 0123456789abcdef\n"
          "C 0000000000000000 0.5 0.25 0.5 1 0.5\n"
          "C 0000000000000000 0.6 0.25 0.6 1 0.6\n"
          "C 00000000000000a1 0.7 0.5 0.7 2 0.7 0.8\n",
          f);
    fclose(f);
    assert_int_equal(cache_open(&c, dir, 0x0123456789abcdefull, err, sizeof err), 0);
    assert_int_equal(c.calib_n, 1);
    assert_null(cache_get_calib(&c, 0));
    k = cache_get_calib(&c, 0xa1);
    assert_non_null(k);
    assert_true(k->e.sample_nll[1] == 0.8);
    cache_close(&c);

    snprintf(path, sizeof path, "%s/cache.tsv", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_roundtrip), cmocka_unit_test(test_readers_fixtures_and_bounds),
        cmocka_unit_test(test_turnover), cmocka_unit_test(test_plan_has_bosch_layer),
        cmocka_unit_test(test_plan_transfer)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
