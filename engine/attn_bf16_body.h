/* attn_bf16_body.h — the bf16 attention kernels (prefill tiles, decode chunks), included by
 * attn_bf16.c once per instruction set with:
 *   AB_SUFFIX  name suffix (_avx512, _avx2, _portable)
 *   AB_VL      fp32 lanes per vector (16, 8, 4)
 *   AB_DOT2(acc, a, b)  acc + a.hi*b.hi + a.lo*b.lo per 32-bit lane, where a and b hold two bf16
 *              values each (lo = bits 0..15, hi = bits 16..31), fp32 accumulation: vdpbf16ps, or
 *              its emulation by two FMAs (each bf16 product is exact in fp32).
 *   AB_MAX(a, b)  per lane a > b ? a : b (one vmaxps where there is one).
 * Layout conventions (attn_bf16.c): a "pair word" is a uint32 of two bf16 values along the
 * reduction dimension, lo first. Scores are in base 2 (queries scaled by log2(e)/sqrt(head_dim)).
 */
#define AB_CAT2(a, b) a##b
#define AB_CAT(a, b) AB_CAT2(a, b)
#define AB(name) AB_CAT(name, AB_SUFFIX)
#define VF AB(vf_)
#define VI AB(vi_)

typedef float VF __attribute__((vector_size(AB_VL * 4)));
typedef int32_t VI __attribute__((vector_size(AB_VL * 4)));

#define AB_INLINE static inline __attribute__((always_inline))

AB_INLINE VF AB(ldf)(const float *p) {
    VF v;
    memcpy(&v, p, sizeof v);
    return v;
}
AB_INLINE void AB(stf)(float *p, VF v) {
    memcpy(p, &v, sizeof v);
}
AB_INLINE VI AB(ldi)(const void *p) {
    VI v;
    memcpy(&v, p, sizeof v);
    return v;
}
AB_INLINE void AB(sti)(void *p, VI v) {
    memcpy(p, &v, sizeof v);
}
AB_INLINE VF AB(splatf)(float x) {
    return (VF){0} + x;
}
AB_INLINE VI AB(splati)(int32_t x) {
    return (VI){0} + x;
}
AB_INLINE VF AB(selectf)(VI m, VF a, VF b) {
    return (VF)(((VI)a & m) | ((VI)b & ~m));
}
/* fp32 -> bf16 bits by round to nearest even, kept in the high half (low half zero); finite
 * inputs only (scores, probabilities and scaled queries). */
AB_INLINE VI AB(round_hi)(VF x) {
    VI u = (VI)x;
    return (u + 0x7FFF + ((u >> 16) & 1)) & (int32_t)0xFFFF0000u;
}

/* 2^x, as attention.c's vexp2 but to degree 5 (relative error < 3e-6, far below the 2^-9 of
 * the bf16 rounding every probability gets next); lanes below -126 give 0. */
AB_INLINE VF AB(exp2)(VF x) {
    const float magic = 12582912.0f; /* 1.5·2^23 */
    VI under = x < -126.0f;
    x = AB(selectf)(under, AB(splatf)(-126.0f), x);
    x = AB(selectf)(x > 127.0f, AB(splatf)(127.0f), x);
    VF t = x + magic;
    VF r = x - (t - magic);
    VF p = AB(splatf)(1.3333558146428443e-03f);
    p = p * r + 9.6181291076284772e-03f;
    p = p * r + 5.5504108664821580e-02f;
    p = p * r + 2.4022650695910071e-01f;
    p = p * r + 6.9314718055994531e-01f;
    p = p * r + 1.0f;
    VI ni = (VI)t - (VI)AB(splatf)(magic);
    VF y = p * (VF)((ni + 127) << 23);
    return (VF)((VI)y & ~under);
}

/* Sum of the lanes, by halving (a shuffle and an add per step, not VL dependent adds). */
AB_INLINE float AB(hsum)(VF a) {
    typedef float v4 __attribute__((vector_size(16)));
#if AB_VL == 16
    typedef float v8 __attribute__((vector_size(32)));
    v8 h = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
           __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
    v4 f = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
#elif AB_VL == 8
    v4 f = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
#else
    v4 f = a;
#endif
    f = f + __builtin_shufflevector(f, f, 2, 3, 0, 1);
    return f[0] + f[1];
}

/* ---- prefill: one (KV head, query tile) --------------------------------------------------- */

/* Register micro-tile: mv vectors of rows (3 where the rows allow and the registers suffice: 24
 * accumulators of AVX-512's 32) by KC keys or dimensions. */
