/* pin_compare.h — the numbers of the pinned-vs-working panel (ex_state.h ex_pin), as pure
 * functions of the evaluations' results: no curses, no worker (tests/test_pin_compare.c). The
 * statistics are bosch compare's (search/stats.h): the 95 % Wilson interval of an accuracy and the
 * exact McNemar test of two masks scored on the same samples. */
#ifndef BOSCH_PIN_COMPARE_H
#define BOSCH_PIN_COMPARE_H

#include <stdint.h>

#include "ex_state.h"

/* A side's held-out numbers from its per-sample exact matches exact[n] (0/1; n <= EX_PIN_SAMPLES)
 * and the mean answer probability: hits, n, the exact flags and the Wilson interval
 * (stats_wilson95). */
void pin_side_heldout(ex_pin_side *s, const uint8_t *exact, int n, double mean_score);

/* The calibration score S-hat of a raw score, as the search normalizes (search/search.h):
 * (raw - s_swa) / (s_full - s_swa); raw - s_swa when |s_full - s_swa| <= 1e-12; NAN when any is NAN. */
double pin_norm_score(double raw, double s_full, double s_swa);

/* The exact McNemar test of the two sides' held-out results (stats_discordant, stats_mcnemar_exact):
 * *b = samples the pinned mask gets right and the working mask wrong, *c the reverse, *p the
 * two-sided p. 0, or -1 (*b = *c = -1, *p = NAN) when either side is not known yet or they were
 * scored on different numbers of samples. */
int pin_mcnemar(const ex_pin_side *pinned, const ex_pin_side *working, long *b, long *c, double *p);

#endif
