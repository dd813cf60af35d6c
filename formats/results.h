/* results.h — accuracy and answer probability of masks on probe cells (docs/design.md §8, docs/search.md):
 * `bosch eval --out FILE` (one mask) and `bosch compare`'s DIR/results.csv (every method and ratio)
 * write their rows here, with one format per column. The eval file has the columns of docs/design.md §8,
 * the comparison file all of them (the eval columns are a subset, in the same order):
 *
 *   split      compare only: heldout or validation
 *   method     method name (eval: --method, the mask file, full or all_swa)
 *   ratio      SWA KV heads / all KV heads of the mask; eval 6 decimals, compare 4
 *   task       probe task (probe_task_name), or all: every cell of the split pooled (compare)
 *   haystack   compare only: noise or text, or all
 *   length     prompt length, tokens, an integer (0 on an all row)
 *   n, hits    compare only: samples and exact matches
 *   accuracy   exact-match fraction (hits / n); eval 6 decimals, compare 4
 *   ci_lo, ci_hi  compare only: its 95 % Wilson interval, 4 decimals
 *   score      mean answer-token probability, 6 decimals
 *   kv_bytes   KV-cache bytes of the mask at `length` (an all row: at the split's last length)
 *
 * The two layouts keep the precision each file has always had (scripts, tests and the recorded
 * docs/search-results.csv read them): the comparison file's ratio is also the key its readers
 * match and its mask files are named by (mask_METHOD_RATIO.csv, 3 decimals). Readers
 * (compare/compare_folder.c, the explorer's comparison view) find the columns by name and parse
 * numbers with strtod, so either precision loads. */
#ifndef BOSCH_RESULTS_H
#define BOSCH_RESULTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    RESULTS_EVAL,    /* method,ratio,task,length,accuracy,score,kv_bytes */
    RESULTS_COMPARE, /* split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes */
} results_layout;

/* One row; the strings are the caller's. Fields a layout has no column for are ignored. */
typedef struct {
    const char *split, *method;
    double ratio;
    const char *task, *haystack;
    int length;
    long n, hits;
    double accuracy, ci_lo, ci_hi, score;
    uint64_t kv_bytes;
} results_row;

/* Write rows[0..n) to path in the given layout (header first; atomic, csvio.h). rows NULL: only
 * check that path can be written (not a directory, its folder writable) and write nothing.
 * 0, or -1 with a message naming the file. */
int results_write(const char *path, results_layout layout, const results_row *rows, int n, char *err,
                  size_t errlen);

#endif
