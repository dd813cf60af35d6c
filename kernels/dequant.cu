// dequant.cu — GGUF block formats to bf16 on the GPU (kernels.h). Block layouts: engine/quant.h
// (ggml format spec). One thread per output element; this runs once at model load.
#include "common.cuh"
#include "kernels.h"

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q8_0 = 8, T_Q4_K = 12, T_Q6_K = 14, T_BF16 = 30 };

__device__ __forceinline__ uint16_t ld_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

__device__ float dequant_q4_0(const uint8_t *blk, int j) { /* 18 bytes: d, qs[16] */
    float d = kern_h2f(ld_u16(blk));
    uint8_t q = blk[2 + (j & 15)];
    int v = j < 16 ? (q & 0xF) : (q >> 4);
    return d * (float)(v - 8);
}

__device__ float dequant_q4_1(const uint8_t *blk, int j) { /* 20 bytes: d, m, qs[16] */
    float d = kern_h2f(ld_u16(blk)), m = kern_h2f(ld_u16(blk + 2));
    uint8_t q = blk[4 + (j & 15)];
    int v = j < 16 ? (q & 0xF) : (q >> 4);
    return d * (float)v + m;
}

__device__ float dequant_q8_0(const uint8_t *blk, int j) { /* 34 bytes: d, int8 qs[32] */
    return kern_h2f(ld_u16(blk)) * (float)(int8_t)blk[2 + j];
}

/* Q4_K: 144 bytes: d, dmin, scales[12] (6-bit scale and min of 8 sub-blocks of 32), qs[128].
 * Sub-blocks 0..3: scale = s[j] & 63, min = s[j+4] & 63; sub-blocks 4..7 splice the low nibble of
 * s[j+4] with the top two bits of s[j-4] (scale) and of s[j] (min). */
__device__ float dequant_q4_k(const uint8_t *blk, int j) {
    float d = kern_h2f(ld_u16(blk)), dmin = kern_h2f(ld_u16(blk + 2));
    const uint8_t *s = blk + 4, *qs = blk + 16;
    int sub = j / 32, pair = j / 64, l = j % 32;
    int sc, mn;
    if (sub < 4) {
        sc = s[sub] & 63;
        mn = s[sub + 4] & 63;
    } else {
        sc = (s[sub + 4] & 0xF) | ((s[sub - 4] >> 6) << 4);
        mn = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
    }
    uint8_t q = qs[pair * 32 + l];
    int v = (sub & 1) ? (q >> 4) : (q & 0xF);
    return d * (float)sc * (float)v - dmin * (float)mn;
}

/* Q6_K: 210 bytes: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], d. Each half of
 * 128 elements uses 64 ql bytes, 32 qh bytes and 8 scales; within a half, element 32*g + l takes
 * the nibble (g < 2 ? low : high) of ql[l + 32*(g&1)] and bits 2g..2g+1 of qh[l]; scale index
 * l/16 + 2g. Value = d * scale * (q - 32). */
__device__ float dequant_q6_k(const uint8_t *blk, int j) {
    const uint8_t *ql = blk, *qh = blk + 128;
    const int8_t *sc = (const int8_t *)(blk + 192);
    float d = kern_h2f(ld_u16(blk + 208));
    int half = j / 128, r = j % 128, g = r / 32, l = r % 32;
    ql += 64 * half;
    qh += 32 * half;
    sc += 8 * half;
    uint8_t lo = ql[l + 32 * (g & 1)];
    int low4 = g < 2 ? (lo & 0xF) : (lo >> 4);
    int hi2 = (qh[l] >> (2 * g)) & 3;
    int q = (low4 | (hi2 << 4)) - 32;
    return d * (float)sc[l / 16 + 2 * g] * (float)q;
}

__global__ void k_dequant(uint32_t type, const uint8_t *src, uint16_t *dst, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x;
    switch (type) {
    case T_F32:
        x = ((const float *)src)[i];
        break;
    case T_F16:
        x = kern_h2f(((const uint16_t *)src)[i]);
        break;
    case T_BF16:
        dst[i] = ((const uint16_t *)src)[i];
        return;
    case T_Q4_0:
        x = dequant_q4_0(src + (i / 32) * 18, (int)(i % 32));
        break;
    case T_Q4_1:
        x = dequant_q4_1(src + (i / 32) * 20, (int)(i % 32));
        break;
    case T_Q8_0:
        x = dequant_q8_0(src + (i / 32) * 34, (int)(i % 32));
        break;
    case T_Q4_K:
        x = dequant_q4_k(src + (i / 256) * 144, (int)(i % 256));
        break;
    case T_Q6_K:
        x = dequant_q6_k(src + (i / 256) * 210, (int)(i % 256));
        break;
    default:
        x = 0.0f;
        break;
    }
    dst[i] = kern_f2bf(x);
}

extern "C" int kern_dequant_bf16(uint32_t type, const void *d_src, uint16_t *d_dst, uint64_t n_elems,
                                 void *stream, char *err, size_t errlen) {
    uint64_t block = 1;
    switch (type) {
    case T_F32:
    case T_F16:
    case T_BF16:
        block = 1;
        break;
    case T_Q4_0:
    case T_Q4_1:
    case T_Q8_0:
        block = 32;
        break;
    case T_Q4_K:
    case T_Q6_K:
        block = 256;
        break;
    default:
        snprintf(err, errlen, "cuda: dequantize: unsupported ggml type %u", type);
        return -1;
    }
    if (n_elems % block) {
        snprintf(err, errlen, "cuda: dequantize: %llu elements is not a multiple of the block size %llu",
                 (unsigned long long)n_elems, (unsigned long long)block);
        return -1;
    }
    if (n_elems == 0) return 0;
    KERN_LAUNCH(k_dequant, kern_blocks(n_elems, 256), 256, 0, (cudaStream_t)stream)
    (type, (const uint8_t *)d_src, d_dst, n_elems);
    return KERN_LAUNCHED("dequantize");
}

__global__ void k_f32_to_bf16(const float *src, uint16_t *dst, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = kern_f2bf(src[i]);
}

extern "C" int kern_f32_to_bf16(const float *d_src, uint16_t *d_dst, uint64_t n, void *stream, char *err,
                                size_t errlen) {
    if (n == 0) return 0;
    KERN_LAUNCH(k_f32_to_bf16, kern_blocks(n, 256), 256, 0, (cudaStream_t)stream)(d_src, d_dst, n);
    return KERN_LAUNCHED("fp32 to bf16");
}
