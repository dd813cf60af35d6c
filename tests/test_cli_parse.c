/* test_cli_parse.c — the option-value parsers of app/cli.c (cli.h, commands.h) and the mask loader's
 * model-name check (csv_mask_load_for, csvio.h), called directly.
 *
 * The parsers: every accepted text gives the value written in it; every refused one returns -1 and
 * prints one stderr line naming the command, the option and the text, with the same range the
 * check enforces (values just outside the quoted range are refused, its ends accepted). Lists: an
 * empty item anywhere (",256", "256,", "256,,512"), an empty list and too many items are refused.
 * The mask check: a file whose model field differs from the loaded model's name loads when the
 * shape fits and fills the warning with the file and both names; a shape that differs is an error.
 * Expected values are the texts' own numbers (independent of the code under test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "csvio.h"

/* Stderr of the last call captured by CAPTURE. */
static char captured[4096];

/* Run `call` with fd 2 redirected to a temporary file; its text goes to captured[]. */
#define CAPTURE(rc_var, call)                                                                                \
    do {                                                                                                     \
        fflush(stderr);                                                                                      \
        FILE *tf_ = tmpfile();                                                                               \
        assert_non_null(tf_);                                                                                \
        int saved_ = dup(2);                                                                                 \
        dup2(fileno(tf_), 2);                                                                                \
        rc_var = (call);                                                                                     \
        fflush(stderr);                                                                                      \
        dup2(saved_, 2);                                                                                     \
        close(saved_);                                                                                       \
        rewind(tf_);                                                                                         \
        size_t n_ = fread(captured, 1, sizeof captured - 1, tf_);                                            \
        captured[n_] = '\0';                                                                                 \
        fclose(tf_);                                                                                         \
    } while (0)

static void assert_said(const char *text) {
    if (!strstr(captured, text)) fail_msg("stderr '%s' lacks '%s'", captured, text);
}

static void test_int_range(void **state) {
    (void)state;
    long x = 0;
    int rc;
    CAPTURE(rc, cli_parse_int_range("eval", "--keys", "2", 2, 8, &x));
    assert_int_equal(rc, 0);
    assert_int_equal(x, 2);
    assert_string_equal(captured, "");
    CAPTURE(rc, cli_parse_int_range("eval", "--keys", "8", 2, 8, &x));
    assert_int_equal(rc, 0);
    assert_int_equal(x, 8);
    const char *bad[] = {"9", "1", "", " 5", "5 ", "5x", "+5", "0x5", "99999999999999999999", "-"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        x = 77;
        CAPTURE(rc, cli_parse_int_range("eval", "--keys", bad[i], 2, 8, &x));
        assert_int_equal(rc, -1);
        assert_int_equal(x, 77); /* untouched */
        char want[128];
        snprintf(want, sizeof want, "bosch eval: --keys: bad value '%s' (need an integer in [2, 8])\n",
                 bad[i]);
        assert_string_equal(captured, want);
    }
    CAPTURE(rc, cli_parse_int_range("eval", "--sinks", NULL, 0, 8, &x));
    assert_int_equal(rc, -1);
    /* cli_parse_int: the upper end is INT_MAX, and the message says so */
    CAPTURE(rc, cli_parse_int("search", "--budget1", "2147483648", 1, &x));
    assert_int_equal(rc, -1);
    assert_said("--budget1: bad value '2147483648' (need an integer in [1, 2147483647])");
    CAPTURE(rc, cli_parse_int("search", "--budget1", "2147483647", 1, &x));
    assert_int_equal(rc, 0);
    assert_int_equal(x, 2147483647L);
}

