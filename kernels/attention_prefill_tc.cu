// attention_prefill_tc.cu — the hybrid prefill attention of kernels.h on tensor cores (WMMA, bf16
// inputs, fp32 accumulation), flash-style (Dao et al. 2022: tiles of keys, online softmax, no
// T x T buffer), the same visibility as kern_attn_prefill (attention.cuh).
//
// A block owns TC_BR = 64 query rows of one query head; each of its 4 warps owns 16 rows. Per tile
// of TC_BC = 64 keys (K and V rounded to bf16 in shared memory, shared by the warps):
//   1. S = Q_w K^T (16 x 64, fp32) with 16x16x16 WMMA steps, stored to the warp's shared S;
//   2. online softmax on S: two lanes per row (32 columns each) find the tile's row max, update the
//      running max m and sum l, write P = exp(S - m) as bf16, and rescale the warp's O rows;
//   3. O_w += P V (16 x head_dim, fp32 in shared memory) with WMMA.
// O lives in shared memory because the WMMA API does not say which lane holds which row of an
// accumulator, and the online softmax must rescale rows. Q is pre-scaled by 1/sqrt(head_dim) and
// rounded to bf16, like PyTorch's bf16 scaled_dot_product_attention; l sums the fp32 p while P·V
// uses the bf16 p (as FlashAttention does).
#include "attention.cuh"
#include "kernels.h"

#ifdef BOSCH_KERN_EMU
#include "emu/wmma_emu.h"
#else
#include <mma.h>
#endif

using namespace nvcuda;

#define TC_BR 64   /* query rows per block */
#define TC_BC 64   /* keys per tile */
#define TC_WARPS 4 /* 16 rows each */

/* Shared memory layout (bytes), every part a multiple of 32 bytes for WMMA. */
template <int D> struct tc_smem {
    static constexpr size_t q = 0;                     /* bf16 [TC_BR][D] */
    static constexpr size_t k = q + 2 * TC_BR * D;     /* bf16 [TC_BC][D] */
    static constexpr size_t v = k + 2 * TC_BC * D;     /* bf16 [TC_BC][D] */
    static constexpr size_t s = v + 2 * TC_BC * D;     /* fp32 [TC_BR][TC_BC] */
    static constexpr size_t p = s + 4 * TC_BR * TC_BC; /* bf16 [TC_BR][TC_BC] */
    static constexpr size_t o = p + 2 * TC_BR * TC_BC; /* fp32 [TC_BR][D] */
    static constexpr size_t m = o + 4 * TC_BR * D;     /* fp32 [TC_BR] running max */
    static constexpr size_t l = m + 4 * TC_BR;         /* fp32 [TC_BR] running sum */
    static constexpr size_t bytes = l + 4 * TC_BR;
};

