/* compare_internal.h — what compare.c (the protocol), compare_plan.c (plans), compare_eval.c
 * (scoring splits) and compare_report.c (outputs, the turnover) share. Not an interface for front ends: they
 * use compare.h. */
#ifndef BOSCH_COMPARE_INTERNAL_H
#define BOSCH_COMPARE_INTERNAL_H

#include "compare.h"
#include "compare_cache.h"

enum { SPLIT_VALID = 0, SPLIT_HELDOUT = 1, SPLIT_TRANSFER = 2, N_SPLITS = 3 };

/* The references scored beside the methods: all full and all SWA (the window check). */
enum { REF_FULL = 0, REF_SWA = 1, N_REFS = 2 };

/* Room for every scored mask: the methods', the A' masks, the references. */
#define COMPARE_MAX_SCORED (COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS + COMPARE_MAX_RATIOS * 8 + N_REFS)

/* Per-sample scores of one mask on one cell (pointers into the cache, which outlives them). */
typedef struct {
    int n;
    const uint8_t *exact;
    const double *p;
} cell_scores;

/* One A' mask (docs/search.md): BOSCH at ratios[ri + 1] perturbed with seed `seed`. */
typedef struct {
    int ri, seed, n_traded;
    attn_mask mask;
    double calib_norm;
} aprime_mask;

struct compare_result {
    compare_plan plan;
    char model_name[128];
    model_hparams hp;
    int kv_elem; /* bytes of a key or value element in the KV cache the evaluator ran (kv_bytes) */
    int L, H;
    int n_masks; /* n_methods * n_ratios, method-major */
    attn_mask masks[COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS];
    long evals[COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS];        /* calibration evaluations of the search */
    double calib_norm[COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS]; /* S^ of the final mask */
    search_race_stats race[COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS]; /* BOSCH searches' racing; zero else */
    search_confirm_stats
        confirm[COMPARE_MAX_METHODS * COMPARE_MAX_RATIOS]; /* their confirmation; zero else */
    double s_full, s_swa;                                  /* raw calibration scores of the normalizers */
    aprime_mask aprime[COMPARE_MAX_RATIOS * 8];
    int n_aprime;
    attn_mask ref[N_REFS]; /* all full, all SWA (the plan's window and sinks) */
    int have_ref;
    /* scores[split][cell][mask]: masks first, then the A' masks, then the references
     * (compare_ref_index) */
    cell_scores scores[N_SPLITS][COMPARE_MAX_CELLS][COMPARE_MAX_SCORED];
    double seconds;
    compare_cache cache; /* the scores above point into it; closed by compare_result_free */
    int cache_open;
    /* the searches' confirmation objectives (search.h search_config.confirm_samples), one per
     * confirmation split, memoized in the cache like the calibration's (compare.c confirm_memo) */
    struct confirm_memo *confirm_memo[4];
    int n_confirm_memo;
    const backend *be; /* the evaluators' (compare_run's), borrowed */
};

/* The cell's key in the cache and the files: "heldout:niah_single:noise:512:16". */
void compare_cell_key(int split, const compare_cell *c, char *buf, size_t cap);
/* A split's cells and their number; its name ("validation", "heldout", "transfer"). */
const compare_cell *compare_split_cells(const compare_plan *p, int split, int *n);
const char *compare_split_name(int split);

/* Score `n` masks on every cell of `split` (cache first; the rest in lexicographic order of their
 * rows with prefix reuse, here or through ex->cell), filling out[cell][i]. stop checked between
 * masks (1 = stopped). 0, 1 or -1 with a message. */
int compare_score_split(const compare_plan *p, int split, const model *m, const backend *be,
                        const compare_exec *ex, compare_cache *cache, const attn_mask *const *masks, int n,
                        cell_scores (*out)[COMPARE_MAX_SCORED], volatile int *stop, compare_progress progress,
                        void *user, char *err, size_t errlen);

/* Write every output file of a finished result into dir (compare.h). 0 or -1 with a message. */
int compare_write_reports(const compare_result *r, const char *dir, char *err, size_t errlen);

/* Accuracy and hits of mask k on a split ("all" cells when cell < 0). */
void compare_hits(const compare_result *r, int split, int cell, int k, long *hits, long *n, double *score);

/* Index of reference j (REF_FULL, REF_SWA) in scores[split][cell]. */
static inline int compare_ref_index(const compare_result *r, int j) {
    return r->n_masks + r->n_aprime + j;
}

/* Index of the method called `name` in the plan, or -1. */
int compare_method_index(const compare_plan *p, const char *name);

#endif
