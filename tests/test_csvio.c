/* test_csvio.c — CSV files (tui/csvio.h): quoting against Python's csv module, the mask file
 * against a Python-written fixture, atomic writes, and one specific message per kind of bad file.
 * Fixtures: tests/fixtures/csvio_*.csv, made by scripts/fixtures/make_csvio_fixtures.py.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "csvio.h"

static char tmpdir[256];

static const model_hparams smol_hp = {
    .n_layer = 30, .n_head = 9, .n_head_kv = 3, .head_dim = 64, .n_embd = 576};

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    size_t got = fread(b, 1, (size_t)len, f);
    fclose(f);
    b[got] = '\0';
    if (n) *n = got;
    return b;
}

static void spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *tpath(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static int count_temp_files(void) {
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* The rows of scripts/fixtures/make_csvio_fixtures.py QUOTING_ROWS, typed again here. */
static const char *const quoting_rows[5][3] = {
    {"name", "value", "note"},
    {"plain", "42", ""},
    {"a,b", "say \"hi\"", "two\nlines"},
    {"caf\xc3\xa9 \xe2\x80\x94 \xcf\x81", "0.5", "\"\""},
    {"", ",", "end"},
};

static void test_read_python_quoting(void **state) {
    (void)state;
    char err[512] = "";
    csv_table t;
    assert_int_equal(csv_read(BOSCH_SOURCE_DIR "/tests/fixtures/csvio_quoting.csv", &t, err, sizeof err), 0);
    assert_int_equal(t.n_rows, 5);
    for (int r = 0; r < 5; r++) {
        assert_int_equal(t.n_cols[r], 3);
        for (int c = 0; c < 3; c++) assert_string_equal(t.cells[r][c], quoting_rows[r][c]);
    }
    /* Row 3 ("a,b",...) starts on line 3 and spans two lines; so row 4 starts on line 5. */
    assert_int_equal(t.line[2], 3);
    assert_int_equal(t.line[3], 5);
    assert_int_equal(csv_table_column(&t, "note"), 2);
    assert_int_equal(csv_table_column(&t, "nope"), -1);
    csv_table_free(&t);
}

