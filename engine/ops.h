/* ops.h — small fp32 building blocks of the transformer forward pass (CPU).
 * Every function works on contiguous row-major arrays; none allocates.
 */
#ifndef BOSCH_OPS_H
#define BOSCH_OPS_H

#include <stddef.h>

/* RMSNorm of one row: out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], i < n (Zhang & Sennrich 2019,
 * "Root Mean Square Layer Normalization"). The sum of squares is accumulated in double.
 * out may equal x. w may be NULL (no gain). */
void ops_rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* RMSNorm of n_rows rows: x and out are [n_rows][n] row-major. Parallel over rows (OpenMP) when
 * there are enough of them. */
void ops_rmsnorm_rows(float *out, const float *x, const float *w, int n_rows, int n, float eps);

/* RoPE angle table for one position (Su et al. 2021, RoFormer): for pair index i < rope_dim/2,
 * theta_i = pos * base^(-2i/rope_dim); cos_out[i] = cos(theta_i), sin_out[i] = sin(theta_i).
 * Angles are computed in double, so they stay accurate at large positions (pos >= 8000). */
void ops_rope_angles(int pos, int rope_dim, float base, float *cos_out, float *sin_out);

/* Rotate one row of n_heads heads in place: x [n_heads][head_dim]; the first rope_dim dimensions
 * of each head are rotated with the table from ops_rope_angles, the rest pass through.
 * neox == 0: pairs are adjacent (x[2i], x[2i+1]) — the layout of llama GGUFs, whose converter
 * permuted the Q/K rows for it. neox != 0: pairs are the two halves (x[i], x[i + rope_dim/2]) —
 * the GPT-NeoX layout used by qwen2/qwen3 GGUFs. */
void ops_rope_row(float *x, int n_heads, int head_dim, int rope_dim, int neox, const float *cos_t,
                  const float *sin_t);

/* RoPE over a block of consecutive positions pos0..pos0+n_tokens-1 for both q
 * [n_tokens][n_head*head_dim] and k [n_tokens][n_head_kv*head_dim] (k may be NULL), in place.
 * Each position's angle table is computed once and shared by q and k. Parallel over tokens. */
void ops_rope(float *q, int n_head, float *k, int n_head_kv, int n_tokens, int pos0, int head_dim,
              int rope_dim, float base, int neox);

/* Angle tables for positions pos0..pos0+n_tokens-1: cos_t and sin_t are [n_tokens][rope_dim/2]
 * (row t = ops_rope_angles(pos0 + t)). Parallel over positions. */
void ops_rope_table(int pos0, int n_tokens, int rope_dim, float base, float *cos_t, float *sin_t);

/* ops_rope with precomputed tables from ops_rope_table (row t rotates token t of q and k). */
void ops_rope_apply(float *q, int n_head, float *k, int n_head_kv, int n_tokens, int head_dim,
                    int rope_dim, int neox, const float *cos_t, const float *sin_t);

/* SiLU (Elfwing et al. 2018, a.k.a. swish): x * sigmoid(x); exp by a vectorizable polynomial,
 * relative error ~1e-6 (ops_swiglu uses the same). */
float ops_silu(float x);

/* SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"): out[i] = silu(gate[i]) * up[i] for
 * n_rows rows of n elements; gate, up and out rows are at strides gate_stride, up_stride,
 * out_stride (elements). out may alias gate. Parallel over rows. */
void ops_swiglu(float *out, int out_stride, const float *gate, int gate_stride, const float *up,
                int up_stride, int n_rows, int n);

/* Numerically stable softmax in place over x[n] (subtracts the max, sums in double). */
void ops_softmax(float *x, int n);

/* log of sum(exp(x[i])), i < n, stable (max-shifted, double accumulation). */
double ops_logsumexp(const float *x, int n);

/* Index of the largest element (the first one on ties); -1 when n <= 0. */
int ops_argmax(const float *x, int n);

#endif
