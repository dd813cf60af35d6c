/* backend.h — where a forward runs: the CPU (forward.h) or a CUDA GPU (backend_cuda.h), behind one
 * table of functions (backend_ops), like ggml's backends or nvtop's gpu_vendor table.
 *
 * A backend is made once per model and thread from backend_options (backend_create: the
 * `--device cpu|cuda|auto` choice, the GPU index, the CUDA attention kernel) and freed after every
 * evaluator made on it. It serves two kinds of work:
 *   - the evaluator (eval.h): run() computes one sample from a given layer to the logits; every
 *     evaluator on a backend shares its weights (on the GPU: one upload, bf16);
 *   - batched generation (bench, generate): start() a KV cache for n_seq sequences sharing one
 *     mask, prefill() them, decode() one position at a time.
 * A backend and everything made on it are used by one thread at a time; a second thread needs its
 * own backend. Without CUDA in the build everything here exists, and asking for CUDA reports
 * "no CUDA backend" (backend_no_cuda), so callers need no #ifdef.
 * Every int function returns 0, or -1 with a message in err[errlen] (BACKEND_CANCELLED where said).
 */
#ifndef BOSCH_BACKEND_H
#define BOSCH_BACKEND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mask.h"
#include "model.h"

typedef enum { BACKEND_CPU = 0, BACKEND_CUDA = 1, BACKEND_AUTO = 2 } backend_device;

/* Returned by run() when its cancel flag was set (eval.h EVAL_CANCELLED): not an error. */
#define BACKEND_CANCELLED (-2)

/* What backend_create makes. */
typedef struct {
    backend_device device; /* BACKEND_AUTO: cuda when backend_cuda_count() > 0, else cpu */
    int gpu;               /* CUDA device index (0: the first GPU); ignored on the CPU */
    /* CUDA prefill attention kernel: "mma" (head_dim <= 128), "wmma" or "fp32"; NULL or "" the
     * default (mma when head_dim <= 128, else wmma). The app passes $BOSCH_CUDA_ATTN (docs/gpu.md). */
    const char *cuda_attn;
    int warm_up; /* 1: one short prefill and decode at creation, so nothing lazy is timed later */
} backend_options;

/* The table a backend implements. ctx is the backend's state (backend.ctx). Entries a backend
 * does not offer are NULL; the backend_* wrappers below then report it. */
typedef struct {
    const char *name; /* "cpu", "cuda", ... (for messages) */
    /* Per-evaluator scratch for samples of up to max_tokens tokens: *ws is what run() gets.
     * NULL: run() gets ctx itself. */
    int (*eval_open)(void *ctx, int max_tokens, void **ws, char *err, size_t errlen);
    void (*eval_close)(void *ctx, void *ws);
    /* ONE sample of n_tokens tokens at positions 0..n_tokens-1 under `mask` (shaped like the model;
     * window and sinks from it) from layer `first` (0 <= first < n_layer) to the end, then the
     * final RMSNorm and the LM head:
     *   tokens  [n_tokens] ids (checked by the evaluator), read when first == 0 (embedding first);
     *   x_in    [n_tokens][n_embd] fp32, the residual stream entering layer `first`, read when first > 0;
     *   x_save  n_layer host pointers: when x_save[l] != NULL (first < l < n_layer) it receives the
     *           residual stream entering layer l, [n_tokens][n_embd] fp32 (x_save[l] is NULL for
     *           l <= first; the array itself is never NULL);
     *   rows    [n_rows] token indexes in 0..n_tokens-1 (the positions before each answer token);
     *   logits  [n_rows][n_vocab] fp32 out, row i the logits at rows[i].
     * Contract (what makes prefix reuse bitwise identical, eval.h): run() is deterministic, and
     * starting at layer f from a stream it saved as x_save[f] gives bit for bit the same streams,
     * logits and saves as the run that saved it (layer l's arithmetic depends only on the stream
     * entering l, the mask's row l, window, sinks and n_tokens). cancel (may be NULL) is read
     * between layers: once it is non-zero run() returns BACKEND_CANCELLED (x_save and logits then
     * hold nothing usable). Returns 0, BACKEND_CANCELLED or -1. */
    int (*run)(void *ws, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
               int first, float *const *x_save, const int *rows, int n_rows, float *logits,
               const atomic_int *cancel, char *err, size_t errlen);
    /* Batched generation: see backend_start .. backend_kv_bytes; the backend_* wrappers check
     * n_seq, n_ctx, n_tokens >= 1 and that a batch is started (n_seq() > 0), and give start() a
     * mask (all full for NULL). */
    int (*start)(void *ctx, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen);
    int (*prefill)(void *ctx, const int32_t *tokens, int n_tokens, float *logits, char *err, size_t errlen);
    int (*fill_random)(void *ctx, int n_past, uint64_t seed, char *err, size_t errlen);
    int (*decode)(void *ctx, const int32_t *tokens, float *logits, char *err, size_t errlen);
    int (*n_seq)(const void *ctx);
    int (*n_past)(const void *ctx);
    uint64_t (*kv_bytes)(const void *ctx);
    uint64_t (*peak_bytes)(const void *ctx);
    /* The hardware in one line ("NVIDIA H200 (139.8 GiB), 270.4 MiB of bf16 weights"); NULL: none. */
    void (*describe)(const void *ctx, char *buf, size_t cap);
    void (*free)(void *ctx);
} backend_ops;

