/* ops.c — RMSNorm, RoPE, SwiGLU, softmax (see ops.h for formulas and layouts). */
#include "ops.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Below this many rows the OpenMP fork/join costs more than it saves. */
#define OPS_PAR_ROWS 16

void ops_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / n + eps));
    if (w) {
        for (int i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
    } else {
        for (int i = 0; i < n; i++) out[i] = x[i] * scale;
    }
}

void ops_rmsnorm_rows(float *out, const float *x, const float *w, int n_rows, int n, float eps) {
#pragma omp parallel for schedule(static) if (n_rows >= OPS_PAR_ROWS)
    for (int r = 0; r < n_rows; r++)
        ops_rmsnorm(out + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

void ops_rope_angles(int pos, int rope_dim, float base, float *cos_out, float *sin_out) {
    int half = rope_dim / 2;
    double lb = log((double)base);
    for (int i = 0; i < half; i++) {
        double freq = exp(-2.0 * i / rope_dim * lb);
        double th = (double)pos * freq;
        cos_out[i] = (float)cos(th);
        sin_out[i] = (float)sin(th);
    }
}

void ops_rope_row(float *x, int n_heads, int head_dim, int rope_dim, int neox, const float *cos_t,
                  const float *sin_t) {
    int half = rope_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        if (neox) {
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * cos_t[i] - b * sin_t[i];
                v[i + half] = a * sin_t[i] + b * cos_t[i];
            }
        } else {
            for (int i = 0; i < half; i++) {
                float a = v[2 * i], b = v[2 * i + 1];
                v[2 * i] = a * cos_t[i] - b * sin_t[i];
                v[2 * i + 1] = a * sin_t[i] + b * cos_t[i];
            }
        }
    }
}

void ops_rope(float *q, int n_head, float *k, int n_head_kv, int n_tokens, int pos0, int head_dim,
              int rope_dim, float base, int neox) {
    int half = rope_dim / 2;
#pragma omp parallel if (n_tokens >= OPS_PAR_ROWS)
    {
        /* per-thread angle table: half cos + half sin; rope_dim <= head_dim <= 1024 in practice */
        float stack_tab[1024];
        float *tab = half * 2 <= 1024 ? stack_tab : malloc(sizeof(float) * 2 * (size_t)half);
#pragma omp for schedule(static)
        for (int t = 0; t < n_tokens; t++) {
            if (!tab) continue;
            ops_rope_angles(pos0 + t, rope_dim, base, tab, tab + half);
            ops_rope_row(q + (size_t)t * n_head * head_dim, n_head, head_dim, rope_dim, neox, tab,
                         tab + half);
            if (k)
                ops_rope_row(k + (size_t)t * n_head_kv * head_dim, n_head_kv, head_dim, rope_dim,
                             neox, tab, tab + half);
        }
        if (tab != stack_tab) free(tab);
    }
}

/* exp(x) for the SiLU: range reduction x = n*ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial
 * for e^r (truncation error < 6e-9 relative), 2^n through the exponent bits. Plain float and
 * integer arithmetic, so the SwiGLU loop vectorizes (libm's expf does not). Relative error
 * ~2 ulp over the clamped range [-87, 88]. */
static inline float ops_exp_approx(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    /* round to nearest by adding and removing 1.5 * 2^23 (floorf would block vectorization) */
    float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693145752f; /* ln2 split in two for an exact product */
    r = r - n * 1.42860677e-6f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union {
        int32_t i;
        float f;
    } scale = {.i = ((int32_t)n + 127) * (1 << 23)};
    return p * scale.f;
}

void ops_rope_table(int pos0, int n_tokens, int rope_dim, float base, float *cos_t, float *sin_t) {
    int half = rope_dim / 2;
#pragma omp parallel for schedule(static) if (n_tokens >= 4 * OPS_PAR_ROWS)
    for (int t = 0; t < n_tokens; t++)
        ops_rope_angles(pos0 + t, rope_dim, base, cos_t + (size_t)t * half, sin_t + (size_t)t * half);
}

void ops_rope_apply(float *q, int n_head, float *k, int n_head_kv, int n_tokens, int head_dim,
                    int rope_dim, int neox, const float *cos_t, const float *sin_t) {
    int half = rope_dim / 2;
#pragma omp parallel for schedule(static) if (n_tokens >= OPS_PAR_ROWS)
    for (int t = 0; t < n_tokens; t++) {
        const float *c = cos_t + (size_t)t * half, *s = sin_t + (size_t)t * half;
        ops_rope_row(q + (size_t)t * n_head * head_dim, n_head, head_dim, rope_dim, neox, c, s);
        if (k) ops_rope_row(k + (size_t)t * n_head_kv * head_dim, n_head_kv, head_dim, rope_dim, neox, c, s);
    }
}

float ops_silu(float x) { return x / (1.0f + ops_exp_approx(-x)); }

static void swiglu_row(float *o, const float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) o[i] = g[i] / (1.0f + ops_exp_approx(-g[i])) * u[i];
}

void ops_swiglu(float *out, int out_stride, const float *gate, int gate_stride, const float *up,
                int up_stride, int n_rows, int n) {
#pragma omp parallel for schedule(static) if (n_rows >= OPS_PAR_ROWS)
    for (int r = 0; r < n_rows; r++) {
        swiglu_row(out + (size_t)r * out_stride, gate + (size_t)r * gate_stride,
                   up + (size_t)r * up_stride, n);
    }
}

void ops_softmax(float *x, int n) {
    if (n <= 0) return;
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

double ops_logsumexp(const float *x, int n) {
    if (n <= 0) return -INFINITY;
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    return mx + log(sum);
}

int ops_argmax(const float *x, int n) {
    if (n <= 0) return -1;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
