/* optimizer.c — cardinality-preserving local search / exhaustive enumeration (see optimizer.h). */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

enum { LS_START, LS_MOVES, LS_DONE };
enum { PEND_NONE, PEND_START, PEND_MOVE, PEND_ENUM };

typedef struct {
    int layer, a, b; /* head a: SWA -> full, head b: full -> SWA */
} opt_move;

struct optimizer {
    int m, H;
    int *k; /* [m] */
    long budget;
    int restarts, restarts_done;
    rng_state rng;
    int exhaustive;
    int64_t space;
    /* exhaustive enumeration */
    uint64_t **combos; /* [m][n_combos[i]] */
    long *n_combos;    /* [m] */
    long *idx;         /* [m] mixed-radix counter */
    int enum_done;
    /* local search */
    int state;
    uint64_t *init; /* [m] or NULL */
    uint64_t *cur;  /* [m] */
    double cur_score;
    opt_move *moves;
    long n_moves, move_pos, moves_cap;
    /* pending candidate */
    int pending;
    uint64_t *cand; /* [m] */
    /* best */
    uint64_t *best; /* [m] */
    double best_score;
    int have_best;
    long n_evals;
    /* cache of scored solutions: open addressing, keys [cap][m] */
    long cache_cap, cache_n;
    uint64_t *cache_keys;
    double *cache_score;
    uint8_t *cache_used;
};

static int64_t binom(int n, int k) {
    if (k < 0 || k > n) return 0;
    if (k > n - k) k = n - k;
    int64_t r = 1;
    for (int i = 1; i <= k; i++) {
        /* r * (n - k + i) / i stays exact; saturate on overflow */
        if (r > INT64_MAX / (n - k + i)) return INT64_MAX;
        r = r * (n - k + i) / i;
    }
    return r;
}

int64_t opt_space_size(int n_layers, const int *k, int n_head_kv) {
    int64_t s = 1;
    for (int i = 0; i < n_layers; i++) {
        int64_t c = binom(n_head_kv, k[i]);
        if (c == 0) return 0;
        if (s > INT64_MAX / c) return INT64_MAX;
        s *= c;
    }
    return s;
}

static uint64_t sol_hash(const uint64_t *s, int m) {
    uint64_t h = 0x243f6a8885a308d3ull;
    for (int i = 0; i < m; i++) {
        uint64_t x = h ^ s[i];
        h = rng_splitmix64(&x);
    }
    return h;
}

/* Returns the slot holding s, or the empty slot where it would go. */
static long cache_slot(const optimizer *o, const uint64_t *s) {
    long mask = o->cache_cap - 1;
    long i = (long)(sol_hash(s, o->m) & (uint64_t)mask);
    while (o->cache_used[i] && memcmp(o->cache_keys + (size_t)i * o->m, s, sizeof(uint64_t) * o->m))
        i = (i + 1) & mask;
    return i;
}

static int cache_get(const optimizer *o, const uint64_t *s, double *score) {
    long i = cache_slot(o, s);
    if (!o->cache_used[i]) return 0;
    *score = o->cache_score[i];
    return 1;
}

static void cache_put(optimizer *o, const uint64_t *s, double score) {
    if (2 * (o->cache_n + 1) > o->cache_cap) return; /* sized for the budget; never reached */
    long i = cache_slot(o, s);
    if (!o->cache_used[i]) {
        o->cache_used[i] = 1;
        memcpy(o->cache_keys + (size_t)i * o->m, s, sizeof(uint64_t) * o->m);
        o->cache_n++;
    }
    o->cache_score[i] = score;
}

/* All H-bit masks with popcount k in increasing order (Gosper's hack). */
static uint64_t *make_combos(int H, int k, long n) {
    uint64_t *c = malloc(sizeof *c * (size_t)(n > 0 ? n : 1));
    if (!c) return NULL;
    if (k == 0) {
        c[0] = 0;
        return c;
    }
    uint64_t x = (1ull << k) - 1;
    for (long i = 0; i < n; i++) {
        c[i] = x;
        uint64_t u = x & -x, v = x + u;
        x = v + (((v ^ x) / u) >> 2);
    }
    return c;
}

static void random_solution(optimizer *o, uint64_t *s) {
    int perm[64];
    for (int i = 0; i < o->m; i++) {
        for (int h = 0; h < o->H; h++) perm[h] = h;
        s[i] = 0;
        for (int j = 0; j < o->k[i]; j++) { /* partial Fisher-Yates */
            int r = j + (int)rng_below(&o->rng, (uint64_t)(o->H - j));
            int t = perm[j];
            perm[j] = perm[r];
            perm[r] = t;
            s[i] |= 1ull << perm[j];
        }
    }
}

