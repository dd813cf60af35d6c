/* stats.c — Wilson intervals, the exact McNemar test and paired differences (formulas in stats.h). */
#include "stats.h"

#include <math.h>

#define Z975 1.959963984540054

void stats_wilson95(long hits, long n, double *lo, double *hi) {
    if (n <= 0) {
        *lo = 0.0, *hi = 1.0;
        return;
    }
    const double p = (double)hits / (double)n, z2 = Z975 * Z975, d = 1.0 + z2 / n;
    const double centre = (p + z2 / (2.0 * n)) / d;
    const double half = Z975 * sqrt(p * (1.0 - p) / n + z2 / (4.0 * (double)n * n)) / d;
    *lo = fmax(0.0, centre - half);
    *hi = fmin(1.0, centre + half);
}

double stats_mcnemar_exact(long b, long c) {
    const long n = b + c, k = b < c ? b : c;
    if (n <= 0) return 1.0;
    /* sum_{i<=k} C(n,i) 2^-n via log-sum-exp of lgamma terms */
    double mx = -INFINITY;
    for (long i = 0; i <= k; i++) {
        double t = lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1);
        if (t > mx) mx = t;
    }
    double s = 0.0;
    for (long i = 0; i <= k; i++)
        s += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) - mx);
    double p = 2.0 * exp(mx + log(s) - (double)n * log(2.0));
    return p > 1.0 ? 1.0 : p;
}

void stats_discordant(const uint8_t *a, const uint8_t *b, long n, long *b_only, long *c_only) {
    *b_only = *c_only = 0;
    for (long i = 0; i < n; i++) {
        *b_only += a[i] && !b[i];
        *c_only += !a[i] && b[i];
    }
}

void stats_paired_diff(const double *a, const double *b, long n, double *mean, double *se) {
    double m = NAN, s = NAN;
    if (n > 0) {
        double sum = 0.0;
        for (long i = 0; i < n; i++) sum += a[i] - b[i];
        m = sum / (double)n;
        if (n == 1) {
            s = INFINITY;
        } else {
            double ss = 0.0;
            for (long i = 0; i < n; i++) {
                const double d = a[i] - b[i] - m;
                ss += d * d;
            }
            s = sqrt(ss / (double)(n - 1) / (double)n);
        }
    }
    if (mean) *mean = m;
    if (se) *se = s;
}

double stats_sample_score(double nll) {
    return exp(-nll);
}
