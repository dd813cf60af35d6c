// attention_decode_split.cu — decode attention over the hybrid KV cache (kernels.h), GQA-aware and
// split over blocks (flash-decoding): one block per (KV head, sequence, chunk of `chunk` visible
// positions) reads each key and value once for all query heads of its GQA group, and a second
// kernel merges the chunks' online-softmax partials. A long full-attention head so spreads over
// many blocks (one sequence at 32k: 64 chunks of 512), while an SWA head (sinks + window visible
// positions) stays in one or two. Within a block, each warp takes 32 positions at a time: lane c
// scores position c against the group's query rows (held in shared memory), one max and one sum
// reduction per row, then o += p · V with p broadcast from lane c by a shuffle, lanes owning the
// dimensions lane + 32t.
#include "attention.cuh"
#include "kernels.h"

#define DS_WARPS 4
#define DS_GMAX 8    /* query heads per KV head handled here (GQA group) */
#define DS_CHUNK 512 /* default positions per block */
#define DS_MAX_SPLIT 65535

/* Chunks for position `pos` (pos + 1 visible positions at most). */
static int n_chunks(int pos, int chunk) {
    return (pos + chunk) / chunk;
}

template <int NT> /* head_dim = 32 * NT */
__global__ void k_attn_decode_split(const float *q, const float *const *k_heads, const float *const *v_heads,
                                    const int *cap, const uint8_t *z_row, float *out, float *part,
                                    int n_split, int chunk, int pos, int n_head, int n_head_kv, int window,
                                    int sinks, float scale) {
    constexpr int D = 32 * NT;
    KERN_DYNAMIC_SHARED(float, smem);
    const int kv_head = blockIdx.x, seq = blockIdx.y, split = blockIdx.z;
    const int group = n_head / n_head_kv, h0 = kv_head * group;
    float *qs = smem, *red = smem + group * D; /* q rows [group][D]; warp partials [warps][group][D+2] */
    const bool full = z_row[kv_head] != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int e = threadIdx.x; e < group * D; e += blockDim.x)
        qs[e] = q[((size_t)seq * n_head + h0 + e / D) * D + e % D] * scale;
    int n_sink;
    const int n_vis = n_visible(pos, full, window, sinks, &n_sink);
    const int w_first = full ? 0 : max(n_sink, pos - window + 1);
    const int i0 = split * chunk, i1 = min(n_vis, i0 + chunk);
    const float *kc = k_heads[kv_head] + (size_t)seq * cap[kv_head] * D;
    const float *vc = v_heads[kv_head] + (size_t)seq * cap[kv_head] * D;
    __syncthreads();

    float m[DS_GMAX], l[DS_GMAX], o[DS_GMAX][NT];
#pragma unroll
    for (int h = 0; h < DS_GMAX; h++) {
        m[h] = -FLT_MAX, l[h] = 0.0f;
#pragma unroll
        for (int t = 0; t < NT; t++) o[h][t] = 0.0f;
    }
    for (int c0 = i0 + warp * 32; c0 < i1; c0 += DS_WARPS * 32) {
        const int idx = c0 + lane;
        const bool valid = idx < i1;
        /* 1. this lane's position against every query row of the group */
        float s[DS_GMAX];
#pragma unroll
        for (int h = 0; h < DS_GMAX; h++) s[h] = 0.0f;
        if (valid) {
            const int p = full ? idx : (idx < n_sink ? idx : w_first + (idx - n_sink));
            const float *kr = kc + (size_t)kv_slot(p, full, window, sinks) * D;
            for (int d = 0; d < D; d += 4) {
                const float4 kk = kern_ld_float4(kr + d);
#pragma unroll
                for (int h = 0; h < DS_GMAX; h++)
                    if (h < group) {
                        const float *qh = qs + h * D + d;
                        s[h] += qh[0] * kk.x + qh[1] * kk.y + qh[2] * kk.z + qh[3] * kk.w;
                    }
            }
        }
        /* 2. online softmax per query row (c0 < i1: lane 0's position is always valid) */
#pragma unroll
        for (int h = 0; h < DS_GMAX; h++) {
            if (h >= group) break;
            const float m_new = fmaxf(m[h], warp_max(valid ? s[h] : -FLT_MAX));
            const float corr = __expf(m[h] - m_new);
            s[h] = valid ? __expf(s[h] - m_new) : 0.0f;
            l[h] = l[h] * corr + warp_sum(s[h]);
            m[h] = m_new;
#pragma unroll
            for (int t = 0; t < NT; t++) o[h][t] *= corr;
        }
        /* 3. o += p · V over the 32 positions */
        const int n_here = min(32, i1 - c0);
        for (int c = 0; c < n_here; c++) {
            const int ic = c0 + c;
            const int p = full ? ic : (ic < n_sink ? ic : w_first + (ic - n_sink));
            const float *vr = vc + (size_t)kv_slot(p, full, window, sinks) * D;
            float vv[NT];
#pragma unroll
            for (int t = 0; t < NT; t++) vv[t] = vr[lane + 32 * t];
#pragma unroll
            for (int h = 0; h < DS_GMAX; h++) {
                if (h >= group) break;
                const float pc = __shfl_sync(0xffffffffu, s[h], c);
#pragma unroll
                for (int t = 0; t < NT; t++) o[h][t] += pc * vv[t];
            }
        }
    }
    /* merge the warps; then the block's result, or its partial (m, l, unnormalized o) */
