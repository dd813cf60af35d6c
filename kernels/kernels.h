/* kernels.h — the only way the engine reaches the GPU: CUDA kernels and cuBLAS behind plain C.
 *
 * Conventions: every pointer named d_* is device memory owned by the caller; matrices are
 * row-major; activations are fp32, weights bf16 (uint16_t bit patterns); every launch goes on
 * `stream` (a cudaStream_t passed as void*, NULL = default stream) and is asynchronous.
 * Functions return 0, or -1 with a message in err[errlen] naming the call and the CUDA error.
 * Built only when BOSCH_HAVE_CUDA is defined (nvcc found at configure time); without it the
 * engine runs on the CPU alone and these symbols do not exist.
 */
#ifndef BOSCH_KERNELS_H
#define BOSCH_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices and memory (device.cu) ---- */

/* Number of usable CUDA devices; 0 when there is no driver or no GPU (never an error). */
int kern_device_count(void);
/* Name and total memory (bytes) of device `dev`. */
int kern_device_info(int dev, char *name, size_t name_cap, uint64_t *total_bytes, char *err, size_t errlen);
/* Make `dev` the current device of the calling thread (cudaSetDevice). */
int kern_set_device(int dev, char *err, size_t errlen);
int kern_malloc(void **d_ptr, size_t bytes, char *err, size_t errlen);
void kern_free(void *d_ptr);
int kern_upload(void *d_dst, const void *h_src, size_t bytes, char *err, size_t errlen);
int kern_download(void *h_dst, const void *d_src, size_t bytes, char *err, size_t errlen);
/* Wait for all work on `stream`; reports any asynchronous kernel error. */
int kern_sync(void *stream, char *err, size_t errlen);
/* Peak device memory in use since the last reset (bytes), from cudaMemGetInfo sampling. */
uint64_t kern_mem_used(void);

/* ---- dequantization (dequant.cu) ---- */

/* Dequantize n_elems elements of ggml type `type` (F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K;
 * block layouts as in engine/quant.h) from packed blocks d_src to bf16 d_dst[n_elems]
 * (round to nearest even). n_elems must be a multiple of the block size. */
int kern_dequant_bf16(uint32_t type, const void *d_src, uint16_t *d_dst, uint64_t n_elems, void *stream,
                      char *err, size_t errlen);
/* fp32 -> bf16, n elements (round to nearest even). */
int kern_f32_to_bf16(const float *d_src, uint16_t *d_dst, uint64_t n, void *stream, char *err, size_t errlen);

/* ---- element-wise and normalization (ops.cu) ---- */

/* x[n_tokens][n_embd] = bf16 table rows tokens[i] (d_tokens: int32 device array). */
int kern_embed(const uint16_t *d_table, const int32_t *d_tokens, float *d_x, int n_tokens, int n_embd,
               void *stream, char *err, size_t errlen);
/* RMSNorm per row (Zhang & Sennrich 2019): y = x / sqrt(mean(x^2) + eps) * w; x,y [n_rows][n]. */
int kern_rmsnorm(const float *d_x, const float *d_w, float *d_y, int n_rows, int n, float eps, void *stream,
                 char *err, size_t errlen);
/* RoPE (Su et al. 2021) in place on x [n_tokens][n_heads*head_dim], token i at position pos0+i.
 * neox = 0 rotates adjacent pairs (2k, 2k+1); neox = 1 rotates (k, k+rope_dim/2).
 * theta_k = pos * base^(-2k/rope_dim), angles computed in double. */
int kern_rope(float *d_x, int n_tokens, int n_heads, int head_dim, int rope_dim, int pos0, float base,
              int neox, void *stream, char *err, size_t errlen);
/* out[i] = silu(gate[i]) * up[i], n elements. */
int kern_swiglu(const float *d_gate, const float *d_up, float *d_out, uint64_t n, void *stream, char *err,
                size_t errlen);
/* x[i] += y[i], n elements. */
int kern_add(float *d_x, const float *d_y, uint64_t n, void *stream, char *err, size_t errlen);
/* dst[i][:] = src[rows[i]][:] for i < n_rows; src [..][n], dst [n_rows][n] fp32, d_rows int32
 * device array (each row must index src; not checked on the device). */
int kern_gather_rows(const float *d_src, const int32_t *d_rows, float *d_dst, int n_rows, int n, void *stream,
                     char *err, size_t errlen);

/* ---- GEMM (gemm.cu, cuBLAS) ---- */

typedef struct kern_blas kern_blas; /* a cuBLAS handle */
int kern_blas_create(kern_blas **out, char *err, size_t errlen);
void kern_blas_free(kern_blas *b);
/* Y[n_rows][n_out] = X[n_rows][n_in] · W[n_out][n_in]^T, X and W bf16, Y fp32, fp32 accumulate. */
int kern_gemm_bf16(kern_blas *b, const uint16_t *d_x, const uint16_t *d_w, float *d_y, int n_rows, int n_in,
                   int n_out, void *stream, char *err, size_t errlen);

/* ---- hybrid attention (attention_prefill.cu, attention_decode.cu) ---- */