static void test_seed(void **state) {
    (void)state;
    unsigned long long s = 0;
    int rc;
    CAPTURE(rc, cli_parse_seed("eval", "--seed", "16777217", &s));
    assert_int_equal(rc, 0);
    assert_true(s == 16777217ull);
    CAPTURE(rc, cli_parse_seed("eval", "--seed", "18446744073709551615", &s));
    assert_int_equal(rc, 0);
    assert_true(s == 18446744073709551615ull);
    const char *bad[] = {"18446744073709551616", "-1", "", "1x", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CAPTURE(rc, cli_parse_seed("eval", "--seed", bad[i], &s));
        assert_int_equal(rc, -1);
        assert_said("need an integer in [0, 18446744073709551615]");
    }
}

static void test_tokens(void **state) {
    (void)state;
    long x = 0;
    int rc;
    struct {
        const char *text;
        long value;
    } ok[] = {{"128", 128}, {"1k", 1024}, {"8K", 8192}, {"16384k", 16777216}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CAPTURE(rc, cli_parse_tokens("compare", "--length", ok[i].text, 128, 1L << 24, &x));
        assert_int_equal(rc, 0);
        assert_int_equal(x, ok[i].value);
    }
    const char *bad[] = {"127", "16385k", "1kk", "k", "1m", "-1k", "9223372036854775807k", "1 k", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CAPTURE(rc, cli_parse_tokens("compare", "--length", bad[i], 128, 1L << 24, &x));
        assert_int_equal(rc, -1);
        assert_said("need a token count in [128, 16777216], e.g. 512 or 1k");
    }
}

static void test_split_list(void **state) {
    (void)state;
    char items[4][CLI_ITEM_CAP];
    int n;
    CAPTURE(n, cli_split_list("eval", "--tasks", "passkey,niah_single", items, 4));
    assert_int_equal(n, 2);
    assert_string_equal(items[0], "passkey");
    assert_string_equal(items[1], "niah_single");
    CAPTURE(n, cli_split_list("eval", "--tasks", "a", items, 4));
    assert_int_equal(n, 1);
    assert_string_equal(items[0], "a");
    struct {
        const char *text, *why;
    } bad[] = {{"256,", "item 2 is empty"},
               {",256", "item 1 is empty"},
               {"256,,512", "item 2 is empty"},
               {",", "item 1 is empty"},
               {"", "empty; need items separated by commas"},
               {"a,b,c,d,e", "more than 4 items"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CAPTURE(n, cli_split_list("bench", "--lengths", bad[i].text, items, 4));
        assert_int_equal(n, -1);
        char want[128];
        snprintf(want, sizeof want, "bosch bench: --lengths: bad list '%s' (%s", bad[i].text, bad[i].why);
        assert_said(want);
    }
    char longitem[CLI_ITEM_CAP + 8];
    memset(longitem, 'x', CLI_ITEM_CAP);
    longitem[CLI_ITEM_CAP] = '\0';
    CAPTURE(n, cli_split_list("compare", "--methods", longitem, items, 4));
    assert_int_equal(n, -1);
    assert_said("item 1 is longer than 63 characters");
    CAPTURE(n, cli_split_list("compare", "--methods", NULL, items, 4));
    assert_int_equal(n, -1);
}

static void test_typed_lists(void **state) {
    (void)state;
    int v[4], n;
    double r[4];
    CAPTURE(n, cli_parse_int_list("bench", "--batch", "1,4,16", 1, 1 << 20, v, 4));
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 4);
    assert_int_equal(v[2], 16);
    CAPTURE(n, cli_parse_int_list("bench", "--batch", "1,0", 1, 1 << 20, v, 4));
    assert_int_equal(n, -1);
    assert_said("bosch bench: --batch: bad list '1,0' (item '0' is not an integer in [1, 1048576])");
    CAPTURE(n, cli_parse_int_list("bench", "--batch", "1,4,", 1, 1 << 20, v, 4));
    assert_int_equal(n, -1);
    assert_said("--batch: bad list '1,4,' (item 3 is empty");
    CAPTURE(n, cli_parse_tokens_list("eval", "--lengths", "512,1k,8K", 128, 1L << 24, v, 4));
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 512);
    assert_int_equal(v[1], 1024);
    assert_int_equal(v[2], 8192);
    CAPTURE(n, cli_parse_tokens_list("eval", "--lengths", "512,100", 128, 1L << 24, v, 4));
    assert_int_equal(n, -1);
    assert_said("--lengths: bad list '512,100' (item '100' is not a token count in [128, 16777216]");
    CAPTURE(n, cli_parse_real_list("compare", "--ratios", "0,0.25,1", 0.0, 1.0, r, 4));
    assert_int_equal(n, 3);
    assert_true(r[0] == 0.0 && r[1] == 0.25 && r[2] == 1.0);
    const char *bad[] = {"0.5,1.5", "0.5,-0.1", "nan", "0.5x", "0.5, 0.7", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CAPTURE(n, cli_parse_real_list("compare", "--ratios", bad[i], 0.0, 1.0, r, 4));
        assert_int_equal(n, -1);
        assert_said("is not a number in [0, 1])");
    }
}