#pragma unroll
    for (int h = 0; h < DS_GMAX; h++) {
        if (h >= group) break;
        float *r = red + (size_t)(warp * group + h) * (D + 2);
        if (lane == 0) r[0] = m[h], r[1] = l[h];
#pragma unroll
        for (int t = 0; t < NT; t++) r[2 + lane + 32 * t] = o[h][t];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < group * D; e += blockDim.x) {
        const int h = e / D, d = e % D;
        float gm = -FLT_MAX, gl = 0.0f, acc = 0.0f;
        for (int w = 0; w < DS_WARPS; w++) gm = fmaxf(gm, red[(size_t)(w * group + h) * (D + 2)]);
        for (int w = 0; w < DS_WARPS; w++) {
            const float *r = red + (size_t)(w * group + h) * (D + 2);
            if (r[1] == 0.0f) continue; /* a warp without positions */
            const float f = __expf(r[0] - gm);
            gl += r[1] * f;
            acc += r[2 + d] * f;
        }
        const size_t row = (size_t)seq * n_head + h0 + h;
        if (n_split == 1) {
            out[row * D + d] = gl > 0.0f ? acc / gl : 0.0f;
        } else {
            float *pp = part + (row * n_split + split) * (D + 2);
            if (d == 0) pp[0] = gm, pp[1] = gl;
            pp[2 + d] = acc;
        }
    }
}

/* One block per (query head, sequence): the chunks' partials into the output row. */
__global__ void k_decode_merge(const float *part, float *out, int n_split, int n_head, int head_dim) {
    const size_t row = (size_t)blockIdx.y * n_head + blockIdx.x;
    const float *pp = part + row * n_split * (head_dim + 2);
    float gm = -FLT_MAX;
    for (int s = 0; s < n_split; s++) gm = fmaxf(gm, pp[(size_t)s * (head_dim + 2)]);
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float gl = 0.0f, acc = 0.0f;
        for (int s = 0; s < n_split; s++) {
            const float *ps = pp + (size_t)s * (head_dim + 2);
            if (ps[1] == 0.0f) continue; /* an empty chunk (past an SWA head's visible positions) */
            const float f = __expf(ps[0] - gm);
            gl += ps[1] * f;
            acc += ps[2 + d] * f;
        }
        out[row * head_dim + d] = gl > 0.0f ? acc / gl : 0.0f;
    }
}

extern "C" size_t kern_attn_decode_scratch_floats(int n_seq, int n_head, int head_dim, int max_pos,
                                                  int chunk) {
    if (chunk <= 0) chunk = DS_CHUNK;
    return (size_t)n_seq * n_head * n_chunks(max_pos, chunk) * (head_dim + 2);
}

template <int NT>
static void launch_split(dim3 grid, size_t shmem, const float *d_q, const float *const *d_k_heads,
                         const float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row,
                         float *d_out, float *d_scratch, int n_split, int chunk, int pos, int n_head,
                         int n_head_kv, int window, int sinks, cudaStream_t stream) {
    KERN_LAUNCH(k_attn_decode_split<NT>, grid, 32 * DS_WARPS, shmem, stream)
    (d_q, d_k_heads, d_v_heads, d_cap, d_z_row, d_out, d_scratch, n_split, chunk, pos, n_head, n_head_kv,
     window, sinks, 1.0f / sqrtf((float)(32 * NT)));
}

extern "C" int kern_attn_decode_split(const float *d_q, const float *const *d_k_heads,
                                      const float *const *d_v_heads, const int *d_cap, const uint8_t *d_z_row,
                                      float *d_out, int n_seq, int pos, int n_head, int n_head_kv,
                                      int head_dim, int window, int sinks, int chunk, float *d_scratch,
                                      size_t scratch_floats, void *stream, char *err, size_t errlen) {
    if (check_shape(n_head, n_head_kv, head_dim, window, sinks, err, errlen)) return -1;
    if (chunk <= 0) chunk = DS_CHUNK;
    const int group = n_head / n_head_kv, n_split = n_chunks(pos, chunk);
    if (group > DS_GMAX || chunk % 32 || pos < 0 || n_seq > 65535 || n_split > DS_MAX_SPLIT) {
        snprintf(
            err, errlen,
            "cuda: attention decode (split): unsupported GQA group %d (at most %d), chunk %d (a multiple "
            "of 32), position %d or n_seq %d",
            group, DS_GMAX, chunk, pos, n_seq);
        return -1;
    }
    if (n_seq <= 0) return 0;
    const size_t need = kern_attn_decode_scratch_floats(n_seq, n_head, head_dim, pos, chunk);
    if (n_split > 1 && (!d_scratch || scratch_floats < need)) {
        snprintf(err, errlen,
                 "cuda: attention decode (split): scratch of %zu floats, %zu needed at position %d",
                 scratch_floats, need, pos);
        return -1;
    }
    dim3 grid(n_head_kv, n_seq, n_split);
    const size_t shmem =
        sizeof(float) * ((size_t)group * head_dim + (size_t)DS_WARPS * group * (head_dim + 2));
    cudaStream_t st = (cudaStream_t)stream;
#define SPLIT(nt)                                                                                            \
    case nt:                                                                                                 \
        launch_split<nt>(grid, shmem, d_q, d_k_heads, d_v_heads, d_cap, d_z_row, d_out, d_scratch, n_split,  \
                         chunk, pos, n_head, n_head_kv, window, sinks, st);                                  \
        break
    switch (head_dim / 32) {
        SPLIT(1);
        SPLIT(2);
        SPLIT(3);
        SPLIT(4);
        SPLIT(5);
        SPLIT(6);
        SPLIT(7);
        SPLIT(8);
    }
#undef SPLIT
    if (KERN_LAUNCHED("attention decode (split)")) return -1;
    if (n_split == 1) return 0;
    KERN_LAUNCH(k_decode_merge, dim3(n_head, n_seq), 64, 0, st)(d_scratch, d_out, n_split, n_head, head_dim);
    return KERN_LAUNCHED("attention decode (merge)");
}