/* Prefill, flash-style (online softmax, no T x T buffer): q [n_tokens][n_head*head_dim],
 * k, v [n_tokens][n_head_kv*head_dim] (RoPE applied, positions 0..n_tokens-1),
 * out [n_tokens][n_head*head_dim]; d_z_row [n_head_kv] (1 full, 0 SWA, device memory).
 * SWA: query i sees keys i-window < j <= i and j < sinks; full: j <= i. head_dim <= 256. */
int kern_attn_prefill(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                      int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row, int window, int sinks,
                      void *stream, char *err, size_t errlen);
/* The same result from a plainer kernel (one warp per query row, one reduction per key): slower,
 * kept as a cross-check of kern_attn_prefill and a fallback if that one ever misbehaves. */
int kern_attn_prefill_simple(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                             int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row, int window,
                             int sinks, void *stream, char *err, size_t errlen);

/* The same attention on tensor cores, two versions; both round Q·scale, K, V and the softmax
 * weights P to bf16 (round to nearest even) and keep scores, softmax and accumulation fp32 (the
 * precision of PyTorch's bf16 SDPA). sm_80 or newer.
 *   kern_attn_prefill_mma: mma.sync with the softmax and the output rows in registers
 *     (FlashAttention-2's layout, attention_prefill_mma.cu); head_dim 32, 64, 96 or 128;
 *   kern_attn_prefill_tc: WMMA, scores and output rows in shared memory (attention_prefill_tc.cu);
 *     head_dim 32..256 in steps of 32; where its shared memory exceeds the GPU's per-block limit
 *     (head_dim 224 and 256 on an A100) it runs kern_attn_prefill (fp32) instead.
 * The GPU forward picks mma when head_dim allows, else tc; BOSCH_CUDA_ATTN overrides
 * (backend_cuda.h). */
int kern_attn_prefill_mma(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                          int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row, int window,
                          int sinks, void *stream, char *err, size_t errlen);
int kern_attn_prefill_tc(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                         int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row, int window,
                         int sinks, void *stream, char *err, size_t errlen);

/* Decode over a hybrid KV cache, one new position `pos` for each of n_seq sequences.
 * q [n_seq][n_head*head_dim]; d_k_heads/d_v_heads: device arrays of n_head_kv device pointers, head h
 * pointing at [n_seq][cap[h]][head_dim]; d_cap [n_head_kv] slots (n_ctx for full heads, sinks+window
 * for SWA heads, ring-indexed: position p < sinks at slot p, else sinks + (p - sinks) % window);
 * out [n_seq][n_head*head_dim]. */
int kern_attn_decode(const float *d_q, const float *const *d_k_heads, const float *const *d_v_heads,
                     const int *d_cap, const uint8_t *d_z_row, float *d_out, int n_seq, int pos, int n_head,
                     int n_head_kv, int head_dim, int window, int sinks, void *stream, char *err,
                     size_t errlen);

/* The same decode, faster (attention_decode_split.cu): one block per (KV head, sequence, chunk of
 * `chunk` visible positions; 0 = 512, else a multiple of 32) reads each key and value once for
 * the whole GQA group (group <= 8), and a second kernel merges the chunks (flash-decoding), so one
 * long sequence spreads over many blocks. d_scratch: device memory of scratch_floats floats, at
 * least kern_attn_decode_scratch_floats(n_seq, n_head, head_dim, pos, chunk) when pos + 1 exceeds
 * chunk (else unused, may be NULL). Keys are read 16 bytes at a time: every head's cache block
 * must be 16-byte aligned (cudaMalloc'd blocks cut at multiples of head_dim floats are). Errors: a
 * larger GQA group, a chunk not a multiple of 32, too little scratch. */
int kern_attn_decode_split(const float *d_q, const float *const *d_k_heads, const float *const *d_v_heads,
                           const int *d_cap, const uint8_t *d_z_row, float *d_out, int n_seq, int pos,
                           int n_head, int n_head_kv, int head_dim, int window, int sinks, int chunk,
                           float *d_scratch, size_t scratch_floats, void *stream, char *err, size_t errlen);
/* Scratch floats kern_attn_decode_split needs for positions up to max_pos. */
size_t kern_attn_decode_scratch_floats(int n_seq, int n_head, int head_dim, int max_pos, int chunk);

/* Store keys/values of position `pos` for n_seq sequences into the hybrid cache (slot as above):
 * k_new, v_new [n_seq][n_head_kv*head_dim]. */
int kern_kv_store(const float *d_k_new, const float *d_v_new, float *const *d_k_heads,
                  float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row, int n_seq, int pos,
                  int n_head_kv, int head_dim, int window, int sinks, void *stream, char *err, size_t errlen);

/* Store a prefilled block into the hybrid cache: positions pos0..pos0+n_tokens-1 of n_seq
 * sequences, k, v [n_seq][n_tokens][n_head_kv*head_dim] (RoPE applied). Slots as for
 * kern_attn_decode; an SWA head keeps only its sinks and the last `window` positions of the block
 * (the ones a later decode step can still see), so no two writes hit the same slot. The cache of
 * each sequence is [cap[h]] slots per KV head as above; pos0 + n_tokens must not exceed the
 * capacity of a full head. */
int kern_kv_store_block(const float *d_k, const float *d_v, float *const *d_k_heads, float *const *d_v_heads,
                        const int *d_cap, const uint8_t *d_z_row, int n_seq, int pos0, int n_tokens,
                        int n_head_kv, int head_dim, int window, int sinks, void *stream, char *err,
                        size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
