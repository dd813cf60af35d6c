/* test_plots.c — the figures of plots/ (plots.h) drawn by the real gnuplot from hand-written
 * results.csv and bench CSV files:
 *  - the Pareto front of a hand-worked set of points (ties, dominated points);
 *  - the generated scripts hold exactly the data expected, read back from their data blocks:
 *    the held-out "all" rows of each method sorted by ratio (other splits and cells left out), the
 *    Pareto front worked out by hand, the bench's speed rows per ratio sorted by length (the
 *    GEMM-ceiling and evaluator rows left out);
 *  - gnuplot's PNG has the PNG signature and an IHDR chunk of the size asked for, and its SVG is
 *    parsed by python3's xml.etree (root <svg>, the viewBox of that size, the method names in its
 *    text);
 *  - a bad cell is refused naming the file, line, field and value; a missing column names it;
 *  - without gnuplot: the scripts are still written, PLOTS_NO_GNUPLOT with a one-line warning.
 * Needs gnuplot (Debian gnuplot-nox, scripts/setup) and python3.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_plots.h"
#include "plots.h"

static char dir[256];
static char gnuplot[4096];

static void write_file(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Data block `name` of script file `gp` ("$name << EOD" .. "EOD"): its comment lines joined into
 * comments[cap_c], its numbers row by row into v[rows][cols] (cols numbers each, other words
 * skipped). Returns the number of rows. */
static int read_block(const char *gp, const char *name, double v[][8], int cols, char *comments,
                      size_t cap_c) {
    char p[512], line[512], head[64];
    snprintf(p, sizeof p, "%s/%s", dir, gp);
    snprintf(head, sizeof head, "$%s << EOD\n", name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    int in = 0, n = 0;
    comments[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (!in) {
            in = !strcmp(line, head);
            continue;
        }
        if (!strcmp(line, "EOD\n")) break;
        if (line[0] == '#') {
            strncat(comments, line, cap_c - strlen(comments) - 1);
            continue;
        }
        int k = 0;
        for (char *tok = strtok(line, " \n"); tok && k < cols; tok = strtok(NULL, " \n")) {
            char *end;
            double x = strtod(tok, &end);
            if (!*end) v[n][k++] = x;
        }
        assert_int_equal(k, cols);
        n++;
    }
    fclose(f);
    assert_true(in);
    return n;
}

/* PNG signature, then the IHDR chunk first with width x height (PNG spec, section 5.3 and 11.2.2). */
static void check_png(const char *name, unsigned w, unsigned h) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    unsigned char b[24];
    assert_int_equal(fread(b, 1, 24, f), 24);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(b, sig, 8);
    assert_memory_equal(b + 8, "\0\0\0\rIHDR", 8);
    assert_int_equal((unsigned)b[16] << 24 | b[17] << 16 | b[18] << 8 | b[19], w);
    assert_int_equal((unsigned)b[20] << 24 | b[21] << 16 | b[22] << 8 | b[23], h);
    assert_true(size > 2000); /* axes, labels and lines, not an empty canvas */
}

/* python3's XML parser accepts the SVG, its root is <svg> with viewBox "0 0 w h", and its text
 * holds every word of `words` (space-separated). */
static void check_svg(const char *name, unsigned w, unsigned h, const char *words) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys, xml.etree.ElementTree as E\n"
             "r = E.parse(sys.argv[1]).getroot()\n"
             "ns = \"{http://www.w3.org/2000/svg}\"\n"
             "assert r.tag == ns + \"svg\", r.tag\n"
             "assert r.get(\"viewBox\") == \"0 0 %u %u\", r.get(\"viewBox\")\n"
             "text = \" \".join(\"\".join(t.itertext()) for t in r.iter(ns + \"text\"))\n"
             "missing = [w for w in sys.argv[2].split() if w not in text]\n"
             "assert not missing, missing' '%s/%s' '%s'",
             w, h, dir, name, words);
    assert_int_equal(system(cmd), 0);
}

static const char results_csv[] =
    "split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes\n"
    "heldout,bosch,0.8750,all,all,0,96,48,0.5000,0.4000,0.6000,0.500000,524288\n"
    "heldout,bosch,0.5000,niah_single,noise,256,32,30,0.9375,0.8,0.98,0.9,262144\n"
    "validation,bosch,0.5000,all,all,0,48,40,0.8333,0.7,0.9,0.8,1048576\n"
    "heldout,bosch,0.5000,all,all,0,96,90,0.9375,0.8701,0.9710,0.910000,1048576\n"
    "heldout,intr,0.5000,all,all,0,96,60,0.6250,0.5251,0.7154,0.600000,1048576\n"
    "heldout,intr,0.8750,all,all,0,96,19,0.1979,0.1300,0.2900,0.200000,524288\n";

