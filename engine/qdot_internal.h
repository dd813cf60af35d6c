/* qdot_internal.h — what qdot.c and qdot_x86.c share (not part of the engine's interface). */
#ifndef BOSCH_QDOT_INTERNAL_H
#define BOSCH_QDOT_INTERNAL_H

#include "qdot.h"

/* One row's dot product: row = the row's packed blocks, n elements, xq / xf the activation. */
typedef float (*qdot_row_fn)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf);

/* The SIMD kernel of `type` at `level` (QDOT_AVX2 or QDOT_AVX512), or NULL (use the portable one). */
qdot_row_fn qdot_x86_fn(qdot_level level, uint32_t type);

/* Q4_K sub-block j (0..7): 6-bit scale and min from the 12 packed scale bytes (ggml get_scale_min_k4).
 * Inline here, so the SIMD kernels (qdot_x86.c) need nothing back from qdot.c. */
static inline void qdot_q4_k_scale_min(int j, const uint8_t *s, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

#endif
