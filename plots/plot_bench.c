/* plot_bench.c — the figure of a `bosch bench --csv` file (plots.h, plots_bench): prefill and
 * decode tokens/s and KV-cache MiB against the context length, one line per ratio (and batch), as
 * in the paper's Figure 5 (Ghaddar et al. 2026). The points are the interleaved run's medians, the
 * error bars the range over its rounds (files with the rounds' columns, formats/bench.h); the
 * title says the KV cache's element type, the rounds and the load average before and after. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_script.h"
#include "plot_table.h"
#include "plots.h"

#define MAX_ROWS 4096
#define MAX_SERIES 64

typedef struct {
    int series;
    double length, prefill, decode, kv_mib;
    double pmin, pmax, dmin, dmax; /* the rounds' range (= the value in a file without it) */
} row;

typedef struct {
    double ratio[MAX_SERIES];
    int batch[MAX_SERIES], n_series, batches_differ;
    char device[16]; /* of the first speed row */
    char kv_type[8]; /* its KV elements ("" in a file without the column) */
    int window, sinks, rounds;
    double load[2]; /* load average before and after (rounds > 0 only) */
    row r[MAX_ROWS];
    int n;
} rows;

static int series_of(rows *rs, double ratio, int batch) {
    for (int i = 0; i < rs->n_series; i++)
        if (fabs(rs->ratio[i] - ratio) < 5e-5 && rs->batch[i] == batch) return i;
    if (rs->n_series == MAX_SERIES) return -1;
    if (rs->n_series && rs->batch[0] != batch) rs->batches_differ = 1;
    rs->ratio[rs->n_series] = ratio, rs->batch[rs->n_series] = batch;
    return rs->n_series++;
}

/* The rounds' ranges of the speed rows already in rs (same order), the KV type, rounds and load,
 * when the file has those columns (older files: the points alone). 0, or -1 with a message. */
static int read_ranges(const char *path, rows *rs, char *err, size_t errlen) {
    static const char *const names[] = {"measure",          "prefill_tok_s_min", "prefill_tok_s_max",
                                        "decode_tok_s_min", "decode_tok_s_max",  "kv_type",
                                        "rounds",           "load_before",       "load_after"};
    int c[9];
    csv_table t;
    char ignore[256];
    rs->kv_type[0] = 0, rs->rounds = 0;
    if (plot_table_open(path, &t, names, c, 9, ignore, sizeof ignore)) return 0; /* an older file */
    int rc = 0, k = 0;
    for (int r = 1; r < t.n_rows && !rc && k < rs->n; r++) {
        if (strcmp(plot_table_cell(&t, r, c[0]), "speed")) continue;
        row *q = &rs->r[k++];
        rc = plot_table_real(&t, path, r, c[1], names[1], &q->pmin, err, errlen) ||
             plot_table_real(&t, path, r, c[2], names[2], &q->pmax, err, errlen) ||
             plot_table_real(&t, path, r, c[3], names[3], &q->dmin, err, errlen) ||
             plot_table_real(&t, path, r, c[4], names[4], &q->dmax, err, errlen);
        if (!rc && k == 1) {
            double rounds = 0;
            snprintf(rs->kv_type, sizeof rs->kv_type, "%.7s", plot_table_cell(&t, r, c[5]));
            rc = plot_table_real(&t, path, r, c[6], names[6], &rounds, err, errlen) ||
                 plot_table_real(&t, path, r, c[7], names[7], &rs->load[0], err, errlen) ||
                 plot_table_real(&t, path, r, c[8], names[8], &rs->load[1], err, errlen);
            rs->rounds = (int)rounds;
        }
    }
    csv_table_free(&t);
    return rc ? -1 : 0;
}

/* The speed rows of path into rs. 0, or -1 with a message. */
static int read_rows(const char *path, rows *rs, char *err, size_t errlen) {
    static const char *const names[] = {"measure",       "length",       "ratio",  "batch", "kv_bytes",
                                        "prefill_tok_s", "decode_tok_s", "window", "sinks", "device"};
    int c[10];
    csv_table t;
    if (plot_table_open(path, &t, names, c, 10, err, errlen)) return -1;
    int rc = 0;
    rs->n = rs->n_series = rs->batches_differ = 0;
    for (int r = 1; r < t.n_rows && !rc; r++) {
        if (strcmp(plot_table_cell(&t, r, c[0]), "speed")) continue;
        row q;
        double ratio, batch, kv;
        rc = plot_table_real(&t, path, r, c[1], names[1], &q.length, err, errlen) ||
             plot_table_real(&t, path, r, c[2], names[2], &ratio, err, errlen) ||
             plot_table_real(&t, path, r, c[3], names[3], &batch, err, errlen) ||
             plot_table_real(&t, path, r, c[4], names[4], &kv, err, errlen) ||
             plot_table_real(&t, path, r, c[5], names[5], &q.prefill, err, errlen) ||
             plot_table_real(&t, path, r, c[6], names[6], &q.decode, err, errlen);
        if (rc) break;
        if (rs->n == 0) {
            double w = 0, sk = 0;
            rc = plot_table_real(&t, path, r, c[7], names[7], &w, err, errlen) ||
                 plot_table_real(&t, path, r, c[8], names[8], &sk, err, errlen);
            if (rc) break;
            rs->window = (int)w, rs->sinks = (int)sk;
            snprintf(rs->device, sizeof rs->device, "%.15s", plot_table_cell(&t, r, c[9]));
        }
        q.kv_mib = kv / 1048576.0;
        q.pmin = q.pmax = q.prefill, q.dmin = q.dmax = q.decode;
        q.series = series_of(rs, ratio, (int)batch);
        if (q.series < 0 || rs->n == MAX_ROWS) {
            snprintf(err, errlen, "%s: line %d: more than %d series or %d rows to plot", path, t.line[r],
                     MAX_SERIES, MAX_ROWS);
            rc = -1;
        } else {
            rs->r[rs->n++] = q;
        }
    }
    if (!rc) rc = read_ranges(path, rs, err, errlen);
    if (!rc && rs->n == 0) {
        snprintf(err, errlen, "%s: no speed rows to plot", path);
        rc = -1;
    }
    csv_table_free(&t);
    return rc ? -1 : 0;
}

