/* quant.c — GGML block formats dequantized to fp32 (CPU), and fp16/bf16 scalar conversions.
 *
 * Layouts: ggml/src/ggml-common.h (block_q4_0, block_q4_1, block_q8_0, block_q4_K, block_q6_K);
 * formulas as in ggml's reference dequantize_row_* (ggml-quants.c). All multi-byte fields are
 * little-endian; they are read byte by byte so unaligned blocks and big-endian hosts work.
 *
 * Speed: each type has its own row function with a simple inner loop over a block that the
 * compiler vectorizes; quant_dequantize splits large inputs over blocks with an OpenMP for.
 */
#include "quant.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define QK4_0 32
#define QK4_1 32
#define QK8_0 32
#define QK_K 256

/* Below this many elements (4 MB of fp32) the OpenMP team costs more than it saves, above all on
 * a busy machine where waking the workers takes a scheduler slice. */
#define QUANT_PARALLEL_MIN_ELEMS (1u << 20)

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t read_u16le(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

/* ---- scalar conversions ---------------------------------------------------------------- */

/* Half -> single, exact. Branch-free so that loops over it vectorize: normals add the exponent
 * rebias (127 - 15) to the shifted bits; inf/NaN (exponent 31) get exponent 255 with the mantissa
 * kept; zero and subnormals (exponent 0) are mantissa * 2^-24, exact in fp32 (no subnormal fp32
 * operand is ever used, so DAZ/FTZ modes cannot change the result). */
float quant_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int32_t em = h & 0x7fff;
    uint32_t normal = ((uint32_t)em << 13) + ((127u - 15u) << 23);
    uint32_t infnan = ((uint32_t)em << 13) | 0x7f800000u;
    uint32_t sub = f32_bits((float)em * 0x1p-24f);
    uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00); /* all ones or zero: masks, no branches */
    uint32_t is_sub = 0u - (uint32_t)(em < 0x400);
    uint32_t bits = (infnan & is_special) | (normal & ~is_special);
    bits = (sub & is_sub) | (bits & ~is_sub);
    return f32_from_bits(sign | bits);
}

/* Single -> half, round to nearest even. Overflow gives +-inf; results below the smallest half
 * subnormal round to +-0. NaN keeps its sign and the top 10 mantissa bits, and is forced to stay
 * a NaN (mantissa 1) when those bits are zero — the same rule as numpy's float32 -> float16. */
uint16_t quant_fp32_to_fp16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;

    if (absu >= 0x7f800000u) { /* inf or NaN */
        if (absu == 0x7f800000u) return sign | 0x7c00u;
        uint32_t m = (absu & 0x7fffffu) >> 13;
        return (uint16_t)(sign | 0x7c00u | (m ? m : 1u));
    }
    if (absu >= 0x477ff000u) return sign | 0x7c00u;       /* >= 65520 rounds to inf */
    if (absu >= 0x38800000u) {                            /* >= 2^-14: normal half */
        uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u); /* RNE on the 13 dropped bits */
        return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    if (absu < 0x33000000u) return sign; /* < 2^-25: rounds to zero (2^-25 itself is a tie to 0) */
    /* Subnormal half: value = m * 2^-24 with m = round(full_mantissa >> shift). */
    uint32_t exp = absu >> 23; /* 102..112 */
    uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t m = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (m & 1u))) m++;
    return (uint16_t)(sign | m); /* m may reach 0x400: that is the smallest normal, still right */
}

float quant_bf16_to_fp32(uint16_t h) {
    return f32_from_bits((uint32_t)h << 16);
}

/* Single -> bfloat16, round to nearest even; NaN is kept quiet (bit 6 of the bf16 mantissa set)
 * as ggml's ggml_compute_fp32_to_bf16 does. */
uint16_t quant_fp32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- type table ------------------------------------------------------------------------ */

typedef void (*dequant_fn)(const uint8_t *restrict src, float *restrict dst, size_t n_blocks);

static void dq_f32(const uint8_t *restrict src, float *restrict dst, size_t n) {
    memcpy(dst, src, n * sizeof(float));
}

static void dq_f16(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = quant_fp16_to_fp32(read_u16le(src + 2 * i));
}

static void dq_bf16(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = quant_bf16_to_fp32(read_u16le(src + 2 * i));
}

