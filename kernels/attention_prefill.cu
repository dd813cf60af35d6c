// attention_prefill.cu — per-head hybrid (full / sliding-window) causal attention over a whole
// sequence on the GPU (kernels.h), flash-style: tiles of keys with an online softmax (Dao et al.
// 2022, "FlashAttention"), fp32, no T x T buffer. SWA heads visit only the key tiles of their sinks
// and window, so they cost O(T * (W + S)). Two kernels compute the same thing:
//   k_attn_prefill_simple: one warp per query row, a warp reduction per key (easy to check);
//   k_attn_prefill:        lanes own keys: each lane scores one key of the tile for 4 rows, one
//                          max/sum reduction per tile, then p·V with p broadcast by shuffles
//                          (about 5x fewer instructions per (query, key) pair).
// kern_attn_prefill runs the second; tests/test_cuda.c checks both against a dense reference.
#include "attention.cuh"
#include "kernels.h"

__global__ void k_attn_prefill_simple(const float *q, const float *k, const float *v, float *out,
                                      int n_tokens, int n_head, int n_head_kv, int head_dim,
                                      const uint8_t *z_row, int window, int sinks, float scale) {
    KERN_DYNAMIC_SHARED(float, smem);
    float *ks = smem;                     /* [ATT_BC][head_dim] */
    float *vs = smem + ATT_BC * head_dim; /* [ATT_BC][head_dim] */
    const int head = blockIdx.y, kv_head = head / (n_head / n_head_kv);
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nt = head_dim / 32;
    const int r0 = blockIdx.x * ATT_BR, r_last = min(r0 + ATT_BR, n_tokens) - 1;
    const size_t q_stride = (size_t)n_head * head_dim, kv_stride = (size_t)n_head_kv * head_dim;

    float qr[ROWS_PER_WARP][ATT_MAXT], o[ROWS_PER_WARP][ATT_MAXT], m[ROWS_PER_WARP], l[ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; r++) {
        int i = r0 + warp * ROWS_PER_WARP + r;
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++) {
            o[r][t] = 0.0f;
            qr[r][t] =
                (t < nt && i < n_tokens) ? q[i * q_stride + head * head_dim + lane + 32 * t] * scale : 0.0f;
        }
    }

    for (int pass = 0; pass < 2; pass++) {
        int t_begin, t_end;
        tile_range(pass, r0, r_last, full, window, sinks, ATT_BC, &t_begin, &t_end);
        for (int tile = t_begin; tile < t_end; tile++) {
            const int j0 = tile * ATT_BC;
            __syncthreads();
            for (int e = threadIdx.x; e < ATT_BC * head_dim; e += blockDim.x) {
                int c = e / head_dim, d = e % head_dim, j = j0 + c;
                ks[e] = j < n_tokens ? k[j * kv_stride + kv_head * head_dim + d] : 0.0f;
                vs[e] = j < n_tokens ? v[j * kv_stride + kv_head * head_dim + d] : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int r = 0; r < ROWS_PER_WARP; r++) {
                const int i = r0 + warp * ROWS_PER_WARP + r;
                if (i >= n_tokens) continue;
                for (int c = 0; c < ATT_BC; c++) {
                    const int j = j0 + c;
                    if (!visible(i, j, full, window, sinks)) continue;
                    float part = 0.0f;
#pragma unroll
                    for (int t = 0; t < ATT_MAXT; t++)
                        if (t < nt) part += qr[r][t] * ks[c * head_dim + lane + 32 * t];
                    const float s = warp_sum(part);
                    const float m_new = fmaxf(m[r], s);
                    const float corr = __expf(m[r] - m_new), p = __expf(s - m_new);
                    l[r] = l[r] * corr + p;
#pragma unroll
                    for (int t = 0; t < ATT_MAXT; t++)
                        if (t < nt) o[r][t] = o[r][t] * corr + p * vs[c * head_dim + lane + 32 * t];
                    m[r] = m_new;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; r++) {
        const int i = r0 + warp * ROWS_PER_WARP + r;
        if (i >= n_tokens) continue;
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++)
            if (t < nt) out[i * q_stride + head * head_dim + lane + 32 * t] = o[r][t] * inv;
    }
}

/* Lanes own keys. Per tile of ATT_BC = 32 keys in shared memory, for the warp's 4 query rows:
 *   1. lane c computes the scores s[r] = q_r · k_c (q rows pre-scaled, broadcast from shared memory;
 *      k rows padded to head_dim + 1 floats so the 32 lanes read 32 different banks);
 *   2. per row, the tile's max and sum over lanes (one reduction each) update the running max m and
 *      normalizer l (online softmax); o is rescaled by exp(m_old - m_new);
 *   3. o[r][lane + 32t] += sum_c p_c · v_c[lane + 32t], p_c broadcast from lane c by a shuffle.
 * Rows past n_tokens and invisible keys get p = 0; a row with no visible key in a tile is left as is. */
template <int NT> /* head_dim = 32 * NT, so every loop below has a fixed trip count */
__global__ void k_attn_prefill(const float *q, const float *k, const float *v, float *out, int n_tokens,
                               int n_head, int n_head_kv, const uint8_t *z_row, int window, int sinks,
                               float scale) {
    KERN_DYNAMIC_SHARED(float, smem);
    constexpr int head_dim = 32 * NT, ks_stride = head_dim + 1;
    float *ks = smem;                    /* [ATT_BC][head_dim + 1] */
    float *vs = ks + ATT_BC * ks_stride; /* [ATT_BC][head_dim] */
    float *qs = vs + ATT_BC * head_dim;  /* [ATT_BR][head_dim], times scale */
    const int head = blockIdx.y, kv_head = head / (n_head / n_head_kv);
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r0 = blockIdx.x * ATT_BR, r_last = min(r0 + ATT_BR, n_tokens) - 1;
    const size_t q_stride = (size_t)n_head * head_dim, kv_stride = (size_t)n_head_kv * head_dim;
    const float *qw = qs + warp * ROWS_PER_WARP * head_dim; /* this warp's rows */

    for (int e = threadIdx.x; e < ATT_BR * head_dim; e += blockDim.x) {
        const int i = r0 + e / head_dim, d = e % head_dim;
        qs[e] = i < n_tokens ? q[i * q_stride + head * head_dim + d] * scale : 0.0f;
    }
    float o[ROWS_PER_WARP][NT], m[ROWS_PER_WARP], l[ROWS_PER_WARP];
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; r++) {
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
#pragma unroll
        for (int t = 0; t < NT; t++) o[r][t] = 0.0f;
    }

    for (int pass = 0; pass < 2; pass++) {
        int t_begin, t_end;
        tile_range(pass, r0, r_last, full, window, sinks, ATT_BC, &t_begin, &t_end);
        for (int tile = t_begin; tile < t_end; tile++) {
            const int j0 = tile * ATT_BC, j = j0 + lane; /* this lane's key */
            __syncthreads(); /* previous tile consumed (and, the first time, qs written) */
            for (int e = threadIdx.x; e < ATT_BC * head_dim; e += blockDim.x) {
                const int c = e / head_dim, d = e % head_dim, jj = j0 + c;
                ks[c * ks_stride + d] = jj < n_tokens ? k[jj * kv_stride + kv_head * head_dim + d] : 0.0f;
                vs[e] = jj < n_tokens ? v[jj * kv_stride + kv_head * head_dim + d] : 0.0f;
            }
            __syncthreads();
            /* 1. scores of key j for the warp's rows */
            float s[ROWS_PER_WARP];
#pragma unroll
            for (int r = 0; r < ROWS_PER_WARP; r++) s[r] = 0.0f;
#pragma unroll 8
            for (int d = 0; d < head_dim; d++) {
                const float kd = ks[lane * ks_stride + d];
#pragma unroll
                for (int r = 0; r < ROWS_PER_WARP; r++) s[r] += qw[r * head_dim + d] * kd;
            }
            /* 2. online softmax update, one reduction per row and tile */
            float p[ROWS_PER_WARP];
#pragma unroll
            for (int r = 0; r < ROWS_PER_WARP; r++) {
                const int i = r0 + warp * ROWS_PER_WARP + r;
                const bool vis = i < n_tokens && visible(i, j, full, window, sinks);
                const float m_tile = warp_max(vis ? s[r] : -FLT_MAX);
                p[r] = 0.0f;
                if (m_tile == -FLT_MAX) continue; /* no visible key in this tile (same in every lane) */
                const float m_new = fmaxf(m[r], m_tile), corr = __expf(m[r] - m_new);
                p[r] = vis ? __expf(s[r] - m_new) : 0.0f;
                l[r] = l[r] * corr + warp_sum(p[r]);
                m[r] = m_new;
#pragma unroll
                for (int t = 0; t < NT; t++) o[r][t] *= corr;
            }
            /* 3. o += p · V */
            for (int c = 0; c < ATT_BC; c++) {
                float vv[NT];
#pragma unroll
                for (int t = 0; t < NT; t++) vv[t] = vs[c * head_dim + lane + 32 * t];
#pragma unroll
                for (int r = 0; r < ROWS_PER_WARP; r++) {
                    const float pc = __shfl_sync(0xffffffffu, p[r], c);
#pragma unroll
                    for (int t = 0; t < NT; t++) o[r][t] += pc * vv[t];
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; r++) {
        const int i = r0 + warp * ROWS_PER_WARP + r;
        if (i >= n_tokens) continue;
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
        for (int t = 0; t < NT; t++) out[i * q_stride + head * head_dim + lane + 32 * t] = o[r][t] * inv;
    }
}

/* The tiled kernel for head_dim = 32 * NT. */
template <int NT>
static int launch_tiled(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                        int n_head, int n_head_kv, const uint8_t *d_z_row, int window, int sinks, float scale,
                        void *stream, char *err, size_t errlen) {
    const int head_dim = 32 * NT;
    const size_t shmem =
        sizeof(float) * ((size_t)ATT_BC * (head_dim + 1) + (size_t)(ATT_BC + ATT_BR) * head_dim);
    if (allow_shmem(k_attn_prefill<NT>, shmem, "attention prefill", err, errlen)) return -1;
    dim3 grid((n_tokens + ATT_BR - 1) / ATT_BR, n_head);
    KERN_LAUNCH(k_attn_prefill<NT>, grid, 32 * ATT_WARPS, shmem, (cudaStream_t)stream)
    (d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks, scale);
    return KERN_LAUNCHED("attention prefill");
}

extern "C" int kern_attn_prefill(const float *d_q, const float *d_k, const float *d_v, float *d_out,
                                 int n_tokens, int n_head, int n_head_kv, int head_dim,
                                 const uint8_t *d_z_row, int window, int sinks, void *stream, char *err,
                                 size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_tokens <= 0) return 0;
    const float scale = 1.0f / sqrtf((float)head_dim);
#define TILED(nt)                                                                                            \
    case nt:                                                                                                 \
        return launch_tiled<nt>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,   \
                                scale, stream, err, errlen)
    switch (head_dim / 32) {
        TILED(1);
        TILED(2);
        TILED(3);
        TILED(4);
        TILED(5);
        TILED(6);
        TILED(7);
        TILED(8);
    }
#undef TILED
    return -1; /* unreachable: check_shape allows head_dim = 32..256 in steps of 32 */
}

extern "C" int kern_attn_prefill_simple(const float *d_q, const float *d_k, const float *d_v, float *d_out,
                                        int n_tokens, int n_head, int n_head_kv, int head_dim,
                                        const uint8_t *d_z_row, int window, int sinks, void *stream,
                                        char *err, size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_tokens <= 0) return 0;
    const size_t shmem = sizeof(float) * 2u * ATT_BC * head_dim;
    if (allow_shmem(k_attn_prefill_simple, shmem, "attention prefill (simple)", err, errlen)) return -1;
    dim3 grid((n_tokens + ATT_BR - 1) / ATT_BR, n_head);
    KERN_LAUNCH(k_attn_prefill_simple, grid, 32 * ATT_WARPS, shmem, (cudaStream_t)stream)
    (d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, head_dim, d_z_row, window, sinks,
     1.0f / sqrtf((float)head_dim));
    return KERN_LAUNCHED("attention prefill (simple)");
}
