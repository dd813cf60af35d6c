/* bench_util.c — the helpers cmd_bench.c and bench_table.c share (cmd_bench_internal.h): the
 * masks and tokens of a measurement, a CSV row, a median with its range. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd_bench_internal.h"

int bench_mask_for_ratio(attn_mask *m, const model_hparams *hp, double rho, int window, int sinks) {
    if (mask_init(m, hp->n_layer, hp->n_head_kv, window, sinks, ATTN_FULL)) return -1;
    long long units = (long long)hp->n_layer * hp->n_head_kv;
    long long n = llround(rho * (double)units);
    for (long long k = 0; k < n; k++) m->z[k * units / n] = ATTN_SWA;
    return 0;
}

void bench_fill_tokens(int32_t *t, int n, int n_vocab) {
    uint64_t s = 0x853c49e6748fea9bull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull; /* 64-bit LCG (Knuth's MMIX) */
        t[i] = (int32_t)((s >> 33) % (uint64_t)(n_vocab > 1000 ? n_vocab - 1000 : n_vocab)) +
               (n_vocab > 1000 ? 500 : 0);
    }
}

int bench_csv_put(csv_out *w, const bench_opts *o, bench_row r) {
    if (!w) return 0;
    r.window = o->window;
    r.sinks = o->sinks;
    r.decode_fill = strncmp(r.measure, "speed", 5) ? "-" : o->fill_random ? "random" : "prefill";
    int rc = bench_csv_row(w, &r);
    if (rc) fprintf(stderr, "bosch bench: writing a CSV row to %s failed\n", o->csv_path);
    return rc;
}

void bench_median_range(double *x, int n, double *med, double *lo, double *hi) {
    for (int i = 1; i < n; i++) /* insertion sort: a handful of rounds */
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    *lo = x[0], *hi = x[n - 1];
    *med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
