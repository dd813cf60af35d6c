/* plot_compare.c — the figures of a comparison folder (plots.h, plots_compare): held-out accuracy
 * against the ratio per method, and accuracy against KV bytes with the Pareto front. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_script.h"
#include "plot_table.h"
#include "plots.h"

#define MAX_POINTS 1024
#define MAX_SERIES 64

typedef struct {
    int series; /* index in the method names */
    double ratio, acc, lo, hi, kv_mib;
} point;

typedef struct {
    char names[MAX_SERIES][32]; /* methods, in file order */
    int n_series;
    point p[MAX_POINTS];
    int n;
} points;

static int series_of(points *ps, const char *method) {
    for (int i = 0; i < ps->n_series; i++)
        if (!strcmp(ps->names[i], method)) return i;
    if (ps->n_series == MAX_SERIES) return -1;
    snprintf(ps->names[ps->n_series], sizeof ps->names[0], "%.31s", method);
    return ps->n_series++;
}

/* The held-out "all" rows of path (results.csv) into ps. 0, or -1 with a message. */
static int read_points(const char *path, points *ps, char *err, size_t errlen) {
    static const char *const names[] = {"split",    "method", "ratio", "task",
                                        "accuracy", "ci_lo",  "ci_hi", "kv_bytes"};
    int c[8];
    csv_table t;
    if (plot_table_open(path, &t, names, c, 8, err, errlen)) return -1;
    int rc = 0;
    ps->n = ps->n_series = 0;
    for (int r = 1; r < t.n_rows && !rc; r++) {
        if (strcmp(plot_table_cell(&t, r, c[0]), "heldout") || strcmp(plot_table_cell(&t, r, c[3]), "all"))
            continue;
        point q;
        double kv = 0;
        rc = plot_table_real(&t, path, r, c[2], names[2], &q.ratio, err, errlen) ||
             plot_table_real(&t, path, r, c[4], names[4], &q.acc, err, errlen) ||
             plot_table_real(&t, path, r, c[5], names[5], &q.lo, err, errlen) ||
             plot_table_real(&t, path, r, c[6], names[6], &q.hi, err, errlen) ||
             plot_table_real(&t, path, r, c[7], names[7], &kv, err, errlen);
        if (rc) break;
        q.kv_mib = kv / 1048576.0;
        q.series = series_of(ps, plot_table_cell(&t, r, c[1]));
        if (q.series < 0 || ps->n == MAX_POINTS) {
            snprintf(err, errlen, "%s: line %d: more than %d methods or %d rows to plot", path, t.line[r],
                     MAX_SERIES, MAX_POINTS);
            rc = -1;
        } else {
            ps->p[ps->n++] = q;
        }
    }
    if (!rc && ps->n == 0) {
        snprintf(err, errlen, "%s: no held-out rows of task 'all' to plot", path);
        rc = -1;
    }
    csv_table_free(&t);
    return rc ? -1 : 0;
}

static int by_series_ratio(const void *a, const void *b) {
    const point *x = a, *y = b;
    if (x->series != y->series) return x->series - y->series;
    return (x->ratio > y->ratio) - (x->ratio < y->ratio);
}

int plots_pareto_front(const double *x, const double *y, int n, int *on_front) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++) {
            if (j == i || x[j] > x[i] || y[j] < y[i]) continue;
            dominated = x[j] < x[i] || y[j] > y[i] || j < i; /* exact tie: the first one stays */
        }
        on_front[i] = !dominated;
        k += on_front[i];
    }
    return k;
}

/* Data block $m<i> for every series: the columns `cols` of each of its points. */
static void data_blocks(plot_script *s, const points *ps, int pareto) {
    for (int i = 0; i < ps->n_series; i++) {
        plot_script_printf(s, "$m%d << EOD\n# method %s\n# %s\n", i, ps->names[i],
                           pareto ? "kv_mib accuracy ratio" : "ratio accuracy ci_lo ci_hi");
        for (int k = 0; k < ps->n; k++) {
            const point *q = &ps->p[k];
            if (q->series != i) continue;
            if (pareto)
                plot_script_printf(s, "%.6f %.4f %.4f\n", q->kv_mib, q->acc, q->ratio);
            else
                plot_script_printf(s, "%.4f %.4f %.4f %.4f\n", q->ratio, q->acc, q->lo, q->hi);
        }
        plot_script_printf(s, "EOD\n");
    }
}

