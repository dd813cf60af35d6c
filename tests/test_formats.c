/* test_formats.c — the file writers of formats/ (trace.h, layers.h, results.h, bench.h) against
 * hand-written expected files, and the one promise they exist for: `bosch search` and the
 * explorer write identical trace and layers files for the same search. For that, one synthetic
 * search (the objective of test_search.c: S(z) = exp(-sum of a[layer][head] over SWA heads)) is
 * listened to by the CLI's path (search_trace_add into rows, then trace_write and
 * search_layers_write, as app/cmd_search.c does) and by the explorer's worker (worker_on_event,
 * then the export jobs of worker_job_io, as the keys x t and x l do), and the files are compared
 * byte for byte: at the end of a BOSCH search, in the middle of one (after stage 1) and at the end
 * of a baseline. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench.h"
#include "layers.h"
#include "results.h"
#include "search_rows.h"
#include "trace.h"
#include "backend.h"
#include "worker_internal.h"

static char tmpdir[256];

/* The whole file as a string (malloc'd), NULL when it cannot be read. */
static char *slurp(const char *path) {
    struct stat sb;
    FILE *f = fopen(path, "rb");
    char *b = f && fstat(fileno(f), &sb) == 0 ? calloc(1, (size_t)sb.st_size + 1) : NULL;
    if (b && fread(b, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) free(b), b = NULL;
    if (f) fclose(f);
    return b;
}

static void path_in(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static void assert_file_is(const char *path, const char *expected) {
    char *got = slurp(path);
    assert_non_null(got);
    if (strcmp(got, expected)) fail_msg("%s:\n%s\nexpected:\n%s", path, got, expected);
    free(got);
}

/* ---- each writer against a hand-written file ------------------------------------------------ */

static void test_trace_file(void **state) {
    (void)state;
    trace_rows t = {0};
    trace_row a = {1, 0, -1, -1, 1.0, 1.0, 0.0, 0.0123, 0x00a820b0dbbb6b4cull, strdup("11/11"), 9, NAN, NAN};
    trace_row b = {2, 1,      -1,   1, 0.25, 0.5, 0.25, 1.5, 0xffffffffffffffffull, strdup("11/01"),
                   9, 0.0125, 0.004};
    /* not finite: an empty cell (a candidate the race dropped after 2 samples) */
    trace_row c = {3, 3, 0, -1, NAN, NAN, 0.5, 2.0, 0, NULL, 2, -0.5, 1.0 / 3};
    assert_int_equal(trace_rows_push(&t, &a), 0);
    assert_int_equal(trace_rows_push(&t, &b), 0);
    assert_int_equal(trace_rows_push(&t, &c), 0);
    char path[512], err[512];
    path_in(path, sizeof path, "trace.csv");
    assert_int_equal(trace_write(path, t.rows, t.n, err, sizeof err), 0);
    assert_file_is(path,
                   "eval,stage,group,layer,score,accuracy,ratio,seconds,mask_hash,mask,samples,gain,gain_se\n"
                   "1,0,-1,-1,1.000000,1.000000,0.000000,0.012,00a820b0dbbb6b4c,11/11,9,,\n"
                   "2,1,-1,1,0.250000,0.500000,0.250000,1.500,ffffffffffffffff,11/01,9,0.012500,0.004000\n"
                   "3,3,0,-1,,,0.500000,2.000,0000000000000000,,2,-0.500000,0.333333\n");
    trace_rows_clear(&t);
    assert_int_equal(t.n, 0);
    assert_int_equal(trace_write(path, t.rows, t.n, err, sizeof err), 0);
    assert_file_is(
        path, "eval,stage,group,layer,score,accuracy,ratio,seconds,mask_hash,mask,samples,gain,gain_se\n");
    trace_rows_free(&t);
    assert_null(t.rows);
    /* a folder is refused before anything is written, naming it */
    assert_int_equal(trace_write(tmpdir, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "is a directory"));
}

static void test_layers_file(void **state) {
    (void)state;
    layers_row rows[3] = {{0, 0.125, 1.0, 0.0, 1, 0}, layers_row_unknown(1), layers_row_unknown(2)};
    rows[2].delta = -0.0005; /* stage 1 probed it, stage 2 not yet */
    char path[512], err[512];
    path_in(path, sizeof path, "layers.csv");
    assert_int_equal(layers_write(path, rows, 3, err, sizeof err), 0);
    assert_file_is(path, "layer,delta,weight,ratio,bucket,n_swa\n"
                         "0,0.125000,1.000000,0.000000,1,0\n"
                         "1,,,,,\n"
                         "2,-0.000500,,,,\n");
    /* no search: every row unknown */
    search_layers_rows(NULL, rows, 3);
    for (int l = 0; l < 3; l++) {
        assert_int_equal(rows[l].layer, l);
        assert_true(isnan(rows[l].delta) && isnan(rows[l].weight) && isnan(rows[l].ratio));
        assert_int_equal(rows[l].bucket, -1);
        assert_int_equal(rows[l].n_swa, -1);
    }
}

static void test_results_files(void **state) {
    (void)state;
    results_row r[2] = {{.split = "heldout",
                         .method = "bosch",
                         .ratio = 0.875,
                         .task = "niah_single",
                         .haystack = "noise",
                         .length = 1024,
                         .n = 16,
                         .hits = 15,
                         .accuracy = 15.0 / 16,
                         .ci_lo = 0.716706,
                         .ci_hi = 0.988889,
                         .score = 0.5,
                         .kv_bytes = 123456789012ull}};
    r[1] = r[0]; /* the pooled row of the same mask */
    r[1].task = r[1].haystack = "all";
    r[1].length = 0, r[1].n = 48, r[1].hits = 1, r[1].accuracy = 1.0 / 48;
    r[1].ci_lo = 0.0, r[1].ci_hi = 0.1, r[1].score = 1.0 / 3, r[1].kv_bytes = 7;
    char path[512], err[512];
    path_in(path, sizeof path, "results.csv");
    assert_int_equal(results_write(path, RESULTS_COMPARE, r, 2, err, sizeof err), 0);
    assert_file_is(path,
                   "split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes\n"
                   "heldout,bosch,0.8750,niah_single,noise,1024,16,15,0.9375,0.7167,0.9889,"
                   "0.500000,123456789012\n"
                   "heldout,bosch,0.8750,all,all,0,48,1,0.0208,0.0000,0.1000,0.333333,7\n");
    /* the eval layout: docs/design.md §8's columns, the same cells */
    path_in(path, sizeof path, "eval.csv");
    assert_int_equal(results_write(path, RESULTS_EVAL, r, 2, err, sizeof err), 0);
    assert_file_is(path, "method,ratio,task,length,accuracy,score,kv_bytes\n"
                         "bosch,0.875000,niah_single,1024,0.937500,0.500000,123456789012\n"
                         "bosch,0.875000,all,0,0.020833,0.333333,7\n");
    /* rows NULL: only the check, no file */
    path_in(path, sizeof path, "check.csv");
    assert_int_equal(results_write(path, RESULTS_EVAL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(results_write(tmpdir, RESULTS_EVAL, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "is a directory"));
}

static void test_bench_file(void **state) {
    (void)state;
    char path[512], err[512];
    path_in(path, sizeof path, "bench.csv");
    csv_out *w = bench_csv_open(path, err, sizeof err);
    assert_non_null(w);
    bench_row s = {.measure = "speed",
                   .length = 1024,
                   .ratio = 0.875,
                   .n_swa = 79,
                   .window = 256,
                   .sinks = 4,
                   .kv_bytes = 5898240,
                   .prefill_tok_s = 629.856,
                   .decode_tok_s = 75.914,
                   .seconds = 0.20316,
                   .cpu_s = 0.18174,
                   .batch = 16,
                   .device = "cuda",
                   .decode_fill = "random",
                   .gpu_peak_bytes = 1ull << 33,
                   .rounds = 3,
                   .prefill_min = 600.123,
                   .prefill_max = 650.456,
                   .decode_min = 70.1,
                   .decode_max = 80.25,
                   .prefill_vs_full = 1.23456,
                   .decode_vs_full = 2.5,
                   .kv_type = "bf16",
                   .load_before = 1.234,
                   .load_after = 6.789};
    bench_row e = {.measure = "eval_reuse", .length = 128, .first_layer = 22, .device = "cpu"};
    assert_int_equal(bench_csv_row(w, &s), 0);
    assert_int_equal(bench_csv_row(w, &e), 0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    assert_file_is(
        path, "measure,length,ratio,n_swa,window,sinks,kv_bytes,prefill_tok_s,decode_tok_s,seconds,"
              "cpu_s,first_layer,batch,device,decode_fill,gpu_peak_bytes,round,rounds,prefill_tok_s_min,"
              "prefill_tok_s_max,decode_tok_s_min,decode_tok_s_max,prefill_vs_full,decode_vs_full,kv_type,"
              "load_before,load_after\n"
              "speed,1024,0.8750,79,256,4,5898240,629.86,75.91,0.2032,0.1817,0,16,cuda,random,"
              "8589934592,0,3,600.12,650.46,70.10,80.25,1.2346,2.5000,bf16,1.23,6.79\n"
              "eval_reuse,128,0.0000,0,0,0,0,0.00,0.00,0.0000,0.0000,22,0,cpu,-,0,0,0,0.00,0.00,0.00,0.00,"
              "0.0000,0.0000,-,0.00,0.00\n");
}

/* ---- the CLI and the explorer write the same files ----------------------------------------- */

#define L 8
#define H 3

/* Cost of each KV head going SWA, unit l*H+h; later layers are cheaper. */
static double unit_cost[L * H];

static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)ctx, (void)make_base, (void)err, (void)errlen;
    double cost = 0;
    for (int u = 0; u < L * H; u++) cost += m->z[u] == ATTN_SWA ? unit_cost[u] : 0.0;
    /* accuracy and seconds with more digits than 4 decimals keep */
    *out = (search_eval){
        .score = exp(-cost), .accuracy = exp(-2 * cost), .nll = cost, .seconds = 0.0012345 * (1 + cost)};
    return 0;
}

static search_objective synth_objective(void) {
    for (int u = 0; u < L * H; u++)
        unit_cost[u] = (0.05 + 0.37 * ((u * 7919) % 23) / 23.0) * (1.0 + (L - u / H) * 0.3);
    return (search_objective){.score = synth_score};
}

/* Both listeners of one search: the CLI's rows and the explorer's worker. */
typedef struct {
    trace_rows cli;
    worker *w;
} both;

static void on_event(const search_event *ev, void *user) {
    both *b = user;
    assert_int_equal(search_trace_add(&b->cli, ev), 0); /* app/cmd_search.c's on_event */
    worker_on_event(ev, b->w);
}

static worker *fake_worker(void) {
    worker *w = calloc(1, sizeof *w);
    assert_non_null(w);
    pthread_mutex_init(&w->mu, NULL);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    w->pipe_r = fds[0], w->pipe_w = fds[1];
    w->snap.hp.n_layer = L;
    w->snap.hp.n_head_kv = H;
    w->snap.hp.n_head = H;
    pthread_mutex_lock(&w->mu);
    worker_reset_search_snapshot_locked(w);
    pthread_mutex_unlock(&w->mu);
    return w;
}

static void fake_worker_free(worker *w) {
    backend_free(w->dev); /* NULL here */
    /* a call into the device layer (engine/backend_device.c), which the worker's jobs use: the
     * test links it before bosch_tui otherwise */
    (void)backend_cuda_count();
    trace_rows_free(&w->trace);
    close(w->pipe_r), close(w->pipe_w);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Fail naming the first line where the CLI's file x and the explorer's y differ. */
static void assert_same_text(const char *what, const char *x, const char *y) {
    if (!strcmp(x, y)) return;
    int line = 1;
    const char *a = x, *b = y;
    while (*a && *a == *b) {
        if (*a == '\n') line++, x = a + 1, y = b + 1;
        a++, b++;
    }
    fail_msg("%s: line %d differs:\n  CLI:      %.*s\n  explorer: %.*s", what, line, (int)strcspn(x, "\n"), x,
             (int)strcspn(y, "\n"), y);
}

/* The explorer's file job `kind` to `path`, as the keys x t and x l queue it. */
static void run_io_job(worker *w, ex_io_kind kind, const char *path) {
    wcmd c = {.kind = UI_CMD_IO, .io = kind};
    assert_true(strlen(path) < sizeof c.path);
    memcpy(c.path, path, strlen(path) + 1);
    worker_job_io(w, &c);
}

/* The trace and layers files through both paths, compared byte for byte; tag names the files. */
static void assert_same_files(both *b, const search_state *st, const char *tag) {
    char cli[512], ex[512], name[128], err[512];
    snprintf(name, sizeof name, "cli_trace_%s.csv", tag);
    path_in(cli, sizeof cli, name);
    assert_int_equal(trace_write(cli, b->cli.rows, b->cli.n, err, sizeof err), 0);
    snprintf(name, sizeof name, "ex_trace_%s.csv", tag);
    path_in(ex, sizeof ex, name);
    run_io_job(b->w, EX_IO_EXPORT_TRACE, ex);
    assert_true(b->w->snap.io.ok);
    char *x = slurp(cli), *y = slurp(ex);
    assert_non_null(x), assert_non_null(y);
    assert_same_text(cli, x, y);
    free(x), free(y);

    snprintf(name, sizeof name, "cli_layers_%s.csv", tag);
    path_in(cli, sizeof cli, name);
    assert_int_equal(search_layers_write(cli, st, L, err, sizeof err), 0); /* app/cmd_search.c */
    snprintf(name, sizeof name, "ex_layers_%s.csv", tag);
    path_in(ex, sizeof ex, name);
    run_io_job(b->w, EX_IO_EXPORT_LAYERS, ex);
    assert_true(b->w->snap.io.ok);
    x = slurp(cli), y = slurp(ex);
    assert_non_null(x), assert_non_null(y);
    assert_same_text(cli, x, y);
    free(x), free(y);
}

static void run_both(const char *method, int stop_after_stage1) {
    search_objective obj = synth_objective();
    search_config cfg;
    search_config_default(&cfg);
    search_config_paper_options(&cfg);
    cfg.ratio = 0.5;
    cfg.window = 16;
    cfg.seed = 7;
    cfg.stage1_budget_per_layer = 3;
    cfg.stage3_budget_per_group = 20;
    cfg.restarts = 1;
    char err[512];
    assert_int_equal(search_variant_apply(&cfg, method, err, sizeof err), 0);
    both b = {{0}, fake_worker()};
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, NULL, on_event, &b, err, sizeof err), 0);
    b.w->search = st;
    int r = 0;
    while (r == 0 && !(stop_after_stage1 && search_stage(st) >= 2)) r = search_step(st, err, sizeof err);
    assert_true(r >= 0);
    assert_true(b.cli.n > 2);
    assert_int_equal(b.cli.n, b.w->trace.n);
    char tag[64];
    snprintf(tag, sizeof tag, "%s%s", method, stop_after_stage1 ? "_stage1" : "");
    assert_same_files(&b, st, tag);
    search_free(st);
    trace_rows_free(&b.cli);
    fake_worker_free(b.w);
}

static void test_cli_and_explorer_same_files(void **state) {
    (void)state;
    run_both("bosch", 0);
    run_both("bosch", 1); /* mid-search: stage-1 deltas, nothing of stage 2 yet */
    run_both("rand", 0);  /* a baseline: no stage 2, ratio and n_swa of the final mask */
}

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_formats.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_file),
        cmocka_unit_test(test_layers_file),
        cmocka_unit_test(test_results_files),
        cmocka_unit_test(test_bench_file),
        cmocka_unit_test(test_cli_and_explorer_same_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
