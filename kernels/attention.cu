// attention.cu — per-head hybrid (full / sliding-window) causal attention on the GPU (kernels.h).
// Prefill: flash-style tiles with an online softmax (Dao et al. 2022, "FlashAttention"), fp32;
// SWA heads visit only the key tiles of their window and sinks, so they cost O(T * (W + S)).
// Decode: one block per (query head, sequence) over the hybrid KV cache (ring slots for SWA).
#include <float.h>
#include <math.h>

#include "common.cuh"
#include "kernels.h"

#define ATT_BR 16      /* query rows per block */
#define ATT_BC 32      /* keys per shared-memory tile */
#define ATT_WARPS 4    /* warps per block; each owns ATT_BR / ATT_WARPS rows */
#define ATT_MAXT 8     /* head_dim / 32 at most: head_dim <= 256 */
#define ROWS_PER_WARP (ATT_BR / ATT_WARPS)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ bool visible(int i, int j, bool full, int window, int sinks) {
    return j <= i && (full || j > i - window || j < sinks);
}

__global__ void k_attn_prefill(const float *q, const float *k, const float *v, float *out, int n_tokens,
                               int n_head, int n_head_kv, int head_dim, const uint8_t *z_row, int window,
                               int sinks, float scale) {
    extern __shared__ float smem[];
    float *ks = smem;                    /* [ATT_BC][head_dim] */
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
            qr[r][t] = (t < nt && i < n_tokens) ? q[i * q_stride + head * head_dim + lane + 32 * t] * scale : 0.0f;
        }
    }

    /* Key tiles: [0, sinks) and the window [r0 - window + 1, r_last] for SWA; [0, r_last] for full. */
    const int last_tile = r_last / ATT_BC;
    const int sink_tiles = full ? last_tile + 1 : (sinks + ATT_BC - 1) / ATT_BC;
    const int win_first = full ? last_tile + 1 : max(sink_tiles, max(0, r0 - window + 1) / ATT_BC);
    for (int pass = 0; pass < 2; pass++) {
        int t_begin = pass == 0 ? 0 : win_first;
        int t_end = pass == 0 ? min(sink_tiles, last_tile + 1) : last_tile + 1;
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

static int check_shape(int n_head, int n_head_kv, int head_dim, int window, int sinks, char *err, size_t errlen) {
    if (n_head_kv <= 0 || n_head % n_head_kv || head_dim % 32 || head_dim > 32 * ATT_MAXT || window < 1 ||
        sinks < 0) {
        snprintf(err, errlen,
                 "cuda: attention: unsupported shape (n_head %d, n_head_kv %d, head_dim %d, window %d, sinks %d);"
                 " head_dim must be a multiple of 32 up to %d",
                 n_head, n_head_kv, head_dim, window, sinks, 32 * ATT_MAXT);
        return -1;
    }
    return 0;
}

extern "C" int kern_attn_prefill(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                                 int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row, int window,
                                 int sinks, void *stream, char *err, size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_tokens <= 0) return 0;
    size_t shmem = 2u * ATT_BC * head_dim * sizeof(float);
    if (shmem > 48 * 1024 &&
        kern_check(cudaFuncSetAttribute(k_attn_prefill, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem),
                   "cudaFuncSetAttribute(attention)", err, errlen))
        return -1;
    dim3 grid((n_tokens + ATT_BR - 1) / ATT_BR, n_head);
    k_attn_prefill<<<grid, 32 * ATT_WARPS, shmem, (cudaStream_t)stream>>>(
        d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, head_dim, d_z_row, window, sinks,
        1.0f / sqrtf((float)head_dim));
    return KERN_LAUNCHED("attention prefill");
}

__device__ __forceinline__ int kv_slot(int p, bool full, int window, int sinks) {
    return (full || p < sinks) ? p : sinks + (p - sinks) % window;
}

/* Number of visible positions and the k-th of them (sinks first, then the window, ascending). */
__device__ __forceinline__ int n_visible(int pos, bool full, int window, int sinks, int *n_sink) {
    if (full) {
        *n_sink = 0;
        return pos + 1;
    }
    int ns = min(sinks, pos + 1);
    int w_first = max(ns, pos - window + 1);
    *n_sink = ns;
    return ns + (pos - w_first + 1);
}

