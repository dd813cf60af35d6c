/* race.c — the race's rounds, order, bound and rules (race.h). */
#include "race.h"

#include <math.h>

#include "rng.h"

int race_parts(int n, int *ends) {
    if (n < 1) return 0;
    static const int div[RACE_MAX_PARTS] = {8, 4, 2, 1};
    int k = 0;
    for (int j = 0; j < RACE_MAX_PARTS; j++) {
        const int e = (n + div[j] - 1) / div[j];
        if (k == 0 || e > ends[k - 1]) ends[k++] = e;
    }
    return k;
}

void race_order(int n, uint64_t seed, int *order) {
    rng_state r;
    rng_seed(&r, seed);
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)rng_below(&r, (uint64_t)i + 1);
        const int t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

double race_bound(double range, int m, int n, int rounds, double delta) {
    if (m < 1 || m > n || rounds < 1 || !(delta > 0 && delta < 1) || !(range >= 0)) return NAN;
    const double rho = 1.0 - (double)(m - 1) / n;
    return range * sqrt(rho * log(rounds / delta) / (2.0 * m));
}

int race_drop(double sum_d, double headroom, int m, int n, int rounds, double delta) {
    if (m >= n || m < 1) return 0;
    if (sum_d + headroom < -1e-9) return 1; /* (a): cannot win even at p = 1 on every unseen sample */
    return sum_d / m < -race_bound(2.0, m, n, rounds, delta); /* (b) */
}

int race_accept(double gain, double se, double k) {
    if (!(k > 0)) return gain > 0;
    return isfinite(se) && gain > k * se;
}
