/* trace.h — the search trace file (docs/design.md §8): one row per evaluation of a search, written the
 * same by `bosch search` (DIR/trace.csv) and the explorer's export (x t).
 *
 * Columns, in this order:
 *   eval       evaluations so far, 1-based (the event's eval_index)
 *   stage      0 baseline or normalizer, 1..3 the BOSCH stages
 *   group      stage-3 group (bucket index), -1 outside stage 3
 *   layer      layer being probed in stage 1, -1 otherwise
 *   score      normalized objective (S - S_allSWA) / (S_full - S_allSWA), 6 decimals
 *   accuracy   exact-match fraction of the calibration samples, 6 decimals
 *   ratio      SWA KV heads / all KV heads of the evaluated mask, 6 decimals
 *   seconds    wall time of the evaluation, 3 decimals
 *   mask_hash  mask_hash of the evaluated mask, 16 lower-case hex digits
 *   mask       the mask as mask_to_string writes it (1 full / 0 SWA per KV head, layers by '/')
 *   samples    calibration samples the evaluation was scored on (fewer than the split when the race
 *              dropped the candidate: score and accuracy are then empty; search/race.h); 0 unknown
 *   gain       a swap-search candidate's paired gain over its incumbent, on those samples: the mean
 *              of the per-sample answer-probability differences, in score units (divided by
 *              S_full - S_allSWA), 6 decimals; empty when it was compared with none
 *   gain_se    the gain's standard error (search/stats.h stats_paired_diff, same units), 6 decimals
 * A row of the confirmation phase (search.h search_config.confirm_samples: a finalist scored on the
 * confirmation split, stage 3, group -1) has empty score and accuracy and samples 0: its numbers are
 * another split's (`bosch search` prints them, calibration.csv of `bosch compare` says which was kept).
 * A number that is not finite is written as an empty cell.
 */
#ifndef BOSCH_TRACE_H
#define BOSCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* One evaluation (one row of the file). mask is malloc'd and owned by the row (NULL: empty cell). */
typedef struct {
    long eval;
    int stage, group, layer;
    double score, accuracy, ratio, seconds;
    uint64_t mask_hash;
    char *mask;
    int samples;
    double gain, gain_se;
} trace_row;

/* A growing list of rows; zero-initialize. */
typedef struct {
    trace_row *rows;
    long n, cap;
} trace_rows;

/* Append *r (the row takes over r->mask). 0, or -1 when out of memory (r->mask is freed then). */
int trace_rows_push(trace_rows *t, const trace_row *r);
/* Free every row's mask and forget the rows (the storage is kept for reuse). */
void trace_rows_clear(trace_rows *t);
/* trace_rows_clear and free the storage; *t is zero again. */
void trace_rows_free(trace_rows *t);

/* Write rows[0..n) to path (header first; atomic: temporary file then rename, csvio.h).
 * 0, or -1 with a message naming the file. */
int trace_write(const char *path, const trace_row *rows, long n, char *err, size_t errlen);

#endif
