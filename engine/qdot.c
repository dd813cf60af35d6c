/* qdot.c — activation quantization, the portable dot-product kernels and the run-time dispatch
 * (see qdot.h; the x86 SIMD kernels are in qdot_x86.c). Block layouts: quant.h. */
#include "qdot.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "qdot_internal.h"
#include "quant.h"
#include "simd_target.h"

static inline uint16_t rd16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline float h2f(const uint8_t *p) {
    return quant_fp16_to_fp32(rd16(p));
}

void qdot_quantize_act(const float *x, int n, qdot_act_block *out) {
    for (int b = 0; b < n / QDOT_BLOCK; b++) {
        const float *v = x + (size_t)b * QDOT_BLOCK;
        qdot_act_block *o = &out[b];
        float amax = 0.0f;
        for (int i = 0; i < QDOT_BLOCK; i++) {
            const float a = fabsf(v[i]);
            amax = a > amax ? a : amax;
        }
        if (!isfinite(amax)) { /* NaN or Inf in x: the block is unusable, and says so */
            memset(o, 0, sizeof *o);
            o->d = o->s = NAN;
            continue;
        }
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        int s0 = 0, s1 = 0;
        for (int i = 0; i < QDOT_BLOCK; i++) {
            int q = (int)rintf(v[i] * id); /* nearest, ties to even (one instruction; ggml: roundf) */
            q = q > 127 ? 127 : (q < -127 ? -127 : q);
            o->q[i] = (int8_t)q;
            if (i < 16)
                s0 += q;
            else
                s1 += q;
        }
        o->d = d;
        o->bsum[0] = (int16_t)s0;
        o->bsum[1] = (int16_t)s1;
        o->s = d * (float)(s0 + s1);
    }
}

/* ---- portable kernels (the reference for the SIMD ones) ---------------------------------- */

static float dot_f32(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    float acc = 0.0f;
    const float *w = (const float *)(const void *)row;
    for (int i = 0; i < n; i++) acc += w[i] * xf[i];
    return acc;
}

static float dot_f16(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += h2f(row + 2 * i) * xf[i];
    return acc;
}

static float dot_bf16(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    float acc = 0.0f;
    for (int i = 0; i < n; i++) acc += quant_bf16_to_fp32(rd16(row + 2 * i)) * xf[i];
    return acc;
}

/* sum over the 32 codes of a 4-bit block (low nibbles = elements 0..15, high = 16..31) x activation */
static int nib_dot(const uint8_t *qs, const int8_t *a) {
    int s = 0;
    for (int j = 0; j < 16; j++) s += (qs[j] & 0x0f) * a[j] + (qs[j] >> 4) * a[j + 16];
    return s;
}

static float dot_q4_0(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    float acc = 0.0f;
    for (int b = 0; b < n / 32; b++, row += 18) {
        const float d = h2f(row);
        /* sum (q - 8) a = sum q a - 8 sum a */
        acc += d * (xq[b].d * (float)nib_dot(row + 2, xq[b].q) - 8.0f * xq[b].s);
    }
    return acc;
}

static float dot_q4_1(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    float acc = 0.0f;
    for (int b = 0; b < n / 32; b++, row += 20) {
        const float d = h2f(row), m = h2f(row + 2);
        acc += d * xq[b].d * (float)nib_dot(row + 4, xq[b].q) + m * xq[b].s;
    }
    return acc;
}

static float dot_q8_0(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    float acc = 0.0f;
    for (int b = 0; b < n / 32; b++, row += 34) {
        const int8_t *q = (const int8_t *)(row + 2);
        int s = 0;
        for (int j = 0; j < 32; j++) s += q[j] * xq[b].q[j];
        acc += h2f(row) * xq[b].d * (float)s;
    }
    return acc;
}

static float dot_q4_k(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    float acc = 0.0f;
    for (int sb = 0; sb < n / 256; sb++, row += 144) {
        const float d = h2f(row), dmin = h2f(row + 2);
        const uint8_t *scales = row + 4, *qs = row + 16;
        for (int c = 0; c < 4; c++) {
            const qdot_act_block *a0 = &xq[sb * 8 + 2 * c], *a1 = a0 + 1;
            int sc0, m0, sc1, m1, s0 = 0, s1 = 0;
            qdot_q4_k_scale_min(2 * c, scales, &sc0, &m0);
            qdot_q4_k_scale_min(2 * c + 1, scales, &sc1, &m1);
            const uint8_t *q = qs + 32 * c;
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 0x0f) * a0->q[l];
                s1 += (q[l] >> 4) * a1->q[l];
            }
            acc += d * ((float)sc0 * a0->d * (float)s0 + (float)sc1 * a1->d * (float)s1) -
                   dmin * ((float)m0 * a0->s + (float)m1 * a1->s);
        }
    }
    return acc;
}