static void test_pareto_front(void **st) {
    (void)st;
    /* by hand: (5,.1) and (10,.5) are cheapest for their accuracy; (15,.4) is beaten by (10,.5);
       the first (20,.9) stays, its exact twin does not; (30,.8) is beaten by (20,.9) */
    const double x[] = {10, 20, 15, 20, 30, 5}, y[] = {0.5, 0.9, 0.4, 0.9, 0.8, 0.1};
    int on[6];
    assert_int_equal(plots_pareto_front(x, y, 6, on), 3);
    const int want[6] = {1, 1, 0, 0, 0, 1};
    assert_memory_equal(on, want, sizeof want);
}

static void test_compare_figures(void **st) {
    (void)st;
    write_file("results.csv", results_csv);
    char err[1024] = "";
    int rc = plots_compare(dir, gnuplot, err, sizeof err);
    if (rc != PLOTS_OK) fail_msg("plots_compare: %d %s", rc, err);
    double v[16][8];
    char c[512];
    /* accuracy vs ratio: each method's held-out "all" rows, sorted by ratio */
    assert_int_equal(read_block("accuracy_vs_ratio.gp", "m0", v, 4, c, sizeof c), 2);
    assert_non_null(strstr(c, "# method bosch\n"));
    const double bosch[2][4] = {{0.5, 0.9375, 0.8701, 0.9710}, {0.875, 0.5, 0.4, 0.6}};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 4; k++) assert_float_equal(v[r][k], bosch[r][k], 1e-9);
    assert_int_equal(read_block("accuracy_vs_ratio.gp", "m1", v, 4, c, sizeof c), 2);
    assert_non_null(strstr(c, "# method intr\n"));
    assert_float_equal(v[0][1], 0.625, 1e-9);
    assert_float_equal(v[1][0], 0.875, 1e-9);
    assert_float_equal(v[1][1], 0.1979, 1e-9);
    /* Pareto: KV MiB and accuracy; the front by hand is bosch@0.875 (0.5 MiB, 0.5) then
       bosch@0.5 (1 MiB, 0.9375); intr is beaten at both sizes */
    assert_int_equal(read_block("pareto.gp", "m1", v, 3, c, sizeof c), 2); /* by ratio */
    assert_float_equal(v[0][0], 1.0, 1e-9);
    assert_float_equal(v[0][1], 0.625, 1e-9);
    assert_float_equal(v[1][0], 0.5, 1e-9);
    assert_float_equal(v[1][1], 0.1979, 1e-9);
    assert_float_equal(v[1][2], 0.875, 1e-9);
    assert_int_equal(read_block("pareto.gp", "front", v, 2, c, sizeof c), 2);
    assert_float_equal(v[0][0], 0.5, 1e-9);
    assert_float_equal(v[0][1], 0.5, 1e-9);
    assert_float_equal(v[1][0], 1.0, 1e-9);
    assert_float_equal(v[1][1], 0.9375, 1e-9);
    check_png("accuracy_vs_ratio.png", PLOTS_W, PLOTS_H);
    check_png("pareto.png", PLOTS_W, PLOTS_H);
    check_svg("accuracy_vs_ratio.svg", PLOTS_W, PLOTS_H, "bosch intr accuracy");
    check_svg("pareto.svg", PLOTS_W, PLOTS_H, "bosch intr Pareto");
}

static void test_bench_figure(void **st) {
    (void)st;
    write_file("b.csv", "measure,length,ratio,n_swa,window,sinks,kv_bytes,prefill_tok_s,decode_tok_s,seconds,"
                        "cpu_s,first_layer,batch,device,decode_fill,gpu_peak_bytes\n"
                        "gemm_ceiling,512,0.0000,0,256,0,0,9000.00,0.00,0.1,0,0,0,cpu,-,0\n"
                        "speed,1024,0.0000,0,256,0,47185920,2000.50,70.25,0.5,1.0,0,1,cpu,prefill,0\n"
                        "speed,512,0.0000,0,256,0,23592960,2500.00,72.00,0.2,0.4,0,1,cpu,prefill,0\n"
                        "speed,512,0.5000,45,256,0,17694720,2600.00,73.00,0.2,0.4,0,1,cpu,prefill,0\n"
                        "speed,1024,0.5000,45,256,0,29491200,2400.00,71.00,0.4,0.8,0,1,cpu,prefill,0\n"
                        "eval_reuse,1024,0.5000,45,256,0,0,0,0,1.5,3.0,22,0,cpu,-,0\n");
    char err[1024] = "", path[512];
    snprintf(path, sizeof path, "%s/b.csv", dir);
    int rc = plots_bench(path, gnuplot, err, sizeof err);
    if (rc != PLOTS_OK) fail_msg("plots_bench: %d %s", rc, err);
    double v[16][8];
    char c[512];
    assert_int_equal(read_block("b.gp", "r0", v, 4, c, sizeof c), 2); /* rho 0, sorted by length */
    assert_non_null(strstr(c, "# ratio 0.0000 batch 1\n"));
    const double r0[2][4] = {{512, 2500, 72, 22.5}, {1024, 2000.5, 70.25, 45}};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 4; k++) assert_float_equal(v[r][k], r0[r][k], 1e-6);
    assert_int_equal(read_block("b.gp", "r1", v, 4, c, sizeof c), 2);
    assert_non_null(strstr(c, "# ratio 0.5000 batch 1\n"));
    assert_float_equal(v[1][3], 28.125, 1e-6); /* 29491200 bytes = 28.125 MiB */
    check_png("b.png", PLOTS_BENCH_W, PLOTS_BENCH_H);
    check_svg("b.svg", PLOTS_BENCH_W, PLOTS_BENCH_H, "Prefill Decode KV");
}

