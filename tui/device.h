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

/* ---- the GPU path (one model on GPU 0) ---- */

typedef struct device_gpu device_gpu;

/* Upload `m` (which must outlive the result) to GPU 0 and warm it up (one short prefill and
 * decode, so lazy module loading and cuBLAS set-up are not timed later). Errors: no CUDA / no GPU, out of GPU
 * memory, unsupported tensor type. */
int device_gpu_create(device_gpu **out, const model *m, char *err, size_t errlen);
void device_gpu_free(device_gpu *g);
/* "NVIDIA H200 (139.8 GiB), 270.4 MiB of bf16 weights" into buf. */
void device_gpu_describe(const device_gpu *g, char *buf, size_t cap);

/* Start one sequence: a fresh GPU KV cache of n_ctx positions for `mask` (NULL: all full).
 * Allocation happens here, not in the timed calls below. Returns 0 or -1 with a message. */
int device_gpu_start(device_gpu *g, const attn_mask *mask, int n_ctx, char *err, size_t errlen);
/* Prefill tokens[n_tokens] at positions 0..n_tokens-1 into the started cache (emptied first, so
 * it can be repeated), logits of the last position [n_vocab] (may be NULL). Returns when the GPU
 * is done (the time of this call is the prefill time). */
int device_gpu_prefill(device_gpu *g, const int32_t *tokens, int n_tokens, float *logits, char *err,
                       size_t errlen);
/* Next token of that sequence at the next position; logits [n_vocab] (may be NULL). Synchronous. */
int device_gpu_decode(device_gpu *g, int32_t token, float *logits, char *err, size_t errlen);
/* Bytes of the current GPU KV cache (0 before the first prefill). */
uint64_t device_gpu_kv_bytes(const device_gpu *g);
/* Peak GPU memory in use so far, bytes (includes the CUDA context). */
uint64_t device_gpu_peak_bytes(void);

#endif
