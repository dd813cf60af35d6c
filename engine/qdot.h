/* qdot.h — dot products of a GGUF-quantized weight row with an 8-bit-quantized activation vector,
 * for decode (one token: every weight is read once, in the file's blocks, never as fp32).
 *
 * Activations (x, fp32) are quantized once per matrix-vector product into blocks of 32 values:
 *   qdot_act_block: q[32] int8 = round(x / d), d = max|x| / 127 (d = 0 for an all-zero block),
 *                   s = d * sum(q), and the integer sums of each half — the symmetric 8-bit scheme of ggml's
 * block_q8_0/q8_1 (llama.cpp ggml-quants.c quantize_row_q8_1), with fp32 d and s instead of fp16.
 *   Super-blocks of 256 (Q4_K, Q6_K weights) reuse the same 32-blocks: d varies per 32 values, which
 *   is finer than ggml's block_q8_K (one d per 256) and never less accurate.
 * Weight formulas (quant.h): Q4_0 d*(q-8); Q4_1 d*q+m; Q8_0 d*q; Q4_K d*sc*q - dmin*mn per 32;
 * Q6_K d*sc*(q-32) per 16. Every product is an exact integer sum of (weight code) x (activation code)
 * per 32-block, scaled in fp32: the error is that of the activation rounding only (about 0.4 % of a
 * block's max|x| per element).
 *
 * F32, F16 and BF16 rows are dotted with the fp32 activation directly (no activation rounding).
 *
 * Kernels exist as portable C and, chosen at run time from CPUID, AVX2 (+FMA, F16C) and AVX-512
 * (F, BW, VL, VNNI) versions; all give the same integer block sums, so results differ between
 * kernels only by fp32 rounding of the scaling and accumulation of those sums. A block of x with a
 * NaN or Inf gets d = NAN, so the products it enters are NaN (visible, not silently wrong).
 */
#ifndef BOSCH_QDOT_H
#define BOSCH_QDOT_H

#include <stddef.h>
#include <stdint.h>

#define QDOT_BLOCK 32

typedef struct {
    float d;         /* scale: x ~= d * q */
    float s;         /* d * sum(q) */
    int16_t bsum[2]; /* sum(q[0..15]), sum(q[16..31]) (Q6_K's 16-element sub-blocks) */
    int8_t q[32];    /* codes */
} qdot_act_block;

/* Kernel levels, lowest first. */
typedef enum { QDOT_SCALAR = 0, QDOT_AVX2 = 1, QDOT_AVX512 = 2 } qdot_level;

/* The best level this CPU supports (CPUID, once). */
qdot_level qdot_level_best(void);
const char *qdot_level_name(qdot_level l); /* "scalar", "avx2", "avx512-vnni" */

/* 1 when rows of this ggml type have a dot product here (F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K). */
int qdot_type_supported(uint32_t type);
/* 1 when the type's dot product uses the quantized activation (every type but F32/F16/BF16). */
int qdot_type_uses_act(uint32_t type);

/* Quantize x[n] (n a multiple of 32) into n/32 blocks. */
void qdot_quantize_act(const float *x, int n, qdot_act_block *out);

/* Dot product of one weight row of `type` (n elements, the file's packed blocks at row) with the
 * activation: xq (n/32 quantized blocks) for quantized types, xf (n floats) for F32/F16/BF16.
 * `level` must be <= qdot_level_best(). Returns the dot product; 0 for an unsupported type. */
float qdot_row(qdot_level level, uint32_t type, const void *row, int n, const qdot_act_block *xq,
               const float *xf);

/* rows [n_rows] outputs: y[r] = qdot_row(row r) for rows r0..r0+n_rows-1 of a matrix whose rows are
 * row_bytes apart, starting at `w`. The kernel is chosen once for all rows. */
void qdot_rows(qdot_level level, uint32_t type, const void *w, size_t row_bytes, int r0, int n_rows, int n,
               const qdot_act_block *xq, const float *xf, float *y);

#endif