/* A file of the interleaved bench (formats/bench.h's round columns): the error bars are the
 * rounds' range, the title names the KV type, the rounds and the load. */
static void test_bench_figure_rounds(void **st) {
    (void)st;
    write_file(
        "br.csv",
        "measure,length,ratio,n_swa,window,sinks,kv_bytes,prefill_tok_s,decode_tok_s,seconds,cpu_s,"
        "first_layer,batch,device,decode_fill,gpu_peak_bytes,round,rounds,prefill_tok_s_min,"
        "prefill_tok_s_max,decode_tok_s_min,decode_tok_s_max,prefill_vs_full,decode_vs_full,kv_type,"
        "load_before,load_after\n"
        "speed,1024,0.0000,0,256,0,23592960,2000.50,70.25,0.5,1.0,0,1,cpu,prefill,0,0,3,1900.00,2100.00,"
        "60.00,75.50,1.0000,1.0000,bf16,0.31,1.92\n"
        "speed_round,1024,0.0000,0,256,0,23592960,1900.00,60.00,0.5,1.0,0,1,cpu,prefill,0,1,3,1900.00,"
        "1900.00,60.00,60.00,1.0000,1.0000,bf16,0.31,1.92\n");
    char err[1024] = "", path[512];
    snprintf(path, sizeof path, "%s/br.csv", dir);
    int rc = plots_bench(path, gnuplot, err, sizeof err);
    if (rc != PLOTS_OK) fail_msg("plots_bench: %d %s", rc, err);
    double v[16][8];
    char c[512];
    assert_int_equal(read_block("br.gp", "r0", v, 8, c, sizeof c), 1); /* the per-round row is not drawn */
    const double want[8] = {1024, 2000.5, 70.25, 22.5, 1900, 2100, 60, 75.5};
    for (int k = 0; k < 8; k++) assert_float_equal(v[0][k], want[k], 1e-6);
    char gp[600], text[8192];
    snprintf(gp, sizeof gp, "%s/br.gp", dir);
    FILE *f = fopen(gp, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_non_null(strstr(
        text, "KV cache bf16; medians of 3 interleaved rounds, bars min-max; load 0.3 before, 1.9 after"));
    assert_non_null(strstr(text, "using 1:2:5:6 with yerrorlines"));
    assert_non_null(strstr(text, "using 1:3:7:8 with yerrorlines"));
}

static void test_bad_input(void **st) {
    (void)st;
    char err[1024] = "";
    write_file("results.csv",
               "split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes\n"
               "heldout,bosch,0.5000,all,all,0,96,90,x9,0.8701,0.9710,0.91,1048576\n");
    assert_int_equal(plots_compare(dir, gnuplot, err, sizeof err), PLOTS_ERROR);
    char want[512];
    snprintf(want, sizeof want, "%s/results.csv: line 2: field 'accuracy': bad value 'x9'", dir);
    assert_string_equal(err, want);
    write_file("results.csv", "split,method,ratio,task\nheldout,bosch,0.5,all\n");
    assert_int_equal(plots_compare(dir, gnuplot, err, sizeof err), PLOTS_ERROR);
    snprintf(want, sizeof want, "%s/results.csv: line 1: no 'accuracy' column (not a file of this kind)",
             dir);
    assert_string_equal(err, want);
}

static void test_no_gnuplot(void **st) {
    (void)st;
    write_file("results.csv", results_csv);
    char gp[512], err[1024] = "";
    snprintf(gp, sizeof gp, "%s/pareto.gp", dir);
    unlink(gp);
    assert_int_equal(plots_compare(dir, "/nonexistent/gnuplot", err, sizeof err), PLOTS_NO_GNUPLOT);
    char want[1024];
    snprintf(want, sizeof want,
             "gnuplot not found: wrote %s/accuracy_vs_ratio.gp and %s/pareto.gp but no PNG or SVG (install "
             "gnuplot-nox)",
             dir, dir);
    assert_string_equal(err, want);
    assert_int_equal(access(gp, R_OK), 0); /* the script is there to run later */
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_plots.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    if (!cli_find_gnuplot(gnuplot, sizeof gnuplot)) {
        fprintf(stderr, "test_plots: gnuplot is not on PATH (scripts/setup installs gnuplot-nox)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pareto_front), cmocka_unit_test(test_compare_figures),
        cmocka_unit_test(test_bench_figure), cmocka_unit_test(test_bench_figure_rounds),
        cmocka_unit_test(test_bad_input),    cmocka_unit_test(test_no_gnuplot),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_plots: could not remove %s\n", dir);
    return rc;
}
