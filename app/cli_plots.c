/* cli_plots.c — finding gnuplot and drawing the commands' figures (cli_plots.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_plots.h"
#include "plots.h"

const char *cli_find_gnuplot(char *path, size_t cap) {
    const char *p = getenv("PATH");
    if (!p || !*p) return NULL;
    while (*p) {
        size_t n = strcspn(p, ":");
        if (n > 0 && (size_t)snprintf(path, cap, "%.*s/gnuplot", (int)n, p) < cap && access(path, X_OK) == 0)
            return path;
        p += n;
        if (*p == ':') p++;
    }
    return NULL;
}

/* One line on stderr for the outcome rc of a figure call of command cmd; 1 on an error. */
static int report(const char *cmd, int rc, const char *what, const char *err) {
    if (rc == PLOTS_OK) {
        fprintf(stderr, "%s: figures %s (PNG, SVG and the gnuplot script)\n", cmd, what);
        return 0;
    }
    fprintf(stderr, "bosch %s: %s: %s\n", cmd, rc == PLOTS_NO_GNUPLOT ? "warning" : "figures not drawn", err);
    return rc == PLOTS_NO_GNUPLOT ? 0 : 1;
}

int cli_plots_compare(const char *dir) {
    char gp[4096], err[1024], what[8400];
    int rc = plots_compare(dir, cli_find_gnuplot(gp, sizeof gp), err, sizeof err);
    snprintf(what, sizeof what, "%s/accuracy_vs_ratio and %s/pareto", dir, dir);
    return report("compare", rc, what, err);
}

int cli_plots_bench(const char *csv_path) {
    char gp[4096], err[1024], what[4200];
    int rc = plots_bench(csv_path, cli_find_gnuplot(gp, sizeof gp), err, sizeof err);
    size_t n = strlen(csv_path);
    snprintf(what, sizeof what, "%.*s", (int)(n > 4 && !strcmp(csv_path + n - 4, ".csv") ? n - 4 : n),
             csv_path);
    return report("bench", rc, what, err);
}
