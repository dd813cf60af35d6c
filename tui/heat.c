/* heat.c — the explorer's heat-map scale, cycle and legend (heat.h). */
#include "heat.h"

#include <math.h>
#include <stdio.h>

int heat_range(const float *v, int n, double *lo, double *hi) {
    int m = 0;
    *lo = *hi = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (m == 0 || v[i] < *lo) *lo = v[i];
        if (m == 0 || v[i] > *hi) *hi = v[i];
        m++;
    }
    return m;
}

int heat_level(double v, double lo, double hi, int levels) {
    if (!isfinite(v) || levels < 1) return -1;
    if (!(hi > lo)) return 0;
    double f = (v - lo) / (hi - lo);
    f = f < 0 ? 0 : f > 1 ? 1 : sqrt(f);
    const int lv = (int)floor(f * levels);
    return lv >= levels ? levels - 1 : lv;
}

int heat_next(int cur, int n) {
    return cur < 0 || cur >= n ? 0 : cur + 1;
}

char *heat_legend(char *buf, size_t cap, const char *name, const char *glyphs, int n_measured, double lo,
                  double hi, const char *status) {
    if (n_measured > 0)
        snprintf(buf, cap, "%s: %s %.3g..%.3g sqrt", name, glyphs, lo, hi);
    else
        snprintf(buf, cap, "%s: %s", name, status ? status : "not measured");
    return buf;
}
