// attention_prefill_mma.cu — the hybrid prefill attention of kernels.h on tensor cores with the
// softmax in registers (FlashAttention-2's layout, Dao 2023): mma.sync.m16n8k16 (mma.cuh), bf16
// inputs, fp32 scores, softmax and accumulation; same visibility as kern_attn_prefill
// (attention.cuh). head_dim 32, 64, 96 or 128 (the output rows live in registers).
//
// A block owns MMA_BR = 64 query rows of one query head, 16 per warp. The warp keeps its Q rows as
// A fragments for the whole kernel. Per tile of MMA_BC = 64 keys (K row-major and V transposed,
// bf16 in shared memory, shared by the 4 warps):
//   1. S = Q K^T: 8 accumulator tiles of 16 x 8; lane (g, t) holds rows g and g+8, keys 2t, 2t+1
//      of every tile;
//   2. online softmax in registers: a row's max and sum over its 4 lanes by two xor shuffles;
//      O rows rescaled by exp(m_old - m_new) in registers;
//   3. O += P V: the accumulators of S, rounded to bf16, are already the A fragments of P (two
//      16 x 8 tiles of S = one 16 x 16 A fragment), so P never goes to shared memory.
// Shared memory rows are padded by 8 bf16 so the 8 row groups of a fragment load hit 8 different
// banks. Q is pre-scaled by 1/sqrt(head_dim) before rounding, as in kern_attn_prefill_tc.
#include "attention.cuh"
#include "kernels.h"
#include "mma.cuh"

#define MMA_BR 64
#define MMA_BC 64
#define MMA_WARPS 4

/* Shared memory layout, in bf16 elements. */
template <int D> struct mma_smem {
    static constexpr int ld = D + 8;                     /* row stride of Q and K */
    static constexpr int ldv = MMA_BC + 8;               /* row stride of V^T */
    static constexpr size_t q = 0;                       /* [MMA_BR][ld] */
    static constexpr size_t k = q + (size_t)MMA_BR * ld; /* [MMA_BC][ld] */
    static constexpr size_t v = k + (size_t)MMA_BC * ld; /* [D][ldv], V transposed */
    static constexpr size_t bytes = 2 * (v + (size_t)D * ldv);
};

template <int D>
__global__ void k_attn_prefill_mma(const float *q, const float *k, const float *v, float *out, int n_tokens,
                                   int n_head, int n_head_kv, const uint8_t *z_row, int window, int sinks,
                                   float scale) {
    typedef mma_smem<D> L;
    KERN_DYNAMIC_SHARED(uint16_t, smem);
    uint16_t *qs = smem + L::q, *ks = smem + L::k, *vt = smem + L::v;
    const int head = blockIdx.y, kv_head = head / (n_head / n_head_kv);
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int r0 = blockIdx.x * MMA_BR, r_last = min(r0 + MMA_BR, n_tokens) - 1;
    const size_t q_stride = (size_t)n_head * D, kv_stride = (size_t)n_head_kv * D;
    const int row[2] = {r0 + warp * 16 + g, r0 + warp * 16 + g + 8}; /* this lane's two query rows */

    for (int e = threadIdx.x; e < MMA_BR * D; e += blockDim.x) {
        const int r = e / D, d = e % D, i = r0 + r;
        qs[r * L::ld + d] = kern_f2bf(i < n_tokens ? q[i * q_stride + head * D + d] * scale : 0.0f);
    }
    __syncthreads();
    uint32_t qa[D / 16][4]; /* Q rows of this warp as A fragments, one per 16 dimensions */
    const uint16_t *qw = qs + warp * 16 * L::ld;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        qa[kk][0] = kern_ld_bf16x2(qw + g * L::ld + kk * 16 + 2 * t);
        qa[kk][1] = kern_ld_bf16x2(qw + (g + 8) * L::ld + kk * 16 + 2 * t);
        qa[kk][2] = kern_ld_bf16x2(qw + g * L::ld + kk * 16 + 8 + 2 * t);
        qa[kk][3] = kern_ld_bf16x2(qw + (g + 8) * L::ld + kk * 16 + 8 + 2 * t);
    }
    float o[D / 8][4], m[2] = {-FLT_MAX, -FLT_MAX}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < D / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    for (int pass = 0; pass < 2; pass++) {
        int t_begin, t_end;
        tile_range(pass, r0, r_last, full, window, sinks, MMA_BC, &t_begin, &t_end);
        for (int tile = t_begin; tile < t_end; tile++) {
            const int j0 = tile * MMA_BC;
            __syncthreads(); /* the previous tile is consumed */
            for (int e = threadIdx.x; e < MMA_BC * D; e += blockDim.x) {
                const int c = e / D, d = e % D, j = j0 + c;
                ks[c * L::ld + d] = kern_f2bf(j < n_tokens ? k[j * kv_stride + kv_head * D + d] : 0.0f);
                vt[d * L::ldv + c] = kern_f2bf(j < n_tokens ? v[j * kv_stride + kv_head * D + d] : 0.0f);
            }
            __syncthreads();
            /* 1. S = Q K^T; K row-major [key][d] is the "col" B operand */
            float s[MMA_BC / 8][4];
#pragma unroll
            for (int n = 0; n < MMA_BC / 8; n++) {
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
                const uint16_t *kr = ks + (n * 8 + g) * L::ld + 2 * t;
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
                    const uint32_t b[2] = {kern_ld_bf16x2(kr + kk * 16), kern_ld_bf16x2(kr + kk * 16 + 8)};
                    kern_mma_16816(s[n], qa[kk], b);
                }
            }
            /* 2. online softmax; element e of tile n is (row[e / 2], key j0 + 8n + 2t + e % 2) */
            float m_tile[2] = {-FLT_MAX, -FLT_MAX};
#pragma unroll
            for (int n = 0; n < MMA_BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int i = row[e / 2], j = j0 + 8 * n + 2 * t + e % 2;
                    if (i < n_tokens && visible(i, j, full, window, sinks))
                        m_tile[e / 2] = fmaxf(m_tile[e / 2], s[n][e]);
                }
            float corr[2], m_new[2], p_sum[2] = {0.0f, 0.0f};
#pragma unroll
            for (int h = 0; h < 2; h++) {
                m_tile[h] = fmaxf(m_tile[h], __shfl_xor_sync(0xffffffffu, m_tile[h], 1));
                m_tile[h] = fmaxf(m_tile[h], __shfl_xor_sync(0xffffffffu, m_tile[h], 2));
                m_new[h] = fmaxf(m[h], m_tile[h]);
                corr[h] = m_tile[h] != -FLT_MAX ? __expf(m[h] - m_new[h]) : 1.0f; /* no visible key: as is */
            }
#pragma unroll
            for (int n = 0; n < MMA_BC / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int h = e / 2, i = row[h], j = j0 + 8 * n + 2 * t + e % 2;
                    const bool vis =
                        m_tile[h] != -FLT_MAX && i < n_tokens && visible(i, j, full, window, sinks);
                    s[n][e] = vis ? __expf(s[n][e] - m_new[h]) : 0.0f;
                    p_sum[h] += s[n][e];
                }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                p_sum[h] += __shfl_xor_sync(0xffffffffu, p_sum[h], 1);
                p_sum[h] += __shfl_xor_sync(0xffffffffu, p_sum[h], 2);
                l[h] = l[h] * corr[h] + p_sum[h];
                if (m_tile[h] != -FLT_MAX) m[h] = m_new[h];
            }
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
                o[n][0] *= corr[0], o[n][1] *= corr[0];
                o[n][2] *= corr[1], o[n][3] *= corr[1];
            }
            /* 3. O += P V, 16 keys per step; V^T [d][key] rows are the "col" B operand */
