/* compare_folder.c — read back a finished comparison folder (compare.h: compare_folder_rows). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare.h"
#include "csvio.h"

/* results.csv of a comparison is a few hundred rows; anything far larger is not one */
#define FOLDER_MAX_BYTES (16L << 20)
#define FOLDER_MAX_ROWS 100000
#define FOLDER_MAX_LINE 4096

static const csv_limits folder_limits = {
    .max_bytes = FOLDER_MAX_BYTES,
    .max_rows = FOLDER_MAX_ROWS,
    .max_line = FOLDER_MAX_LINE,
    .why = "a comparison's results.csv has a row per split, method, ratio and cell"};

static int rows_from_table(const char *dir, const char *path, csv_table *tp, double ratio, compare_row *rows,
                           int cap, int *n_rows, double *ratio_used, char *err, size_t errlen);

int compare_folder_rows(const char *dir, double ratio, compare_row *rows, int cap, int *n_rows,
                        double *ratio_used, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    struct stat sb;
    *n_rows = 0;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: no results.csv (run `bosch compare --out %s` first)", dir, dir);
        return -1;
    }
    if (sb.st_size > FOLDER_MAX_BYTES) {
        snprintf(err, errlen, "%s: %lld bytes, more than a comparison's results (%ld)", path,
                 (long long)sb.st_size, FOLDER_MAX_BYTES);
        return -1;
    }
    csv_table t;
    if (csv_read_limited(path, &folder_limits, &t, err, errlen)) return -1;
    return rows_from_table(dir, path, &t, ratio, rows, cap, n_rows, ratio_used, err, errlen);
}

int compare_folder_rows_memory(const char *dir, const char *buf, size_t n, double ratio, compare_row *rows,
                               int cap, int *n_rows, double *ratio_used, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    *n_rows = 0;
    csv_table t;
    if (csv_parse_memory(path, buf, n, &folder_limits, &t, err, errlen)) return -1;
    return rows_from_table(dir, path, &t, ratio, rows, cap, n_rows, ratio_used, err, errlen);
}

/* 1 when s is a method name as compare writes them: 1..31 of [A-Za-z0-9_+-], so that the mask path
 * built from it stays inside the folder. */
static int method_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 31) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && ch != '_' && ch != '+' && ch != '-') return 0;
    }
    return 1;
}

/* The rows of a parsed results.csv (t is freed here). */
static int rows_from_table(const char *dir, const char *path, csv_table *tp, double ratio, compare_row *rows,
                           int cap, int *n_rows, double *ratio_used, char *err, size_t errlen) {
    csv_table t = *tp;
    const char *need[] = {"split", "method",   "ratio", "task",  "n",
                          "hits",  "accuracy", "ci_lo", "ci_hi", "score"};
    int col[10];
    for (int i = 0; i < 10; i++)
        if ((col[i] = csv_table_column(&t, need[i])) < 0) {
            snprintf(err, errlen, "%s: no column '%s' (a results.csv of an older program?)", path, need[i]);
            csv_table_free(&t);
            return -1;
        }
    /* the folder's ratio closest to the one asked for */
    double best = NAN;
    for (int r = 1; r < t.n_rows; r++) {
        if (t.n_cols[r] <= col[2]) continue;
        double x = strtod(t.cells[r][col[2]], NULL);
        if (isnan(best) || fabs(x - ratio) < fabs(best - ratio)) best = x;
    }
    if (isnan(best)) {
        snprintf(err, errlen, "%s: no rows", path);
        csv_table_free(&t);
        return -1;
    }
    for (int r = 1; r < t.n_rows && *n_rows < cap; r++) {
        char **c = t.cells[r];
        int bad = 0;
        for (int i = 0; i < 10; i++) bad |= t.n_cols[r] <= col[i];
        if (bad || strcmp(c[col[0]], "heldout") || strcmp(c[col[3]], "all") ||
            fabs(strtod(c[col[2]], NULL) - best) > 1e-6)
            continue;
        if (!method_name_ok(c[col[1]])) { /* it names a file of the folder: mask_METHOD_RATIO.csv */
            snprintf(err, errlen, "%s: line %d: method '%.64s' is not a method name (letters, digits, _ + -)",
                     path, r + 1, c[col[1]]);
            csv_table_free(&t);
            return -1;
        }
        compare_row *o = &rows[(*n_rows)++];
        snprintf(o->method, sizeof o->method, "%.31s", c[col[1]]);
        o->ratio = best;
        o->n = strtol(c[col[4]], NULL, 10);
        o->hits = strtol(c[col[5]], NULL, 10);
        o->accuracy = strtod(c[col[6]], NULL);
        o->ci_lo = strtod(c[col[7]], NULL);
        o->ci_hi = strtod(c[col[8]], NULL);
        o->score = strtod(c[col[9]], NULL);
        snprintf(o->mask_path, sizeof o->mask_path, "%s/mask_%s_%.3f.csv", dir, o->method, best);
    }
    csv_table_free(&t);
    *ratio_used = best;
    if (*n_rows == 0) {
        snprintf(err, errlen, "%s: no held-out rows at ratio %.3f", path, best);
        return -1;
    }
    return 0;
}