__global__ void k_attn_decode(const float *q, const float *const *k_heads, const float *const *v_heads,
                              const int *cap, const uint8_t *z_row, float *out, int pos, int n_head, int n_head_kv,
                              int head_dim, int window, int sinks, float scale) {
    __shared__ float red_m[ATT_WARPS], red_l[ATT_WARPS], red_o[ATT_WARPS][32 * ATT_MAXT];
    const int head = blockIdx.x, seq = blockIdx.y, kv_head = head / (n_head / n_head_kv);
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nt = head_dim / 32;
    const float *kc = k_heads[kv_head] + (size_t)seq * cap[kv_head] * head_dim;
    const float *vc = v_heads[kv_head] + (size_t)seq * cap[kv_head] * head_dim;
    const float *qh = q + ((size_t)seq * n_head + head) * head_dim;
    float qr[ATT_MAXT], o[ATT_MAXT], m = -FLT_MAX, l = 0.0f;
#pragma unroll
    for (int t = 0; t < ATT_MAXT; t++) {
        qr[t] = t < nt ? qh[lane + 32 * t] * scale : 0.0f;
        o[t] = 0.0f;
    }
    int n_sink;
    const int n_vis = n_visible(pos, full, window, sinks, &n_sink);
    const int w_first = full ? 0 : max(n_sink, pos - window + 1);
    for (int idx = warp; idx < n_vis; idx += ATT_WARPS) {
        const int p = full ? idx : (idx < n_sink ? idx : w_first + (idx - n_sink));
        const float *kr = kc + (size_t)kv_slot(p, full, window, sinks) * head_dim;
        const float *vr = vc + (size_t)kv_slot(p, full, window, sinks) * head_dim;
        float part = 0.0f;
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++)
            if (t < nt) part += qr[t] * kr[lane + 32 * t];
        const float s = warp_sum(part);
        const float m_new = fmaxf(m, s), corr = __expf(m - m_new), pr = __expf(s - m_new);
        l = l * corr + pr;
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++)
            if (t < nt) o[t] = o[t] * corr + pr * vr[lane + 32 * t];
        m = m_new;
    }
    if (lane == 0) {
        red_m[warp] = m;
        red_l[warp] = l;
    }
#pragma unroll
    for (int t = 0; t < ATT_MAXT; t++)
        if (t < nt) red_o[warp][lane + 32 * t] = o[t];
    __syncthreads();
    if (warp == 0) {
        float gm = -FLT_MAX;
        for (int w = 0; w < ATT_WARPS; w++) gm = fmaxf(gm, red_m[w]);
        float gl = 0.0f, acc[ATT_MAXT];
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++) acc[t] = 0.0f;
        for (int w = 0; w < ATT_WARPS; w++) {
            if (red_l[w] == 0.0f) continue;
            const float f = __expf(red_m[w] - gm);
            gl += red_l[w] * f;
#pragma unroll
            for (int t = 0; t < ATT_MAXT; t++)
                if (t < nt) acc[t] += red_o[w][lane + 32 * t] * f;
        }
        float *oh = out + ((size_t)seq * n_head + head) * head_dim;
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++)
            if (t < nt) oh[lane + 32 * t] = acc[t] / gl;
    }
}

extern "C" int kern_attn_decode(const float *d_q, const float *const *d_k_heads, const float *const *d_v_heads,
                                const int *d_cap, const uint8_t *d_z_row, float *d_out, int n_seq, int pos,
                                int n_head, int n_head_kv, int head_dim, int window, int sinks, void *stream,
                                char *err, size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_seq <= 0) return 0;
    dim3 grid(n_head, n_seq);
    k_attn_decode<<<grid, 32 * ATT_WARPS, 0, (cudaStream_t)stream>>>(d_q, d_k_heads, d_v_heads, d_cap, d_z_row, d_out,
                                                                     pos, n_head, n_head_kv, head_dim, window, sinks,
                                                                     1.0f / sqrtf((float)head_dim));
    return KERN_LAUNCHED("attention decode");
}

