/* swap_search.h — guided cardinality-preserving local search over any set of units (KV heads),
 * with an ask/tell interface (one evaluation at a time, like optimizer.h).
 *
 * A solution marks which of n_units units are SWA (sol[u] = 1). Units belong to blocks (block[u]);
 * a move swaps one SWA unit a with one full unit b of the same block, so every block keeps its SWA
 * count: blocks = layers gives per-layer cardinalities (the paper's stage 3), blocks = a stage-2
 * bucket lets heads move between the bucket's layers, one block for all units is a global
 * refinement at a fixed ratio.
 *
 * Move order: with a priority prio[u] (higher = more important to keep full, e.g. the drop when
 * unit u alone goes SWA), the moves are tried in decreasing order of prio[a] - prio[b] (make the
 * most important SWA unit full and the least important full unit SWA first; ties by a, then b), so
 * a small budget tries the likeliest improvements first. Without a priority the order is a seeded
 * random permutation. First improvement: the first strictly better neighbour becomes the current
 * solution and the move list is rebuilt around it. Solutions already scored (by this search) are
 * skipped without an evaluation. Stops after `budget` evaluations or at a local optimum (every move
 * of the current solution tried). The first solution asked is `init` itself (the caller's memo may
 * know its score). Deterministic given its inputs and seed.
 */
#ifndef BOSCH_SWAP_SEARCH_H
#define BOSCH_SWAP_SEARCH_H

#include <stdint.h>

typedef struct swap_search swap_search;

/* n_units >= 1; block [n_units] (any ints; NULL = one block); init [n_units] 0/1; prio [n_units]
 * or NULL; budget >= 1. The arrays are copied. NULL on bad arguments or OOM. */
swap_search *swap_create(int n_units, const int *block, const uint8_t *init, const double *prio, long budget,
                         uint64_t seed);
void swap_free(swap_search *s);

/* Next solution to evaluate into sol[n_units]: 1, or 0 when the search is over. */
int swap_ask(swap_search *s, uint8_t *sol);
/* Score of the solution of the last swap_ask (higher is better): it becomes the current (and best)
 * solution when it is the first scored or strictly better than the current one. */
void swap_tell(swap_search *s, double score);
/* swap_tell with the caller's decision: the solution becomes the current and best one when accept
 * is non-zero (the first solution scored always does), whatever its score; e.g. a move whose gain
 * is within the noise is refused although its score is higher (search/race.h). */
void swap_tell_accept(swap_search *s, double score, int accept);

/* Look-ahead for batched evaluation (as opt_peek): the solutions swap_ask would return after the
 * pending one, assuming neither it nor any of these improves; stops at the budget and at the end
 * of the current move list; 0 when nothing is pending or the pending one is init (its moves are
 * built after its score). Writes up to max solutions into sols[max][n_units]; returns how many.
 * Changes nothing. */
int swap_peek(const swap_search *s, uint8_t *sols, int max);

const uint8_t *swap_best(const swap_search *s); /* [n_units]; init before any tell */
double swap_best_score(const swap_search *s);   /* -INFINITY before any tell */
long swap_n_evals(const swap_search *s);
long swap_budget(const swap_search *s);

#endif
