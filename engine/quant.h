/* quant.h — GGML tensor types and dequantization to fp32 (CPU).
 *
 * Block layouts follow the GGUF/ggml format spec (ggml/src/ggml-common.h in llama.cpp):
 *   F32, F16 (IEEE half), BF16 (upper 16 bits of an fp32): block of 1 element.
 *   Q4_0: 32 elements, 18 bytes: fp16 d, 16 bytes of nibbles; x = d * (q - 8);
 *         low nibbles are elements 0..15, high nibbles elements 16..31.
 *   Q4_1: 32 elements, 20 bytes: fp16 d, fp16 m, 16 bytes of nibbles; x = d * q + m (same order).
 *   Q8_0: 32 elements, 34 bytes: fp16 d, 32 int8; x = d * q.
 *   Q4_K: 256 elements, 144 bytes: fp16 d, fp16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles.
 *   Q6_K: 256 elements, 210 bytes: 128 bytes ql, 64 bytes qh, 16 int8 scales, fp16 d.
 */
#ifndef BOSCH_QUANT_H
#define BOSCH_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* ggml type ids as stored in GGUF tensor infos (values fixed by the format). */
typedef enum {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_BF16 = 30,
} ggml_type;

/* 1 if `type` (a raw u32 from a file) is one of the types above, else 0. */
int quant_type_supported(uint32_t type);

/* Printable name ("Q4_1", ...) or "unknown". */
const char *quant_type_name(uint32_t type);

/* Elements per block (1, 32 or 256); 0 for an unsupported type. */
size_t quant_block_elems(uint32_t type);

/* Bytes per block; 0 for an unsupported type. */
size_t quant_block_bytes(uint32_t type);

/* Bytes of a row of n_elems elements, or 0 when the type is unsupported or n_elems is not a
 * multiple of the block size. */
size_t quant_row_bytes(uint32_t type, uint64_t n_elems);

/* Dequantize n_elems elements (a multiple of the block size) from `src` (packed blocks, any
 * alignment, little-endian fields) to fp32 `dst[n_elems]`, in file order. Formulas as above (ggml's
 * dequantize_row_*); checked against the PyPI gguf package (tests/test_quant.c). Reentrant; for
 * n_elems >= 2^20 the blocks are split over OpenMP threads. Returns 0 (also for n_elems 0), or -1
 * for an unsupported type, an n_elems that is not a whole number of blocks, or NULL pointers;
 * on -1 nothing is written. */
int quant_dequantize(uint32_t type, const void *src, float *dst, uint64_t n_elems);

/* IEEE half / bfloat16 <-> fp32 scalar conversions (exact for every finite value, NaN/Inf kept).
 * fp16 -> fp32 is exact for all 65536 patterns (NaN payload kept, not quieted), like numpy.
 * fp32 -> fp16: round to nearest even, overflow (>= 65520) to +-inf, NaN keeps sign and top 10
 * mantissa bits (forced non-zero), as numpy's astype(float16).
 * fp32 -> bf16: round to nearest even, NaN made quiet, as ggml_compute_fp32_to_bf16. */
float quant_fp16_to_fp32(uint16_t h);
uint16_t quant_fp32_to_fp16(float f);   /* round to nearest even */
float quant_bf16_to_fp32(uint16_t h);
uint16_t quant_fp32_to_bf16(float f);   /* round to nearest even */

#endif
