/* cli_plots.h — the figures of `bosch compare` and `bosch bench` (plots/plots.h) from the command
 * line: gnuplot is looked up on $PATH here (only the app reads the environment), and the outcome is
 * one line on stderr. */
#ifndef BOSCH_CLI_PLOTS_H
#define BOSCH_CLI_PLOTS_H

#include <stddef.h>

/* The first executable `gnuplot` in the folders of $PATH (path[cap]); NULL when there is none. */
const char *cli_find_gnuplot(char *path, size_t cap);

/* Draw the comparison figures of DIR (plots_compare). Says what was written on stderr, or a
 * one-line warning when gnuplot is missing (exit status unchanged: 0). Returns 1 when gnuplot
 * failed or results.csv could not be read (said on stderr), else 0. */
int cli_plots_compare(const char *dir);
/* The same for the bench figure beside CSV file csv_path (plots_bench). */
int cli_plots_bench(const char *csv_path);

#endif
