/* attention.c — per-head hybrid causal attention for prefill on the CPU (see attention.h).
 *
 * Flash-style tiling (Dao et al., "FlashAttention", 2022, Alg. 1, forward only): the work unit is
 * one (KV head, tile of BQ queries) pair; all query heads of the GQA group are processed together,
 * so each key block is read once for group*BQ rows. For each visible key block of BK keys we
 * compute the score block (in base 2), apply the causal/window/sink mask only where the block is
 * not fully visible, update a running max and sum per row (online softmax) and accumulate P·V. A full head's
 * tile visits keys [0, i1); an SWA head's tile visits the sinks below its window and the window
 * [i0-W+1, i1), so its cost is O(T·(W+BQ+S)) and no T×T buffer exists anywhere.
 *
 * Determinism: every (KV head, query tile) is computed by one thread in a fixed order, so the
 * result does not depend on the number of threads or on scheduling.
 */
#include "attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"

/* ---- portable SIMD vector (GCC/Clang vector extensions): 16 lanes with AVX-512, else 8 ---- */
#if defined(__AVX512F__)
#define ATTN_VL 16
#else
#define ATTN_VL 8
#endif

typedef float attn_vf __attribute__((vector_size(ATTN_VL * 4)));
typedef int32_t attn_vi __attribute__((vector_size(ATTN_VL * 4)));

