/* race.h — racing a candidate mask against the incumbent on the calibration samples, and the
 * noise-aware acceptance of a move (docs/search.md "Racing and noise-aware acceptance").
 *
 * Per-sample values: p_i = exp(-nll_i) in [0, 1], the geometric-mean answer-token probability of
 * calibration sample i (stats_sample_score); S(z) is their mean. A candidate c is compared with the
 * incumbent b (fully scored) through the paired differences d_i = p_c,i - p_b,i in [-1, 1].
 *
 * Racing: the samples are scored in a fixed order (a seeded permutation, race_parts), in rounds of
 * ceil(n/8), ceil(n/4), ceil(n/2) and n samples (cumulative; repeated counts merged). After each
 * round but the last, with m samples seen, the candidate is dropped when either
 *   (a) it cannot win: sum_{seen} d_i + sum_{unseen} (1 - p_b,i) < -1e-9. The candidate's p is at
 *       most 1 on every unseen sample, so its full mean cannot exceed the incumbent's: the unraced
 *       search would reject it too (exact: never a wrong drop);
 *   (b) it is behind by more than the sequential bound: dbar_m < -race_bound(2, m, n, K, delta),
 *       K = rounds that can drop (rounds - 1), delta = RACE_DELTA.
 * A candidate that is not dropped is scored on every sample (an improvement always is).
 */
#ifndef BOSCH_RACE_H
#define BOSCH_RACE_H

#include <stdint.h>

/* Most rounds of a race (1/8, 1/4, 1/2, all). */
#define RACE_MAX_PARTS 4
/* The bound's error budget per candidate: the probability that a candidate whose full-split mean
 * difference is >= 0 is dropped by rule (b), over all its rounds together. */
#define RACE_DELTA 0.05

/* The seed of the real objective's race order (objective.c): fixed, so every search and method
 * of a comparison races on the same order. */
#define RACE_ORDER_SEED 0x72616365ull

/* The rounds for n samples: ends[j] = cumulative samples after round j, ceil(n/8), ceil(n/4),
 * ceil(n/2), n with repeats removed (n = 9: 2, 3, 5, 9; n = 4: 1, 2, 4; n = 1: 1). ends has room for
 * RACE_MAX_PARTS. Returns the number of rounds (0 when n < 1). */
int race_parts(int n, int *ends);

/* The race's fixed order of n samples into order[n]: a Fisher-Yates permutation of 0..n-1 drawn
 * from xoshiro256** seeded with `seed` (rng.h), so the first m samples of the order are a simple
 * random sample without replacement of the split, whatever the task layout of the split. */
void race_order(int n, uint64_t seed, int *order);

/* Hoeffding-Serfling bound for sampling without replacement (Serfling 1974, "Probability
 * inequalities for the sum in sampling without replacement", Ann. Statist. 2(1), Corollary 1.1;
 * restated by Bardenet & Maillard 2015, Bernoulli 21(3), Proposition 1.2): for the mean dbar_m of m
 * of n values drawn without replacement, the values in an interval of width `range`, population
 * mean mu,
 *     P(mu - dbar_m >= t) <= exp(-2 m t^2 / ((1 - (m - 1)/n) range^2)).
 * Setting the right side to delta / rounds (a union bound over the rounds that can drop) gives
 *     t = range * sqrt((1 - (m - 1)/n) * ln(rounds / delta) / (2 m)).
 * So a candidate whose full-split mean difference mu is >= 0 is dropped by rule (b) with
 * probability <= delta over the order's randomness. m in 1..n, rounds >= 1, delta in (0, 1); NAN
 * otherwise. E.g. range 2, m 18, n 36, rounds 3, delta 0.05: 0.4903. */
double race_bound(double range, int m, int n, int rounds, double delta);

/* The drop rule after a round: sum_d = sum of the m paired differences seen, headroom = sum over
 * the n - m unseen samples of (1 - p_b,i), rounds = rounds that can drop. 1 drop (rule (a) or (b)
 * above), 0 keep. m >= n never drops. */
int race_drop(double sum_d, double headroom, int m, int n, int rounds, double delta);

/* Noise-aware acceptance of a move from the incumbent (docs/search.md): taken when its paired
 * gain beats the split's noise, gain > k * se (gain and se: stats_paired_diff of the per-sample p,
 * candidate minus incumbent, on the whole split). k = 0 is the plain strict improvement gain > 0;
 * se not finite (one sample) rejects every move when k > 0. */
int race_accept(double gain, double se, double k);

#endif
