/* eval.h — the mask evaluator: score(mask, samples) with prefix reuse (DESIGN.md §4).
 *
 * Teacher forcing: one forward over prompt+answer; answer token a_k (at position p_k) is predicted
 * by the logits at p_k - 1. A sample is an exact match when the argmax at every answer position
 * equals the answer token (equal to greedy decoding). Only answer positions reach the LM head.
 *
 * Prefix reuse: the residual stream entering layer l depends only on mask rows < l. The evaluator
 * keeps the residual stream entering every layer for its *base* mask; scoring another mask starts
 * from the first layer whose row differs from the base. Results are bitwise identical to a
 * from-scratch evaluation.
 */
#ifndef BOSCH_EVAL_H
#define BOSCH_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "mask.h"
#include "model.h"

/* One probe sample: tokens = prompt followed by the answer; the answer occupies
 * tokens[answer_start .. answer_start + n_answer). answer_start >= 1. */
typedef struct {
    const int32_t *tokens;
    int n_tokens;
    int answer_start;
    int n_answer;
} eval_sample;

typedef struct {
    int exact;       /* 1 when every answer position's argmax equals the answer token */
    double p_answer; /* geometric mean of the answer tokens' probabilities, in [0,1] */
    double nll;      /* mean negative log-likelihood of the answer tokens, nats */
} eval_sample_result;

typedef struct {
    double score;    /* mean over samples of p_answer (DESIGN.md §6, S(z)) */
    double accuracy; /* fraction of exact matches */
    double nll;      /* mean over samples of nll */
    double seconds;  /* wall time of this evaluation */
    int first_layer; /* first layer recomputed (0 = from scratch) */
} eval_result;

typedef struct evaluator evaluator;

/* Create an evaluator over `samples` (copied). Window and sinks come from each mask scored.
 * reuse != 0 enables prefix reuse (memory: n_layer-1 residual streams, the ones entering layers
 * 1..n_layer-1, of every sample's answer_start + n_answer - 1 tokens, fp32: for SmolLM2-135M
 * 29 x 576 x 4 B = 66.8 KB per token). Errors (message names the sample and field): no samples,
 * answer_start < 1, n_answer < 1, answer past n_tokens, a token outside the vocabulary, OOM.
 * Returns 0, or -1 with a message. */
int evaluator_create(evaluator **out, const model *m, const eval_sample *samples, int n_samples, int reuse,
                     char *err, size_t errlen);
void evaluator_free(evaluator *ev);

/* Score `mask` on every sample. per_sample (optional) gets n_samples results. Uses and does not
 * change the base. Returns 0, or -1 with a message (shape mismatch, OOM). */
int evaluator_score(evaluator *ev, const attn_mask *mask, eval_result *out, eval_sample_result *per_sample,
                    char *err, size_t errlen);

/* Make `mask` the base for prefix reuse (computes and caches its residual streams from the first
 * layer that differs from the old base) and score it. Needs an evaluator created with reuse.
 * A layer counts as different when its row differs, or when it has an SWA head and the window or
 * sinks differ. eval_result.first_layer says where the computation started (n_layer: the mask
 * computes exactly like the base, whose results are returned). */
int evaluator_set_base(evaluator *ev, const attn_mask *mask, eval_result *out, eval_sample_result *per_sample,
                       char *err, size_t errlen);

int evaluator_n_samples(const evaluator *ev);

#endif
