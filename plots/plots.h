/* plots.h — the figures of `bosch compare` and `bosch bench`, drawn by gnuplot (Debian gnuplot-nox)
 * from a generated script, never by hand-written SVG. Each figure is three files side by side:
 *
 *   NAME.gp   the gnuplot script, data included as inline data blocks ($name << EOD ... EOD), so
 *             the figure can be redrawn or restyled without this program:
 *                 cd DIR && gnuplot NAME.gp > NAME.png
 *                 cd DIR && gnuplot -e "term='svg'" NAME.gp > NAME.svg
 *   NAME.png  the pngcairo rendering (PLOTS_W x PLOTS_H pixels);
 *   NAME.svg  the svg rendering (same size in SVG user units).
 *
 * Every file is written atomically (formats/csvio.h: csv_write_text, csv_write_bytes): gnuplot
 * writes its image to a pipe, this library writes the file.
 *
 * gnuplot is given as a path (the caller finds it; libraries read no environment). When it is
 * missing (NULL, "" or not executable) the scripts are still written and the functions return
 * PLOTS_NO_GNUPLOT with a one-line warning saying so.
 */
#ifndef BOSCH_PLOTS_H
#define BOSCH_PLOTS_H

#include <stddef.h>

#define PLOTS_W 960 /* figure size, pixels (PNG) or SVG user units */
#define PLOTS_H 540
#define PLOTS_BENCH_W 1200 /* the bench figure: three panels side by side */
#define PLOTS_BENCH_H 420

enum { PLOTS_OK = 0, PLOTS_NO_GNUPLOT = 1, PLOTS_ERROR = -1 };

/* The figures of a finished comparison folder, from DIR/results.csv (split heldout, task all: one
 * row per method and ratio; columns by name, formats/results.h):
 *   DIR/accuracy_vs_ratio.{gp,png,svg}  held-out accuracy against the ratio rho, one line per
 *                                       method, with its 95 % Wilson interval as error bars;
 *   DIR/pareto.{gp,png,svg}             held-out accuracy against the KV cache (MiB, at the
 *                                       split's last length) of every (method, ratio), and the
 *                                       Pareto front over all of them (plots_pareto_front).
 * PLOTS_OK, PLOTS_NO_GNUPLOT (scripts written; err: the warning) or PLOTS_ERROR (err names the
 * file, line and field, or what gnuplot said). */
int plots_compare(const char *dir, const char *gnuplot, char *err, size_t errlen);

/* The figure of a `bosch bench --csv FILE` run (formats/bench.h; the paper's Figure 5): prefill
 * tokens/s, decode tokens/s and KV-cache MiB against the context length, one line per ratio (and
 * batch, when several), from the file's speed rows. Written beside FILE as STEM.{gp,png,svg}
 * (STEM: FILE without its .csv). Returns as plots_compare. */
int plots_bench(const char *csv_path, const char *gnuplot, char *err, size_t errlen);

/* Pareto front of n points (x = cost, lower is better; y = value, higher is better): on_front[i]
 * = 1 when no other point has x <= x_i and y >= y_i with one of them strict (exact ties: the first
 * of the points kept). Returns the number on the front. */
int plots_pareto_front(const double *x, const double *y, int n, int *on_front);

#endif
