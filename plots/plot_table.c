/* plot_table.c — the CSV cells a figure reads (plot_table.h). */
#define _GNU_SOURCE
#include "plot_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plot_table_open(const char *path, csv_table *t, const char *const *names, int *col, int n_cols, char *err,
                    size_t errlen) {
    const csv_limits lim = {.max_bytes = 64u << 20, .why = "a file this program writes for a figure"};
    if (csv_read_limited(path, &lim, t, err, errlen)) return -1;
    for (int i = 0; i < n_cols; i++) {
        col[i] = t->n_rows > 0 ? csv_table_column(t, names[i]) : -1;
        if (col[i] < 0) {
            snprintf(err, errlen, "%s: line 1: no '%s' column (not a file of this kind)", path, names[i]);
            csv_table_free(t);
            return -1;
        }
    }
    return 0;
}

const char *plot_table_cell(const csv_table *t, int r, int c) {
    return c >= 0 && c < t->n_cols[r] ? t->cells[r][c] : "";
}

int plot_table_real(const csv_table *t, const char *path, int r, int c, const char *name, double *v,
                    char *err, size_t errlen) {
    const char *s = plot_table_cell(t, r, c);
    char *end = NULL;
    double x = strtod(s, &end);
    if (!*s || !end || *end || !isfinite(x)) {
        snprintf(err, errlen, "%s: line %d: field '%s': bad value '%.40s'", path, t->line[r], name, s);
        return -1;
    }
    *v = x;
    return 0;
}