static void plot_series(plot_script *s, const points *ps, const char *style) {
    for (int i = 0; i < ps->n_series; i++) {
        plot_script_printf(s, "%s$m%d %s lt %d title ", i ? ", \\\n     " : "", i, style, i + 1);
        plot_script_quoted(s, ps->names[i]);
    }
    plot_script_printf(s, "\n");
}

static int figure_ratio(const char *dir, const points *ps, const char *gnuplot, char *err, size_t errlen) {
    plot_script s = {0};
    plot_script_begin(&s, "accuracy_vs_ratio", "held-out accuracy against the ratio, per method", PLOTS_W,
                      PLOTS_H);
    plot_script_printf(&s, "set title \"Held-out accuracy against the SWA ratio (95%% Wilson intervals)\"\n"
                           "set xlabel \"ratio ρ (share of KV heads on sliding-window attention)\"\n"
                           "set ylabel \"held-out accuracy (exact match)\"\n"
                           "set xrange [0:1]\nset yrange [0:1.05]\n");
    data_blocks(&s, ps, 0);
    plot_script_printf(&s, "plot ");
    plot_series(&s, ps, "using 1:2:3:4 with yerrorlines");
    return plot_finish(&s, dir, "accuracy_vs_ratio", gnuplot, err, errlen);
}

static int figure_pareto(const char *dir, const points *ps, const char *gnuplot, char *err, size_t errlen) {
    double x[MAX_POINTS] = {0}, y[MAX_POINTS] = {0};
    int on[MAX_POINTS], idx[MAX_POINTS], nf = 0;
    for (int k = 0; k < ps->n; k++) x[k] = ps->p[k].kv_mib, y[k] = ps->p[k].acc;
    plots_pareto_front(x, y, ps->n, on);
    for (int k = 0; k < ps->n; k++) /* the front by cost (insertion: a few dozen points) */
        if (on[k]) {
            int j = nf++;
            while (j > 0 && x[idx[j - 1]] > x[k]) idx[j] = idx[j - 1], j--;
            idx[j] = k;
        }
    plot_script s = {0};
    plot_script_begin(&s, "pareto", "held-out accuracy against KV-cache bytes, with the Pareto front",
                      PLOTS_W, PLOTS_H);
    plot_script_printf(&s, "set title \"Held-out accuracy against KV cache (every method and ratio)\"\n"
                           "set xlabel \"KV cache, MiB (at the held-out split's longest prompt)\"\n"
                           "set ylabel \"held-out accuracy (exact match)\"\n"
                           "set yrange [0:1.05]\nset offsets graph 0.03, graph 0.03, 0, 0\n");
    data_blocks(&s, ps, 1);
    plot_script_printf(&s, "$front << EOD\n# Pareto front (lowest KV for its accuracy)\n# kv_mib accuracy "
                           "method ratio\n");
    for (int j = 0; j < nf; j++) {
        const point *q = &ps->p[idx[j]];
        plot_script_printf(&s, "%.6f %.4f %s %.4f\n", q->kv_mib, q->acc, ps->names[q->series], q->ratio);
    }
    plot_script_printf(&s, "EOD\nplot $front using 1:2 with steps lw 6 lc rgb \"#cccccc\" title \"Pareto "
                           "front\", \\\n     ");
    plot_series(&s, ps, "using 1:2 with points");
    return plot_finish(&s, dir, "pareto", gnuplot, err, errlen);
}

int plots_compare(const char *dir, const char *gnuplot, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    points *ps = malloc(sizeof *ps);
    if (!ps) {
        snprintf(err, errlen, "%s: out of memory", path);
        return PLOTS_ERROR;
    }
    int rc = read_points(path, ps, err, errlen) ? PLOTS_ERROR : PLOTS_OK;
    if (rc == PLOTS_OK) {
        qsort(ps->p, (size_t)ps->n, sizeof ps->p[0], by_series_ratio);
        rc = figure_ratio(dir, ps, gnuplot, err, errlen);
        if (rc != PLOTS_ERROR) {
            int r2 = figure_pareto(dir, ps, gnuplot, err, errlen);
            if (r2 != PLOTS_OK) rc = r2;
        }
        if (rc == PLOTS_NO_GNUPLOT) /* one line for both figures */
            snprintf(err, errlen,
                     "gnuplot not found: wrote %s/accuracy_vs_ratio.gp and %s/pareto.gp but no PNG or SVG "
                     "(install gnuplot-nox)",
                     dir, dir);
    }
    free(ps);
    return rc;
}
