/* plot_table.h — reading the numbers a figure needs from a CSV file of this program (plots/):
 * columns by name, every cell checked. Internal to plots/. */
#ifndef BOSCH_PLOT_TABLE_H
#define BOSCH_PLOT_TABLE_H

#include <stddef.h>

#include "csvio.h"

/* Read path (at most 64 MiB) and find each of the n_cols names in its header: col[i] its index.
 * 0, or -1 with a message naming the file and the missing column. Free t with csv_table_free. */
int plot_table_open(const char *path, csv_table *t, const char *const *names, int *col, int n_cols, char *err,
                    size_t errlen);

/* Cell (row r, column c) of t as a finite number into *v. 0, or -1 with e.g.
 * "DIR/results.csv: line 4: field 'accuracy': bad value 'x'" (name: the column's name). */
int plot_table_real(const csv_table *t, const char *path, int r, int c, const char *name, double *v,
                    char *err, size_t errlen);

/* Cell (r, c) as a string ("" when the row is short). */
const char *plot_table_cell(const csv_table *t, int r, int c);

#endif
