/* qdot_x86_body.h — the x86 SIMD dot-product kernels, written once and compiled twice by qdot_x86.c:
 * for AVX2 (QD_SUFFIX _avx2, the u8 x s8 product by vpmaddubsw + vpmaddwd) and for AVX-512 VNNI
 * (QD_SUFFIX _avx512, the product by vpdpbusd on 256-bit registers). The file that includes it
 * sets the target with SIMD_TARGET_BEGIN (simd_target.h) and defines QD_SUFFIX and
 * QD_DOT(u8 codes, s8 codes), which returns 8 int32 lanes, lane i = sum of the products of bytes
 * 4i..4i+3. Both products are exact for the ranges used here (codes <= 128 times activations
 * <= 127), so both levels produce the same integer block sums as the portable kernels in qdot.c. */

#define QD_CAT2(a, b) a##b
#define QD_CAT(a, b) QD_CAT2(a, b)
#define QD(name) QD_CAT(name, QD_SUFFIX)

static inline float QD(hsum)(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float QD(h2f)(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* 16 bytes of nibbles -> 32 codes: low nibbles (elements 0..15) then high nibbles (16..31). */
static inline __m256i QD(nib32)(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
    return _mm256_set_m128i(hi, lo);
}

static inline __m256i QD(act)(const qdot_act_block *a) {
    return _mm256_loadu_si256((const __m256i *)a->q);
}

static float QD(dot_f32)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    const float *w = (const float *)(const void *)row;
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(xf + i), acc);
    float s = QD(hsum)(acc);
    for (; i < n; i++) s += w[i] * xf[i];
    return s;
}

static float QD(dot_f16)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 w = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i)));
        acc = _mm256_fmadd_ps(w, _mm256_loadu_ps(xf + i), acc);
    }
    float s = QD(hsum)(acc);
    for (; i < n; i++) s += QD(h2f)(row + 2 * i) * xf[i];
    return s;
}

static float QD(dot_bf16)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xq;
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + 2 * i)));
        __m256 w = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
        acc = _mm256_fmadd_ps(w, _mm256_loadu_ps(xf + i), acc);
    }
    float s = QD(hsum)(acc);
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, row + 2 * i, 2);
        uint32_t b = (uint32_t)h << 16;
        float f;
        memcpy(&f, &b, 4);
        s += f * xf[i];
    }
    return s;
}

static float QD(dot_q4_0)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    __m256 acc = _mm256_setzero_ps();
    float off = 0.0f;
    for (int b = 0; b < n / 32; b++, row += 18) {
        const float d = QD(h2f)(row);
        const __m256i s = QD_DOT(QD(nib32)(row + 2), QD(act)(&xq[b]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * xq[b].d), acc);
        off += d * xq[b].s;
    }
    return QD(hsum)(acc) - 8.0f * off;
}

static float QD(dot_q4_1)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    __m256 acc = _mm256_setzero_ps();
    float off = 0.0f;
    for (int b = 0; b < n / 32; b++, row += 20) {
        const float d = QD(h2f)(row), m = QD(h2f)(row + 2);
        const __m256i s = QD_DOT(QD(nib32)(row + 4), QD(act)(&xq[b]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * xq[b].d), acc);
        off += m * xq[b].s;
    }
    return QD(hsum)(acc) + off;
}

static float QD(dot_q8_0)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < n / 32; b++, row += 34) {
        const __m256i w = _mm256_loadu_si256((const __m256i *)(row + 2));
        /* s8 x s8 as |w| (u8) x sign(w)*a (s8) */
        const __m256i s = QD_DOT(_mm256_sign_epi8(w, w), _mm256_sign_epi8(QD(act)(&xq[b]), w));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(QD(h2f)(row) * xq[b].d), acc);
    }
    return QD(hsum)(acc);
}

static float QD(dot_q4_k)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float off = 0.0f;
    for (int sb = 0; sb < n / 256; sb++, row += 144) {
        const float d = QD(h2f)(row), dmin = QD(h2f)(row + 2);
        const uint8_t *scales = row + 4, *qs = row + 16;
        for (int c = 0; c < 4; c++) {
            const qdot_act_block *a0 = &xq[sb * 8 + 2 * c], *a1 = a0 + 1;
            int sc0, mn0, sc1, mn1;
            qdot_q4_k_scale_min(2 * c, scales, &sc0, &mn0);
            qdot_q4_k_scale_min(2 * c + 1, scales, &sc1, &mn1);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            const __m256i s0 = QD_DOT(_mm256_and_si256(q, m4), QD(act)(a0));
            const __m256i s1 = QD_DOT(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), QD(act)(a1));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_set1_ps(d * (float)sc0 * a0->d), acc);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_set1_ps(d * (float)sc1 * a1->d), acc);
            off += dmin * ((float)mn0 * a0->s + (float)mn1 * a1->s);
        }
    }
    return QD(hsum)(acc) - off;
}

static float QD(dot_q6_k)(const uint8_t *row, int n, const qdot_act_block *xq, const float *xf) {
    (void)xf;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float off = 0.0f;
    for (int sb = 0; sb < n / 256; sb++, row += 210) {
        const int8_t *sc = (const int8_t *)(row + 192);
        const float d = QD(h2f)(row + 208);
        for (int half = 0; half < 2; half++) {
            const uint8_t *l8 = row + 64 * half, *h8 = row + 128 + 32 * half;
            const int8_t *s = sc + 8 * half;
            const __m256i qa = _mm256_loadu_si256((const __m256i *)l8);
            const __m256i qb = _mm256_loadu_si256((const __m256i *)(l8 + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)h8);
            for (int g = 0; g < 4; g++) {
                const qdot_act_block *a = &xq[sb * 8 + half * 4 + g];
                __m256i lo = g & 1 ? qb : qa;
                lo = _mm256_and_si256(g & 2 ? _mm256_srli_epi16(lo, 4) : lo, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), m2);
                __m256i codes = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)); /* 0..63 */
                const __m256i dot = QD_DOT(codes, QD(act)(a));
                const float da = d * a->d, f0 = da * (float)s[2 * g], f1 = da * (float)s[2 * g + 1];
                /* lanes 0-3: elements 0..15 (scale s[2g]), lanes 4-7: 16..31 (s[2g+1]) */
                const __m256 f = _mm256_set_m128(_mm_set1_ps(f1), _mm_set1_ps(f0));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), f, acc);
                off += 32.0f * (f0 * (float)a->bsum[0] + f1 * (float)a->bsum[1]);
            }
        }
    }
    return QD(hsum)(acc) - off;
}

static qdot_row_fn QD(table)(uint32_t type) {
    switch (type) {
    case GGML_TYPE_F32:
        return QD(dot_f32);
    case GGML_TYPE_F16:
        return QD(dot_f16);
    case GGML_TYPE_BF16:
        return QD(dot_bf16);
    case GGML_TYPE_Q4_0:
        return QD(dot_q4_0);
    case GGML_TYPE_Q4_1:
        return QD(dot_q4_1);
    case GGML_TYPE_Q8_0:
        return QD(dot_q8_0);
    case GGML_TYPE_Q4_K:
        return QD(dot_q4_k);
    case GGML_TYPE_Q6_K:
        return QD(dot_q6_k);
    default:
        return NULL;
    }
}

#undef QD
#undef QD_CAT
#undef QD_CAT2
