// ops.cu — embedding, RMSNorm, RoPE, SwiGLU and residual add on the GPU (kernels.h).
#include <math.h>

#include "common.cuh"
#include "kernels.h"

__global__ void k_embed(const uint16_t *table, const int32_t *tokens, float *x, int n_embd) {
    int row = blockIdx.x;
    const uint16_t *src = table + (size_t)tokens[row] * n_embd;
    for (int c = threadIdx.x; c < n_embd; c += blockDim.x) x[(size_t)row * n_embd + c] = kern_bf2f(src[c]);
}

extern "C" int kern_embed(const uint16_t *d_table, const int32_t *d_tokens, float *d_x, int n_tokens,
                          int n_embd, void *stream, char *err, size_t errlen) {
    if (n_tokens <= 0) return 0;
    KERN_LAUNCH(k_embed, n_tokens, 256, 0, (cudaStream_t)stream)(d_table, d_tokens, d_x, n_embd);
    return KERN_LAUNCHED("embed");
}

/* One block of 256 threads per row: sum of squares reduced through shared memory (256 floats). */
__global__ void k_rmsnorm(const float *x, const float *w, float *y, int n, float eps) {
    KERN_DYNAMIC_SHARED(float, partial); /* [blockDim.x] */
    const float *xr = x + (size_t)blockIdx.x * n;
    float *yr = y + (size_t)blockIdx.x * n;
    float s = 0.0f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) s += xr[c] * xr[c];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    float scale = rsqrtf(partial[0] / (float)n + eps);
    for (int c = threadIdx.x; c < n; c += blockDim.x) yr[c] = xr[c] * scale * w[c];
}

extern "C" int kern_rmsnorm(const float *d_x, const float *d_w, float *d_y, int n_rows, int n, float eps,
                            void *stream, char *err, size_t errlen) {
    if (n_rows <= 0) return 0;
    KERN_LAUNCH(k_rmsnorm, n_rows, 256, 256 * sizeof(float), (cudaStream_t)stream)(d_x, d_w, d_y, n, eps);
    return KERN_LAUNCHED("rmsnorm");
}

/* One thread per rotated pair. */
__global__ void k_rope(float *x, int n_tokens, int n_heads, int head_dim, int rope_dim, int pos0, float base,
                       int neox) {
    int half = rope_dim / 2;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t total = (uint64_t)n_tokens * n_heads * half;
    if (i >= total) return;
    int k = (int)(i % half);
    int head = (int)((i / half) % n_heads);
    int t = (int)(i / ((uint64_t)half * n_heads));
    double theta = (double)(pos0 + t) * pow((double)base, -2.0 * k / (double)rope_dim);
    float c = (float)cos(theta), s = (float)sin(theta);
    float *h = x + ((size_t)t * n_heads + head) * head_dim;
    int a = neox ? k : 2 * k, b = neox ? k + half : 2 * k + 1;
    float x0 = h[a], x1 = h[b];
    h[a] = x0 * c - x1 * s;
    h[b] = x0 * s + x1 * c;
}

extern "C" int kern_rope(float *d_x, int n_tokens, int n_heads, int head_dim, int rope_dim, int pos0,
                         float base, int neox, void *stream, char *err, size_t errlen) {
    uint64_t total = (uint64_t)n_tokens * n_heads * (rope_dim / 2);
    if (total == 0) return 0;
    KERN_LAUNCH(k_rope, kern_blocks(total, 256), 256, 0, (cudaStream_t)stream)
    (d_x, n_tokens, n_heads, head_dim, rope_dim, pos0, base, neox);
    return KERN_LAUNCHED("rope");
}

__global__ void k_swiglu(const float *gate, const float *up, float *out, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

extern "C" int kern_swiglu(const float *d_gate, const float *d_up, float *d_out, uint64_t n, void *stream,
                           char *err, size_t errlen) {
    if (n == 0) return 0;
    KERN_LAUNCH(k_swiglu, kern_blocks(n, 256), 256, 0, (cudaStream_t)stream)(d_gate, d_up, d_out, n);
    return KERN_LAUNCHED("swiglu");
}

__global__ void k_add(float *x, const float *y, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

extern "C" int kern_add(float *d_x, const float *d_y, uint64_t n, void *stream, char *err, size_t errlen) {
    if (n == 0) return 0;
    KERN_LAUNCH(k_add, kern_blocks(n, 256), 256, 0, (cudaStream_t)stream)(d_x, d_y, n);
    return KERN_LAUNCHED("add");
}

__global__ void k_gather_rows(const float *src, const int32_t *rows, float *dst, int n) {
    const float *s = src + (size_t)rows[blockIdx.x] * n;
    float *d = dst + (size_t)blockIdx.x * n;
    for (int c = threadIdx.x; c < n; c += blockDim.x) d[c] = s[c];
}

extern "C" int kern_gather_rows(const float *d_src, const int32_t *d_rows, float *d_dst, int n_rows, int n,
                                void *stream, char *err, size_t errlen) {
    if (n_rows <= 0) return 0;
    KERN_LAUNCH(k_gather_rows, n_rows, 256, 0, (cudaStream_t)stream)(d_src, d_rows, d_dst, n);
    return KERN_LAUNCHED("gather rows");
}
