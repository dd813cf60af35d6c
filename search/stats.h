/* stats.h — the statistics of a comparison table: confidence intervals of an accuracy and paired
 * tests between two methods scored on the same samples.
 */
#ifndef BOSCH_STATS_H
#define BOSCH_STATS_H

#include <stdint.h>

/* 95 % Wilson score interval of a binomial proportion hits/n (Wilson 1927; Agresti & Coull 1998):
 *   p = hits/n, z = 1.959964 (the 97.5 % normal quantile), d = 1 + z^2/n,
 *   centre = (p + z^2/(2n)) / d, half = z * sqrt(p(1-p)/n + z^2/(4n^2)) / d.
 * *lo = centre - half, *hi = centre + half (clamped to [0,1]). n = 0 gives [0, 1]. */
void stats_wilson95(long hits, long n, double *lo, double *hi);

/* Exact (binomial) McNemar test, two-sided (McNemar 1947; the exact form: the discordant pairs are
 * Binomial(b + c, 1/2) under the null): b = samples A got right and B wrong, c = the reverse;
 * p = min(1, 2 * sum_{i <= min(b,c)} C(b+c, i) / 2^(b+c)). b = c = 0 gives 1. Computed in log space,
 * exact to double precision for b + c up to millions. */
double stats_mcnemar_exact(long b, long c);

/* Discordant counts of two methods' per-sample exact matches a[n], b[n] (0/1): *b_only = samples
 * where a is right and b wrong, *c_only = the reverse. */
void stats_discordant(const uint8_t *a, const uint8_t *b, long n, long *b_only, long *c_only);

/* Paired difference of two masks scored on the same n samples: d_i = a[i] - b[i],
 *   *mean = (1/n) sum d_i,  *se = s_d / sqrt(n),  s_d^2 = sum (d_i - mean)^2 / (n - 1)
 * (the standard error of a paired mean difference; e.g. Rice, Mathematical Statistics, 11.3).
 * n = 1 gives *se = INFINITY (one sample says nothing about the noise); n <= 0 gives NAN for both.
 * Either output may be NULL. Computed in two passes (no cancellation for nearly equal a and b). */
void stats_paired_diff(const double *a, const double *b, long n, double *mean, double *se);

/* Per-sample calibration score from a per-sample mean answer NLL (nats): exp(-nll), the geometric
 * mean of the answer tokens' probabilities (engine/eval.h p_answer; its mean over samples is S(z)). */
double stats_sample_score(double nll);

#endif