enum { AB(MVMAX) = AB_VL == 16 ? 3 : 2, AB(KC) = AB_VL == 16 ? 8 : 4, AB(DMAX) = 128 / AB_VL };

/* st[c0+c][r0..r0+MR) = sum over pair words w of qp[w][r] · k[c0+c][2w..2w+1], keys c < nk. */
AB_INLINE void AB(scores_micro)(ab_tile *w, const uint16_t *k, size_t ldk, int r0, int c0, int nk,
                                const int hd, const int mv) {
    const int rp = w->rows_p;
    VF a[AB(KC)][AB(MVMAX)];
    for (int c = 0; c < nk; c++)
        for (int x = 0; x < mv; x++) a[c][x] = AB(splatf)(0.0f);
    for (int p = 0; p < hd / 2; p++) {
        VI qv[AB(MVMAX)];
        for (int x = 0; x < mv; x++) qv[x] = AB(ldi)(w->qp + (size_t)p * rp + r0 + x * AB_VL);
        for (int c = 0; c < nk; c++) {
            uint32_t kw;
            memcpy(&kw, k + (size_t)(c0 + c) * ldk + 2 * p, 4);
            VI b = AB(splati)((int32_t)kw);
            for (int x = 0; x < mv; x++) a[c][x] = AB_DOT2(a[c][x], qv[x], b);
        }
    }
    for (int c = 0; c < nk; c++)
        for (int x = 0; x < mv; x++) AB(stf)(w->st + (size_t)(c0 + c) * rp + r0 + x * AB_VL, a[c][x]);
}

/* vp[c/2][d'] for keys 0..nb-1 of the block: pair words (v[c][d], v[c+1][d]), d' = (d odd)·hd/2 +
 * d/2 (even dimensions first: built without shuffles); a missing key c+1 = nb contributes 0. */
AB_INLINE void AB(pack_v)(ab_tile *w, const uint16_t *v, size_t ldv, int nb, const int hd) {
    const int half = hd / 2;
    for (int c = 0; c < nb; c += 2) {
        const uint16_t *r0 = v + (size_t)c * ldv, *r1 = c + 1 < nb ? r0 + ldv : NULL;
        uint32_t *dst = w->vp + (size_t)(c / 2) * hd;
        int p = 0;
        for (; p + AB_VL <= half; p += AB_VL) {
            VI a = AB(ldi)(r0 + 2 * p), b = r1 ? AB(ldi)(r1 + 2 * p) : AB(splati)(0);
            AB(sti)(dst + p, (a & 0xFFFF) | (b << 16));
            AB(sti)(dst + half + p, ((a >> 16) & 0xFFFF) | (b & (int32_t)0xFFFF0000u));
        }
        for (; p < half; p++) {
            uint32_t lo0 = r0[2 * p], hi0 = r0[2 * p + 1];
            uint32_t lo1 = r1 ? r1[2 * p] : 0, hi1 = r1 ? r1[2 * p + 1] : 0;
            dst[p] = lo0 | lo1 << 16;
            dst[half + p] = hi0 | hi1 << 16;
        }
    }
}

/* Mask keys j0..j0+nb-1 (need_mask), then the online-softmax step: pp gets the probabilities
 * 2^(s - m_new) rounded to bf16 as pair words of consecutive keys; l (sum of the rounded
 * probabilities) and acc are rescaled by 2^(m_old - m_new). */
