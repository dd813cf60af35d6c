/* eval.h — the mask evaluator: score(mask, samples) with prefix reuse (docs/design.md §4).
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

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
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
    double score;    /* mean over samples of p_answer (docs/design.md §6, S(z)) */
    double accuracy; /* fraction of exact matches */
    double nll;      /* mean over samples of nll */
    double seconds;  /* wall time of this evaluation */
    int first_layer; /* first layer recomputed (0 = from scratch) */
} eval_result;

typedef struct evaluator evaluator;

/* Returned by evaluator_score / evaluator_set_base when the evaluator's cancel flag was set during
 * the evaluation: no result, not an error (err says "cancelled"). Equal to BACKEND_CANCELLED. */
#define EVAL_CANCELLED BACKEND_CANCELLED

/* Create an evaluator over `samples` (copied) on the CPU backend (backend_cpu_create, owned by the
 * evaluator). Window and sinks come from each mask scored.
 * reuse != 0 enables prefix reuse (memory: n_layer-1 residual streams, the ones entering layers
 * 1..n_layer-1, of every sample's answer_start + n_answer - 1 tokens, fp32: for SmolLM2-135M
 * 29 x 576 x 4 B = 66.8 KB per token). Errors (message names the sample and field): no samples,
 * answer_start < 1, n_answer < 1, answer past n_tokens, a token outside the vocabulary, OOM.
 * Returns 0, or -1 with a message. */
int evaluator_create(evaluator **out, const model *m, const eval_sample *samples, int n_samples, int reuse,
                     char *err, size_t errlen);
void evaluator_free(evaluator *ev);

/* evaluator_create with the forward run by `be` (backend.h; borrowed: must outlive the evaluator;
 * NULL = a CPU backend of its own, exactly as evaluator_create). The evaluator asks the backend for
 * its activation scratch (backend_ops.eval_open); the prefix-reuse streams stay in host memory as
 * above. Scores from a backend differ from the CPU's by the backend's precision (the GPU: bf16
 * weights, backend_cuda.h), but reuse on one backend is bitwise identical to a from-scratch
 * evaluation on that backend. Errors: those of evaluator_create, a table without run(). */
int evaluator_create_on(evaluator **out, const model *m, const backend *be, const eval_sample *samples,
                        int n_samples, int reuse, char *err, size_t errlen);
/* The backend an evaluator runs on (its own CPU backend after evaluator_create). */
const backend *evaluator_backend(const evaluator *ev);

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

/* Cooperative cancel (the explorer's quit): *cancel (borrowed, NULL = never) is read before every
 * sample and handed to the backend, which reads it between layers; once it is
 * non-zero the evaluation in progress stops and returns EVAL_CANCELLED. A cancelled
 * evaluator_set_base leaves no base (the next evaluation starts from layer 0); results of later,
 * uncancelled evaluations are unchanged. */
void evaluator_set_cancel(evaluator *ev, const atomic_int *cancel);

#endif