__global__ void k_kv_store(const float *k_new, const float *v_new, float *const *k_heads, float *const *v_heads,
                           const int *cap, const uint8_t *z_row, int pos, int n_head_kv, int head_dim, int window,
                           int sinks) {
    const int kv_head = blockIdx.x, seq = blockIdx.y;
    const int slot = kv_slot(pos, z_row[kv_head] != 0, window, sinks);
    const float *ks = k_new + ((size_t)seq * n_head_kv + kv_head) * head_dim;
    const float *vsrc = v_new + ((size_t)seq * n_head_kv + kv_head) * head_dim;
    float *kd = k_heads[kv_head] + ((size_t)seq * cap[kv_head] + slot) * head_dim;
    float *vd = v_heads[kv_head] + ((size_t)seq * cap[kv_head] + slot) * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        kd[d] = ks[d];
        vd[d] = vsrc[d];
    }
}

extern "C" int kern_kv_store(const float *d_k_new, const float *d_v_new, float *const *d_k_heads,
                             float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row, int n_seq, int pos,
                             int n_head_kv, int head_dim, int window, int sinks, void *stream, char *err,
                             size_t errlen) {
    if (n_seq <= 0) return 0;
    dim3 grid(n_head_kv, n_seq);
    k_kv_store<<<grid, 64, 0, (cudaStream_t)stream>>>(d_k_new, d_v_new, d_k_heads, d_v_heads, d_cap, d_z_row, pos,
                                                      n_head_kv, head_dim, window, sinks);
    return KERN_LAUNCHED("kv store");
}

/* One block per (position, kv_head, sequence); positions that a later query can no longer see
 * (SWA, outside the sinks and the last `window` positions of the block) are skipped, which also
 * guarantees that every slot is written at most once. */
__global__ void k_kv_store_block(const float *k, const float *v, float *const *k_heads, float *const *v_heads,
                                 const int *cap, const uint8_t *z_row, int pos0, int n_tokens, int n_head_kv,
                                 int head_dim, int window, int sinks) {
    const int t = blockIdx.x, kv_head = blockIdx.y, seq = blockIdx.z, pos = pos0 + t;
    const bool full = z_row[kv_head] != 0;
    const int pos_last = pos0 + n_tokens - 1;
    if (!full && pos >= sinks && pos <= pos_last - window) return; /* overwritten later in the ring */
    const int slot = kv_slot(pos, full, window, sinks);
    const size_t src = (((size_t)seq * n_tokens + t) * n_head_kv + kv_head) * head_dim;
    float *kd = k_heads[kv_head] + ((size_t)seq * cap[kv_head] + slot) * head_dim;
    float *vd = v_heads[kv_head] + ((size_t)seq * cap[kv_head] + slot) * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        kd[d] = k[src + d];
        vd[d] = v[src + d];
    }
}

extern "C" int kern_kv_store_block(const float *d_k, const float *d_v, float *const *d_k_heads,
                                   float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row, int n_seq,
                                   int pos0, int n_tokens, int n_head_kv, int head_dim, int window, int sinks,
                                   void *stream, char *err, size_t errlen) {
    if (n_seq <= 0 || n_tokens <= 0) return 0;
    if (n_seq > 65535 || n_head_kv > 65535 || window < 1 || sinks < 0) {
        snprintf(err, errlen, "cuda: kv store block: unsupported n_seq %d / n_head_kv %d / window %d / sinks %d",
                 n_seq, n_head_kv, window, sinks);
        return -1;
    }
    dim3 grid(n_tokens, n_head_kv, n_seq);
    k_kv_store_block<<<grid, 64, 0, (cudaStream_t)stream>>>(d_k, d_v, d_k_heads, d_v_heads, d_cap, d_z_row, pos0,
                                                            n_tokens, n_head_kv, head_dim, window, sinks);
    return KERN_LAUNCHED("kv store block");
}
