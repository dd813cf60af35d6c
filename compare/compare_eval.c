/* compare_eval.c — every mask of a comparison on every cell of a validation or held-out split
 * (compare_internal.h: compare_score_split). Per cell: the samples (probe_set_generate with the
 * split's default seed), then the masks the cache does not know yet, in lexicographic order of
 * their rows, each made the evaluator's prefix-reuse base in turn, so consecutive masks that share
 * their first layers recompute only the rest (results are bitwise those of a from-scratch
 * evaluation, eval.h). Each mask's per-sample scores go to the cache as soon as they exist. Under
 * mpirun the sorted masks go to compare_exec.cell instead (contiguous shares per rank keep the
 * reuse), and their scores go to the cache once the cell is back. */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"

const char *compare_split_name(int split) {
    return split == SPLIT_VALID ? "validation" : split == SPLIT_TRANSFER ? "transfer" : "heldout";
}

const compare_cell *compare_split_cells(const compare_plan *p, int split, int *n) {
    *n = split == SPLIT_VALID ? p->n_valid : split == SPLIT_TRANSFER ? p->n_transfer : p->n_heldout;
    return split == SPLIT_VALID ? p->valid : split == SPLIT_TRANSFER ? p->transfer : p->heldout;
}

void compare_cell_key(int split, const compare_cell *c, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%s:%s:%d:%d", compare_split_name(split), probe_task_name(c->task),
             haystack_kind_name(c->haystack), c->length, c->n_samples);
}

