// attention_decode.cu — attention of one new position per sequence over the hybrid KV cache
// (kernels.h): one block per (query head, sequence), its warps splitting the visible positions and
// merging their online-softmax partial results; and storing keys/values into the cache, one
// position (decode) or a whole prefilled block.
#include "attention.cuh"
#include "kernels.h"

/* Warps per decode block: one block per (query head, sequence) is few blocks for one sequence, so
 * each block is wide; its warps take every DEC_WARPS-th visible position and merge at the end. */
#define DEC_WARPS 16
#define DEC_SHMEM (sizeof(float) * (2 * DEC_WARPS + DEC_WARPS * 32 * ATT_MAXT)) /* 16.5 KiB */

__global__ void k_attn_decode(const float *q, const float *const *k_heads, const float *const *v_heads,
                              const int *cap, const uint8_t *z_row, float *out, int pos, int n_head,
                              int n_head_kv, int head_dim, int window, int sinks, float scale) {
    KERN_DYNAMIC_SHARED(float, smem); /* DEC_SHMEM bytes: per warp m, l and o[32 * ATT_MAXT] */
    float *red_m = smem, *red_l = smem + DEC_WARPS;
    float(*red_o)[32 * ATT_MAXT] = reinterpret_cast<float(*)[32 * ATT_MAXT]>(smem + 2 * DEC_WARPS);
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
    for (int idx = warp; idx < n_vis; idx += DEC_WARPS) {
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
        for (int w = 0; w < DEC_WARPS; w++) gm = fmaxf(gm, red_m[w]);
        float gl = 0.0f, acc[ATT_MAXT];
#pragma unroll
        for (int t = 0; t < ATT_MAXT; t++) acc[t] = 0.0f;
        for (int w = 0; w < DEC_WARPS; w++) {
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

extern "C" int kern_attn_decode(const float *d_q, const float *const *d_k_heads,
                                const float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row,
                                float *d_out, int n_seq, int pos, int n_head, int n_head_kv, int head_dim,
                                int window, int sinks, void *stream, char *err, size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_seq <= 0) return 0;
    dim3 grid(n_head, n_seq);
    KERN_LAUNCH(k_attn_decode, grid, 32 * DEC_WARPS, DEC_SHMEM, (cudaStream_t)stream)
    (d_q, d_k_heads, d_v_heads, d_cap, d_z_row, d_out, pos, n_head, n_head_kv, head_dim, window, sinks,
     1.0f / sqrtf((float)head_dim));
    return KERN_LAUNCHED("attention decode");
}

__global__ void k_kv_store(const float *k_new, const float *v_new, float *const *k_heads,
                           float *const *v_heads, const int *cap, const uint8_t *z_row, int pos,
                           int n_head_kv, int head_dim, int window, int sinks) {
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
                             float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row, int n_seq,
                             int pos, int n_head_kv, int head_dim, int window, int sinks, void *stream,
                             char *err, size_t errlen) {
    if (n_seq <= 0) return 0;
    dim3 grid(n_head_kv, n_seq);
    KERN_LAUNCH(k_kv_store, grid, 64, 0, (cudaStream_t)stream)
    (d_k_new, d_v_new, d_k_heads, d_v_heads, d_cap, d_z_row, pos, n_head_kv, head_dim, window, sinks);
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
                                   float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row,
                                   int n_seq, int pos0, int n_tokens, int n_head_kv, int head_dim, int window,
                                   int sinks, void *stream, char *err, size_t errlen) {
    if (n_seq <= 0 || n_tokens <= 0) return 0;
    if (n_seq > 65535 || n_head_kv > 65535 || window < 1 || sinks < 0) {
        snprintf(err, errlen,
                 "cuda: kv store block: unsupported n_seq %d / n_head_kv %d / window %d / sinks %d", n_seq,
                 n_head_kv, window, sinks);
        return -1;
    }
    dim3 grid(n_tokens, n_head_kv, n_seq);
    KERN_LAUNCH(k_kv_store_block, grid, 64, 0, (cudaStream_t)stream)
    (d_k, d_v, d_k_heads, d_v_heads, d_cap, d_z_row, pos0, n_tokens, n_head_kv, head_dim, window, sinks);
    return KERN_LAUNCHED("kv store block");
}
