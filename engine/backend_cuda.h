/* backend_cuda.h — the GPU copy of a loaded model and its forward pass (CUDA, kernels/kernels.h);
 * internal to the CUDA backend (backend.h is the public interface) and its tests.
 *
 * Mirrors forward.h block for block: x += Wo·attn(RoPE(Wq·n), RoPE(Wk·n), Wv·n) with
 * n = RMSNorm(x) (qwen3: per-head RMSNorm on q and k before RoPE), then
 * x += Wdown·(silu(Wgate·n) * Wup·n) with n = RMSNorm(x); final RMSNorm and the LM head only for
 * the rows asked for. Precision: weights bf16 (dequantized on the GPU from the GGUF's own bytes),
 * activations, norms, attention and accumulation fp32, GEMM inputs rounded to bf16. So logits
 * differ from the fp32 CPU forward by bf16 rounding (about 3 significant digits).
 *
 * A batch is n_seq sequences of the same length n_tokens, stored one after the other: token
 * (s, t) is row s*n_tokens + t of every [rows][..] array. Each sequence has its own head mask
 * (docs/design.md §6: several masks scored in one batched forward).
 *
 * Everything here exists only when the build has CUDA (BOSCH_HAVE_CUDA); callers test
 * `#ifdef BOSCH_HAVE_CUDA` and kern_device_count() > 0 before using it. Not thread-safe: one
 * cuda_model per thread. Every function returns 0, or -1 with a message in err[errlen].
 */
#ifndef BOSCH_BACKEND_CUDA_H
#define BOSCH_BACKEND_CUDA_H

#ifdef BOSCH_HAVE_CUDA

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "mask.h"
#include "model.h"

typedef struct cuda_model cuda_model; /* weights on the GPU + activation scratch */
typedef struct cuda_kv cuda_kv;       /* a hybrid KV cache on the GPU for n_seq sequences */

/* Upload `m` to GPU `device`: every matrix as the GGUF's raw (quantized) bytes, dequantized on
 * the GPU to bf16 (kern_dequant_bf16); norms as fp32 from m's dequantized copy. `m` must stay
 * loaded while *out lives (hyper-parameters and the tied-embedding choice are read from it).
 * Prefill attention runs on tensor cores: kern_attn_prefill_mma when head_dim <= 128, else
 * kern_attn_prefill_tc (both bf16 Q/K/V/P, fp32 softmax and accumulation); attn_impl = mma, wmma or
 * fp32 (kern_attn_prefill, all fp32) chooses one, for comparisons (NULL or "": the default; the app
 * passes the environment variable BOSCH_CUDA_ATTN, backend.h backend_options.cuda_attn).
 * Errors: no such device, an unsupported tensor type, out of GPU memory (message names the
 * tensor), any other attn_impl (or mma with head_dim > 128). */
int cuda_model_create(cuda_model **out, const model *m, int device, const char *attn_impl, char *err,
                      size_t errlen);
void cuda_model_free(cuda_model *g);

/* GPU bytes held by the weights (bf16 matrices + fp32 norms). */
uint64_t cuda_model_weight_bytes(const cuda_model *g);

/* Prefill of n_seq sequences of n_tokens tokens each (positions 0..n_tokens-1), with layer-level
 * entry for the evaluator's prefix reuse (eval.h):
 *   tokens     [n_seq][n_tokens] ids, read when layer0 == 0 (ids must be < n_vocab);
 *   x_in       [n_seq*n_tokens][n_embd] residual stream entering layer layer0, read when layer0 > 0;
 *   masks      n_seq masks (masks[s] for sequence s; all shaped like the model), or NULL: all full;
 *   x_save     NULL, or n_layer host pointers: when x_save[l] != NULL (l > layer0) it receives the
 *              residual stream entering layer l, [n_seq*n_tokens][n_embd];
 *   x_out      NULL or [n_seq*n_tokens][n_embd]: the residual leaving the last block (before the
 *              final RMSNorm), like forward_ws_residual;
 *   kv         NULL, or an empty cache (n_past 0) made for n_seq sequences and all of masks[s]
 *              equal to its mask, with layer0 == 0: keys/values are stored and kv's n_past
 *              becomes n_tokens;
 *   rows       n_rows row indexes in 0..n_seq*n_tokens-1 whose logits are wanted,
 *   logits     [n_rows][n_vocab] host (may be NULL when n_rows == 0).
 * Errors: bad shapes or ids, mask shape differs from the model, kv not empty or its mask differs,
 * out of GPU memory, a CUDA error. */