/* A SmolLM2-135M-shaped all-full mask file (30 layers x 3 KV heads, GQA groups of 3) whose model
 * field is `name`, n_layer rows n_layer. */
static void write_mask(const char *path, const char *name, int n_layer) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention\n");
    for (int l = 0; l < n_layer; l++)
        for (int h = 0; h < 3; h++)
            fprintf(f, "\"%s\",%d,3,128,4,0.000000,%d,%d,%d;%d;%d,full\n", name, n_layer, l, h, 3 * h,
                    3 * h + 1, 3 * h + 2);
    fclose(f);
}

static void test_mask_model_name(void **state) {
    (void)state;
    model_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_layer = 30, hp.n_head = 9, hp.n_head_kv = 3;
    char path[64], err[512], warn[512];
    snprintf(path, sizeof path, "/tmp/test_cli_parse_%d.csv", (int)getpid());
    attn_mask m;

    write_mask(path, "SmolLM2 135M Instruct Q8_0", 30);
    assert_int_equal(
        csv_mask_load_for(path, &m, &hp, "SmolLM2 135M Instruct Q4_1", warn, sizeof warn, err, sizeof err),
        0);
    assert_int_equal(m.n_layer, 30);
    assert_int_equal(m.n_head_kv, 3);
    assert_int_equal(m.sinks, 4);
    char want[512];
    snprintf(want, sizeof want,
             "%s: field 'model': the mask is for 'SmolLM2 135M Instruct Q8_0', the loaded model is 'SmolLM2 "
             "135M Instruct Q4_1' (loaded anyway: the shape matches)",
             path);
    assert_string_equal(warn, want);
    mask_free(&m);

    /* the same name, no name to compare with, or an empty model field: no warning */
    assert_int_equal(
        csv_mask_load_for(path, &m, &hp, "SmolLM2 135M Instruct Q8_0", warn, sizeof warn, err, sizeof err),
        0);
    assert_string_equal(warn, "");
    mask_free(&m);
    assert_int_equal(csv_mask_load_for(path, &m, &hp, NULL, warn, sizeof warn, err, sizeof err), 0);
    assert_string_equal(warn, "");
    mask_free(&m);
    write_mask(path, "", 30);
    assert_int_equal(csv_mask_load_for(path, &m, &hp, "X", warn, sizeof warn, err, sizeof err), 0);
    assert_string_equal(warn, "");
    mask_free(&m);

    /* another shape: an error, whatever the name */
    write_mask(path, "SmolLM2 135M Instruct Q8_0", 29);
    assert_int_equal(
        csv_mask_load_for(path, &m, &hp, "SmolLM2 135M Instruct Q4_1", warn, sizeof warn, err, sizeof err),
        -1);
    snprintf(want, sizeof want, "%s: mask does not fit the model: n_layer is 29, model has 30", path);
    assert_string_equal(err, want);
    assert_null(m.z);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_range),   cmocka_unit_test(test_seed),
        cmocka_unit_test(test_tokens),      cmocka_unit_test(test_split_list),
        cmocka_unit_test(test_typed_lists), cmocka_unit_test(test_mask_model_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