static int by_series_length(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->series != y->series) return x->series - y->series;
    return (x->length > y->length) - (x->length < y->length);
}

static void series_title(const rows *rs, int i, char *buf, size_t cap) {
    if (rs->batches_differ)
        snprintf(buf, cap, "ρ %.3f, batch %d", rs->ratio[i], rs->batch[i]);
    else
        snprintf(buf, cap, "ρ %.3f", rs->ratio[i]);
}

/* One panel: column col (2 prefill, 3 decode, 4 KV MiB) of every series, with the rounds' range
 * (columns 5-6 for prefill, 7-8 for decode) as error bars. */
static void panel(plot_script *s, const rows *rs, int col, const char *title, const char *ylabel, int key) {
    plot_script_printf(s, "set title \"%s\"\nset ylabel \"%s\"\n%s\nplot ", title, ylabel,
                       key ? "set key top left inside box" : "unset key");
    for (int i = 0; i < rs->n_series; i++) {
        char t[64];
        series_title(rs, i, t, sizeof t);
        if (col == 4)
            plot_script_printf(s, "%s$r%d using 1:4 with linespoints lt %d title ", i ? ", \\\n     " : "", i,
                               i + 1);
        else
            plot_script_printf(s, "%s$r%d using 1:%d:%d:%d with yerrorlines lt %d title ",
                               i ? ", \\\n     " : "", i, col, col == 2 ? 5 : 7, col == 2 ? 6 : 8, i + 1);
        plot_script_quoted(s, t);
    }
    plot_script_printf(s, "\n");
}

static int figure(const char *base, const char *name, const rows *rs, const char *gnuplot, char *err,
                  size_t errlen) {
    plot_script s = {0};
    plot_script_begin(&s, name, "prefill and decode tokens/s and KV-cache MiB against the context length",
                      PLOTS_BENCH_W, PLOTS_BENCH_H);
    for (int i = 0; i < rs->n_series; i++) {
        plot_script_printf(&s,
                           "$r%d << EOD\n# ratio %.4f batch %d\n# length prefill_tok_s decode_tok_s kv_mib "
                           "prefill_min prefill_max decode_min decode_max\n",
                           i, rs->ratio[i], rs->batch[i]);
        for (int k = 0; k < rs->n; k++)
            if (rs->r[k].series == i)
                plot_script_printf(&s, "%.0f %.2f %.2f %.6f %.2f %.2f %.2f %.2f\n", rs->r[k].length,
                                   rs->r[k].prefill, rs->r[k].decode, rs->r[k].kv_mib, rs->r[k].pmin,
                                   rs->r[k].pmax, rs->r[k].dmin, rs->r[k].dmax);
        plot_script_printf(&s, "EOD\n");
    }
    plot_script_printf(&s,
                       "set logscale x 2\nset xlabel \"context length (tokens)\"\nset format x \"%%.0f\"\n"
                       "set yrange [0:*]\nset offsets graph 0.04, graph 0.04, 0, 0\n"
                       "set multiplot layout 1,3 title ");
    char title[320], runs[160] = "";
    if (rs->rounds > 0)
        snprintf(runs, sizeof runs,
                 "; medians of %d interleaved rounds, bars min-max; load %.1f before, %.1f after", rs->rounds,
                 rs->load[0], rs->load[1]);
    snprintf(title, sizeof title, "bosch bench on %s: SWA window %d, sinks %d, KV cache %s%s", rs->device,
             rs->window, rs->sinks, rs->kv_type[0] ? rs->kv_type : "fp32", runs);
    plot_script_quoted(&s, title);
    plot_script_printf(&s, "\n");
    panel(&s, rs, 2, "Prefill", "tokens/s", 0);
    panel(&s, rs, 3, "Decode", "tokens/s", 0);
    panel(&s, rs, 4, "KV cache", "MiB", 1);
    plot_script_printf(&s, "unset multiplot\n");
    return plot_finish(&s, NULL, base, gnuplot, err, errlen);
}

int plots_bench(const char *csv_path, const char *gnuplot, char *err, size_t errlen) {
    char base[4200];
    size_t n = strlen(csv_path);
    if (n > 4 && !strcmp(csv_path + n - 4, ".csv")) n -= 4;
    snprintf(base, sizeof base, "%.*s", (int)n, csv_path);
    const char *slash = strrchr(base, '/');
    rows *rs = malloc(sizeof *rs);
    if (!rs) {
        snprintf(err, errlen, "%s: out of memory", csv_path);
        return PLOTS_ERROR;
    }
    int rc = read_rows(csv_path, rs, err, errlen) ? PLOTS_ERROR : PLOTS_OK;
    if (rc == PLOTS_OK) {
        qsort(rs->r, (size_t)rs->n, sizeof rs->r[0], by_series_length);
        rc = figure(base, slash ? slash + 1 : base, rs, gnuplot, err, errlen);
    }
    free(rs);
    return rc;
}