#pragma unroll
            for (int kt = 0; kt < MMA_BC / 16; kt++) {
                const uint32_t pa[4] = {kern_pack_bf16(s[2 * kt][0], s[2 * kt][1]),
                                        kern_pack_bf16(s[2 * kt][2], s[2 * kt][3]),
                                        kern_pack_bf16(s[2 * kt + 1][0], s[2 * kt + 1][1]),
                                        kern_pack_bf16(s[2 * kt + 1][2], s[2 * kt + 1][3])};
#pragma unroll
                for (int n = 0; n < D / 8; n++) {
                    const uint16_t *vr = vt + (n * 8 + g) * L::ldv + kt * 16 + 2 * t;
                    const uint32_t b[2] = {kern_ld_bf16x2(vr), kern_ld_bf16x2(vr + 8)};
                    kern_mma_16816(o[n], pa, b);
                }
            }
        }
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        if (row[h] >= n_tokens) continue;
        const float inv = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
        float *orow = out + row[h] * q_stride + head * D + 2 * t;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            orow[8 * n] = o[n][2 * h] * inv;
            orow[8 * n + 1] = o[n][2 * h + 1] * inv;
        }
    }
}

template <int D>
static int launch_mma(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                      int n_head, int n_head_kv, const uint8_t *d_z_row, int window, int sinks, void *stream,
                      char *err, size_t errlen) {
    const size_t shmem = mma_smem<D>::bytes;
    if (allow_shmem(k_attn_prefill_mma<D>, shmem, "attention prefill (mma)", err, errlen)) return -1;
    dim3 grid((n_tokens + MMA_BR - 1) / MMA_BR, n_head);
    KERN_LAUNCH(k_attn_prefill_mma<D>, grid, 32 * MMA_WARPS, shmem, (cudaStream_t)stream)
    (d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks, 1.0f / sqrtf((float)D));
    return KERN_LAUNCHED("attention prefill (mma)");
}

extern "C" int kern_attn_prefill_mma(const float *d_q, const float *d_k, const float *d_v, float *d_out,
                                     int n_tokens, int n_head, int n_head_kv, int head_dim,
                                     const uint8_t *d_z_row, int window, int sinks, void *stream, char *err,
                                     size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_tokens <= 0) return 0;
    switch (head_dim) {
    case 32:
        return launch_mma<32>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,
                              stream, err, errlen);
    case 64:
        return launch_mma<64>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,
                              stream, err, errlen);
    case 96:
        return launch_mma<96>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,
                              stream, err, errlen);
    case 128:
        return launch_mma<128>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,
                               stream, err, errlen);
    }
    snprintf(err, errlen, "cuda: attention prefill (mma): head_dim %d unsupported (32, 64, 96 or 128)",
             head_dim);
    return -1;
}
