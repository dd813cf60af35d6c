/* probe_score.h — masks scored on a probe cell's samples: what `bosch compare` (its validation and
 * held-out splits) and `bosch eval` do, here or on an MPI worker (docs/distributed.md).
 *
 * A probe cell names a probe set by the parameters that generate it (probes.h: task, haystack,
 * length, samples, keys, chat template, split, seed) and holds no pointer, so it travels between
 * processes of the same build as its bytes. The held-out depth override (probe_config.depths) is
 * not part of a cell: a cell's set always uses its split's depth grid.
 *
 * A scorer generates the cell's set once and scores masks on a contiguous range of its samples.
 * Every sample is its own forward (engine/eval.h), so a sample's result does not depend on the
 * range it is scored in, nor on the evaluator's prefix-reuse base: the same (model, backend, cell,
 * mask, sample) gives the same bits wherever it runs.
 */
#ifndef BOSCH_PROBE_SCORE_H
#define BOSCH_PROBE_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "eval.h"
#include "mask.h"
#include "model.h"
#include "probes.h"

typedef struct {
    int32_t task, haystack; /* probe_task, haystack_kind */
    int32_t length;         /* tokens per sample */
    int32_t n_samples;      /* samples of the whole set */
    int32_t n_keys;         /* needles of niah_multikey */
    int32_t use_chat;       /* 1: the model's chat template */
    int32_t split;          /* probe_split */
    int32_t pad;            /* 0 */
    uint64_t seed;          /* probe_set_generate's seed */
} probe_cell;

/* The cell of (cfg without its depths, split, seed). */
probe_cell probe_cell_make(const probe_config *cfg, probe_split split, uint64_t seed);
/* 1 when a and b name the same set. */
int probe_cell_equal(const probe_cell *a, const probe_cell *b);

typedef struct probe_scorer probe_scorer;

/* Generate the cell's probe set with m's tokenizer (errors of probe_set_generate, and a cell whose
 * task, haystack or split is out of range: from another build) and ready it for masks on `be`
 * (borrowed; NULL = the CPU).
 * reuse 1: one evaluator over every sample with prefix reuse; each mask scored becomes its base, so
 *   masks in lexicographic order of their rows recompute only the layers below their first
 *   difference (memory: eval.h's streams of every sample);
 * reuse 0: a fresh evaluator per sample and mask (memory: one sequence).
 * 0, or -1 with a message. Free with probe_scorer_free (NULL is ignored). */
int probe_scorer_open(probe_scorer **out, const model *m, const backend *be, const probe_cell *cell,
                      int reuse, char *err, size_t errlen);
void probe_scorer_free(probe_scorer *s);
/* The cell it was opened with, its reuse flag, and the number of samples of its set. */
const probe_cell *probe_scorer_cell(const probe_scorer *s);
int probe_scorer_reuse(const probe_scorer *s);
int probe_scorer_n(const probe_scorer *s);
/* The set's samples as evaluator samples ([probe_scorer_n]; valid while s lives). */
const eval_sample *probe_scorer_samples(const probe_scorer *s);

/* Score `mask` on samples [first, first + count) into res[0..count). A reuse scorer scores the
 * whole set only (first 0, count n). 0, or -1 with a message (a range outside the set, the
 * evaluator's errors). */
int probe_scorer_score(probe_scorer *s, const attn_mask *mask, int first, int count, eval_sample_result *res,
                       char *err, size_t errlen);

/* A scorer kept across calls (an MPI worker's, rank 0's share): probe_score_cached reopens it only
 * when the cell or the reuse flag changes. Zero it to start; probe_score_cache_free at the end. */
typedef struct {
    const model *m;
    const backend *be;
    probe_scorer *s;
} probe_score_cache;

/* probe_scorer_score on the cache's scorer for (cell, reuse), opened first when it is another. 0 or
 * -1 with a message. */
int probe_score_cached(probe_score_cache *c, const probe_cell *cell, int reuse, const attn_mask *mask,
                       int first, int count, eval_sample_result *res, char *err, size_t errlen);
void probe_score_cache_free(probe_score_cache *c);

#endif
