/* ui_stats.c — the UI thread's busy-time histogram (see ui_stats.h). */
#include "ui_stats.h"

#include <stdio.h>

#include "csvio.h"

void ui_stats_add(ui_stats *s, double ms, double cpu_ms) {
    if (!(ms >= 0)) ms = 0;
    if (cpu_ms > s->max_cpu_ms) s->max_cpu_ms = cpu_ms;
    long b = (long)(ms / UI_STATS_BIN_MS);
    if (b >= UI_STATS_BINS) b = UI_STATS_BINS - 1;
    s->hist[b]++;
    s->n++;
    s->sum_ms += ms;
    if (ms > s->max_ms) s->max_ms = ms;
    if (ms > 200.0) s->over_200++;
}

double ui_stats_quantile(const ui_stats *s, double q) {
    if (s->n == 0) return 0.0;
    long want = (long)(q * (double)s->n + 0.999999), acc = 0;
    if (want < 1) want = 1;
    for (long b = 0; b < UI_STATS_BINS; b++) {
        acc += s->hist[b];
        if (acc >= want) {
            double edge = (double)(b + 1) * UI_STATS_BIN_MS;
            return b == UI_STATS_BINS - 1 || edge > s->max_ms ? s->max_ms : edge;
        }
    }
    return s->max_ms;
}

int ui_stats_write(const ui_stats *s, const char *path, char *err, size_t errlen) {
    static const char *const hdr[] = {"iterations", "max_ms",     "p99_ms",    "p50_ms",
                                      "mean_ms",    "over_200ms", "max_cpu_ms"};
    csv_out *o = csv_out_open(path, hdr, 7, err, errlen);
    if (!o) return -1;
    if (csv_out_rowf(o, "%ld\x1f%.3f\x1f%.3f\x1f%.3f\x1f%.3f\x1f%ld\x1f%.3f", s->n, s->max_ms,
                     ui_stats_quantile(s, 0.99), ui_stats_quantile(s, 0.5),
                     s->n ? s->sum_ms / (double)s->n : 0.0, s->over_200, s->max_cpu_ms)) {
        csv_out_abort(o);
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return csv_out_commit(o, err, errlen);
}
