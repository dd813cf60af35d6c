/* gemm.h — the engine's matrix products Y = X·Wᵀ (+ Y) on the CPU, through oneDNN's matmul.
 *
 * oneDNN picks its kernel at run time from the CPU (AMX, AVX-512 with or without BF16, AVX2, SSE4.1;
 * Intel and AMD alike), so the engine's speed no longer depends on a BLAS build recognising the CPU.
 * A weight matrix is reordered once, when it is prepared, into the blocked layout oneDNN prefers
 * (the layout depends on K, N, the data type and the ISA, not on the number of rows M).
 *
 * Precisions (docs/design.md §4):
 *   GEMM_FP32 — fp32 inputs, fp32 accumulation: the reference.
 *   GEMM_BF16 — weights and the activation X rounded to bf16 (round to nearest even, as the GPU path
 *               does); products accumulated in fp32 and Y written in fp32. Everything outside the GEMM
 *               (norms, RoPE, softmax, the KV cache, the residual stream) stays fp32.
 * Threads: oneDNN runs each product on the OpenMP pool (omp_get_max_threads()).
 */
#ifndef BOSCH_GEMM_H
#define BOSCH_GEMM_H

#include <stddef.h>

typedef enum { GEMM_FP32 = 0, GEMM_BF16 = 1 } gemm_precision;

/* The precision a command asked for: fp32, bf16, or auto (bf16 where the CPU has bf16 hardware). */
typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1, PRECISION_AUTO = 2 } engine_precision;

/* Parse "fp32", "bf16" or "auto". Returns 0, or -1 for any other text (out untouched). */
int gemm_precision_parse(const char *s, engine_precision *out);
const char *gemm_precision_name(gemm_precision p); /* "fp32" or "bf16" */

/* 1 when this CPU runs bf16 products in hardware (AVX512_BF16 or AMX-BF16, as oneDNN detects it). */
int gemm_cpu_has_bf16(void);

/* Resolve a request against this CPU: AUTO -> BF16 when gemm_cpu_has_bf16(), else FP32; BF16 on a
 * CPU whose oneDNN has no bf16 matmul at all is an error naming the CPU's ISA. Returns 0 or -1 with
 * a message. */
int gemm_precision_resolve(engine_precision req, gemm_precision *out, char *err, size_t errlen);

/* "oneDNN 2.6.3, ISA avx512_core_bf16 (AVX-512 with BF16)" into buf: the library and the best ISA
 * its kernels use on this CPU (for `bosch info` and bench reports). */
void gemm_describe(char *buf, size_t cap);

typedef struct gemm_ctx gemm_ctx;         /* oneDNN engine and a cache of matmul primitives */
typedef struct gemm_weight gemm_weight;   /* one prepared weight matrix */
typedef struct gemm_scratch gemm_scratch; /* per-caller buffers: a stream, bf16 activations */

/* A context for one precision. Thread-safe: primitives are looked up under a mutex, and run with
 * the caller's scratch. Returns 0 or -1 with a message (oneDNN could not create a CPU engine). */
int gemm_ctx_create(gemm_ctx **out, gemm_precision p, char *err, size_t errlen);
void gemm_ctx_free(gemm_ctx *c);
gemm_precision gemm_ctx_precision(const gemm_ctx *c);

/* Prepare W = the row-major [n_out][n_in] fp32 matrix made of `n_parts` blocks stacked by rows:
 * part i is parts[i] with part_rows[i] rows (so Q|K|V or gate|up become one matrix without a copy
 * in fp32 first). The result is a reordered copy in the context's precision (fp32: 4 B, bf16: 2 B
 * per element, plus oneDNN's padding to its block sizes); the sources may be freed afterwards.
 * Returns 0, or -1 with a message (bad shape, out of memory, no oneDNN matmul for the shape). */
int gemm_weight_create(gemm_weight **out, gemm_ctx *c, const float *const *parts, const int *part_rows,
                       int n_parts, int n_in, char *err, size_t errlen);
void gemm_weight_free(gemm_weight *w);
int gemm_weight_rows(const gemm_weight *w);     /* n_out */
int gemm_weight_cols(const gemm_weight *w);     /* n_in */
size_t gemm_weight_bytes(const gemm_weight *w); /* bytes of the reordered copy */

/* Scratch for one thread of callers (a forward workspace owns one). NULL on OOM. */
gemm_scratch *gemm_scratch_create(gemm_ctx *c);
void gemm_scratch_free(gemm_scratch *s);

/* Y[T][n_out] (row stride ldy floats) = X[T][n_in] (row stride ldx floats) · Wᵀ, plus the old Y when
 * accumulate != 0. T >= 1; ldx >= n_in, ldy >= n_out. X and Y must not overlap. Returns 0, or -1
 * with a message (bad arguments, oneDNN failure; on failure Y is unspecified). */
int gemm_run(gemm_scratch *s, const gemm_weight *w, float *Y, int ldy, const float *X, int ldx, int T,
             int accumulate, char *err, size_t errlen);

/* fp32 -> bf16, round to nearest even (NaN kept quiet), n elements: the rounding of GEMM_BF16 inputs
 * (bit-identical to quant_fp32_to_bf16). */
void gemm_round_bf16(unsigned short *dst, const float *src, size_t n);

#endif
