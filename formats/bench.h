/* bench.h — the CSV of `bosch bench --csv FILE`: one row per measurement, the rows of the table on
 * stdout. Columns, in this order:
 *   measure         speed (prefill and decode at one length, batch and ratio), gemm_ceiling (the
 *                   CPU's GEMM-only prefill bound), eval_scratch or eval_reuse (the evaluator)
 *   length          context length T, tokens
 *   ratio           SWA KV heads / all KV heads of the mask, 4 decimals
 *   n_swa           SWA KV heads of the mask
 *   window, sinks   the mask's SWA window and sink tokens
 *   kv_bytes        KV-cache bytes of the batch at T
 *   prefill_tok_s   prefill tokens/s (gemm_ceiling: the ceiling), 2 decimals
 *   decode_tok_s    decode tokens/s, 2 decimals
 *   seconds         wall time of the measurement (prefill; the evaluation; the ceiling's GEMMs), 4 decimals
 *   cpu_s           CPU time of the same, seconds, 4 decimals
 *   first_layer     eval_reuse: first layer recomputed with prefix reuse; 0 otherwise
 *   batch           sequences per forward (0 on evaluator rows)
 *   device          cpu or cuda
 *   decode_fill     speed rows: prefill or random (how the decode cache was filled); - otherwise
 *   gpu_peak_bytes  peak GPU memory in use so far, device-wide; 0 on the CPU
 *   round           speed_round rows: the round (1..rounds) of that one measurement; 0 otherwise
 *   rounds          rounds of the interleaved run (every length and ratio measured once per round);
 *                   speed and gemm_ceiling rows hold the medians over them
 *   prefill_tok_s_min, prefill_tok_s_max, decode_tok_s_min, decode_tok_s_max
 *                   the range of the rounds' values (speed; gemm_ceiling: prefill only), 2 decimals
 *   prefill_vs_full, decode_vs_full
 *                   the ratio's speed over ratio 0's in the same round (speed: the median; 0 when
 *                   the run has no ratio 0), 4 decimals
 *   kv_type         the KV cache's elements: bf16 or fp32 (kv_bytes counts them); - on other rows
 *   load_before, load_after
 *                   1-minute load average before the first and after the last round, 2 decimals
 * measure speed_round: one row per round of each speed row (its own values, no medians), after it;
 * none when the run had one round.
 * The columns after first_layer were added later, so readers of the older file still work. */
#ifndef BOSCH_BENCH_H
#define BOSCH_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "csvio.h"

/* One row; the strings are the caller's (decode_fill NULL: "-"). */
typedef struct {
    const char *measure;
    int length;
    double ratio;
    int n_swa, window, sinks;
    uint64_t kv_bytes;
    double prefill_tok_s, decode_tok_s, seconds, cpu_s;
    int first_layer, batch;
    const char *device, *decode_fill;
    uint64_t gpu_peak_bytes;
    int round, rounds;
    double prefill_min, prefill_max, decode_min, decode_max, prefill_vs_full, decode_vs_full;
    const char *kv_type; /* NULL: "-" */
    double load_before, load_after;
} bench_row;

/* Open path for the rows and write the header (atomic: the file appears at csv_out_commit, and
 * csv_out_abort leaves nothing). NULL with a message naming the file. */
csv_out *bench_csv_open(const char *path, char *err, size_t errlen);
/* Write one row. 0 or -1 (the commit then fails naming the row). */
int bench_csv_row(csv_out *w, const bench_row *r);

#endif