AB_INLINE void AB(block_softmax)(ab_tile *w, int j0, int nb, int full, int window, int sinks, int need_mask,
                                 const int hd) {
    const int rp = w->rows_p;
    for (int r = 0; r < rp; r += AB_VL) {
        VF mx = AB(splatf)(-INFINITY), mx2 = mx; /* two chains: the max's latency, not its count */
        VI pos = AB(ldi)(w->pos + r);
        if (need_mask)
            for (int c = 0; c < nb; c++) {
                float *sp = w->st + (size_t)c * rp + r;
                const int j = j0 + c;
                VI vis = AB(splati)(j) <= pos;
                if (!full) vis &= (AB(splati)(j) > pos - window) | AB(splati)(-(j < sinks));
                VF s = AB(selectf)(vis, AB(ldf)(sp), AB(splatf)(-INFINITY));
                AB(stf)(sp, s);
                mx = AB_MAX(s, mx);
            }
        else {
            int c = 0;
            for (; c + 1 < nb; c += 2) {
                mx = AB_MAX(AB(ldf)(w->st + (size_t)c * rp + r), mx);
                mx2 = AB_MAX(AB(ldf)(w->st + (size_t)(c + 1) * rp + r), mx2);
            }
            if (c < nb) mx = AB_MAX(AB(ldf)(w->st + (size_t)c * rp + r), mx);
            mx = AB_MAX(mx2, mx);
        }
        VF m_old = AB(ldf)(w->m + r);
        VF m_new = AB(selectf)(mx > m_old, mx, m_old);
        VF m_sub = AB(selectf)(m_new == AB(splatf)(-INFINITY), AB(splatf)(0.0f), m_new);
        VF corr = AB(exp2)(m_old - m_sub);
        VF sum = AB(splatf)(0.0f);
        for (int c = 0; c < nb; c += 2) {
            VI u0 = AB(round_hi)(AB(exp2)(AB(ldf)(w->st + (size_t)c * rp + r) - m_sub));
            VI u1 = c + 1 < nb ? AB(round_hi)(AB(exp2)(AB(ldf)(w->st + (size_t)(c + 1) * rp + r) - m_sub))
                               : AB(splati)(0);
            sum += (VF)u0 + (VF)u1;
            AB(sti)(w->pp + (size_t)(c / 2) * rp + r, ((u0 >> 16) & 0xFFFF) | u1);
        }
        AB(stf)(w->l + r, AB(ldf)(w->l + r) * corr + sum);
        AB(stf)(w->m + r, m_new);
        VI changed = m_new != m_old;
        int any = 0;
        for (int x = 0; x < AB_VL; x++) any |= changed[x];
        if (any)
            for (int d = 0; d < hd; d++) {
                float *ap = w->acc + (size_t)d * rp + r;
                AB(stf)(ap, AB(ldf)(ap) * corr);
            }
    }
}

/* acc[d0+d][r0..r0+MR) += sum over key pairs of pp[cp][r] · vp[cp][d0+d], d < nd. */
AB_INLINE void AB(pv_micro)(ab_tile *w, int ncp, int r0, int d0, int nd, const int hd, const int mv) {
    const int rp = w->rows_p;
    VF a[AB(KC)][AB(MVMAX)];
    for (int d = 0; d < nd; d++)
        for (int x = 0; x < mv; x++) a[d][x] = AB(ldf)(w->acc + (size_t)(d0 + d) * rp + r0 + x * AB_VL);
    for (int cp = 0; cp < ncp; cp++) {
        VI pv[AB(MVMAX)];
        for (int x = 0; x < mv; x++) pv[x] = AB(ldi)(w->pp + (size_t)cp * rp + r0 + x * AB_VL);
        for (int d = 0; d < nd; d++) {
            VI b = AB(splati)((int32_t)w->vp[(size_t)cp * hd + d0 + d]);
            for (int x = 0; x < mv; x++) a[d][x] = AB_DOT2(a[d][x], pv[x], b);
        }
    }
    for (int d = 0; d < nd; d++)
        for (int x = 0; x < mv; x++) AB(stf)(w->acc + (size_t)(d0 + d) * rp + r0 + x * AB_VL, a[d][x]);
}

AB_INLINE void AB(block_scores)(ab_tile *w, const uint16_t *kp, size_t ld, int nb, const int hd,
                                const int mv) {
    for (int r0 = 0; r0 < w->rows_p; r0 += mv * AB_VL) {
        int c0 = 0;
        for (; c0 + AB(KC) <= nb; c0 += AB(KC)) AB(scores_micro)(w, kp, ld, r0, c0, AB(KC), hd, mv);
        for (; c0 < nb; c0++) AB(scores_micro)(w, kp, ld, r0, c0, 1, hd, mv);
    }
}

AB_INLINE void AB(block_pv)(ab_tile *w, int ncp, const int hd, const int mv) {
    for (int r0 = 0; r0 < w->rows_p; r0 += mv * AB_VL) {
        int d0 = 0;
        for (; d0 + AB(KC) <= hd; d0 += AB(KC)) AB(pv_micro)(w, ncp, r0, d0, AB(KC), hd, mv);
        for (; d0 < hd; d0++) AB(pv_micro)(w, ncp, r0, d0, 1, hd, mv);
    }
}