/* Q4_0: [d fp16][qs 16 bytes]; element j < 16 is the low nibble of qs[j], element j + 16 the high. */
static void dq_q4_0(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t b = 0; b < n; b++, src += 18, dst += QK4_0) {
        const float d = quant_fp16_to_fp32(read_u16le(src));
        const uint8_t *qs = src + 2;
        for (int j = 0; j < QK4_0 / 2; j++) dst[j] = d * (float)((int)(qs[j] & 0x0f) - 8);
        for (int j = 0; j < QK4_0 / 2; j++) dst[j + QK4_0 / 2] = d * (float)((int)(qs[j] >> 4) - 8);
    }
}

/* Q4_1: [d fp16][m fp16][qs 16 bytes]; x = d * q + m, nibble order as Q4_0. */
static void dq_q4_1(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t b = 0; b < n; b++, src += 20, dst += QK4_1) {
        const float d = quant_fp16_to_fp32(read_u16le(src));
        const float m = quant_fp16_to_fp32(read_u16le(src + 2));
        const uint8_t *qs = src + 4;
        for (int j = 0; j < QK4_1 / 2; j++) dst[j] = d * (float)(qs[j] & 0x0f) + m;
        for (int j = 0; j < QK4_1 / 2; j++) dst[j + QK4_1 / 2] = d * (float)(qs[j] >> 4) + m;
    }
}

/* Q8_0: [d fp16][qs 32 x int8]; x = d * q. */
static void dq_q8_0(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t b = 0; b < n; b++, src += 34, dst += QK8_0) {
        const float d = quant_fp16_to_fp32(read_u16le(src));
        const int8_t *qs = (const int8_t *)(src + 2);
        for (int j = 0; j < QK8_0; j++) dst[j] = d * (float)qs[j];
    }
}

/* Q4_K sub-block j (0..7) scale and min, 6 bits each, from the 12 packed bytes `s`:
 * j < 4: scale = s[j] & 63, min = s[j+4] & 63;
 * j >= 4: the low 4 bits come from s[j+4] (scale: low nibble, min: high nibble) and the top 2
 * bits from the spare top bits of s[j-4] (scale) and s[j] (min). (ggml get_scale_min_k4.) */
static inline void q4_k_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *mn = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Q4_K: [d fp16][dmin fp16][scales 12][qs 128]. The 256 elements are 8 sub-blocks of 32; qs is 4
 * chunks of 32 bytes, chunk c holds sub-block 2c in its low nibbles and 2c+1 in its high nibbles.
 * x = (d * scale) * q - (dmin * min). */
static void dq_q4_k(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t b = 0; b < n; b++, src += 144, dst += QK_K) {
        const float d = quant_fp16_to_fp32(read_u16le(src));
        const float dmin = quant_fp16_to_fp32(read_u16le(src + 2));
        const uint8_t *scales = src + 4;
        const uint8_t *qs = src + 16;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            q4_k_scale_min(2 * c, scales, &sc0, &m0);
            q4_k_scale_min(2 * c + 1, scales, &sc1, &m1);
            const float d0 = d * (float)sc0, dm0 = dmin * (float)m0;
            const float d1 = d * (float)sc1, dm1 = dmin * (float)m1;
            const uint8_t *q = qs + 32 * c;
            float *y = dst + 64 * c;
            for (int l = 0; l < 32; l++) y[l] = d0 * (float)(q[l] & 0x0f) - dm0;
            for (int l = 0; l < 32; l++) y[32 + l] = d1 * (float)(q[l] >> 4) - dm1;
        }
    }
}

/* Q6_K: [ql 128][qh 64][scales 16 x int8][d fp16]. Two halves of 128 elements, each using 64 ql
 * bytes and 32 qh bytes: for l in 0..31 the four elements l, l+32, l+64, l+96 take
 * ql[l] low, ql[l+32] low, ql[l] high, ql[l+32] high nibbles as their low 4 bits and bits
 * 0-1, 2-3, 4-5, 6-7 of qh[l] as their top 2 bits; q is that 6-bit value minus 32.
 * Element e of the block uses scale[e / 16]; x = d * scale * q. */