int cuda_forward_layers(cuda_model *g, const attn_mask *const *masks, int n_seq, int n_tokens,
                        const int32_t *tokens, const float *x_in, int layer0, float *const *x_save,
                        float *x_out, cuda_kv *kv, const int *rows, int n_rows, float *logits, char *err,
                        size_t errlen);

/* Returned by cuda_forward_layers_cancel when *cancel was set: not an error. */
#define CUDA_CANCELLED (-2)
/* cuda_forward_layers with a cooperative cancel: *cancel (NULL = never) is read before each layer;
 * once it is non-zero the work already queued is waited for and CUDA_CANCELLED is returned
 * (x_save, x_out, logits and kv then hold nothing usable; kv's n_past is not advanced). */
int cuda_forward_layers_cancel(cuda_model *g, const attn_mask *const *masks, int n_seq, int n_tokens,
                               const int32_t *tokens, const float *x_in, int layer0, float *const *x_save,
                               float *x_out, cuda_kv *kv, const int *rows, int n_rows, float *logits,
                               const atomic_int *cancel, char *err, size_t errlen);

/* Whole prefill from the tokens: cuda_forward_layers with layer0 = 0 and nothing saved. */
int cuda_forward_prefill(cuda_model *g, const attn_mask *const *masks, int n_seq, const int32_t *tokens,
                         int n_tokens, cuda_kv *kv, const int *rows, int n_rows, float *logits, char *err,
                         size_t errlen);

/* A GPU hybrid KV cache for `mask` (one mask for all n_seq sequences), n_ctx positions each:
 * fp32, per (layer, kv_head) a [n_seq][cap][head_dim] block with cap = n_ctx (full head) or
 * min(n_ctx, sinks + window) (SWA head: sinks, then a ring of `window` slots, as kv_cache.h), so
 * its size is n_seq * kv_cache_bytes(hp, mask, n_ctx, 4). Errors: shape mismatch, n_ctx < 1,
 * n_seq < 1, out of GPU memory. */
int cuda_kv_create(cuda_kv **out, const cuda_model *g, const attn_mask *mask, int n_seq, int n_ctx, char *err,
                   size_t errlen);
void cuda_kv_free(cuda_kv *kv);
int cuda_kv_n_past(const cuda_kv *kv);     /* positions stored so far (the same for every sequence) */
uint64_t cuda_kv_bytes(const cuda_kv *kv); /* GPU bytes of keys and values */
void cuda_kv_clear(cuda_kv *kv);           /* n_past = 0 (contents are overwritten as it refills) */

/* Decode-only benchmarking: give every slot of every (layer, kv_head, sequence) block of kv
 * pseudo-random keys and values, uniform in [-1, 1) (rows of a 16 MiB pool made on the host from
 * `seed`, copied on the GPU in a seed-dependent order; kern_gather_rows), then set n_past. Decode
 * then runs as if positions 0..n_past-1 had been prefilled: its speed depends on the shapes, not on
 * the values. Slots past n_past are filled too (they are never read before being written).
 * Errors: n_past outside 0..n_ctx, out of GPU memory, a CUDA error. */
int cuda_kv_fill_random(cuda_kv *kv, int n_past, uint64_t seed, char *err, size_t errlen);

/* One decode step for all n_seq sequences of kv at position n_past: tokens [n_seq] (the next
 * token of each sequence), logits [n_seq][n_vocab] host (may be NULL); n_past advances by one.
 * Errors: bad id, the cache is full (n_past == n_ctx), a CUDA error. */
int cuda_decode(cuda_model *g, cuda_kv *kv, const int32_t *tokens, float *logits, char *err, size_t errlen);

/* Wait for the GPU and return the peak device memory in use so far (bytes, kern_mem_used). */
uint64_t cuda_peak_bytes(void);

/* The CUDA backend (backend.h) over `m` (which must outlive it) on GPU o->gpu, with o->cuda_attn as
 * attn_impl above, warmed up (one short prefill and decode) when o->warm_up: what backend_create
 * makes for BACKEND_CUDA (backend_cuda_ops.c). Errors: those of cuda_model_create, out of host
 * memory. */
int backend_cuda_create(backend **out, const backend_options *o, const model *m, char *err, size_t errlen);

#endif /* BOSCH_HAVE_CUDA */
#endif
