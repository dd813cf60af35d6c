/* results.c — the results files of eval and compare (results.h). */
#include "results.h"

#include <stdio.h>
#include <string.h>

#include "csvio.h"

enum {
    C_SPLIT,
    C_METHOD,
    C_RATIO,
    C_TASK,
    C_HAYSTACK,
    C_LENGTH,
    C_N,
    C_HITS,
    C_ACC,
    C_LO,
    C_HI,
    C_SCORE,
    C_KV,
    N_COLS
};

static const char *const col_names[N_COLS] = {"split",  "method", "ratio",   "task",     "haystack",
                                              "length", "n",      "hits",    "accuracy", "ci_lo",
                                              "ci_hi",  "score",  "kv_bytes"};
static const int eval_cols[] = {C_METHOD, C_RATIO, C_TASK, C_LENGTH, C_ACC, C_SCORE, C_KV};
static const int compare_cols[] = {C_SPLIT, C_METHOD, C_RATIO, C_TASK, C_HAYSTACK, C_LENGTH, C_N,
                                   C_HITS,  C_ACC,    C_LO,    C_HI,   C_SCORE,    C_KV};

/* Every column of r as text, ratio, accuracy and its interval with `fine` decimals (results.h);
 * cells[] point into buf or r's strings. */
static void format_row(const results_row *r, int fine, char buf[N_COLS][40], const char *cells[N_COLS]) {
    cells[C_SPLIT] = r->split ? r->split : "";
    cells[C_METHOD] = r->method ? r->method : "";
    cells[C_RATIO] = csv_cell_real(buf[C_RATIO], sizeof buf[0], r->ratio, fine);
    cells[C_TASK] = r->task ? r->task : "";
    cells[C_HAYSTACK] = r->haystack ? r->haystack : "";
    snprintf(buf[C_LENGTH], sizeof buf[0], "%d", r->length);
    cells[C_LENGTH] = buf[C_LENGTH];
    snprintf(buf[C_N], sizeof buf[0], "%ld", r->n);
    cells[C_N] = buf[C_N];
    snprintf(buf[C_HITS], sizeof buf[0], "%ld", r->hits);
    cells[C_HITS] = buf[C_HITS];
    cells[C_ACC] = csv_cell_real(buf[C_ACC], sizeof buf[0], r->accuracy, fine);
    cells[C_LO] = csv_cell_real(buf[C_LO], sizeof buf[0], r->ci_lo, fine);
    cells[C_HI] = csv_cell_real(buf[C_HI], sizeof buf[0], r->ci_hi, fine);
    cells[C_SCORE] = csv_cell_real(buf[C_SCORE], sizeof buf[0], r->score, 6);
    snprintf(buf[C_KV], sizeof buf[0], "%llu", (unsigned long long)r->kv_bytes);
    cells[C_KV] = buf[C_KV];
}

int results_write(const char *path, results_layout layout, const results_row *rows, int n, char *err,
                  size_t errlen) {
    const int *cols = layout == RESULTS_EVAL ? eval_cols : compare_cols;
    const int n_cols = layout == RESULTS_EVAL ? (int)(sizeof eval_cols / sizeof eval_cols[0])
                                              : (int)(sizeof compare_cols / sizeof compare_cols[0]);
    const char *header[N_COLS];
    for (int c = 0; c < n_cols; c++) header[c] = col_names[cols[c]];
    csv_out *w = csv_out_open(path, header, n_cols, err, errlen);
    if (!w) return -1;
    if (!rows) {
        csv_out_abort(w);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        char buf[N_COLS][40];
        const char *all[N_COLS], *cells[N_COLS];
        format_row(&rows[i], layout == RESULTS_EVAL ? 6 : 4, buf, all);
        for (int c = 0; c < n_cols; c++) cells[c] = all[cols[c]];
        if (csv_out_row(w, cells)) break; /* the error is reported by the commit */
    }
    return csv_out_commit(w, err, errlen);
}