/* A backend: its table, its state, its device. Tests may build one around a table of their own. */
typedef struct {
    const backend_ops *ops;
    void *ctx;
    backend_device device; /* BACKEND_CPU or BACKEND_CUDA */
    const model *m;        /* the model it runs (may be NULL in a table of a test's own) */
} backend;

/* ---- the device choice ---- */

/* Number of usable CUDA GPUs: 0 when the build has no CUDA or the machine no GPU/driver. */
int backend_cuda_count(void);
/* The default device: BACKEND_CUDA when backend_cuda_count() > 0, else BACKEND_CPU. */
backend_device backend_default_device(void);
/* Parse a --device value: "cpu", "cuda" or "auto" (= backend_default_device()). A request for
 * "cuda" when backend_cuda_count() == 0 is an error that says why (no CUDA in this build, or no
 * GPU). */
int backend_parse_device(const char *s, backend_device *out, char *err, size_t errlen);
const char *backend_device_name(backend_device d); /* "cpu" or "cuda" */
/* Write why --device cuda cannot run here (no CUDA in this build, or no GPU visible) into
 * err[errlen]; returns -1, for `return backend_no_cuda(err, errlen);`. */
int backend_no_cuda(char *err, size_t errlen);

/* ---- making one ---- */

/* The backend `o` asks for, over `m` (which must outlive it). The CPU: nothing is allocated for
 * the weights. CUDA: `m` is uploaded to GPU o->gpu (bf16 weights; backend_cuda.h), then warmed up
 * when o->warm_up. Errors: no CUDA in this build / no GPU visible, no such GPU, out of GPU memory,
 * an unsupported tensor type, an unknown o->cuda_attn (or mma with head_dim > 128). */
int backend_create(backend **out, const backend_options *o, const model *m, char *err, size_t errlen);
/* The CPU backend over `m` (forward.h, fp32 activations, GEMMs as m->precision): what
 * backend_create makes for BACKEND_CPU. Errors: out of memory. */
int backend_cpu_create(backend **out, const model *m, char *err, size_t errlen);
/* Frees b (NULL is fine), after every evaluator made on it. */
void backend_free(backend *b);

/* One line for logs: "cpu", or with_name "cuda: NVIDIA H200 (139.8 GiB), 270.4 MiB of bf16
 * weights" and without it the part after "cuda: ". */
void backend_describe(const backend *b, int with_name, char *buf, size_t cap);

/* ---- batched generation (n_seq sequences sharing one mask) ---- */

/* Start a batch of n_seq >= 1 sequences sharing `mask` (NULL: all full): a fresh KV cache of
 * n_ctx positions per sequence, n_seq * kv_cache_bytes(hp, mask, n_ctx, e) bytes, e the element
 * size: the model's kv_type on the CPU (2 for bf16), 4 on CUDA (fp32) (the previous cache is freed first). Allocation happens here, not in the timed calls below. Errors: bad
 * n_seq/n_ctx, out of memory (the message names the bytes), the backend has no batched path. */
int backend_start(backend *b, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen);
/* Prefill every sequence: tokens [n_seq][n_tokens] (sequence s at tokens + s*n_tokens) at
 * positions 0..n_tokens-1, in one batched forward, into the started cache (emptied first, so it
 * can be repeated); logits [n_seq][n_vocab] of each sequence's last position (may be NULL).
 * Returns when the device is done (the time of this call is the prefill time). */
int backend_prefill(backend *b, const int32_t *tokens, int n_tokens, float *logits, char *err, size_t errlen);
/* Decode-only benchmarking: fill the started cache with pseudo-random keys and values as if
 * positions 0..n_past-1 of every sequence had been prefilled (decode speed depends on the shapes,
 * not on the values). Errors: n_past outside 0..n_ctx, a device error. */
int backend_fill_random(backend *b, int n_past, uint64_t seed, char *err, size_t errlen);
/* Next token of every sequence at the next position: tokens [n_seq]; logits [n_seq][n_vocab]
 * (may be NULL). Synchronous. Errors: no cache yet, the cache is full, bad id. */
int backend_decode(backend *b, const int32_t *tokens, float *logits, char *err, size_t errlen);
int backend_n_seq(const backend *b);         /* sequences of the started batch (0 before backend_start) */
int backend_n_past(const backend *b);        /* positions stored per sequence (0 before a prefill or fill) */
uint64_t backend_kv_bytes(const backend *b); /* bytes of the current KV cache (0 before backend_start) */
/* Peak device memory in use so far, bytes (CUDA: device-wide cudaMemGetInfo samples, so it includes
 * the CUDA context; 0 on the CPU). */
uint64_t backend_peak_bytes(const backend *b);

#endif
