/* cmd_bench_internal.h — what cmd_bench.c (options, evaluator, the run) and bench_table.c (the
 * interleaved speed table) share, the helpers in bench_util.c; not an interface outside `bosch
 * bench`. */
#ifndef BOSCH_CMD_BENCH_INTERNAL_H
#define BOSCH_CMD_BENCH_INTERNAL_H

#include "backend.h"
#include "bench.h"
#include "csvio.h"
#include "mask.h"
#include "model.h"

#define BENCH_MAX_LIST 16
#define BENCH_DEFAULT_WINDOW 256
#define BENCH_DEFAULT_ROUNDS 3
#define BENCH_TARGET_RHO 0.875 /* issue 7: at batch 16 and 32k, decode >= 2x rho 0, KV <= 0.2x */

typedef struct {
    const char *csv_path;
    int lengths[BENCH_MAX_LIST], n_lengths;
    double ratios[BENCH_MAX_LIST];
    int n_ratios;
    int batches[BENCH_MAX_LIST], n_batches; /* sequences per forward (GPU only above 1) */
    int window, sinks, rounds, n_decode, eval_samples, eval_length;
    int fill_random; /* --decode-fill random: no prefill, random GPU KV cache (GPU only) */
    backend_device
        device; /* --device: where prefill and decode run (the evaluator: the CPU, and the GPU too) */
} bench_opts;

/* round(rho * units) SWA KV heads, evenly spaced over the row-major (layer, kv_head) order. 0 or -1. */
int bench_mask_for_ratio(attn_mask *m, const model_hparams *hp, double rho, int window, int sinks);

/* n pseudo-random token ids in [500, n_vocab - 500) (a fixed 64-bit LCG: the same every run). */
void bench_fill_tokens(int32_t *t, int n, int n_vocab);

/* One row of the --csv file (formats/bench.h): r with the run's window and sinks and decode fill
 * filled in; no file (w NULL): nothing. 0 or -1 (said on stderr). */
int bench_csv_put(csv_out *w, const bench_opts *o, bench_row r);

/* Median, smallest and largest of x[0..n) (n >= 1; x is reordered). */
void bench_median_range(double *x, int n, double *med, double *lo, double *hi);

/* The speed table (bench_table.c): every (length, batch, ratio) on the CPU (batch 1) or on gpu,
 * each measured once per round for o->rounds rounds; medians with min–max, per-round ratios; the
 * load average before and after. 0, or 1 (said on stderr). */
int bench_table(const model *m, const bench_opts *o, backend *gpu, csv_out *csv);

#endif