/* Keys [a, b) of KV head g for the tile of queries [i0, i1). */
AB_INLINE void AB(segment)(ab_tile *w, const ab_args *A, int g, int full, int i0, int i1, int a, int b,
                           const int hd) {
    const size_t ld = (size_t)A->n_head_kv * hd;
    for (int j0 = a; j0 < b; j0 += AB_BK) {
        const int nb = b - j0 < AB_BK ? b - j0 : AB_BK;
        const uint16_t *kp = A->k + (size_t)j0 * ld + (size_t)g * hd;
        const uint16_t *vp = A->v + (size_t)j0 * ld + (size_t)g * hd;
        const int all_causal = j0 + nb - 1 <= i0;
        const int all_local = full || j0 > i1 - 1 - A->window || j0 + nb <= A->sinks;
        if (w->rows_p % (AB(MVMAX) * AB_VL) == 0)
            AB(block_scores)(w, kp, ld, nb, hd, AB(MVMAX));
        else
            AB(block_scores)(w, kp, ld, nb, hd, 2);
        AB(block_softmax)(w, j0, nb, full, A->window, A->sinks, !(all_causal && all_local), hd);
        AB(pack_v)(w, vp, ld, nb, hd);
        const int ncp = (nb + 1) / 2;
        if (w->rows_p % (AB(MVMAX) * AB_VL) == 0)
            AB(block_pv)(w, ncp, hd, AB(MVMAX));
        else
            AB(block_pv)(w, ncp, hd, 2);
    }
}

AB_INLINE void AB(tile_impl)(ab_tile *w, const ab_args *A, int g, int tile, const int hd) {
    const int group = A->group, rp = w->rows_p, half = hd / 2;
    const int i0 = tile * AB_BQ, i1 = i0 + AB_BQ < A->n_tokens ? i0 + AB_BQ : A->n_tokens, nq = i1 - i0;
    ab_tile_reset(w, A, g, i0, nq);
    const int full = A->z_row[g] != 0;
    int lo = full ? 0 : i0 - A->window + 1;
    if (lo < 0) lo = 0;
    const int sink_end = full ? 0 : (A->sinks < lo ? A->sinks : lo);
    if (sink_end > 0) AB(segment)(w, A, g, full, i0, i1, 0, sink_end, hd);
    AB(segment)(w, A, g, full, i0, i1, lo, i1, hd);
    const size_t ldq = (size_t)A->n_head * hd;
    for (int hh = 0; hh < group; hh++)
        for (int t = 0; t < nq; t++) {
            const int r = hh * AB_BQ + t;
            const float inv = 1.0f / w->l[r];
            float *dst = A->out + (size_t)(i0 + t) * ldq + (size_t)(g * group + hh) * hd;
            for (int p = 0; p < half; p++) {
                dst[2 * p] = w->acc[(size_t)p * rp + r] * inv;
                dst[2 * p + 1] = w->acc[(size_t)(half + p) * rp + r] * inv;
            }
        }
}

static void AB(tile_run)(ab_tile *w, const ab_args *A, int g, int tile) {
    if (A->head_dim == 64)
        AB(tile_impl)(w, A, g, tile, 64);
    else if (A->head_dim == 128)
        AB(tile_impl)(w, A, g, tile, 128);
    else
        AB(tile_impl)(w, A, g, tile, A->head_dim);
}

/* ---- decode: one chunk of slots [s0, s1) of one KV head, every query head of its group ------ */

