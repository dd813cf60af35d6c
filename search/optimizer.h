/* optimizer.h — the binary black-box optimizer of BOSCH (docs/design.md §6, a project choice: the paper
 * does not name one), with an ask/tell interface so the caller runs one evaluation at a time.
 *
 * Problem: m layers; layer i must have exactly k[i] of its n_head_kv KV heads SWA. A solution is
 * one bitmask per layer (bit h set = KV head h is SWA), popcount(sol[i]) == k[i] always.
 * Maximize a black-box score.
 *
 * Strategy:
 *  - Exhaustive when the space prod_i C(H, k[i]) is <= budget: every solution in mixed-radix order
 *    of each layer's combinations (combinations in increasing numeric order of their bitmask).
 *  - Otherwise cardinality-preserving local search: a move swaps one SWA head with one full head
 *    inside one layer (so every layer keeps its cardinality). From the current solution the moves
 *    are tried in a fresh random order; the first strictly improving one is taken (first
 *    improvement). When no move improves (local optimum), a random restart draws a uniformly
 *    random solution, up to `restarts` times. Restart 0 starts from `init` (or random if NULL).
 *  - Solutions already scored are remembered and never cost a second evaluation.
 *  - Stops at `budget` evaluations, after the last restart's local optimum, or when exhaustive
 *    enumeration ends. Deterministic given the seed (rng.h).
 */
#ifndef BOSCH_OPTIMIZER_H
#define BOSCH_OPTIMIZER_H

#include <stdint.h>

typedef struct optimizer optimizer;

/* n_layers >= 1, 1 <= n_head_kv <= 62, 0 <= k[i] <= n_head_kv, budget >= 1, restarts >= 0.
 * init (may be NULL): [n_layers] starting bitmasks with the right popcounts. NULL on bad
 * arguments or OOM. */
optimizer *opt_create(int n_layers, const int *k, int n_head_kv, const uint64_t *init, long budget,
                      int restarts, uint64_t seed);
void opt_free(optimizer *o);

/* Next solution to evaluate into sol[n_layers]: returns 1, or 0 when the search is over. Calling
 * opt_ask twice without opt_tell returns the same solution. */
int opt_ask(optimizer *o, uint64_t *sol);
/* Score of the solution returned by the last opt_ask (higher is better). */
void opt_tell(optimizer *o, double score);

/* Look-ahead for batched evaluation: the solutions opt_ask would return after the pending one (the
 * last opt_ask's, not yet told), assuming the pending one and each of these does NOT improve on the
 * current solution; in that case the following asks return exactly these, in this order. Stops at
 * the budget, at the end of the current move list or enumeration, before a restart, and before a
 * remembered solution that would be accepted without an evaluation. Writes up to max solutions
 * into sols[max][n_layers]; returns how many (0 when nothing is pending). Changes nothing. */
int opt_peek(const optimizer *o, uint64_t *sols, int max);

/* Best solution so far ([n_layers]; NULL before any tell) and its score (-INFINITY before). */
const uint64_t *opt_best(const optimizer *o);
double opt_best_score(const optimizer *o);
long opt_n_evals(const optimizer *o);
/* Planned maximum evaluations: min(budget, size of the space). */
long opt_planned(const optimizer *o);
/* 1 when the strategy is exhaustive enumeration. */
int opt_is_exhaustive(const optimizer *o);
/* Size of the space prod C(H, k[i]), saturated at INT64_MAX. */
int64_t opt_space_size(int n_layers, const int *k, int n_head_kv);

#endif
