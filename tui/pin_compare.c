/* pin_compare.c — the pinned-vs-working numbers (pin_compare.h). */
#include "pin_compare.h"

#include <math.h>
#include <string.h>

#include "stats.h"

void pin_side_heldout(ex_pin_side *s, const uint8_t *exact, int n, double mean_score) {
    if (n > EX_PIN_SAMPLES) n = EX_PIN_SAMPLES;
    s->n = n;
    s->hits = 0;
    memset(s->exact, 0, sizeof s->exact);
    for (int i = 0; i < n; i++) {
        s->exact[i] = exact[i] != 0;
        s->hits += s->exact[i];
    }
    s->heldout_score = mean_score;
    stats_wilson95(s->hits, s->n, &s->wilson_lo, &s->wilson_hi);
}

double pin_norm_score(double raw, double s_full, double s_swa) {
    if (isnan(raw) || isnan(s_full) || isnan(s_swa)) return NAN;
    const double den = s_full - s_swa; /* search_normalize's rule, search/search_eval.c */
    return fabs(den) <= 1e-12 ? raw - s_swa : (raw - s_swa) / den;
}

int pin_mcnemar(const ex_pin_side *pinned, const ex_pin_side *working, long *b, long *c, double *p) {
    *b = *c = -1;
    *p = NAN;
    if (pinned->n <= 0 || working->n <= 0 || pinned->n != working->n) return -1;
    stats_discordant(pinned->exact, working->exact, pinned->n, b, c);
    *p = stats_mcnemar_exact(*b, *c);
    return 0;
}
