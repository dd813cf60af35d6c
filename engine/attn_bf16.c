/* attn_bf16.c — attention over a bf16 KV cache (attention.h: attn_prefill, and the decode items of
 * spans whose type is ATTN_KV_BF16).
 *
 * Keys and values are bf16 (rounded to nearest even once, when written); the queries (times
 * log2(e)/sqrt(head_dim)) and the softmax probabilities are rounded to bf16 where they enter a
 * product; every product is accumulated in fp32 and the softmax (max, exp2, sums, rescaling) is
 * fp32. The arithmetic is a dot product of bf16 pairs, acc + a.hi·b.hi + a.lo·b.lo per fp32 lane:
 * AVX-512 BF16's vdpbf16ps where the CPU has it, else two FMAs per pair (AVX2, or portable C),
 * chosen at run time (attn_isa_best, from CPUID; attn_isa_limit caps it for tests). Both give the
 * same products (a bf16 product is exact in fp32); sums may differ by fp32 rounding and by
 * vdpbf16ps flushing denormals.
 *
 * Prefill is FlashAttention's tiling (Dao et al. 2022, Alg. 1) as in attention.c: one (KV head,
 * tile of 32 queries) per work item, all query heads of the GQA group as the rows of one tile,
 * blocks of 64 keys; Q·Kᵀ with the queries across the vector lanes and each key's pair word
 * broadcast (the keys are read in place), P·V with the probabilities' pair words across the lanes
 * and the block's values repacked once per block into pair words of consecutive keys.
 * Decode cuts a KV head's slots into chunks of 256 (as attention.c) merged by attn_decode_merge.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "attn_bf16.h"
#include "simd_target.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum {
    AB_BQ = 32,
    AB_BK = 64,
    AB_DH = 4,
    AB_DCH = 256,
    AB_RALIGN = 32,
    AB_PF = 16 /* decode's prefetch, rows */
};

/* fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN. */
static inline uint16_t ab_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(u >> 16 | 0x40);
    return (uint16_t)((u + 0x7FFFu + (u >> 16 & 1u)) >> 16);
}
static inline float ab_bf16_float(uint32_t bits16) {
    uint32_t u = bits16 << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float ab_bf16_round(float f) {
    return ab_bf16_float(ab_bf16_bits(f));
}
/* One lane of the pair dot product, in vdpbf16ps's order (high pair first). */
static inline float ab_dot2_scalar(float acc, uint32_t a, uint32_t b) {
    acc = fmaf(ab_bf16_float(a >> 16), ab_bf16_float(b >> 16), acc);
    return fmaf(ab_bf16_float(a & 0xFFFFu), ab_bf16_float(b & 0xFFFFu), acc);
}

typedef struct {
    const float *q;
    const uint16_t *k, *v;
    float *out;
    int n_tokens, n_head, n_head_kv, head_dim, group, window, sinks;
    const uint8_t *z_row;
} ab_args;

/* Scratch of one thread for one (KV head, query tile); rows_p = group*BQ rounded up to 32. */
typedef struct {
    int rows_p;
    uint32_t *qp; /* [hd/2][rows_p] pair words of the scaled queries; padding rows 0 */
    float *st;    /* [BK][rows_p] scores */
    uint32_t *pp; /* [BK/2][rows_p] pair words of the probabilities of consecutive keys */
    uint32_t *vp; /* [BK/2][hd] pair words of the block's values, even dimensions first */
    float *acc;   /* [hd][rows_p] unnormalised output, dimensions in vp's order */
    float *m, *l; /* [rows_p] running max (base 2) and sum of the rounded probabilities */
    int32_t *pos; /* [rows_p] query position of each row */
} ab_tile;

static int ab_tile_alloc(ab_tile *w, int group, int hd) {
    const int rp = (group * AB_BQ + AB_RALIGN - 1) / AB_RALIGN * AB_RALIGN;
    const size_t words = (size_t)rp * (hd / 2) + (size_t)rp * AB_BK + (size_t)rp * (AB_BK / 2) +
                         (size_t)(AB_BK / 2) * hd + (size_t)rp * hd + 3 * (size_t)rp;
    memset(w, 0, sizeof *w);
    w->rows_p = rp;
    w->qp = aligned_alloc(64, (words * 4 + 63) / 64 * 64);
    if (!w->qp) return -1;
    w->st = (float *)(w->qp + (size_t)rp * (hd / 2));
    w->pp = (uint32_t *)(w->st + (size_t)rp * AB_BK);
    w->vp = w->pp + (size_t)rp * (AB_BK / 2);
    w->acc = (float *)(w->vp + (size_t)(AB_BK / 2) * hd);
    w->m = w->acc + (size_t)rp * hd;
    w->l = w->m + rp;
    w->pos = (int32_t *)(w->l + rp);
    return 0;
}

/* The tile's rows: queries i0..i0+nq-1 of each query head of group g, scaled and rounded. */
static void ab_tile_reset(ab_tile *w, const ab_args *A, int g, int i0, int nq) {
    const int hd = A->head_dim, half = hd / 2, rp = w->rows_p, group = A->group;
    const size_t ldq = (size_t)A->n_head * hd;
    const float scale = 1.4426950408889634f / sqrtf((float)hd); /* log2(e)/sqrt(hd) */
    memset(w->qp, 0, (size_t)rp * half * sizeof(uint32_t));
    memset(w->acc, 0, (size_t)rp * hd * sizeof(float));
    for (int r = 0; r < rp; r++) {
        w->m[r] = -INFINITY;
        w->l[r] = 0.0f;
        w->pos[r] = i0 + nq - 1; /* padding rows act as the tile's last query; dropped */
    }
    for (int hh = 0; hh < group; hh++)
        for (int t = 0; t < nq; t++) {
            const int r = hh * AB_BQ + t;
            const float *src = A->q + (size_t)(i0 + t) * ldq + (size_t)(g * group + hh) * hd;
            for (int p = 0; p < half; p++)
                w->qp[(size_t)p * rp + r] = (uint32_t)ab_bf16_bits(src[2 * p] * scale) |
                                            (uint32_t)ab_bf16_bits(src[2 * p + 1] * scale) << 16;
            w->pos[r] = i0 + t;
        }
}

/* ---- the kernels, once per instruction set ---- */

/* vdpbf16ps by two multiply-adds per lane (high pair first, as the instruction): a bf16 value is
 * the high half of an fp32, and the product of two is exact in fp32. */
#define AB_DOT2_EMU(acc, a, b)                                                                               \
    ((acc) + (VF)((a) & (int32_t)0xFFFF0000u) * (VF)((b) & (int32_t)0xFFFF0000u) +                           \
     (VF)((a) << 16) * (VF)((b) << 16))

#define AB_SUFFIX _portable
#define AB_VL 4
#define AB_MAX(a, b) AB(selectf)((a) > (b), (a), (b))
#define AB_DOT2 AB_DOT2_EMU
#include "attn_bf16_body.h"
#undef AB_DOT2
#undef AB_MAX
#undef AB_VL
#undef AB_SUFFIX

#if defined(__x86_64__)
SIMD_TARGET_BEGIN("avx2,fma")
#define AB_SUFFIX _avx2
#define AB_VL 8
#define AB_MAX(a, b) ((VF)_mm256_max_ps((__m256)(a), (__m256)(b))) /* maxps: a > b ? a : b */
#define AB_DOT2 AB_DOT2_EMU
#include "attn_bf16_body.h"
#undef AB_DOT2
#undef AB_MAX
#undef AB_VL
#undef AB_SUFFIX
SIMD_TARGET_END

SIMD_TARGET_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl,avx512bf16")
#define AB_SUFFIX _avx512
#define AB_VL 16
#define AB_MAX(a, b) ((VF)_mm512_max_ps((__m512)(a), (__m512)(b))) /* maxps: a > b ? a : b */
#define AB_DOT2(acc, a, b) ((VF)_mm512_dpbf16_ps((__m512)(acc), (__m512bh)(a), (__m512bh)(b)))
#include "attn_bf16_body.h"
#undef AB_DOT2
#undef AB_MAX
#undef AB_VL
#undef AB_SUFFIX
SIMD_TARGET_END
#endif

/* ---- run-time choice ---- */

static atomic_int isa_cap = ATTN_ISA_AVX512_BF16;

attn_isa attn_isa_best(void) {
    static atomic_int cached = -1; /* CPUID once; racing first calls compute the same value */
    int level = atomic_load_explicit(&cached, memory_order_relaxed);
    if (level < 0) {
        level = ATTN_ISA_PORTABLE;
#if defined(__x86_64__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16"))
            level = ATTN_ISA_AVX512_BF16;
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            level = ATTN_ISA_AVX2;
#endif
        atomic_store_explicit(&cached, level, memory_order_relaxed);
    }
    return (attn_isa)level;
}

attn_isa attn_isa_limit(attn_isa max) {
    return (attn_isa)atomic_exchange(&isa_cap, (int)max);
}

attn_isa attn_isa_current(void) {
    attn_isa best = attn_isa_best(), cap = (attn_isa)atomic_load(&isa_cap);
    return cap < best ? cap : best;
}

const char *attn_isa_name(attn_isa isa) {
    return isa == ATTN_ISA_AVX512_BF16 ? "avx512-bf16" : isa == ATTN_ISA_AVX2 ? "avx2" : "portable";
}

typedef void (*tile_fn)(ab_tile *, const ab_args *, int, int);
typedef void (*chunk_fn)(const uint32_t *, const uint16_t *, const uint16_t *, int, int, int, float *, int);

static tile_fn pick_tile(attn_isa isa) {
#if defined(__x86_64__)
    if (isa == ATTN_ISA_AVX512_BF16) return tile_run_avx512;
    if (isa == ATTN_ISA_AVX2) return tile_run_avx2;
#endif
    (void)isa;
    return tile_run_portable;
}

static chunk_fn pick_chunk(attn_isa isa) {
#if defined(__x86_64__)
    if (isa == ATTN_ISA_AVX512_BF16) return decode_chunk_avx512;
    if (isa == ATTN_ISA_AVX2) return decode_chunk_avx2;
#endif
    (void)isa;
    return decode_chunk_portable;
}

/* ---- public entry points ---- */

void attn_round_bf16(const float *src, uint16_t *dst, size_t n) {
    if (n < 65536) { /* one cache row (decode, inside a team): no parallel region at all */
        for (size_t i = 0; i < n; i++) dst[i] = ab_bf16_bits(src[i]);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dst[i] = ab_bf16_bits(src[i]);
}

static void fill_nan(float *out, int i0, int i1, int g, const ab_args *A) {
    for (int i = i0; i < i1; i++)
        for (int hh = 0; hh < A->group; hh++)
            for (int d = 0; d < A->head_dim; d++)
                out[(size_t)i * A->n_head * A->head_dim + (size_t)(g * A->group + hh) * A->head_dim + d] =
                    NAN;
}

void attn_prefill_bf16(const float *q, const uint16_t *k, const uint16_t *v, float *out, int n_tokens,
                       int n_head, int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks) {
    if (n_tokens <= 0) return;
    const ab_args A = {.q = q,
                       .k = k,
                       .v = v,
                       .out = out,
                       .n_tokens = n_tokens,
                       .n_head = n_head,
                       .n_head_kv = n_head_kv,
                       .head_dim = head_dim,
                       .group = n_head / n_head_kv,
                       .window = window < 1 ? 1 : window,
                       .sinks = sinks < 0 ? 0 : sinks,
                       .z_row = z_row};
    const tile_fn run = pick_tile(attn_isa_current());
    const int n_tiles = (n_tokens + AB_BQ - 1) / AB_BQ, n_items = n_tiles * n_head_kv;
#pragma omp parallel
    {
        ab_tile w;
        const int ok = head_dim % 2 == 0 && ab_tile_alloc(&w, A.group, head_dim) == 0;
#pragma omp for schedule(dynamic, 1)
        for (int it = 0; it < n_items; it++) { /* largest tiles (last queries) first */
            const int tile = n_tiles - 1 - it / n_head_kv, g = it % n_head_kv;
            if (ok)
                run(&w, &A, g, tile);
            else /* out of memory or an odd head_dim: a visible failure, not garbage */
                fill_nan(out, tile * AB_BQ, tile * AB_BQ + AB_BQ < n_tokens ? tile * AB_BQ + AB_BQ : n_tokens,
                         g, &A);
        }
        if (ok) free(w.qp);
    }
}

void attn_bf16_decode_chunk(const float *q, const uint16_t *k, const uint16_t *v, int s0, int s1, int group,
                            int head_dim, float *part) {
    const int half = head_dim / 2;
    uint32_t qw_small[8 * 64];
    uint32_t *qw =
        (size_t)group * half <= 8 * 64 ? qw_small : malloc(sizeof(uint32_t) * (size_t)group * half);
    if (!qw || head_dim % 2) {
        for (size_t i = 0; i < (size_t)group * (head_dim + 2); i++) part[i] = NAN;
        return;
    }
    const float scale = 1.4426950408889634f / sqrtf((float)head_dim); /* base-2 scores */
    for (int h = 0; h < group; h++)
        for (int p = 0; p < half; p++) {
            const float *qh = q + (size_t)h * head_dim;
            qw[(size_t)h * half + p] = (uint32_t)ab_bf16_bits(qh[2 * p] * scale) |
                                       (uint32_t)ab_bf16_bits(qh[2 * p + 1] * scale) << 16;
        }
    pick_chunk(attn_isa_current())(qw, k, v, s0, s1, group, part, head_dim);
    if (qw != qw_small) free(qw);
}