static inline attn_vf vload(const float *p) {
    attn_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vstore(float *p, attn_vf v) {
    memcpy(p, &v, sizeof v);
}
#if ATTN_VL == 16
static inline attn_vf vsplat(float x) {
    return (attn_vf){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}
#else
static inline attn_vf vsplat(float x) {
    return (attn_vf){x, x, x, x, x, x, x, x};
}
#endif
/* lanes of a where the comparison mask m is true (all bits set), else lanes of b */
static inline attn_vf vselect(attn_vi m, attn_vf a, attn_vf b) {
    return (attn_vf)(((attn_vi)a & m) | ((attn_vi)b & ~m));
}

/* 2^x per lane: x = n + r with n = round(x), |r| <= 1/2; 2^r = e^(r·ln2) by its Taylor series
 * to degree 6 (truncation < 2e-7 relative on that interval); 2^n assembled in the exponent bits.
 * Lanes below -126 (and -inf) give exactly 0. Scores are kept in base 2 (the queries are scaled by
 * log2(e)/sqrt(head_dim)), so softmax needs no extra multiply per score. */
static inline attn_vf vexp2(attn_vf x) {
    const float magic = 12582912.0f; /* 1.5·2^23: adding it rounds to an integer */
    attn_vi under = x < -126.0f;
    x = vselect(under, vsplat(-126.0f), x);
    x = vselect(x > 127.0f, vsplat(127.0f), x);
    attn_vf t = x + magic;
    attn_vf r = x - (t - magic);
    attn_vf p = vsplat(1.5403530393381606e-04f); /* ln2^6/720 */
    p = p * r + 1.3333558146428443e-03f;         /* ln2^5/120 */
    p = p * r + 9.6181291076284772e-03f;         /* ln2^4/24 */
    p = p * r + 5.5504108664821580e-02f;         /* ln2^3/6 */
    p = p * r + 2.4022650695910071e-01f;         /* ln2^2/2 */
    p = p * r + 6.9314718055994531e-01f;         /* ln2 */
    p = p * r + 1.0f;
    attn_vi ni = (attn_vi)t - (attn_vi)vsplat(magic);
    attn_vf y = p * (attn_vf)((ni + 127) << 23);
    return (attn_vf)((attn_vi)y & ~under);
}

enum {
    BQ = 32,                    /* queries per tile */
    BK = 64,                    /* keys per block */
    MV = 2,                     /* row vectors per register micro-tile */
    MR = MV * ATTN_VL,          /* rows per register micro-tile; rows are padded to it */
    KC = ATTN_VL == 16 ? 8 : 4, /* keys (or head dims) per register micro-tile */
};

int attn_visible_keys(int i, int full, int window, int sinks) {
    if (i < 0) return 0;
    if (full) return i + 1;
    int in_window = i + 1 < window ? i + 1 : window;
    int below = i - window + 1; /* positions 0..i-window lie below the window */
    int extra = below <= 0 ? 0 : (sinks < below ? sinks : below);
    return in_window + extra;
}

/* Scratch of one thread for one (KV head, query tile). */
typedef struct {
    int hd;       /* head_dim */
    int rows_p;   /* group*BQ rounded up to MR */
    float *qt;    /* [hd][rows_p] queries times 1/sqrt(hd); padding rows are 0 */
    float *st;    /* [BK][rows_p] scores, then probabilities */
    float *acc;   /* [hd][rows_p] unnormalised output */
    float *m;     /* [rows_p] running max of the scores */
    float *l;     /* [rows_p] running sum of exp(score - m) */
    int32_t *pos; /* [rows_p] query position of each row */
} tile_ws;

static int tile_ws_alloc(tile_ws *w, int group, int hd) {
    int rows_p = (group * BQ + MR - 1) / MR * MR;
    size_t nf = (size_t)rows_p * ((size_t)hd * 2 + BK + 3);
    memset(w, 0, sizeof *w);
    w->hd = hd;
    w->rows_p = rows_p;
    w->qt = aligned_alloc(64, (nf * sizeof(float) + 63) / 64 * 64);
    if (!w->qt) return -1;
    w->acc = w->qt + (size_t)rows_p * hd;
    w->st = w->acc + (size_t)rows_p * hd;
    w->m = w->st + (size_t)rows_p * BK;
    w->l = w->m + rows_p;
    w->pos = (int32_t *)(w->l + rows_p);
    return 0;
}

/* st[c][r0..r0+MR) = sum_d k[c][d] · qt[d][r0..r0+MR) for keys c0..c0+nk (nk = KC or 1). */
static inline __attribute__((always_inline)) void scores_micro(tile_ws *w, const float *k, size_t ldk, int r0,
                                                               int c0, int nk) {
    const int hd = w->hd, rp = w->rows_p;
    attn_vf a[KC][MV];
    for (int c = 0; c < nk; c++)
        for (int x = 0; x < MV; x++) a[c][x] = vsplat(0.0f);
    for (int d = 0; d < hd; d++) {
        attn_vf qv[MV];
        for (int x = 0; x < MV; x++) qv[x] = vload(w->qt + (size_t)d * rp + r0 + x * ATTN_VL);
        for (int c = 0; c < nk; c++) {
            attn_vf b = vsplat(k[(size_t)(c0 + c) * ldk + d]);
            for (int x = 0; x < MV; x++) a[c][x] += b * qv[x];
        }
    }
    for (int c = 0; c < nk; c++)
        for (int x = 0; x < MV; x++) vstore(w->st + (size_t)(c0 + c) * rp + r0 + x * ATTN_VL, a[c][x]);
}

/* Scores of keys 0..nb-1 of the block (k points at the block's first key, this KV head). */
static void block_scores(tile_ws *w, const float *k, size_t ldk, int nb) {
    for (int r0 = 0; r0 < w->rows_p; r0 += MR) {
        int c0 = 0;
        for (; c0 + KC <= nb; c0 += KC) scores_micro(w, k, ldk, r0, c0, KC);
        for (; c0 < nb; c0++) scores_micro(w, k, ldk, r0, c0, 1);
    }
}

/* Mask keys j0..j0+nb-1 (when need_mask), then the online-softmax step: st becomes
 * exp(s - m_new); l and acc are rescaled by exp(m_old - m_new). */
static void block_softmax(tile_ws *w, int j0, int nb, int full, int window, int sinks, int need_mask) {
    const int rp = w->rows_p, hd = w->hd;
    for (int r = 0; r < rp; r += ATTN_VL) {
        attn_vf mx = vsplat(-INFINITY);
        attn_vi pos;
        memcpy(&pos, w->pos + r, sizeof pos);
        for (int c = 0; c < nb; c++) {
            float *sp = w->st + (size_t)c * rp + r;
            attn_vf s = vload(sp);
            if (need_mask) {
                const int j = j0 + c;
                attn_vi vis = ((attn_vi){0} + j) <= pos;
                if (!full) vis &= (((attn_vi){0} + j) > pos - window) | ((attn_vi){0} - (j < sinks));
                s = vselect(vis, s, vsplat(-INFINITY));
                vstore(sp, s);
            }
            mx = vselect(s > mx, s, mx);
        }
        attn_vf m_old = vload(w->m + r);
        attn_vf m_new = vselect(mx > m_old, mx, m_old);
        /* rows with nothing visible yet keep m = -inf; subtract 0 there so exp gives 0, not NaN */
        attn_vf m_sub = vselect(m_new == vsplat(-INFINITY), vsplat(0.0f), m_new);
        attn_vf corr = vexp2(m_old - m_sub);
        attn_vf sum = vsplat(0.0f);
        for (int c = 0; c < nb; c++) {
            float *sp = w->st + (size_t)c * rp + r;
            attn_vf p = vexp2(vload(sp) - m_sub);
            vstore(sp, p);
            sum += p;
        }
        vstore(w->l + r, vload(w->l + r) * corr + sum);
        vstore(w->m + r, m_new);
        attn_vi changed = m_new != m_old;
        int any = 0;
        for (int x = 0; x < ATTN_VL; x++) any |= changed[x];
        if (any)
            for (int d = 0; d < hd; d++) {
                float *ap = w->acc + (size_t)d * rp + r;
                vstore(ap, vload(ap) * corr);
            }
    }
}

/* acc[d0..d0+nd)[r0..r0+MR) += sum_{c<nb} v[c][d] · st[c][r0..r0+MR)  (nd = KC or 1). */
static inline __attribute__((always_inline)) void pv_micro(tile_ws *w, const float *v, size_t ldv, int nb,
                                                           int r0, int d0, int nd) {
    const int rp = w->rows_p;
    attn_vf a[KC][MV];
    for (int d = 0; d < nd; d++)
        for (int x = 0; x < MV; x++) a[d][x] = vload(w->acc + (size_t)(d0 + d) * rp + r0 + x * ATTN_VL);
    for (int c = 0; c < nb; c++) {
        attn_vf pv[MV];
        for (int x = 0; x < MV; x++) pv[x] = vload(w->st + (size_t)c * rp + r0 + x * ATTN_VL);
        for (int d = 0; d < nd; d++) {
            attn_vf b = vsplat(v[(size_t)c * ldv + d0 + d]);
            for (int x = 0; x < MV; x++) a[d][x] += b * pv[x];
        }
    }
    for (int d = 0; d < nd; d++)
        for (int x = 0; x < MV; x++) vstore(w->acc + (size_t)(d0 + d) * rp + r0 + x * ATTN_VL, a[d][x]);
}

static void block_pv(tile_ws *w, const float *v, size_t ldv, int nb) {
    for (int r0 = 0; r0 < w->rows_p; r0 += MR) {
        int d0 = 0;
        for (; d0 + KC <= w->hd; d0 += KC) pv_micro(w, v, ldv, nb, r0, d0, KC);
        for (; d0 < w->hd; d0++) pv_micro(w, v, ldv, nb, r0, d0, 1);
    }
}

typedef struct {
    const float *q, *k, *v;
    float *out;
    int n_tokens, n_head, n_head_kv, head_dim, group, window, sinks;
    const uint8_t *z_row;
} attn_args;

/* Keys [a, b) for the tile whose queries are [i0, i1). */
static void tile_segment(tile_ws *w, const attn_args *A, int g, int full, int i0, int i1, int a, int b) {
    const size_t ldk = (size_t)A->n_head_kv * A->head_dim;
    for (int j0 = a; j0 < b; j0 += BK) {
        int nb = b - j0 < BK ? b - j0 : BK;
        const float *kp = A->k + (size_t)j0 * ldk + (size_t)g * A->head_dim;
        const float *vp = A->v + (size_t)j0 * ldk + (size_t)g * A->head_dim;
        int all_causal = j0 + nb - 1 <= i0;
        int all_local = full || j0 > i1 - 1 - A->window || j0 + nb <= A->sinks;
        block_scores(w, kp, ldk, nb);
        block_softmax(w, j0, nb, full, A->window, A->sinks, !(all_causal && all_local));
        block_pv(w, vp, ldk, nb);
    }
}

static void tile_run(tile_ws *w, const attn_args *A, int g, int tile) {
    const int hd = A->head_dim, group = A->group, rp = w->rows_p;
    const int i0 = tile * BQ, i1 = i0 + BQ < A->n_tokens ? i0 + BQ : A->n_tokens, nq = i1 - i0;
    const size_t ldq = (size_t)A->n_head * hd;
    const float scale = 1.4426950408889634f / sqrtf((float)hd); /* log2(e)/sqrt(hd): base-2 scores */
    memset(w->qt, 0, (size_t)rp * hd * sizeof(float));
    memset(w->acc, 0, (size_t)rp * hd * sizeof(float));
    for (int r = 0; r < rp; r++) {
        w->m[r] = -INFINITY;
        w->l[r] = 0.0f;
        w->pos[r] = i1 - 1; /* padding rows act as the tile's last query; their output is dropped */
    }
    for (int hh = 0; hh < group; hh++)
        for (int t = 0; t < nq; t++) {
            int r = hh * BQ + t;
            const float *src = A->q + (size_t)(i0 + t) * ldq + (size_t)(g * group + hh) * hd;
            for (int d = 0; d < hd; d++) w->qt[(size_t)d * rp + r] = src[d] * scale;
            w->pos[r] = i0 + t;
        }
    const int full = A->z_row[g] != 0;
    int lo = full ? 0 : i0 - A->window + 1;
    if (lo < 0) lo = 0;
    int sink_end = full ? 0 : (A->sinks < lo ? A->sinks : lo);
    if (sink_end > 0) tile_segment(w, A, g, full, i0, i1, 0, sink_end);
    tile_segment(w, A, g, full, i0, i1, lo, i1);
    for (int hh = 0; hh < group; hh++)
        for (int t = 0; t < nq; t++) {
            int r = hh * BQ + t;
            float inv = 1.0f / w->l[r];
            float *dst = A->out + (size_t)(i0 + t) * ldq + (size_t)(g * group + hh) * hd;
            for (int d = 0; d < hd; d++) dst[d] = w->acc[(size_t)d * rp + r] * inv;
        }
}

void attn_prefill_hybrid(const float *q, const float *k, const float *v, float *out, int n_tokens, int n_head,
                         int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks) {
    if (n_tokens <= 0) return;
    attn_args A = {q,
                   k,
                   v,
                   out,
                   n_tokens,
                   n_head,
                   n_head_kv,
                   head_dim,
                   n_head / n_head_kv,
                   window < 1 ? 1 : window,
                   sinks < 0 ? 0 : sinks,
                   z_row};
    const int n_tiles = (n_tokens + BQ - 1) / BQ;
    const int n_items = n_tiles * n_head_kv;
#pragma omp parallel
    {
        tile_ws w;
        int ok = tile_ws_alloc(&w, A.group, head_dim) == 0;
        /* largest tiles (the last queries of full heads) first, for load balance */
#pragma omp for schedule(dynamic, 1)
        for (int it = 0; it < n_items; it++) {
            int tile = n_tiles - 1 - it / n_head_kv, g = it % n_head_kv;
            if (ok) {
                tile_run(&w, &A, g, tile);
            } else { /* out of memory: make the failure visible instead of leaving garbage */
                int i0 = tile * BQ, i1 = i0 + BQ < n_tokens ? i0 + BQ : n_tokens;
                for (int i = i0; i < i1; i++)
                    for (int hh = 0; hh < A.group; hh++)
                        for (int d = 0; d < head_dim; d++)
                            out[(size_t)i * n_head * head_dim + (size_t)(g * A.group + hh) * head_dim + d] =
                                NAN;
            }
        }
        if (ok) free(w.qt);
    }
}

int attn_kv_elem_bytes(attn_kv_type t) {
    return t == ATTN_KV_BF16 ? 2 : 4;
}

const char *attn_kv_type_name(attn_kv_type t) {
    return t == ATTN_KV_BF16 ? "bf16" : "fp32";
}

int attn_kv_type_parse(const char *s, attn_kv_type *out) {
    if (s && !strcmp(s, "fp32"))
        *out = ATTN_KV_FP32;
    else if (s && !strcmp(s, "bf16"))
        *out = ATTN_KV_BF16;
    else
        return -1;
    return 0;
}

void attn_prefill(attn_kv_type type, const float *q, const float *k, const float *v, float *out, int n_tokens,
                  int n_head, int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks) {
    if (type != ATTN_KV_BF16) {
        attn_prefill_hybrid(q, k, v, out, n_tokens, n_head, n_head_kv, head_dim, z_row, window, sinks);
        return;
    }
    if (n_tokens <= 0) return;
    const size_t n = (size_t)n_tokens * n_head_kv * head_dim;
    uint16_t *kb = malloc(2 * n * sizeof(uint16_t));
    if (!kb) {
        for (size_t i = 0; i < (size_t)n_tokens * n_head * head_dim; i++) out[i] = NAN;
        return;
    }
    attn_round_bf16(k, kb, n);
    attn_round_bf16(v, kb + n, n);
    attn_prefill_bf16(q, kb, kb + n, out, n_tokens, n_head, n_head_kv, head_dim, z_row, window, sinks);
    free(kb);
}

/* ---- decode: one query position against cached keys ---- */

enum { DCH = 256 }; /* slots per decode chunk (fixed, so results do not depend on threads) */

/* Sum of the lanes of a, by halving (one shuffle and add per step). */
static inline float vsum(attn_vf a) {
#if ATTN_VL == 16
    typedef float v8 __attribute__((vector_size(32)));
    v8 h = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
           __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    typedef float v8 __attribute__((vector_size(32)));
    v8 h = a;
#endif
    typedef float v4 __attribute__((vector_size(16)));
    v4 f = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
    f = f + __builtin_shufflevector(f, f, 2, 3, 0, 1);
    return f[0] + f[1];
}

enum { DH = 4, DMAXV = 256 / ATTN_VL }; /* query heads per pass; vectors of the widest head_dim */

/* Partial softmax state of one chunk: m, l and acc[hd] for each query head of the group (scores
 * in base 2, as in prefill). The query heads of the group go DH at a time, so each key and value
 * row is read once per DH heads. */
static void decode_chunk(const float *q, const float *k, const float *v, int s0, int s1, int group, int hd,
                         float *part) {
    const float scale = 1.4426950408889634f / sqrtf((float)hd); /* log2(e)/sqrt(hd) */
    const int nvec = hd / ATTN_VL, n = s1 - s0;
    float sc[DH][DCH] __attribute__((aligned(64)));
    for (int h0 = 0; h0 < group; h0 += DH) {
        const int nh = group - h0 < DH ? group - h0 : DH;
        float mx[DH];
        for (int hh = 0; hh < nh; hh++) mx[hh] = -INFINITY;
        for (int s = 0; s < n; s++) {
            const float *ks = k + (size_t)(s0 + s) * hd;
            for (int hh = 0; hh < nh; hh++) {
                const float *qh = q + (size_t)(h0 + hh) * hd;
                attn_vf a = vsplat(0.0f);
                for (int x = 0; x < nvec; x++) a += vload(qh + x * ATTN_VL) * vload(ks + x * ATTN_VL);
                float dot = vsum(a);
                for (int d = nvec * ATTN_VL; d < hd; d++) dot += qh[d] * ks[d];
                sc[hh][s] = dot * scale;
                mx[hh] = sc[hh][s] > mx[hh] ? sc[hh][s] : mx[hh];
            }
        }
        float l[DH];
        for (int hh = 0; hh < nh; hh++) { /* probabilities 2^(s - m), a vector at a time */
            attn_vf sum = vsplat(0.0f);
            int s = 0;
            for (; s + ATTN_VL <= n; s += ATTN_VL) {
                attn_vf p = vexp2(vload(&sc[hh][s]) - mx[hh]);
                vstore(&sc[hh][s], p);
                sum += p;
            }
            l[hh] = vsum(sum);
            for (; s < n; s++) l[hh] += sc[hh][s] = exp2f(sc[hh][s] - mx[hh]);
        }
        if (nvec <= DMAXV && nvec * ATTN_VL == hd) {
            attn_vf acc[DH][DMAXV];
            for (int hh = 0; hh < nh; hh++)
                for (int x = 0; x < nvec; x++) acc[hh][x] = vsplat(0.0f);
            for (int s = 0; s < n; s++) {
                const float *vs = v + (size_t)(s0 + s) * hd;
                for (int hh = 0; hh < nh; hh++) {
                    const attn_vf p = vsplat(sc[hh][s]);
                    for (int x = 0; x < nvec; x++) acc[hh][x] += p * vload(vs + x * ATTN_VL);
                }
            }
            for (int hh = 0; hh < nh; hh++)
                for (int x = 0; x < nvec; x++)
                    vstore(part + (size_t)(h0 + hh) * (hd + 2) + 2 + x * ATTN_VL, acc[hh][x]);
        } else { /* a head_dim that is not a whole number of vectors */
            for (int hh = 0; hh < nh; hh++) {
                float *acc = part + (size_t)(h0 + hh) * (hd + 2) + 2;
                memset(acc, 0, (size_t)hd * sizeof(float));
                for (int s = 0; s < n; s++) {
                    const float *vs = v + (size_t)(s0 + s) * hd;
                    for (int d = 0; d < hd; d++) acc[d] += sc[hh][s] * vs[d];
                }
            }
        }
        for (int hh = 0; hh < nh; hh++) {
            part[(size_t)(h0 + hh) * (hd + 2)] = mx[hh];
            part[(size_t)(h0 + hh) * (hd + 2) + 1] = l[hh];
        }
    }
}

int attn_decode_plan(const attn_kv_span *spans, int n_head_kv, int *first) {
    int n_items = 0;
    for (int g = 0; g < n_head_kv; g++) {
        first[g] = n_items;
        for (int r = 0; r < 2; r++) {
            int n = spans[g].hi[r] - spans[g].lo[r];
            if (n > 0) n_items += (n + DCH - 1) / DCH;
        }
    }
    first[n_head_kv] = n_items;
    return n_items;
}

size_t attn_decode_part_floats(int n_head, int n_head_kv, int head_dim) {
    return (size_t)(n_head / n_head_kv) * (size_t)(head_dim + 2);
}

void attn_decode_item(const float *q, int n_head, int n_head_kv, int head_dim, const attn_kv_span *spans,
                      const int *first, int it, float *part) {
    const int group = n_head / n_head_kv, hd = head_dim;
    int g = 0;
    while (first[g + 1] <= it) g++;
    int c = it - first[g]; /* chunk index within this KV head's ranges */
    for (int r = 0; r < 2; r++) {
        int n = spans[g].hi[r] - spans[g].lo[r];
        int nc = n > 0 ? (n + DCH - 1) / DCH : 0;
        if (c < nc) {
            int s0 = spans[g].lo[r] + c * DCH, s1 = s0 + DCH < spans[g].hi[r] ? s0 + DCH : spans[g].hi[r];
            const float *qg = q + (size_t)g * group * hd;
            float *pt = part + (size_t)it * attn_decode_part_floats(n_head, n_head_kv, head_dim);
            if (spans[g].type == ATTN_KV_BF16)
                attn_bf16_decode_chunk(qg, spans[g].k, spans[g].v, s0, s1, group, hd, pt);
            else
                decode_chunk(qg, spans[g].k, spans[g].v, s0, s1, group, hd, pt);
            return;
        }
        c -= nc;
    }
}

void attn_decode_merge(int g, int n_head, int n_head_kv, int head_dim, const int *first, const float *part,
                       float *out) {
    const int group = n_head / n_head_kv, hd = head_dim;
    const size_t psz = attn_decode_part_floats(n_head, n_head_kv, head_dim);
    for (int hh = 0; hh < group; hh++) { /* combine the chunks in order */
        float *o = out + (size_t)(g * group + hh) * hd;
        float mx = -INFINITY, l = 0.0f;
        for (int it = first[g]; it < first[g + 1]; it++) {
            float m = part[(size_t)it * psz + (size_t)hh * (hd + 2)];
            mx = m > mx ? m : mx;
        }
        for (int d = 0; d < hd; d++) o[d] = 0.0f;
        for (int it = first[g]; it < first[g + 1]; it++) {
            const float *pm = part + (size_t)it * psz + (size_t)hh * (hd + 2);
            float f = exp2f(pm[0] - mx); /* base-2 scores */
            l += pm[1] * f;
            for (int d = 0; d < hd; d++) o[d] += pm[2 + d] * f;
        }
        float inv = l > 0.0f ? 1.0f / l : NAN;
        for (int d = 0; d < hd; d++) o[d] *= inv;
    }
}

void attn_decode_hybrid(const float *q, float *out, int n_head, int n_head_kv, int head_dim,
                        const attn_kv_span *spans) {
    const size_t psz = attn_decode_part_floats(n_head, n_head_kv, head_dim);
    float *part = NULL;
    int *first = malloc(sizeof(int) * (size_t)(n_head_kv + 1));
    if (!first) goto fail;
    const int n_items = attn_decode_plan(spans, n_head_kv, first);
    int n_slots = 0;
    for (int g = 0; g < n_head_kv; g++)
        for (int r = 0; r < 2; r++)
            n_slots += spans[g].hi[r] > spans[g].lo[r] ? spans[g].hi[r] - spans[g].lo[r] : 0;
    part = malloc(sizeof(float) * psz * (size_t)(n_items > 0 ? n_items : 1));
    if (!part) goto fail;
#pragma omp parallel for schedule(dynamic, 1) if (n_slots >= 4 * DCH)
    for (int it = 0; it < n_items; it++)
        attn_decode_item(q, n_head, n_head_kv, head_dim, spans, first, it, part);
    for (int g = 0; g < n_head_kv; g++) attn_decode_merge(g, n_head, n_head_kv, head_dim, first, part, out);
    free(part);
    free(first);
    return;
fail:
    free(first);
    for (size_t i = 0; i < (size_t)n_head * head_dim; i++) out[i] = NAN;
}