template <int D>
__global__ void k_attn_prefill_tc(const float *q, const float *k, const float *v, float *out, int n_tokens,
                                  int n_head, int n_head_kv, const uint8_t *z_row, int window, int sinks,
                                  float scale) {
    typedef tc_smem<D> L;
    KERN_DYNAMIC_SHARED(unsigned char, smem);
    __nv_bfloat16 *qs = reinterpret_cast<__nv_bfloat16 *>(smem + L::q);
    __nv_bfloat16 *ks = reinterpret_cast<__nv_bfloat16 *>(smem + L::k);
    __nv_bfloat16 *vs = reinterpret_cast<__nv_bfloat16 *>(smem + L::v);
    const int head = blockIdx.y, kv_head = head / (n_head / n_head_kv);
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r0 = blockIdx.x * TC_BR, r_last = min(r0 + TC_BR, n_tokens) - 1;
    const size_t q_stride = (size_t)n_head * D, kv_stride = (size_t)n_head_kv * D;
    /* this warp's 16 rows */
    const __nv_bfloat16 *wq = qs + warp * 16 * D;
    float *ws = reinterpret_cast<float *>(smem + L::s) + warp * 16 * TC_BC;
    __nv_bfloat16 *wp = reinterpret_cast<__nv_bfloat16 *>(smem + L::p) + warp * 16 * TC_BC;
    float *wo = reinterpret_cast<float *>(smem + L::o) + warp * 16 * D;
    float *wm = reinterpret_cast<float *>(smem + L::m) + warp * 16;
    float *wl = reinterpret_cast<float *>(smem + L::l) + warp * 16;

    for (int e = threadIdx.x; e < TC_BR * D; e += blockDim.x) {
        const int i = r0 + e / D, d = e % D;
        qs[e] = __float2bfloat16_rn(i < n_tokens ? q[i * q_stride + head * D + d] * scale : 0.0f);
        reinterpret_cast<float *>(smem + L::o)[e] = 0.0f;
    }
    for (int r = threadIdx.x; r < TC_BR; r += blockDim.x) {
        reinterpret_cast<float *>(smem + L::m)[r] = -FLT_MAX;
        reinterpret_cast<float *>(smem + L::l)[r] = 0.0f;
    }

    /* the softmax step's row and half of the tile's columns for this lane */
    const int rr = lane >> 1, c0 = (lane & 1) * (TC_BC / 2), i = r0 + warp * 16 + rr;
    for (int pass = 0; pass < 2; pass++) {
        int t_begin, t_end;
        tile_range(pass, r0, r_last, full, window, sinks, TC_BC, &t_begin, &t_end);
        for (int tile = t_begin; tile < t_end; tile++) {
            const int j0 = tile * TC_BC;
            __syncthreads(); /* previous tile consumed (first time: Q, O, m, l written) */
            for (int e = threadIdx.x; e < TC_BC * D; e += blockDim.x) {
                const int c = e / D, d = e % D, jj = j0 + c;
                ks[e] = __float2bfloat16_rn(jj < n_tokens ? k[jj * kv_stride + kv_head * D + d] : 0.0f);
                vs[e] = __float2bfloat16_rn(jj < n_tokens ? v[jj * kv_stride + kv_head * D + d] : 0.0f);
            }
            __syncthreads();
            /* 1. S = Q_w K^T: K [key][d] row-major is K^T column-major with ldm D */
            for (int nb = 0; nb < TC_BC / 16; nb++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
                wmma::fill_fragment(acc, 0.0f);
#pragma unroll
                for (int kb = 0; kb < D / 16; kb++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
                    wmma::load_matrix_sync(a, wq + kb * 16, D);
                    wmma::load_matrix_sync(b, ks + nb * 16 * D + kb * 16, D);
                    wmma::mma_sync(acc, a, b, acc);
                }
                wmma::store_matrix_sync(ws + nb * 16, acc, TC_BC, wmma::mem_row_major);
            }
            __syncwarp();
            /* 2. online softmax, two lanes per row */
            float m_tile = -FLT_MAX;
            for (int c = c0; c < c0 + TC_BC / 2; c++)
                if (i < n_tokens && visible(i, j0 + c, full, window, sinks))
                    m_tile = fmaxf(m_tile, ws[rr * TC_BC + c]);
            m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 1));
            const float m_old = wm[rr], m_new = fmaxf(m_old, m_tile);
            const bool any = m_tile != -FLT_MAX; /* a visible key in this tile (same for both lanes) */
            const float corr = any ? __expf(m_old - m_new) : 1.0f;
            float psum = 0.0f;
            for (int c = c0; c < c0 + TC_BC / 2; c++) {
                const bool vis = any && i < n_tokens && visible(i, j0 + c, full, window, sinks);
                const float p = vis ? __expf(ws[rr * TC_BC + c] - m_new) : 0.0f;
                wp[rr * TC_BC + c] = __float2bfloat16_rn(p);
                psum += p;
            }
            psum += __shfl_xor_sync(0xffffffffu, psum, 1);
            for (int d = (lane & 1) * (D / 2); d < (lane & 1) * (D / 2) + D / 2; d++) wo[rr * D + d] *= corr;
            __syncwarp(); /* both lanes of the row have read m before it changes */
            if ((lane & 1) == 0 && any) {
                wm[rr] = m_new;
                wl[rr] = wl[rr] * corr + psum;
            }
            __syncwarp();
            /* 3. O_w += P V: V [key][d] row-major is the K x N operand with ldm D */
#pragma unroll
            for (int nb = 0; nb < D / 16; nb++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
                wmma::load_matrix_sync(acc, wo + nb * 16, D, wmma::mem_row_major);
                for (int kb = 0; kb < TC_BC / 16; kb++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
                    wmma::load_matrix_sync(a, wp + kb * 16, TC_BC);
                    wmma::load_matrix_sync(b, vs + kb * 16 * D + nb * 16, D);
                    wmma::mma_sync(acc, a, b, acc);
                }
                wmma::store_matrix_sync(wo + nb * 16, acc, D, wmma::mem_row_major);
            }
            __syncwarp();
        }
    }
    __syncwarp();
    for (int e = lane; e < 16 * D; e += 32) {
        const int r = e / D, d = e % D, row = r0 + warp * 16 + r;
        if (row < n_tokens) out[row * q_stride + head * D + d] = wl[r] > 0.0f ? wo[e] / wl[r] : 0.0f;
    }
}

template <int D>
static int launch_tc(const float *d_q, const float *d_k, const float *d_v, float *d_out, int n_tokens,
                     int n_head, int n_head_kv, const uint8_t *d_z_row, int window, int sinks, void *stream,
                     char *err, size_t errlen) {
    const size_t shmem = tc_smem<D>::bytes;
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
        shmem > (size_t)optin) /* e.g. head_dim 224 and 256 on an A100 (163 KiB): the fp32 kernel fits */
        return kern_attn_prefill(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, D, d_z_row, window, sinks,
                                 stream, err, errlen);
    if (allow_shmem(k_attn_prefill_tc<D>, shmem, "attention prefill (tensor cores)", err, errlen)) return -1;
    dim3 grid((n_tokens + TC_BR - 1) / TC_BR, n_head);
    KERN_LAUNCH(k_attn_prefill_tc<D>, grid, 32 * TC_WARPS, shmem, (cudaStream_t)stream)
    (d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks, 1.0f / sqrtf((float)D));
    return KERN_LAUNCHED("attention prefill (tensor cores)");
}

extern "C" int kern_attn_prefill_tc(const float *d_q, const float *d_k, const float *d_v, float *d_out,
                                    int n_tokens, int n_head, int n_head_kv, int head_dim,
                                    const uint8_t *d_z_row, int window, int sinks, void *stream, char *err,
                                    size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (n_tokens <= 0) return 0;
#define TC(d)                                                                                                \
    case d:                                                                                                  \
        return launch_tc<d>(d_q, d_k, d_v, d_out, n_tokens, n_head, n_head_kv, d_z_row, window, sinks,       \
                            stream, err, errlen)
    switch (head_dim) {
        TC(32);
        TC(64);
        TC(96);
        TC(128);
        TC(160);
        TC(192);
        TC(224);
        TC(256);
    }
#undef TC
    return -1; /* unreachable: check_shape allows head_dim = 32..256 in steps of 32 */
}