static void build_moves(optimizer *o) {
    o->n_moves = 0;
    for (int i = 0; i < o->m; i++)
        for (int a = 0; a < o->H; a++) {
            if (!(o->cur[i] >> a & 1)) continue;
            for (int b = 0; b < o->H; b++)
                if (!(o->cur[i] >> b & 1)) o->moves[o->n_moves++] = (opt_move){i, a, b};
        }
    for (long j = o->n_moves - 1; j > 0; j--) {
        long r = (long)rng_below(&o->rng, (uint64_t)j + 1);
        opt_move t = o->moves[j];
        o->moves[j] = o->moves[r];
        o->moves[r] = t;
    }
    o->move_pos = 0;
}

optimizer *opt_create(int n_layers, const int *k, int n_head_kv, const uint64_t *init, long budget,
                      int restarts, uint64_t seed) {
    if (n_layers < 1 || n_head_kv < 1 || n_head_kv > 62 || budget < 1 || restarts < 0) return NULL;
    for (int i = 0; i < n_layers; i++)
        if (k[i] < 0 || k[i] > n_head_kv) return NULL;
    if (init)
        for (int i = 0; i < n_layers; i++)
            if (__builtin_popcountll(init[i]) != k[i] || init[i] >> n_head_kv) return NULL;
    optimizer *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->m = n_layers;
    o->H = n_head_kv;
    o->budget = budget;
    o->restarts = restarts;
    o->best_score = -INFINITY;
    rng_seed(&o->rng, seed);
    o->space = opt_space_size(n_layers, k, n_head_kv);
    o->exhaustive = o->space <= budget;
    size_t m = (size_t)n_layers;
    o->k = malloc(sizeof(int) * m);
    o->cur = calloc(m, sizeof(uint64_t));
    o->cand = calloc(m, sizeof(uint64_t));
    o->best = calloc(m, sizeof(uint64_t));
    long planned = o->exhaustive ? (long)o->space : budget;
    o->cache_cap = 16;
    while (o->cache_cap < 2 * planned + 2) o->cache_cap *= 2;
    o->cache_keys = calloc((size_t)o->cache_cap * m, sizeof(uint64_t));
    o->cache_score = calloc((size_t)o->cache_cap, sizeof(double));
    o->cache_used = calloc((size_t)o->cache_cap, 1);
    int ok = o->k && o->cur && o->cand && o->best && o->cache_keys && o->cache_score && o->cache_used;
    if (ok) memcpy(o->k, k, sizeof(int) * m);
    if (ok && init) {
        o->init = malloc(sizeof(uint64_t) * m);
        ok = o->init != NULL;
        if (ok) memcpy(o->init, init, sizeof(uint64_t) * m);
    }
    if (ok && o->exhaustive) {
        o->combos = calloc(m, sizeof(uint64_t *));
        o->n_combos = calloc(m, sizeof(long));
        o->idx = calloc(m, sizeof(long));
        ok = o->combos && o->n_combos && o->idx;
        for (size_t i = 0; ok && i < m; i++) {
            o->n_combos[i] = (long)binom(n_head_kv, k[i]);
            o->combos[i] = make_combos(n_head_kv, k[i], o->n_combos[i]);
            ok = o->combos[i] != NULL;
        }
    } else if (ok) {
        long cap = 0;
        for (size_t i = 0; i < m; i++) cap += (long)k[i] * (n_head_kv - k[i]);
        o->moves_cap = cap;
        o->moves = malloc(sizeof(opt_move) * (size_t)(cap > 0 ? cap : 1));
        ok = o->moves != NULL;
        o->state = LS_START;
    }
    if (!ok) {
        opt_free(o);
        return NULL;
    }
    return o;
}

void opt_free(optimizer *o) {
    if (!o) return;
    if (o->combos)
        for (int i = 0; i < o->m; i++) free(o->combos[i]);
    free(o->combos);
    free(o->n_combos);
    free(o->idx);
    free(o->k);
    free(o->init);
    free(o->cur);
    free(o->cand);
    free(o->best);
    free(o->moves);
    free(o->cache_keys);
    free(o->cache_score);
    free(o->cache_used);
    free(o);
}

static int ask_exhaustive(optimizer *o, uint64_t *sol) {
    if (o->enum_done) return 0;
    for (int i = 0; i < o->m; i++) o->cand[i] = o->combos[i][o->idx[i]];
    /* advance the mixed-radix counter, last layer fastest */
    int i = o->m - 1;
    while (i >= 0 && ++o->idx[i] == o->n_combos[i]) o->idx[i--] = 0;
    if (i < 0) o->enum_done = 1;
    o->pending = PEND_ENUM;
    memcpy(sol, o->cand, sizeof(uint64_t) * o->m);
    return 1;
}