/* qsort_r order of mask indexes: lexicographic rows, then index (masks = the context). */
static int cmp_rows(const void *a, const void *b, void *ctx) {
    const attn_mask *const *masks = ctx;
    const attn_mask *x = masks[*(const int *)a], *y = masks[*(const int *)b];
    int c = memcmp(x->z, y->z, (size_t)x->n_layer * x->n_head_kv);
    return c ? c : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* A mask's per-sample results into the cache (bits and pa: scratch of n). 0 or -1. */
static int put_result(compare_cache *cache, const char *key, const attn_mask *mk, int n,
                      const eval_sample_result *res, uint8_t *bits, double *pa, char *err, size_t errlen) {
    for (int s = 0; s < n; s++) bits[s] = (uint8_t)res[s].exact, pa[s] = res[s].p_answer;
    if (cache_put_cell(cache, key, mask_hash(mk), n, bits, pa, err, errlen)) return -1;
    cache->cell_misses++;
    return 0;
}

/* The cell's masks scored here: one reuse scorer, each mask made its base in turn. 0, 1, -1. */
static int score_here(const probe_cell *pcell, const char *key, const model *m, const backend *be,
                      compare_cache *cache, const attn_mask *const *sorted, int n_new,
                      eval_sample_result *res, uint8_t *bits, double *pa, volatile int *stop, char *err,
                      size_t errlen) {
    probe_scorer *sc = NULL;
    if (probe_scorer_open(&sc, m, be, pcell, 1, err, errlen)) return -1;
    const int ns = probe_scorer_n(sc);
    int rc = 0;
    for (int j = 0; rc == 0 && j < n_new; j++) {
        if (stop && *stop) {
            rc = 1;
            break;
        }
        if (probe_scorer_score(sc, sorted[j], 0, ns, res, err, errlen) ||
            put_result(cache, key, sorted[j], ns, res, bits, pa, err, errlen))
            rc = -1;
    }
    probe_scorer_free(sc);
    return rc;
}

/* The cell's masks scored through ex->cell (other processes), then into the cache in order. */
static int score_elsewhere(const compare_exec *ex, const probe_cell *pcell, const char *key,
                           compare_cache *cache, const attn_mask *const *sorted, int n_new, uint8_t *bits,
                           double *pa, volatile int *stop, char *err, size_t errlen) {
    const int ns = pcell->n_samples;
    eval_sample_result *all = malloc(sizeof *all * (size_t)ns * (size_t)n_new);
    eval_sample_result **res = malloc(sizeof *res * (size_t)n_new);
    int rc = 0;
    if (!all || !res) {
        snprintf(err, errlen, "compare: out of memory");
        rc = -1;
    } else if (stop && *stop) {
        rc = 1;
    } else {
        for (int j = 0; j < n_new; j++) res[j] = all + (size_t)j * ns;
        rc = ex->cell(ex->user, pcell, sorted, n_new, res, err, errlen);
    }
    for (int j = 0; rc == 0 && j < n_new; j++)
        if (put_result(cache, key, sorted[j], ns, res[j], bits, pa, err, errlen)) rc = -1;
    free(all);
    free(res);
    return rc;
}

/* Score masks[order[0..n_new)] on one cell's probe set, in lexicographic order of their rows so the
 * evaluator's prefix reuse works, into the cache: here, or through ex->cell. 0, 1 stopped, -1. */
static int score_cell(const compare_cell *cell, probe_split ps_split, uint64_t seed, const char *key,
                      const model *m, const backend *be, const compare_exec *ex, compare_cache *cache,
                      const attn_mask *const *masks, int *order, int n_new, volatile int *stop, char *err,
                      size_t errlen) {
    probe_config pc = probe_config_default();
    pc.task = cell->task;
    pc.haystack = cell->haystack;
    pc.length_tokens = cell->length;
    pc.n_samples = cell->n_samples;
    const probe_cell pcell = probe_cell_make(&pc, ps_split, seed);
    qsort_r(order, (size_t)n_new, sizeof *order, cmp_rows, (void *)masks);
    const attn_mask **sorted = malloc(sizeof *sorted * (size_t)n_new);
    eval_sample_result *res = malloc(sizeof *res * (size_t)cell->n_samples);
    uint8_t *bits = malloc((size_t)cell->n_samples);
    double *pa = malloc(sizeof(double) * (size_t)cell->n_samples);
    int rc;
    if (!sorted || !res || !bits || !pa) {
        snprintf(err, errlen, "compare: out of memory");
        rc = -1;
    } else {
        for (int j = 0; j < n_new; j++) sorted[j] = masks[order[j]];
        rc = ex && ex->cell
                 ? score_elsewhere(ex, &pcell, key, cache, sorted, n_new, bits, pa, stop, err, errlen)
                 : score_here(&pcell, key, m, be, cache, sorted, n_new, res, bits, pa, stop, err, errlen);
    }
    free(sorted);
    free(res), free(bits), free(pa);
    return rc;
}

/* The masks of the list not yet in the cache for this cell (each mask once) into order; their count.
 * *active: how many masks the split scores at all. */
static int masks_to_score(const compare_cache *cache, const char *key, const attn_mask *const *masks, int n,
                          int *order, int *active) {
    int n_new = 0;
    *active = 0;
    for (int k = 0; k < n; k++) {
        if (!masks[k]) continue; /* not scored on this split */
        (*active)++;
        uint64_t h = mask_hash(masks[k]);
        int dup = 0; /* the same mask twice in the list: score it once */
        for (int j = 0; j < n_new && !dup; j++) dup = mask_hash(masks[order[j]]) == h;
        if (!cache_get_cell(cache, key, h) && !dup) order[n_new++] = k;
    }
    return n_new;
}

int compare_score_split(const compare_plan *p, int split, const model *m, const backend *be,
                        const compare_exec *ex, compare_cache *cache, const attn_mask *const *masks, int n,
                        cell_scores (*out)[COMPARE_MAX_SCORED], volatile int *stop, compare_progress progress,
                        void *user, char *err, size_t errlen) {
    int n_cells;
    const compare_cell *cells = compare_split_cells(p, split, &n_cells);
    /* the transfer split is the held-out generator at other lengths */
    const probe_split ps_split = split == SPLIT_VALID ? PROBE_SPLIT_VALIDATION : PROBE_SPLIT_HELDOUT;
    const uint64_t seed = split == SPLIT_VALID ? PROBE_DEFAULT_VALID_SEED : PROBE_DEFAULT_HELDOUT_SEED;
    int *order = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!order) {
        snprintf(err, errlen, "compare: out of memory");
        return -1;
    }
    int rc = 0;
    for (int ci = 0; ci < n_cells && rc == 0; ci++) {
        char key[128];
        compare_cell_key(split, &cells[ci], key, sizeof key);
        int active, n_new = masks_to_score(cache, key, masks, n, order, &active);
        if (n_new > 0 && progress) {
            char line[256];
            snprintf(line, sizeof line, "%s: %d masks to score (%d cached)", key, n_new, active - n_new);
            progress(line, user);
        }
        if (n_new > 0)
            rc = score_cell(&cells[ci], ps_split, seed, key, m, be, ex, cache, masks, order, n_new, stop, err,
                            errlen);
        for (int k = 0; rc == 0 && k < n; k++) {
            if (!masks[k]) {
                out[ci][k] = (cell_scores){0, NULL, NULL};
                continue;
            }
            const cache_cell *c = cache_get_cell(cache, key, mask_hash(masks[k]));
            if (!c) {
                snprintf(err, errlen, "compare: %s: a score is missing after scoring (cache)", key);
                rc = -1;
                break;
            }
            out[ci][k] = (cell_scores){c->n, c->exact, c->p};
        }
    }
    free(order);
    return rc;
}
