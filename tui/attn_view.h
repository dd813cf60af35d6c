/* attn_view.h — the pure parts of the explorer's attention view (no curses, no engine): the heat
 * strip of a head's attention over the prompt in buckets, its heat levels and marker columns, the
 * attention mass inside an SWA head's visibility or on a token span, and a head's rank in a static
 * ranking. Used by the worker (tui/worker_attn.c) and the drawing (tui/draw_attn.c); unit tests:
 * tests/test_attn_view.c. */
#ifndef BOSCH_ATTN_VIEW_H
#define BOSCH_ATTN_VIEW_H

/* Levels of the heat strip: 0 (blank) .. ATTN_LEVELS-1 (the strip's largest bucket). */
#define ATTN_LEVELS 5

/* Resample a mass distribution in[n_in] to out[n_out] equal bins: element i covers [i, i+1) of
 * [0, n_in), bin b covers [b n_in / n_out, (b+1) n_in / n_out) and gets the mass of every element
 * times the fraction of the element inside the bin. The total is kept (up to rounding). With
 * n_out == n_in it is a copy; with n_out = n_in / k it sums runs of k elements. n_in, n_out >= 1. */
void attn_strip_resample(const double *in, int n_in, double *out, int n_out);

/* The heat level of a bucket holding `mass` in a strip whose largest bucket holds max > 0, on a
 * logarithmic scale over three decades (attention is heavy-tailed: a sink often takes most of it):
 * 0 when mass <= max / 1000, else 1 + floor((ATTN_LEVELS - 1) * (1 + log10(mass / max) / 3)),
 * clamped to ATTN_LEVELS - 1 (so mass == max gives the top level, mass == max / 10 level 3 of 4). */
int attn_strip_level(double mass, double max);

/* The strip column of token `pos` when n_tokens tokens are drawn in n_cols columns (the mapping of
 * attn_strip_resample): floor(pos n_cols / n_tokens), clamped to [0, n_cols). */
int attn_strip_col(int pos, int n_tokens, int n_cols);

/* 1 when an SWA head's query at position i sees key j (j <= i): j > i - window (the last window
 * tokens, the query's own included) or j < sinks (docs/design.md §3). */
int attn_visible(int j, int i, int window, int sinks);

/* The share of a query's attention p[0..i] (summing to 1) on the keys an SWA head at i sees. */
double attn_window_mass(const float *p, int i, int window, int sinks);

/* The mass of p[0..i] on the tokens [pos, pos + len) (the part at or before i). */
double attn_span_mass(const float *p, int i, int pos, int len);

/* Restrict p[0..i] to the keys an SWA head sees and renormalize it in place (what the head
 * attends to once it is SWA: the softmax over its visible keys, docs/design.md §3). Returns the mass
 * that was inside (attn_window_mass); when it is 0 p is left all zero. */
double attn_restrict_window(float *p, int i, int window, int sinks);

/* The rank of unit u in a static ranking imp[n] (higher importance = keep full): 1 + the units
 * with a larger importance, or an equal one and a higher index. search_cut_heads sends the
 * round(rho n) heads of lowest importance SWA, ties by the lower index first, so it sends exactly
 * the heads of rank > n - round(rho n). */
int attn_rank(const double *imp, int n, int u);

#endif
