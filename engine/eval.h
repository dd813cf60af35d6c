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

#include <stdatomic.h>
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

/* A forward backend for the evaluator (the GPU: engine/backend_cuda_eval.h; tests: a CPU one).
 * engine/ knows only this table, so it stays free of CUDA. run() computes ONE sample of n_tokens
 * tokens at positions 0..n_tokens-1 under `mask` (shaped like the model; window and sinks from it)
 * from layer `first` (0 <= first < n_layer) to the end, then the final RMSNorm and the LM head:
 *   tokens  [n_tokens] ids (checked by the evaluator), read when first == 0 (embedding first);
 *   x_in    [n_tokens][n_embd] fp32, the residual stream entering layer `first`, read when first > 0;
 *   x_save  n_layer host pointers: when x_save[l] != NULL (first < l < n_layer) it receives the
 *           residual stream entering layer l, [n_tokens][n_embd] fp32 (x_save[l] is NULL for
 *           l <= first; the array itself is never NULL);
 *   rows    [n_rows] token indexes in 0..n_tokens-1 (the positions before each answer token);
 *   logits  [n_rows][n_vocab] fp32 out, row i the logits at rows[i].
 * Contract (what makes prefix reuse bitwise identical, eval.h header): run() is deterministic,
 * and starting at layer f from a stream it saved as x_save[f] gives bit for bit the same streams,
 * logits and saves as the run that saved it (layer l's arithmetic depends only on the stream
 * entering l, the mask's row l, window, sinks and n_tokens). cancel (may be NULL) is the
 * evaluator's cancel flag (evaluator_set_cancel): a backend reads it between layers and returns
 * EVAL_CANCELLED as soon as it is non-zero (x_save and logits then hold nothing usable).
 * Returns 0, EVAL_CANCELLED, or -1 with a message in err[errlen]. ctx belongs to the backend's owner, who
 * keeps it alive while evaluators use it; calls on one ctx are serialized by its users (a backend need not be
 * thread-safe). */
typedef struct {
    const char *name; /* "cuda", ... (for messages) */
    void *ctx;
    int (*run)(void *ctx, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
               int first, float *const *x_save, const int *rows, int n_rows, float *logits,
               const atomic_int *cancel, char *err, size_t errlen);
} eval_backend;

/* Returned by evaluator_score / evaluator_set_base (and eval_backend.run) when the evaluator's
 * cancel flag was set during the evaluation: no result, not an error (err says "cancelled"). */
#define EVAL_CANCELLED (-2)

/* Create an evaluator over `samples` (copied). Window and sinks come from each mask scored.
 * reuse != 0 enables prefix reuse (memory: n_layer-1 residual streams, the ones entering layers
 * 1..n_layer-1, of every sample's answer_start + n_answer - 1 tokens, fp32: for SmolLM2-135M
 * 29 x 576 x 4 B = 66.8 KB per token). Errors (message names the sample and field): no samples,
 * answer_start < 1, n_answer < 1, answer past n_tokens, a token outside the vocabulary, OOM.
 * Returns 0, or -1 with a message. */
int evaluator_create(evaluator **out, const model *m, const eval_sample *samples, int n_samples, int reuse,
                     char *err, size_t errlen);
void evaluator_free(evaluator *ev);

/* evaluator_create with the forward run by `be` (borrowed: must outlive the evaluator; NULL = the
 * CPU forward, forward.h, exactly as evaluator_create). With a backend no CPU activation scratch
 * is allocated; the prefix-reuse streams stay in host memory as above. Scores from a backend
 * differ from the CPU's by the backend's precision (the GPU: bf16 weights, backend_cuda.h), but
 * reuse on one backend is bitwise identical to a from-scratch evaluation on that backend. */
int evaluator_create_on(evaluator **out, const model *m, const eval_backend *be, const eval_sample *samples,
                        int n_samples, int reuse, char *err, size_t errlen);
/* The backend an evaluator runs on (NULL = CPU). */
const eval_backend *evaluator_backend(const evaluator *ev);

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
 * layer of every sample (CPU) or handed to the backend, which reads it between layers; once it is
 * non-zero the evaluation in progress stops and returns EVAL_CANCELLED. A cancelled
 * evaluator_set_base leaves no base (the next evaluation starts from layer 0); results of later,
 * uncancelled evaluations are unchanged. */
void evaluator_set_cancel(evaluator *ev, const atomic_int *cancel);

#endif
