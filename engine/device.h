/* device.h — the `--device cpu|cuda` choice of the headless commands and the GPU path they call
 * (engine/backend_cuda.h behind a build-independent interface: without CUDA in the build these
 * functions exist and report that CUDA is unavailable, so commands need no #ifdef).
 */
#ifndef BOSCH_DEVICE_H
#define BOSCH_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "mask.h"
#include "model.h"

typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 } bosch_device;

/* Number of usable CUDA GPUs: 0 when the build has no CUDA or the machine no GPU/driver. */
int device_cuda_count(void);

/* The default device: DEVICE_CUDA when device_cuda_count() > 0, else DEVICE_CPU. */
bosch_device device_default(void);

/* Parse a --device value: "cpu", "cuda" or "auto" (= device_default()). A request for "cuda"
 * when device_cuda_count() == 0 is an error that says why (no CUDA in this build, or no GPU).
 * Returns 0, or -1 with the message in err[errlen]. */
int device_parse(const char *s, bosch_device *out, char *err, size_t errlen);

const char *device_name(bosch_device d); /* "cpu" or "cuda" */

/* Write why --device cuda cannot run here (no CUDA in this build, or no GPU visible) into
 * err[errlen]; returns -1, for `return device_no_cuda(err, errlen);`. */
int device_no_cuda(char *err, size_t errlen);

/* ---- the GPU path (one model on GPU 0, a batch of n_seq sequences with one mask) ---- */

typedef struct device_gpu device_gpu;

/* Upload `m` (which must outlive the result) to GPU 0 and warm it up (one short prefill and
 * decode, so lazy module loading and cuBLAS set-up are not timed later). Errors: no CUDA / no GPU, out of GPU
 * memory, unsupported tensor type. */
int device_gpu_create(device_gpu **out, const model *m, char *err, size_t errlen);
void device_gpu_free(device_gpu *g);
/* "NVIDIA H200 (139.8 GiB), 270.4 MiB of bf16 weights" into buf. */
void device_gpu_describe(const device_gpu *g, char *buf, size_t cap);

/* Start a batch of n_seq >= 1 sequences sharing `mask` (NULL: all full): a fresh GPU KV cache of
 * n_ctx positions per sequence, n_seq * kv_cache_bytes(hp, mask, n_ctx, 4) bytes (the previous
 * cache is freed first). Allocation happens here, not in the timed calls below. Errors: bad
 * n_seq/n_ctx, out of GPU memory (the message names the bytes). */
int device_gpu_start(device_gpu *g, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen);
/* Prefill every sequence: tokens [n_seq][n_tokens] (sequence s at tokens + s*n_tokens) at
 * positions 0..n_tokens-1, in one batched forward, into the started cache (emptied first, so it
 * can be repeated); logits [n_seq][n_vocab] of each sequence's last position (may be NULL).
 * Returns when the GPU is done (the time of this call is the prefill time). */
int device_gpu_prefill(device_gpu *g, const int32_t *tokens, int n_tokens, float *logits, char *err,
                       size_t errlen);
/* Decode-only benchmarking: fill the started cache with pseudo-random keys and values as if
 * positions 0..n_past-1 of every sequence had been prefilled (cuda_kv_fill_random; decode speed
 * depends on the shapes, not on the values). Errors: n_past outside 0..n_ctx, a CUDA error. */
int device_gpu_fill_random(device_gpu *g, int n_past, uint64_t seed, char *err, size_t errlen);
/* Next token of every sequence at the next position: tokens [n_seq]; logits [n_seq][n_vocab]
 * (may be NULL). Synchronous. Errors: no cache yet, the cache is full, bad id. */
int device_gpu_decode(device_gpu *g, const int32_t *tokens, float *logits, char *err, size_t errlen);
/* Sequences of the started batch (0 before device_gpu_start). */
int device_gpu_n_seq(const device_gpu *g);
/* Positions stored per sequence in the current cache (0 before the first prefill or fill). */
int device_gpu_n_past(const device_gpu *g);
/* Bytes of the current GPU KV cache, all sequences (0 before device_gpu_start). */
uint64_t device_gpu_kv_bytes(const device_gpu *g);
/* Peak GPU memory in use so far, bytes (device-wide cudaMemGetInfo samples, so it includes the CUDA
 * context; 0 without CUDA). */
uint64_t device_gpu_peak_bytes(void);

#endif
