/* heat.h — the pure parts of the explorer's heat map (H; no curses): the range of a per-KV-head
 * score, the level of one head on the map's scale, the cycle of the scores and the legend line.
 *
 * Scale: a head's level is f = sqrt((v - lo) / (hi - lo)) cut into `levels` equal steps (level
 * floor(f * levels), the top one at f = 1), with lo and hi the smallest and largest measured score
 * of the map: a square-root scale, so the small scores still tell apart when one head dominates
 * (a Fisher score is a square; a few heads carry most of a drop). */
#ifndef BOSCH_HEAT_H
#define BOSCH_HEAT_H

#include <stddef.h>

/* The smallest and largest finite value of v[0..n) into *lo, *hi; returns how many are finite
 * (0: *lo = *hi = 0). */
int heat_range(const float *v, int n, double *lo, double *hi);
/* The level 0 .. levels-1 of v on the scale [lo, hi] above; -1 when v is not finite. When hi <= lo
 * (a single value measured, or all equal) every measured head is level 0. */
int heat_level(double v, double lo, double hi, int levels);
/* The heat selection after cur when H is pressed: 0 off, k + 1 the score k of n; off -> score 0 ->
 * ... -> score n-1 -> off. A cur out of range goes off. */
int heat_next(int cur, int n);
/* The legend of score `name` into buf: "NAME: LEVELS LO..HI sqrt" with the level glyphs
 * (`glyphs`, e.g. "░▒▓█") and lo, hi with 3 significant digits; when nothing is measured,
 * "NAME: STATUS" (e.g. "computing 12/93"). Returns buf. */
char *heat_legend(char *buf, size_t cap, const char *name, const char *glyphs, int n_measured, double lo,
                  double hi, const char *status);

#endif
