/* forward.h — the hybrid-attention forward pass on the CPU.
 * Per block: x += Wo·attn(RoPE(Wq·n), RoPE(Wk·n), Wv·n) with n = RMSNorm(x) (qwen3: per-head
 * RMSNorm on q and k before RoPE); x += Wdown·(silu(Wgate·n) * Wup·n) with n = RMSNorm(x).
 * Blocks of tokens (prefill, the evaluator, the LM head of prefill) run their GEMMs through gemm.h
 * in the model's precision (fp32, or bf16 GEMM inputs); activations, norms, softmax, RoPE and the
 * KV cache are fp32 in both. forward_decode reads the file's quantized blocks (qdot.h) when the
 * model allows it (model->decode_blocks).
 * Layer-level entry points let the evaluator restart from any layer (prefix reuse).
 */
#ifndef BOSCH_FORWARD_H
#define BOSCH_FORWARD_H

#include <stdatomic.h>
#include <stdint.h>

#include "kv_cache.h"
#include "mask.h"
#include "model.h"

typedef struct forward_ws forward_ws; /* scratch buffers for up to max_tokens tokens */

/* Threads: all CPU parallelism of the forward pass, oneDNN's included, is one OpenMP pool
 * (OMP_NUM_THREADS). */

/* Scratch for blocks of up to max_tokens tokens (free it before the model it was used with: it
 * keeps the model's GEMM scratch) (about max_tokens * (4*n_embd + 3*(n_head +
 * 2*n_head_kv)*head_dim) floats plus a 512-token FFN chunk). NULL on OOM or bad arguments. */
forward_ws *forward_ws_create(const model_hparams *hp, int max_tokens);
void forward_ws_free(forward_ws *ws);
int forward_ws_max_tokens(const forward_ws *ws);
/* The workspace's residual stream [max_tokens][n_embd]: after forward_prefill it holds the hidden
 * states leaving the last block (before the final RMSNorm). */
float *forward_ws_residual(forward_ws *ws);
/* Why the last failing call on ws failed ("" when none did). */
const char *forward_ws_error(const forward_ws *ws);

/* Returned by forward_prefill / forward_decode when the cancel flag was set: not an error. */
#define FORWARD_CANCELLED (-2)
/* Cooperative cancel: forward_prefill (and forward_decode when it runs as a one-token prefill)
 * reads *cancel (borrowed; NULL = never cancel) before each layer and returns FORWARD_CANCELLED as
 * soon as it is non-zero (forward_ws_error then says "cancelled"; kv->n_past is left as it was).
 * A block decode step (one token) does not look: callers check between tokens. */
void forward_ws_set_cancel(forward_ws *ws, const atomic_int *cancel);

/* x [n_tokens][n_embd] = embedding rows of tokens (ids must be < n_vocab; -1 otherwise). */
int forward_embed(const model *m, const int32_t *tokens, int n_tokens, float *x);

/* One transformer block, in place on x [n_tokens][n_embd] (x must not be ws's own scratch other
 * than forward_ws_residual), tokens at positions pos0..pos0+n_tokens-1. mask NULL = all heads full.
 * With kv == NULL: self-contained prefill (pos0 must be 0). With kv: the block's keys/values are
 * stored in kv; pos0 == 0 attends within the block (prefill into an empty cache), pos0 > 0 stores
 * and attends one position at a time through the cache (decode, or a later prefill chunk).
 * Does not change kv->n_past. Returns 0, or -1 when n_tokens > ws capacity, pos0 != 0 without kv,
 * or pos0 + n_tokens > kv->n_ctx. */
int forward_layer(const model *m, int layer, const attn_mask *mask, float *x, int n_tokens, int pos0,
                  kv_cache *kv, forward_ws *ws);

/* q [n_tokens][n_head*head_dim] and k [n_tokens][n_head_kv*head_dim] of `layer` for the residual
 * stream x [n_tokens][n_embd] entering it, at positions 0..n_tokens-1: exactly the q and k that
 * forward_layer computes (RMSNorm, the Q|K|V GEMM, qwen3 q/k norms, RoPE). For attention
 * statistics. Returns 0, or -1 (bad layer, n_tokens above ws capacity; forward_ws_error). */
int forward_layer_qk(const model *m, int layer, const float *x, int n_tokens, float *q, float *k,
                     forward_ws *ws);

/* Final RMSNorm + LM head for selected rows of x [..][n_embd] (rows[i] indexes x):
 * logits [n_rows][n_vocab]. Only these rows reach the LM head. Returns 0, or -1 when a GEMM fails
 * (forward_ws_error). */
int forward_logits(const model *m, const float *x, const int *rows, int n_rows, float *logits,
                   forward_ws *ws);

/* Whole prefill: embed, all blocks, logits for `rows` (token indexes in 0..n_tokens-1; may be
 * NULL / 0). kv may be NULL; with kv the tokens go at positions kv->n_past.. and kv->n_past
 * advances by n_tokens. Returns 0, or -1 (bad token id, bad row, mask shape differs from the
 * model, n_tokens > ws capacity or past kv->n_ctx). */
int forward_prefill(const model *m, const attn_mask *mask, const int32_t *tokens, int n_tokens, kv_cache *kv,
                    const int *rows, int n_rows, float *logits, forward_ws *ws);

/* One decode step at position kv->n_past; logits [n_vocab] (may be NULL); advances kv->n_past.
 * With m->decode_blocks the matrix-vector products read the file's blocks with 8-bit activations
 * (qdot.h: logits differ from the GEMM path by the activation rounding, about 1e-2 relative);
 * otherwise it is forward_prefill of one token. Returns 0 or -1 as forward_prefill. */
int forward_decode(const model *m, const attn_mask *mask, int32_t token, kv_cache *kv, float *logits,
                   forward_ws *ws);

/* Attention probabilities of the forward with every head full, for attention statistics
 * (forward_attn.c). Runs tokens [n_tokens] (no cache, positions 0..n_tokens-1) through every
 * layer; in each layer, for each query head h in order and each query position
 * i = pos_lo..pos_hi-1 ascending (clamped to 0..n_tokens-1), visit(user, layer, h, i, p) gets
 * p[0..i], the softmax over keys j <= i of q_i·k_j / sqrt(head_dim) in fp32, with q and k exactly
 * as forward_layer computes them (forward_layer_qk); p is valid during the call only. Then the
 * residual stream goes through the layer (forward_layer, all heads full). Returns 0, or -1 with
 * "token id out of range", "out of memory (N tokens)", "layer L: <forward_ws_error>" or
 * "forward_layer failed at layer L" in err[errlen]. */
typedef void (*forward_attn_visit)(void *user, int layer, int head, int pos, const float *p);
int forward_attn_probs(const model *m, const int32_t *tokens, int n_tokens, int pos_lo, int pos_hi,
                       forward_attn_visit visit, void *user, char *err, size_t errlen);
/* forward_attn_probs with the residual stream going through each layer as `mask` says (NULL: every
 * head full): the probabilities of layer l are those of the heads' q and k given layers 0..l-1
 * under the mask (each visited head's p is still the unrestricted softmax over keys j <= i; a
 * caller restricts it to an SWA head's visibility itself). Extra error: "mask is L x H, the
 * model L' x H'". For the explorer's attention view (tui/worker_attn.c). */
int forward_attn_probs_mask(const model *m, const attn_mask *mask, const int32_t *tokens, int n_tokens,
                            int pos_lo, int pos_hi, forward_attn_visit visit, void *user, char *err,
                            size_t errlen);

#endif
