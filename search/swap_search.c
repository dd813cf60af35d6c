/* swap_search.c — guided swap local search (see swap_search.h). */
#include "swap_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

typedef struct {
    int a, b;   /* a: SWA -> full, b: full -> SWA */
    double key; /* prio[a] - prio[b], or a random key */
} swap_move;

struct swap_search {
    int n;
    int *block;
    double *prio; /* NULL: random order */
    long budget, n_evals;
    rng_state rng;
    uint8_t *cur, *cand, *best;
    double cur_score, best_score;
    int started; /* init scored */
    int pending; /* 1: cand awaits its score */
    int done;
    swap_move *moves;
    long n_moves, pos, cap_moves;
    /* hashes of scored solutions: open addressing, 0 = empty */
    uint64_t *seen;
    long seen_cap, seen_n;
};

static uint64_t sol_hash(const uint8_t *s, int n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the bits, then a final mix */
    for (int i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    uint64_t x = h;
    h = rng_splitmix64(&x);
    return h ? h : 1;
}

static int seen_has(const swap_search *s, uint64_t h) {
    long i = (long)(h & (uint64_t)(s->seen_cap - 1));
    while (s->seen[i]) {
        if (s->seen[i] == h) return 1;
        i = (i + 1) & (s->seen_cap - 1);
    }
    return 0;
}

static void seen_add(swap_search *s, uint64_t h) {
    if (2 * (s->seen_n + 1) > s->seen_cap) { /* grow: rehash into twice the room */
        long cap = s->seen_cap * 2;
        uint64_t *t = calloc((size_t)cap, sizeof *t);
        if (!t) return; /* then a repeat costs an evaluation, nothing worse */
        for (long j = 0; j < s->seen_cap; j++)
            if (s->seen[j]) {
                long k = (long)(s->seen[j] & (uint64_t)(cap - 1));
                while (t[k]) k = (k + 1) & (cap - 1);
                t[k] = s->seen[j];
            }
        free(s->seen);
        s->seen = t, s->seen_cap = cap;
    }
    long i = (long)(h & (uint64_t)(s->seen_cap - 1));
    while (s->seen[i] && s->seen[i] != h) i = (i + 1) & (s->seen_cap - 1);
    if (!s->seen[i]) s->seen[i] = h, s->seen_n++;
}

static int move_cmp(const void *x, const void *y) {
    const swap_move *p = x, *q = y;
    if (p->key != q->key) return p->key > q->key ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* Every move of the current solution, in the search's order. 0 or -1 (OOM). */
static int build_moves(swap_search *s) {
    long n = 0;
    for (int a = 0; a < s->n; a++)
        if (s->cur[a])
            for (int b = 0; b < s->n; b++) n += !s->cur[b] && s->block[b] == s->block[a];
    if (n > s->cap_moves) {
        swap_move *m = realloc(s->moves, sizeof *m * (size_t)n);
        if (!m) return -1;
        s->moves = m, s->cap_moves = n;
    }
    long k = 0;
    for (int a = 0; a < s->n; a++)
        if (s->cur[a])
            for (int b = 0; b < s->n; b++)
                if (!s->cur[b] && s->block[b] == s->block[a]) {
                    s->moves[k].a = a, s->moves[k].b = b;
                    s->moves[k].key =
                        s->prio ? s->prio[a] - s->prio[b] : (double)(rng_next(&s->rng) >> 11) * 0x1.0p-53;
                    k++;
                }
    if (k > 1) qsort(s->moves, (size_t)k, sizeof *s->moves, move_cmp); /* no moves: moves may be NULL */
    s->n_moves = k, s->pos = 0;
    return 0;
}

swap_search *swap_create(int n_units, const int *block, const uint8_t *init, const double *prio, long budget,
                         uint64_t seed) {
    if (n_units < 1 || !init || budget < 1) return NULL;
    swap_search *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n_units;
    s->budget = budget;
    rng_seed(&s->rng, seed);
    s->block = calloc((size_t)n_units, sizeof(int));
    s->cur = malloc((size_t)n_units);
    s->cand = malloc((size_t)n_units);
    s->best = malloc((size_t)n_units);
    s->seen_cap = 64; /* grows as solutions are scored */
    s->seen = calloc((size_t)s->seen_cap, sizeof(uint64_t));
    if (prio) s->prio = malloc(sizeof(double) * (size_t)n_units);
    if (!s->block || !s->cur || !s->cand || !s->best || !s->seen || (prio && !s->prio)) {
        swap_free(s);
        return NULL;
    }
    if (block) memcpy(s->block, block, sizeof(int) * (size_t)n_units);
    if (prio) memcpy(s->prio, prio, sizeof(double) * (size_t)n_units);
    for (int i = 0; i < n_units; i++) s->cur[i] = init[i] != 0;
    memcpy(s->cand, s->cur, (size_t)n_units);
    memcpy(s->best, s->cur, (size_t)n_units);
    s->cur_score = s->best_score = -INFINITY;
    return s;
}

void swap_free(swap_search *s) {
    if (!s) return;
    free(s->block);
    free(s->prio);
    free(s->cur);
    free(s->cand);
    free(s->best);
    free(s->moves);
    free(s->seen);
    free(s);
}

int swap_ask(swap_search *s, uint8_t *sol) {
    if (s->pending) {
        memcpy(sol, s->cand, (size_t)s->n);
        return 1;
    }
    if (s->done || s->n_evals >= s->budget) return 0;
    if (!s->started) {
        memcpy(s->cand, s->cur, (size_t)s->n);
        s->pending = 1;
        memcpy(sol, s->cand, (size_t)s->n);
        return 1;
    }
    for (;;) {
        if (s->pos >= s->n_moves) { /* local optimum */
            s->done = 1;
            return 0;
        }
        const swap_move *mv = &s->moves[s->pos++];
        memcpy(s->cand, s->cur, (size_t)s->n);
        s->cand[mv->a] = 0, s->cand[mv->b] = 1;
        if (seen_has(s, sol_hash(s->cand, s->n))) continue;
        s->pending = 1;
        memcpy(sol, s->cand, (size_t)s->n);
        return 1;
    }
}

int swap_peek(const swap_search *s, uint8_t *sols, int max) {
    if (!s->pending || !s->started || max < 1) return 0;
    int n = 0;
    for (long p = s->pos; p < s->n_moves && n < max && s->n_evals + 1 + n < s->budget; p++) {
        uint8_t *c = sols + (size_t)n * s->n;
        memcpy(c, s->cur, (size_t)s->n);
        c[s->moves[p].a] = 0, c[s->moves[p].b] = 1;
        if (!seen_has(s, sol_hash(c, s->n))) n++;
    }
    return n;
}

void swap_tell(swap_search *s, double score) {
    swap_tell_accept(s, score, score > s->cur_score);
}

/* Under swap_tell's rule the current solution is always the best scored (first improvement), so
 * one decision moves both. */
void swap_tell_accept(swap_search *s, double score, int accept) {
    if (!s->pending) return;
    s->pending = 0;
    s->n_evals++;
    seen_add(s, sol_hash(s->cand, s->n));
    if (!s->started || accept) {
        s->best_score = score;
        memcpy(s->best, s->cand, (size_t)s->n);
        s->started = 1;
        s->cur_score = score;
        memcpy(s->cur, s->cand, (size_t)s->n);
        if (build_moves(s)) s->done = 1;
    }
}

const uint8_t *swap_best(const swap_search *s) {
    return s->best;
}
double swap_best_score(const swap_search *s) {
    return s->best_score;
}
long swap_n_evals(const swap_search *s) {
    return s->n_evals;
}
long swap_budget(const swap_search *s) {
    return s->budget;
}