static void dq_q6_k(const uint8_t *restrict src, float *restrict dst, size_t n) {
    for (size_t b = 0; b < n; b++, src += 210, dst += QK_K) {
        const uint8_t *ql = src;
        const uint8_t *qh = src + 128;
        const int8_t *sc = (const int8_t *)(src + 192);
        const float d = quant_fp16_to_fp32(read_u16le(src + 208));
        for (int half = 0; half < 2; half++) {
            const uint8_t *l8 = ql + 64 * half, *h8 = qh + 32 * half;
            const int8_t *s = sc + 8 * half;
            float *y = dst + 128 * half;
            float ds[8];
            for (int i = 0; i < 8; i++) ds[i] = d * (float)s[i];
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = (int)((l8[l] & 0x0f) | ((h8[l] & 3) << 4)) - 32;
                const int q2 = (int)((l8[l + 32] & 0x0f) | (((h8[l] >> 2) & 3) << 4)) - 32;
                const int q3 = (int)((l8[l] >> 4) | (((h8[l] >> 4) & 3) << 4)) - 32;
                const int q4 = (int)((l8[l + 32] >> 4) | (((h8[l] >> 6) & 3) << 4)) - 32;
                y[l] = ds[is + 0] * (float)q1;
                y[l + 32] = ds[is + 2] * (float)q2;
                y[l + 64] = ds[is + 4] * (float)q3;
                y[l + 96] = ds[is + 6] * (float)q4;
            }
        }
    }
}

typedef struct {
    uint32_t type;
    const char *name;
    size_t block_elems;
    size_t block_bytes;
    dequant_fn fn;
} quant_traits;

static const quant_traits QUANT_TRAITS[] = {
    {GGML_TYPE_F32, "F32", 1, 4, dq_f32},         {GGML_TYPE_F16, "F16", 1, 2, dq_f16},
    {GGML_TYPE_Q4_0, "Q4_0", QK4_0, 18, dq_q4_0}, {GGML_TYPE_Q4_1, "Q4_1", QK4_1, 20, dq_q4_1},
    {GGML_TYPE_Q8_0, "Q8_0", QK8_0, 34, dq_q8_0}, {GGML_TYPE_Q4_K, "Q4_K", QK_K, 144, dq_q4_k},
    {GGML_TYPE_Q6_K, "Q6_K", QK_K, 210, dq_q6_k}, {GGML_TYPE_BF16, "BF16", 1, 2, dq_bf16},
};

static const quant_traits *quant_traits_of(uint32_t type) {
    for (size_t i = 0; i < sizeof QUANT_TRAITS / sizeof QUANT_TRAITS[0]; i++)
        if (QUANT_TRAITS[i].type == type) return &QUANT_TRAITS[i];
    return NULL;
}

int quant_type_supported(uint32_t type) {
    return quant_traits_of(type) != NULL;
}

const char *quant_type_name(uint32_t type) {
    const quant_traits *t = quant_traits_of(type);
    return t ? t->name : "unknown";
}

size_t quant_block_elems(uint32_t type) {
    const quant_traits *t = quant_traits_of(type);
    return t ? t->block_elems : 0;
}

size_t quant_block_bytes(uint32_t type) {
    const quant_traits *t = quant_traits_of(type);
    return t ? t->block_bytes : 0;
}

size_t quant_row_bytes(uint32_t type, uint64_t n_elems) {
    const quant_traits *t = quant_traits_of(type);
    if (!t || n_elems % t->block_elems != 0) return 0;
    uint64_t n_blocks = n_elems / t->block_elems;
    if (n_blocks > SIZE_MAX / t->block_bytes) return 0; /* would overflow size_t */
    return (size_t)(n_blocks * t->block_bytes);
}

int quant_dequantize(uint32_t type, const void *src, float *dst, uint64_t n_elems) {
    const quant_traits *t = quant_traits_of(type);
    if (!t || n_elems % t->block_elems != 0 || n_elems > SIZE_MAX / sizeof(float)) return -1;
    if (n_elems == 0) return 0;
    if (!src || !dst) return -1;
    const uint8_t *s = (const uint8_t *)src;
    const size_t n_blocks = (size_t)(n_elems / t->block_elems);

    if (n_elems < QUANT_PARALLEL_MIN_ELEMS) {
        t->fn(s, dst, n_blocks);
        return 0;
    }
    /* Chunks of whole blocks, about 16K elements each, spread over the threads. */
    const size_t chunk = (16384 + t->block_elems - 1) / t->block_elems;
    const size_t n_chunks = (n_blocks + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t c = 0; c < n_chunks; c++) {
        size_t b0 = c * chunk;
        size_t nb = n_blocks - b0 < chunk ? n_blocks - b0 : chunk;
        t->fn(s + b0 * t->block_bytes, dst + b0 * t->block_elems, nb);
    }
    return 0;
}