AB_INLINE void AB(chunk_impl)(const uint32_t *qw, const uint16_t *k, const uint16_t *v, int s0, int s1,
                              int group, float *part, const int hd) {
    const int half = hd / 2, n = s1 - s0;
    const int nvec = half / AB_VL < AB(DMAX) ? half / AB_VL : AB(DMAX); /* the rest: scalar */
    float sc[AB_DH][AB_DCH] __attribute__((aligned(64)));
    for (int h0 = 0; h0 < group; h0 += AB_DH) {
        const int nh = group - h0 < AB_DH ? group - h0 : AB_DH;
        float mx[AB_DH];
        for (int hh = 0; hh < nh; hh++) mx[hh] = -INFINITY;
        for (int s = 0; s < n; s++) { /* scores: one key row against each query head */
            const uint16_t *ks = k + (size_t)(s0 + s) * hd;
            if (s + AB_PF < n) /* a few rows ahead: the cache streams from memory */
                for (int b = 0; b < hd * 2; b += 64) __builtin_prefetch((const char *)(ks + AB_PF * hd) + b);
            for (int hh = 0; hh < nh; hh++) {
                const uint32_t *qh = qw + (size_t)(h0 + hh) * half;
                VF a = AB(splatf)(0.0f);
                for (int x = 0; x < nvec; x++)
                    a = AB_DOT2(a, AB(ldi)(qh + x * AB_VL), AB(ldi)(ks + 2 * x * AB_VL));
                float dot = AB(hsum)(a);
                for (int p = nvec * AB_VL; p < half; p++)
                    dot = ab_dot2_scalar(dot, qh[p], (uint32_t)ks[2 * p] | (uint32_t)ks[2 * p + 1] << 16);
                sc[hh][s] = dot;
                mx[hh] = dot > mx[hh] ? dot : mx[hh];
            }
        }
        float l[AB_DH];
        for (int hh = 0; hh < nh; hh++) { /* probabilities, rounded to bf16 (kept as fp32 values) */
            VF sum = AB(splatf)(0.0f);
            int s = 0;
            for (; s + AB_VL <= n; s += AB_VL) {
                VF p = (VF)AB(round_hi)(AB(exp2)(AB(ldf)(&sc[hh][s]) - mx[hh]));
                AB(stf)(&sc[hh][s], p);
                sum += p;
            }
            l[hh] = AB(hsum)(sum);
            for (; s < n; s++) l[hh] += sc[hh][s] = ab_bf16_round(exp2f(sc[hh][s] - mx[hh]));
        }
        /* P·V over pairs of slots: acc_e holds the even dimensions, acc_o the odd ones */
        VF acc[AB_DH][2][AB(DMAX)];
        for (int hh = 0; hh < nh; hh++)
            for (int x = 0; x < nvec; x++) acc[hh][0][x] = acc[hh][1][x] = AB(splatf)(0.0f);
        float *tail = part + 2; /* the dimensions past nvec vectors, per head, accumulated in scalar */
        for (int hh = 0; hh < nh; hh++)
            for (int d = 2 * nvec * AB_VL; d < hd; d++) tail[(size_t)(h0 + hh) * (hd + 2) + d] = 0.0f;
        for (int s = 0; s < n; s += 2) {
            const uint16_t *v0 = v + (size_t)(s0 + s) * hd, *v1 = s + 1 < n ? v0 + hd : NULL;
            if (s + AB_PF + 1 < n)
                for (int b = 0; b < hd * 4; b += 64) __builtin_prefetch((const char *)(v0 + AB_PF * hd) + b);
            uint32_t pw[AB_DH];
            for (int hh = 0; hh < nh; hh++) {
                uint32_t p0, p1 = 0;
                memcpy(&p0, &sc[hh][s], 4);
                if (v1) memcpy(&p1, &sc[hh][s + 1], 4);
                pw[hh] = p0 >> 16 | (p1 & 0xFFFF0000u);
            }
            for (int x = 0; x < nvec; x++) {
                VI a = AB(ldi)(v0 + 2 * x * AB_VL), b = v1 ? AB(ldi)(v1 + 2 * x * AB_VL) : AB(splati)(0);
                VI ve = (a & 0xFFFF) | (b << 16), vo = ((a >> 16) & 0xFFFF) | (b & (int32_t)0xFFFF0000u);
                for (int hh = 0; hh < nh; hh++) {
                    VI pv = AB(splati)((int32_t)pw[hh]);
                    acc[hh][0][x] = AB_DOT2(acc[hh][0][x], ve, pv);
                    acc[hh][1][x] = AB_DOT2(acc[hh][1][x], vo, pv);
                }
            }
            for (int d = 2 * nvec * AB_VL; d < hd; d++)
                for (int hh = 0; hh < nh; hh++) {
                    uint32_t vw = (uint32_t)v0[d] | (v1 ? (uint32_t)v1[d] << 16 : 0u);
                    float *t = &tail[(size_t)(h0 + hh) * (hd + 2) + d];
                    *t = ab_dot2_scalar(*t, pw[hh], vw);
                }
        }
        for (int hh = 0; hh < nh; hh++) {
            float *o = part + (size_t)(h0 + hh) * (hd + 2);
            o[0] = mx[hh];
            o[1] = l[hh];
            for (int x = 0; x < nvec; x++)
                for (int i = 0; i < AB_VL; i++) {
                    o[2 + 2 * (x * AB_VL + i)] = acc[hh][0][x][i];
                    o[2 + 2 * (x * AB_VL + i) + 1] = acc[hh][1][x][i];
                }
        }
    }
}

static void AB(decode_chunk)(const uint32_t *qw, const uint16_t *k, const uint16_t *v, int s0, int s1,
                             int group, float *part, int hd) {
    if (hd == 64)
        AB(chunk_impl)(qw, k, v, s0, s1, group, part, 64);
    else if (hd == 128)
        AB(chunk_impl)(qw, k, v, s0, s1, group, part, 128);
    else
        AB(chunk_impl)(qw, k, v, s0, s1, group, part, hd);
}

#undef VF
#undef VI
#undef AB
#undef AB_CAT
#undef AB_CAT2
#undef AB_INLINE