static float dot_q6_k(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    float acc = 0.0f;
    for (int sb = 0; sb < n / 256; sb++, row += 210) {
        const uint8_t *ql = row, *qh = row + 128;
        const int8_t *sc = (const int8_t *)(row + 192);
        const float d = h2f(row + 208);
        for (int half = 0; half < 2; half++) {
            const uint8_t *l8 = ql + 64 * half, *h8 = qh + 32 * half;
            const int8_t *s = sc + 8 * half;
            for (int g = 0; g < 4; g++) { /* elements 32g..32g+31 of this half */
                const qdot_act_block *a = &xq[sb * 8 + half * 4 + g];
                int sum[2] = {0, 0};
                for (int l = 0; l < 32; l++) {
                    int lo = g & 1 ? l8[l + 32] : l8[l];
                    lo = g & 2 ? lo >> 4 : lo & 0x0f;
                    int q = lo | (((h8[l] >> (2 * g)) & 3) << 4);
                    sum[l / 16] += (q - 32) * a->q[l];
                }
                acc += d * a->d * ((float)s[2 * g] * (float)sum[0] + (float)s[2 * g + 1] * (float)sum[1]);
            }
        }
    }
    return acc;
}

static qdot_row_fn scalar_fn(uint32_t type) {
    switch (type) {
    case GGML_TYPE_F32:
        return dot_f32;
    case GGML_TYPE_F16:
        return dot_f16;
    case GGML_TYPE_BF16:
        return dot_bf16;
    case GGML_TYPE_Q4_0:
        return dot_q4_0;
    case GGML_TYPE_Q4_1:
        return dot_q4_1;
    case GGML_TYPE_Q8_0:
        return dot_q8_0;
    case GGML_TYPE_Q4_K:
        return dot_q4_k;
    case GGML_TYPE_Q6_K:
        return dot_q6_k;
    default:
        return NULL;
    }
}

/* ---- dispatch ------------------------------------------------------------------------------ */

qdot_level qdot_level_best(void) {
    static atomic_int cached = -1; /* CPUID is read once; racing first calls compute the same value */
    int level = atomic_load_explicit(&cached, memory_order_relaxed);
    if (level < 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && cpu_has_f16c() &&
            __builtin_cpu_supports("fma"))
            level = QDOT_AVX512;
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
            level = QDOT_AVX2;
        else
#endif
            level = QDOT_SCALAR;
        atomic_store_explicit(&cached, level, memory_order_relaxed);
    }
    return (qdot_level)level;
}

const char *qdot_level_name(qdot_level l) {
    return l == QDOT_AVX512 ? "avx512-vnni" : l == QDOT_AVX2 ? "avx2" : "scalar";
}

int qdot_type_supported(uint32_t type) {
    return scalar_fn(type) != NULL;
}

int qdot_type_uses_act(uint32_t type) {
    return qdot_type_supported(type) && type != GGML_TYPE_F32 && type != GGML_TYPE_F16 &&
           type != GGML_TYPE_BF16;
}

static qdot_row_fn pick(qdot_level level, uint32_t type) {
    if (level > qdot_level_best()) level = qdot_level_best();
#if defined(__x86_64__)
    if (level > QDOT_SCALAR) {
        qdot_row_fn f = qdot_x86_fn(level, type);
        if (f) return f;
    }
#endif
    return scalar_fn(type);
}

float qdot_row(qdot_level level, uint32_t type, const void *row, int n, const qdot_act_block *xq,
               const float *xf) {
    qdot_row_fn f = pick(level, type);
    return f ? f((const uint8_t *)row, n, xq, xf) : 0.0f;
}

void qdot_rows(qdot_level level, uint32_t type, const void *w, size_t row_bytes, int r0, int n_rows, int n,
               const qdot_act_block *xq, const float *xf, float *y) {
    qdot_row_fn f = pick(level, type);
    const uint8_t *base = (const uint8_t *)w + (size_t)r0 * row_bytes;
    for (int r = 0; r < n_rows; r++) y[r] = f ? f(base + (size_t)r * row_bytes, n, xq, xf) : 0.0f;
}