static int ask_local(optimizer *o, uint64_t *sol) {
    for (;;) {
        if (o->state == LS_DONE) return 0;
        if (o->state == LS_START) {
            if (o->restarts_done == 0 && o->init)
                memcpy(o->cand, o->init, sizeof(uint64_t) * o->m);
            else
                random_solution(o, o->cand);
            double s;
            if (cache_get(o, o->cand, &s)) {
                memcpy(o->cur, o->cand, sizeof(uint64_t) * o->m);
                o->cur_score = s;
                o->state = LS_MOVES;
                build_moves(o);
                continue;
            }
            o->pending = PEND_START;
            memcpy(sol, o->cand, sizeof(uint64_t) * o->m);
            return 1;
        }
        /* LS_MOVES */
        while (o->move_pos < o->n_moves) {
            opt_move mv = o->moves[o->move_pos++];
            memcpy(o->cand, o->cur, sizeof(uint64_t) * o->m);
            o->cand[mv.layer] ^= (1ull << mv.a) | (1ull << mv.b);
            double s;
            if (cache_get(o, o->cand, &s)) {
                if (s > o->cur_score) {
                    memcpy(o->cur, o->cand, sizeof(uint64_t) * o->m);
                    o->cur_score = s;
                    build_moves(o);
                }
                continue;
            }
            o->pending = PEND_MOVE;
            memcpy(sol, o->cand, sizeof(uint64_t) * o->m);
            return 1;
        }
        /* local optimum */
        if (o->restarts_done < o->restarts) {
            o->restarts_done++;
            o->state = LS_START;
        } else {
            o->state = LS_DONE;
        }
    }
}

int opt_ask(optimizer *o, uint64_t *sol) {
    if (o->pending != PEND_NONE) {
        memcpy(sol, o->cand, sizeof(uint64_t) * o->m);
        return 1;
    }
    if (o->n_evals >= o->budget) return 0;
    return o->exhaustive ? ask_exhaustive(o, sol) : ask_local(o, sol);
}

/* opt_peek for exhaustive enumeration: the mixed-radix counter advanced on a copy. */
static int peek_exhaustive(const optimizer *o, uint64_t *sols, int max) {
    if (o->enum_done) return 0;
    long idx[64];
    const int m = o->m;
    if (m > 64) return 0; /* enumeration of more than 64 layers never fits a budget */
    memcpy(idx, o->idx, sizeof(long) * (size_t)m);
    int n = 0;
    while (n < max && o->n_evals + 1 + n < o->budget) {
        for (int i = 0; i < m; i++) sols[(size_t)n * m + i] = o->combos[i][idx[i]];
        n++;
        int i = m - 1;
        while (i >= 0 && ++idx[i] == o->n_combos[i]) idx[i--] = 0;
        if (i < 0) break;
    }
    return n;
}

int opt_peek(const optimizer *o, uint64_t *sols, int max) {
    if (o->pending == PEND_NONE || max < 1) return 0;
    if (o->exhaustive) return peek_exhaustive(o, sols, max);
    if (o->pending != PEND_MOVE) return 0; /* a start: its move list is drawn after its score */
    int n = 0;
    for (long p = o->move_pos; p < o->n_moves && n < max && o->n_evals + 1 + n < o->budget; p++) {
        uint64_t *c = sols + (size_t)n * o->m;
        opt_move mv = o->moves[p];
        memcpy(c, o->cur, sizeof(uint64_t) * o->m);
        c[mv.layer] ^= (1ull << mv.a) | (1ull << mv.b);
        double s;
        if (cache_get(o, c, &s)) {
            if (s > o->cur_score) break; /* accepted without an evaluation: the path turns here */
            continue;
        }
        /* a solution twice in the look-ahead is impossible: moves from one solution differ */
        n++;
    }
    return n;
}

void opt_tell(optimizer *o, double score) {
    if (o->pending == PEND_NONE) return;
    o->n_evals++;
    cache_put(o, o->cand, score);
    if (!o->have_best || score > o->best_score) {
        memcpy(o->best, o->cand, sizeof(uint64_t) * o->m);
        o->best_score = score;
        o->have_best = 1;
    }
    if (o->pending == PEND_START) {
        memcpy(o->cur, o->cand, sizeof(uint64_t) * o->m);
        o->cur_score = score;
        o->state = LS_MOVES;
        build_moves(o);
    } else if (o->pending == PEND_MOVE && score > o->cur_score) {
        memcpy(o->cur, o->cand, sizeof(uint64_t) * o->m);
        o->cur_score = score;
        build_moves(o);
    }
    o->pending = PEND_NONE;
}

const uint64_t *opt_best(const optimizer *o) {
    return o->have_best ? o->best : NULL;
}
double opt_best_score(const optimizer *o) {
    return o->best_score;
}
long opt_n_evals(const optimizer *o) {
    return o->n_evals;
}
long opt_planned(const optimizer *o) {
    return o->exhaustive ? (long)o->space : o->budget;
}
int opt_is_exhaustive(const optimizer *o) {
    return o->exhaustive;
}
