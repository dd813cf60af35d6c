/* qdot_x86.c — the x86 SIMD dot-product kernels (qdot_x86_body.h) compiled for AVX2 and for
 * AVX-512 VNNI with per-function target options, so the build needs no -march flag and the
 * level is chosen at run time (qdot.c, from CPUID). */
#include <string.h>

#include "qdot_internal.h"
#include "quant.h"
#include "simd_target.h"

#if defined(__x86_64__)
#include <immintrin.h>

SIMD_TARGET_BEGIN("avx2,fma,f16c")
static inline __m256i dot_u8s8_avx2(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
#define QD_SUFFIX _avx2
#define QD_DOT(u, s) dot_u8s8_avx2((u), (s))
#include "qdot_x86_body.h"
#undef QD_DOT
#undef QD_SUFFIX
SIMD_TARGET_END

SIMD_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
static inline __m256i dot_u8s8_avx512(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}
#define QD_SUFFIX _avx512
#define QD_DOT(u, s) dot_u8s8_avx512((u), (s))
#include "qdot_x86_body.h"
#undef QD_DOT
#undef QD_SUFFIX
SIMD_TARGET_END

qdot_row_fn qdot_x86_fn(qdot_level level, uint32_t type) {
    if (level >= QDOT_AVX512) return table_avx512(type);
    if (level >= QDOT_AVX2) return table_avx2(type);
    return NULL;
}
#endif
