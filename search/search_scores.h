/* search_scores.h — the per-KV-head scores of every static head ranking of the method registry
 * (search_methods.h: ablation, fisher, locality, echo and any row added) on one calibration split,
 * for `bosch export --format scores` and the explorer's `x s` (formats/scores.h writes them).
 *
 * Cost: ablation and fisher score every KV head alone SWA (n_layer * n_head_kv evaluations of the
 * calibration split each, plus the all-full and all-SWA normalizers); locality and echo are
 * attention statistics of one forward per calibration sample, no objective calls.
 */
#ifndef BOSCH_SEARCH_SCORES_H
#define BOSCH_SEARCH_SCORES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model.h"
#include "search_methods.h"

typedef struct {
    int samples; /* calibration samples (>= 1) */
    int tokens;  /* tokens per sample (>= 64) */
    int window;  /* SWA window W of the ablation / fisher / locality measurements, tokens */
    int sinks;   /* SWA sinks S */
    /* called before each ranking with its name (may be NULL) */
    void (*progress)(void *user, const char *ranking);
    void *user;
} search_scores_opts;

/* The static head rankings, in the registry's table order (the scores export's columns): how
 * many (<= SEARCH_METHODS_MAX), and the name of ranking k (NULL past the last). */
int search_scores_n(void);
const char *search_scores_name(int k);

/* Compute every ranking k < search_scores_n(): score[k] gets a malloc'd [n_layer][n_head_kv]
 * array (higher = keep full; free each). be NULL = the CPU. stop (may be NULL) is checked between
 * evaluations. 0; 1 stopped (nothing allocated); or -1 with a message. */
int search_static_scores(const model *m, const backend *be, const search_scores_opts *o,
                         volatile sig_atomic_t *stop, double *score[SEARCH_METHODS_MAX], char *err,
                         size_t errlen);

#endif
