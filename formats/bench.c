/* bench.c — the CSV of `bosch bench` (bench.h). */
#include "bench.h"

#include <stdio.h>

static const char *const bench_header[] = {"measure",
                                           "length",
                                           "ratio",
                                           "n_swa",
                                           "window",
                                           "sinks",
                                           "kv_bytes",
                                           "prefill_tok_s",
                                           "decode_tok_s",
                                           "seconds",
                                           "cpu_s",
                                           "first_layer",
                                           "batch",
                                           "device",
                                           "decode_fill",
                                           "gpu_peak_bytes",
                                           "round",
                                           "rounds",
                                           "prefill_tok_s_min",
                                           "prefill_tok_s_max",
                                           "decode_tok_s_min",
                                           "decode_tok_s_max",
                                           "prefill_vs_full",
                                           "decode_vs_full",
                                           "kv_type",
                                           "load_before",
                                           "load_after"};

csv_out *bench_csv_open(const char *path, char *err, size_t errlen) {
    return csv_out_open(path, bench_header, (int)(sizeof bench_header / sizeof bench_header[0]), err, errlen);
}

int bench_csv_row(csv_out *w, const bench_row *r) {
    return csv_out_rowf(
        w,
        "%s\x1f%d\x1f%.4f\x1f%d\x1f%d\x1f%d\x1f%llu\x1f%.2f\x1f%.2f\x1f%.4f\x1f%.4f\x1f%d\x1f%d"
        "\x1f%s\x1f%s\x1f%llu\x1f%d\x1f%d\x1f%.2f\x1f%.2f\x1f%.2f\x1f%.2f\x1f%.4f\x1f%.4f\x1f%s\x1f%.2f\x1f%."
        "2f",
        r->measure, r->length, r->ratio, r->n_swa, r->window, r->sinks, (unsigned long long)r->kv_bytes,
        r->prefill_tok_s, r->decode_tok_s, r->seconds, r->cpu_s, r->first_layer, r->batch, r->device,
        r->decode_fill ? r->decode_fill : "-", (unsigned long long)r->gpu_peak_bytes, r->round, r->rounds,
        r->prefill_min, r->prefill_max, r->decode_min, r->decode_max, r->prefill_vs_full, r->decode_vs_full,
        r->kv_type ? r->kv_type : "-", r->load_before, r->load_after);
}