static void test_write_matches_python(void **state) {
    (void)state;
    char err[512] = "";
    const char *out = tpath("quoting.csv");
    csv_out *w = csv_out_open(out, quoting_rows[0], 3, err, sizeof err);
    assert_non_null(w);
    for (int r = 1; r < 5; r++) assert_int_equal(csv_out_row(w, quoting_rows[r]), 0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    size_t n1, n2;
    char *ours = slurp(out, &n1);
    char *ref = slurp(BOSCH_SOURCE_DIR "/tests/fixtures/csvio_quoting.csv", &n2);
    assert_non_null(ours);
    assert_non_null(ref);
    assert_int_equal(n1, n2);
    assert_memory_equal(ours, ref, n1);
    free(ours);
    free(ref);
    assert_int_equal(count_temp_files(), 0);
}

static void test_rowf_and_blanks_round_trip(void **state) {
    (void)state;
    char err[512] = "";
    const char *out = tpath("rowf.csv");
    const char *hdr[] = {"a", "b", "c"};
    csv_out *w = csv_out_open(out, hdr, 3, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(csv_out_rowf(w, "%d\x1f%.2f\x1f%s", 7, 0.25, "  padded  "), 0);
    assert_int_equal(csv_out_rowf(w, "x\x1fy\x1f%s", "line\r\nbreak"), 0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    csv_table t;
    assert_int_equal(csv_read(out, &t, err, sizeof err), 0);
    assert_int_equal(t.n_rows, 3);
    assert_string_equal(t.cells[1][0], "7");
    assert_string_equal(t.cells[1][1], "0.25");
    assert_string_equal(t.cells[1][2], "  padded  "); /* quoted, so libcsv keeps the blanks */
    assert_string_equal(t.cells[2][2], "line\r\nbreak");
    csv_table_free(&t);

    /* A row with the wrong number of fields makes the commit fail and leaves nothing behind. */
    const char *bad = tpath("rowf_bad.csv");
    w = csv_out_open(bad, hdr, 3, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(csv_out_rowf(w, "only\x1ftwo"), -1);
    assert_int_equal(csv_out_commit(w, err, sizeof err), -1);
    assert_non_null(strstr(err, "wrong number of fields"));
    assert_int_equal(access(bad, F_OK), -1);
    assert_int_equal(count_temp_files(), 0);
}

static void test_atomic_write(void **state) {
    (void)state;
    char err[512] = "";
    const char *out = tpath("atomic.csv");
    spit(out, "old,content\n");
    const char *hdr[] = {"x"};
    csv_out *w = csv_out_open(out, hdr, 1, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(count_temp_files(), 1); /* rows go to the temporary file... */
    const char *row[] = {"new"};
    assert_int_equal(csv_out_row(w, row), 0);
    char *mid = slurp(out, NULL);
    assert_string_equal(mid, "old,content\n"); /* ...so the target is untouched until commit */
    free(mid);
    csv_out_abort(w);
    assert_int_equal(count_temp_files(), 0);
    char *after = slurp(out, NULL);
    assert_string_equal(after, "old,content\n");
    free(after);

    w = csv_out_open(out, hdr, 1, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(csv_out_row(w, row), 0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    after = slurp(out, NULL);
    assert_string_equal(after, "x\nnew\n");
    free(after);
    assert_int_equal(count_temp_files(), 0);

    /* A folder that does not exist: the message names the file. */
    assert_null(csv_out_open("/nonexistent-dir-bosch/x.csv", hdr, 1, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent-dir-bosch/x.csv"));
}

static int expected_swa(int l, int h) {
    return (3 * l + h) % 4 == 0;
}

static void test_mask_load_python_fixture(void **state) {
    (void)state;
    char err[512] = "";
    attn_mask m;
    int rc = csv_mask_load(BOSCH_SOURCE_DIR "/tests/fixtures/csvio_mask_smollm2.csv", &m, &smol_hp, err,
                           sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(m.n_layer, 30);
    assert_int_equal(m.n_head_kv, 3);
    assert_int_equal(m.window, 256);
    assert_int_equal(m.sinks, 4);
    for (int l = 0; l < 30; l++)
        for (int h = 0; h < 3; h++)
            assert_int_equal(mask_get(&m, l, h), expected_swa(l, h) ? ATTN_SWA : ATTN_FULL);

    /* Saving the same mask gives the Python file byte for byte; loading it back gives the mask. */
    const char *out = tpath("mask.csv");
    assert_int_equal(csv_mask_save(out, &m, "SmolLM2 135M Instruct", 9, err, sizeof err), 0);
    size_t n1, n2;
    char *ours = slurp(out, &n1);
    char *ref = slurp(BOSCH_SOURCE_DIR "/tests/fixtures/csvio_mask_smollm2.csv", &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(ours, ref, n1);
    free(ours);
    free(ref);
    attn_mask back;
    assert_int_equal(csv_mask_load(out, &back, &smol_hp, err, sizeof err), 0);
    assert_int_equal(mask_first_diff_layer(&m, &back), 30);
    assert_int_equal(back.window, 256);
    mask_free(&back);
    mask_free(&m);
    assert_int_equal(count_temp_files(), 0);
}

static void test_mask_round_trip_other_shapes(void **state) {
    (void)state;
    char err[512] = "";
    attn_mask m;
    assert_int_equal(mask_init(&m, 5, 8, 64, 0, ATTN_FULL), 0);
    for (int l = 0; l < 5; l++)
        for (int h = 0; h < 8; h++)
            if ((l * 8 + h) % 3 == 1) mask_set(&m, l, h, ATTN_SWA);
    const char *out = tpath("mask8.csv");
    assert_int_equal(csv_mask_save(out, &m, "model, with \"comma\"", 32, err, sizeof err), 0);
    attn_mask back;
    assert_int_equal(csv_mask_load(out, &back, NULL, err, sizeof err), 0);
    assert_int_equal(back.n_layer, 5);
    assert_int_equal(back.n_head_kv, 8);
    assert_int_equal(back.window, 64);
    assert_int_equal(back.sinks, 0);
    assert_memory_equal(back.z, m.z, 40);
    mask_free(&back);
    /* The same file against the default model's shape: both differences are named. */
    assert_int_equal(csv_mask_load(out, &back, &smol_hp, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_layer is 5, model has 30"));
    assert_non_null(strstr(err, "n_head_kv is 8, model has 3"));
    assert_non_null(strstr(err, "mask8.csv"));
    mask_free(&m);
}

/* Build a valid SmolLM2-shaped mask file as text with one line replaced or removed. */
static void write_mask_variant(const char *path, int skip_row, const char *replace_row, const char *header) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(header ? header : "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention", f);
    fputc('\n', f);
    int row = 0;
    for (int l = 0; l < 30; l++)
        for (int h = 0; h < 3; h++, row++) {
            if (row == skip_row) {
                if (replace_row) fprintf(f, "%s\n", replace_row);
                continue;
            }
            fprintf(f, "m,30,3,128,0,0.000000,%d,%d,%d;%d;%d,full\n", l, h, 3 * h, 3 * h + 1, 3 * h + 2);
        }
    fclose(f);
}

static void expect_load_error(const char *path, const model_hparams *hp, const char *const *needles) {
    char err[512] = "";
    attn_mask m = {0};
    assert_int_equal(csv_mask_load(path, &m, hp, err, sizeof err), -1);
    assert_null(m.z);
    for (int i = 0; needles[i]; i++) {
        if (!strstr(err, needles[i])) fail_msg("message '%s' lacks '%s'", err, needles[i]);
    }
}

static void test_mask_bad_files(void **state) {
    (void)state;
    const char *p = tpath("bad.csv");
    /* Sanity: the unmodified variant loads. */
    write_mask_variant(p, -1, NULL, NULL);
    char err[512];
    attn_mask ok;
    assert_int_equal(csv_mask_load(p, &ok, &smol_hp, err, sizeof err), 0);
    mask_free(&ok);

    /* Row index k is on line k+2 (header is line 1). */
    write_mask_variant(p, 4, "m,30,3,128,0,0.000000,1,1,3;4;5,local", NULL);
    expect_load_error(p, &smol_hp,
                      (const char *[]){"bad.csv", "line 6", "field 'attention'", "'local'", NULL});

    write_mask_variant(p, 5, "m,30,3,128,0,0.000000,1,1,3;4;5,full", NULL); /* duplicate of row 4 */
    expect_load_error(
        p, &smol_hp,
        (const char *[]){"line 7", "duplicate row for layer 1, kv_head 1", "first on line 6", NULL});

    write_mask_variant(p, 89, NULL, NULL); /* last row missing */
    expect_load_error(p, &smol_hp,
                      (const char *[]){"89 rows", "missing the row for layer 29, kv_head 2", NULL});

    write_mask_variant(p, 10, "m,30,3,256,0,0.000000,3,1,3;4;5,full", NULL);
    expect_load_error(
        p, &smol_hp,
        (const char *[]){"line 12", "field 'window'", "'256' differs from '128' on line 2", NULL});

    write_mask_variant(p, 10, "other,30,3,128,0,0.000000,3,1,3;4;5,full", NULL);
    expect_load_error(p, &smol_hp, (const char *[]){"line 12", "field 'model'", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,30,1,3;4;5,full", NULL);
    expect_load_error(p, &smol_hp,
                      (const char *[]){"line 12", "field 'layer': 30 is out of range 0..29", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,x1,3;4;5,full", NULL);
    expect_load_error(p, &smol_hp,
                      (const char *[]){"line 12", "field 'kv_head': 'x1' is not an integer", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,1,0;1;2,full", NULL);
    expect_load_error(p, &smol_hp,
                      (const char *[]){"line 12", "field 'q_heads': '0;1;2' should be '3;4;5'", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,1,3;4;5", NULL);
    expect_load_error(p, &smol_hp, (const char *[]){"line 12", "field 'attention'", "missing", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,1,3;4;5,swa", NULL); /* 1 SWA, ratio still 0 */
    expect_load_error(p, &smol_hp,
                      (const char *[]){"field 'ratio' says 0", "1 of 90 KV heads are swa", NULL});

    write_mask_variant(p, -1, NULL, "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attn");
    expect_load_error(p, &smol_hp, (const char *[]){"line 1", "no 'attention' column", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,1,\"3;4;5,full", NULL);
    expect_load_error(p, &smol_hp, (const char *[]){"line 12", "unterminated quoted field", NULL});

    write_mask_variant(p, 10, "m,30,3,128,0,0.000000,3,1,3\"4;5,full", NULL);
    expect_load_error(p, &smol_hp, (const char *[]){"line 12", "malformed quoting", NULL});

    spit(p, "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention\n"
            "m,2,1,0,0,0,0,0,0,full\nm,2,1,0,0,0,1,0,0,full\n");
    expect_load_error(p, NULL, (const char *[]){"line 2", "field 'window': 0 must be at least 1", NULL});

    spit(p, "");
    expect_load_error(p, NULL, (const char *[]){"bad.csv", "empty file", NULL});

    expect_load_error(tpath("does-not-exist.csv"), NULL,
                      (const char *[]){"does-not-exist.csv", "cannot open", NULL});
}

/* The GQA group of q_heads is the model's (9 query heads / 3 KV heads = 3), not a guess from the
 * first row: a wrong first row is blamed on its own line with the model's expected list. */
static void test_mask_q_heads_from_model(void **state) {
    (void)state;
    const char *p = tpath("qh.csv");
    write_mask_variant(p, 0, "m,30,3,128,0,0.000000,0,0,0;1,full", NULL);
    expect_load_error(p, &smol_hp,
                      (const char *[]){"line 2", "field 'q_heads': '0;1' should be '0;1;2'",
                                       "9 query heads for 3 KV heads", NULL});
    write_mask_variant(p, 0, "m,30,3,128,0,0.000000,0,0,0;1;2;3,full", NULL);
    expect_load_error(p, &smol_hp, (const char *[]){"line 2", "'0;1;2;3' should be '0;1;2'", NULL});
}

/* Sinks beyond the model's context length are refused with the value and the limit. */
static void test_mask_sinks_beyond_context(void **state) {
    (void)state;
    model_hparams hp = smol_hp;
    hp.n_ctx_train = 8192;
    const char *p = tpath("sinks.csv");
    char row[128];
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention\n", f);
    for (int l = 0; l < 30; l++)
        for (int h = 0; h < 3; h++) {
            snprintf(row, sizeof row, "m,30,3,128,9000,0.000000,%d,%d,%d;%d;%d,full\n", l, h, 3 * h,
                     3 * h + 1, 3 * h + 2);
            fputs(row, f);
        }
    fclose(f);
    expect_load_error(
        p, &hp,
        (const char *[]){"line 2", "field 'sinks': 9000 is more than the model's context length 8192", NULL});
    /* sinks within the context load */
    write_mask_variant(p, -1, NULL, NULL);
    char err[512];
    attn_mask m;
    assert_int_equal(csv_mask_load(p, &m, &hp, err, sizeof err), 0);
    mask_free(&m);
}

/* Bytes this process has read so far (the kernel's rchar, /proc/self/io), or -1 when unknown: a
 * count that does not depend on how busy the machine is, unlike a wall time. */
static long long bytes_read_so_far(void) {
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return -1;
    long long v = -1;
    char line[128];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "rchar: %lld", &v) == 1) break;
    fclose(f);
    return v;
}

/* A mask has at most n_layer x n_head_kv rows of bounded length; past that the file is refused
 * before it is read whole (the issue: 200 MB took 28 s and 2.3 GB before an error on line 92). */
static void test_mask_bounds(void **state) {
    (void)state;
    const char *p = tpath("big.csv");
    char err[512];
    attn_mask m;
    /* 90 good rows, then a 200 MB hole (sparse: no disk) */
    write_mask_variant(p, -1, NULL, NULL);
    assert_int_equal(truncate(p, 200L << 20), 0);
    long long r0 = bytes_read_so_far();
    assert_int_equal(csv_mask_load(p, &m, &smol_hp, err, sizeof err), -1);
    long long r1 = bytes_read_so_far();
    assert_null(m.z);
    if (!strstr(err, "209715200 bytes, more than the") || !strstr(err, "30 layers x 3 KV heads"))
        fail_msg("message '%s'", err);
    /* refused from its size, before it is read whole: only its head (64 KiB, for the message about
     * a mask of another shape) is read, not the 200 MB */
    if (r0 >= 0 && r1 - r0 > (1 << 20)) fail_msg("refusing a 200 MB mask read %lld bytes", r1 - r0);

    /* one row too many: named on its line, with the limit */
    write_mask_variant(p, -1, NULL, NULL);
    FILE *f = fopen(p, "a");
    fputs("m,30,3,128,0,0.000000,0,0,0;1;2,full\n", f);
    fclose(f);
    expect_load_error(p, &smol_hp, (const char *[]){"line 92: more than 91 rows", "90 rows", NULL});

    /* a line far longer than any mask row */
    char *longrow = malloc(20000);
    memset(longrow, 'x', 19999);
    longrow[19999] = '\0';
    memcpy(longrow, "m,30,3,128,0,0.000000,0,0,0;1;2,", 32);
    write_mask_variant(p, 0, longrow, NULL);
    free(longrow);
    expect_load_error(p, &smol_hp, (const char *[]){"line 2: longer than", "bytes", NULL});

    /* a mask of a larger model is still named as such, not as "too many rows" */
    attn_mask big;
    assert_int_equal(mask_init(&big, 40, 3, 128, 0, ATTN_FULL), 0);
    assert_int_equal(csv_mask_save(p, &big, "m", 9, err, sizeof err), 0);
    mask_free(&big);
    expect_load_error(p, &smol_hp, (const char *[]){"n_layer is 40, model has 30", NULL});

    /* a very long model name is cut when saved, so the file stays within the bound and loads back
     * for that model without a warning */
    char *name = malloc(3001);
    memset(name, 'n', 3000);
    name[3000] = '\0';
    name[1023] = (char)0xC3, name[1024] = (char)0xA9; /* a 2-byte character across byte 1024 */
    assert_int_equal(mask_init(&big, 30, 3, 128, 0, ATTN_FULL), 0);
    assert_int_equal(csv_mask_save(p, &big, name, 9, err, sizeof err), 0);
    mask_free(&big);
    char warn[512] = "x";
    if (csv_mask_load_for(p, &m, &smol_hp, name, warn, sizeof warn, err, sizeof err)) fail_msg("%s", err);
    assert_string_equal(warn, "");
    mask_free(&m);
    free(name);

    /* the same limits hold for a buffer in memory */
    char *text = slurp(BOSCH_SOURCE_DIR "/tests/fixtures/csvio_mask_smollm2.csv", NULL);
    size_t n = strlen(text);
    assert_int_equal(csv_mask_parse("mem.csv", text, n, &m, &smol_hp, NULL, NULL, 0, err, sizeof err), 0);
    mask_free(&m);
    char *twice = malloc(2 * n);
    memcpy(twice, text, n);
    memcpy(twice + n, strchr(text, '\n') + 1, n - (size_t)(strchr(text, '\n') + 1 - text));
    assert_int_equal(csv_mask_parse("mem.csv", twice, n + n - (size_t)(strchr(text, '\n') + 1 - text), &m,
                                    &smol_hp, NULL, NULL, 0, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "line 92: more than 91 rows"));
    free(twice);
    free(text);
}

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_csvio.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') unlink(tpath(e->d_name));
    if (d) closedir(d);
    rmdir(tmpdir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_python_quoting),
        cmocka_unit_test(test_write_matches_python),
        cmocka_unit_test(test_rowf_and_blanks_round_trip),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_mask_load_python_fixture),
        cmocka_unit_test(test_mask_round_trip_other_shapes),
        cmocka_unit_test(test_mask_bad_files),
        cmocka_unit_test(test_mask_q_heads_from_model),
        cmocka_unit_test(test_mask_sinks_beyond_context),
        cmocka_unit_test(test_mask_bounds),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
