// test_emulator.cpp — the CPU emulator of CUDA (kernels/emu/) that the *_emu tests run the kernels
// on: it must compute what CUDA computes for correct kernels, and report what a GPU would get wrong
// or refuse (divergent barriers and shuffles, host pointers, launch limits, missing barriers that
// let a thread read shared memory before another wrote it, bad cuBLAS arguments). Hand-worked
// values; every failure case is checked by the message it gives.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

extern "C" {
#include <cmocka.h>
}

#include "emu/cublas_emu.h"
#include "emu/wmma_emu.h"
#include "mma.cuh"

static float *dev_floats(size_t n) {
    void *p = nullptr;
    assert_int_equal(cudaMalloc(&p, n * sizeof(float)), cudaSuccess);
    return static_cast<float *>(p);
}

static void expect_error(const char *needle) {
    cudaError_t e = cudaGetLastError();
    assert_int_not_equal(e, cudaSuccess);
    const char *msg = cudaGetErrorString(e);
    if (!strstr(msg, needle)) fail_msg("error \"%s\" does not mention \"%s\"", msg, needle);
    assert_int_equal(cudaGetLastError(), cudaSuccess); /* cleared once read */
}

/* Block sum through shared memory (tree reduction with barriers), one block per row. */
__global__ void k_row_sum(const float *x, float *out, int n) {
    KERN_DYNAMIC_SHARED(float, part); /* [blockDim.x] */
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[blockIdx.x * n + i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

/* Warp sum by xor shuffles; lane 0 of every warp writes. */
__global__ void k_warp_sum(const float *x, float *out) {
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
    out[2 + threadIdx.x] = __shfl_sync(0xffffffffu, x[threadIdx.x], 31 - (int)(threadIdx.x % 32));
}

static void test_correct_kernels(void **) {
    const int rows = 3, n = 300;
    float h[rows * n], sums[rows];
    for (int i = 0; i < rows * n; i++) h[i] = (float)(i % 7) - 2.0f;
    float *dx = dev_floats(rows * n), *dout = dev_floats(rows);
    assert_int_equal(cudaMemcpy(dx, h, sizeof h, cudaMemcpyHostToDevice), cudaSuccess);
    KERN_LAUNCH(k_row_sum, rows, 128, 128 * sizeof(float), nullptr)(dx, dout, n);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(sums, dout, sizeof sums, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int r = 0; r < rows; r++) {
        double want = 0;
        for (int i = 0; i < n; i++) want += h[r * n + i];
        assert_float_equal(sums[r], want, 1e-3);
    }
    /* shuffles: 64 threads = 2 warps; lane values 0..31 and 32..63 */
    float v[64], w[66];
    for (int i = 0; i < 64; i++) v[i] = (float)i;
    float *dv = dev_floats(64), *dw = dev_floats(66);
    assert_int_equal(cudaMemcpy(dv, v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
    KERN_LAUNCH(k_warp_sum, 1, 64, 0, nullptr)(dv, dw);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(w, dw, sizeof w, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_float_equal(w[0], 496.0f, 0);             /* 0 + 1 + ... + 31 */
    assert_float_equal(w[1], 496.0f + 1024.0f, 0);   /* 32 + ... + 63 */
    assert_float_equal(w[2 + 0], 31.0f, 0);          /* lane 0 reads lane 31 of its warp */
    assert_float_equal(w[2 + 40], 32.0f + 23.0f, 0); /* warp 1 lane 8 reads lane 23 */
    cudaFree(dx), cudaFree(dout), cudaFree(dv), cudaFree(dw);
}

__global__ void k_early_exit_barrier(float *out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

__global__ void k_half_warp_shuffle(float *out) {
    float v = 1.0f;
    if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x] = v;
}

/* Every lane gathers every lane's (lane, 10 * lane); lane 5 checks and writes what it got. */
__global__ void k_gather(int *out) {
    const int mine[2] = {(int)threadIdx.x, 10 * (int)threadIdx.x};
    int all[32][2];
    emu::warp_gather(mine, sizeof mine, all, "test gather");
    if (threadIdx.x == 5)
        for (int i = 0; i < 32; i++) out[i] = all[i][0] + all[i][1];
}

/* Half the warp gathers while the other half shuffles: two different collectives. */
__global__ void k_mixed_collectives(float *out) {
    float v = 1.0f;
    if (threadIdx.x < 16) {
        float all[32];
        emu::warp_gather(&v, sizeof v, all, "test gather");
    } else {
        v = __shfl_xor_sync(0xffffffffu, v, 1);
    }
    out[threadIdx.x] = v;
}

static void test_warp_gather(void **) {
    int *d = nullptr, h[32];
    assert_int_equal(cudaMalloc((void **)&d, sizeof h), cudaSuccess);
    KERN_LAUNCH(k_gather, 1, 32, 0, nullptr)(d);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 32; i++) assert_int_equal(h[i], 11 * i);
    float *f = dev_floats(32);
    KERN_LAUNCH(k_mixed_collectives, 1, 32, 0, nullptr)(f);
    expect_error("meet at different warp collectives");
    cudaFree(d), cudaFree(f);
}

/* One warp: C = A·B with A[i][k] = i + k, B[k][j] = (k == j) + 1 (as bf16, exact), C stored to
 * shared memory and read back by lane 0 for the whole tile, after __syncwarp or (sync = 0) without. */
__global__ void k_wmma(float *out, int sync, int misalign) {
    KERN_DYNAMIC_SHARED(float, s);
    __nv_bfloat16 *a = reinterpret_cast<__nv_bfloat16 *>(s + 256), *b = a + 256;
    for (int e = threadIdx.x; e < 256; e += 32) {
        a[e] = __float2bfloat16_rn((float)(e / 16 + e % 16));
        b[e] = __float2bfloat16_rn((float)((e / 16 == e % 16) + 1));
    }
    __syncwarp();
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16, nvcuda::wmma::row_major> fb;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fc;
    nvcuda::wmma::fill_fragment(fc, 0.0f);
    nvcuda::wmma::load_matrix_sync(fa, a + misalign, 16);
    nvcuda::wmma::load_matrix_sync(fb, b, 16);
    nvcuda::wmma::mma_sync(fc, fa, fb, fc);
    for (int e = threadIdx.x; e < 256; e += 32) s[e] = -1.0f;
    if (sync) __syncwarp();
    nvcuda::wmma::store_matrix_sync(s, fc, 16, nvcuda::wmma::mem_row_major);
    if (sync) __syncwarp();
    if (threadIdx.x == 0)
        for (int e = 0; e < 256; e++) out[e] = s[e];
}

static void test_wmma(void **) {
    float *d = dev_floats(256), h[256];
    const size_t shmem = 256 * 4 + 2 * 256 * 2;
    KERN_LAUNCH(k_wmma, 1, 32, shmem, nullptr)(d, 1, 0);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 16; i++) /* sum_k (i + k) + (i + j) = 16 i + 120 + i + j */
        for (int j = 0; j < 16; j++) assert_float_equal(h[i * 16 + j], 17.0f * i + 120.0f + j, 0);
    KERN_LAUNCH(k_wmma, 1, 32, shmem, nullptr)(d, 0, 0);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_float_equal(h[0], 120.0f, 0); /* lane 0's own element */
    assert_float_equal(h[1], -1.0f, 0);  /* lane 1's, not yet visible to lane 0 */
    KERN_LAUNCH(k_wmma, 1, 32, shmem, nullptr)(d, 1, 1);
    expect_error("not 32-byte aligned");
    cudaFree(d);
}

/* mma.sync.m16n8k16 against the PTX ISA's fragment tables ("Matrix fragments for mma.m16n8k16
 * with floating point type"), written out here on their own: with g = lane >> 2 and t = lane % 4,
 *   A: a0,a1 = (row g, cols 2t, 2t+1), a2,a3 = (row g+8, same cols), a4..a7 = the same rows at
 *      cols 2t+8, 2t+9; registers hold (a0,a1), (a2,a3), (a4,a5), (a6,a7), lower element low;
 *   B: b0,b1 = (rows 2t, 2t+1, col g), b2,b3 = (rows 2t+8, 2t+9, col g);
 *   C: c0,c1 = (row g, cols 2t, 2t+1), c2,c3 = (row g+8, cols 2t, 2t+1).
 * A = identity and B[k][n] = 8k + n give C = B's first 16 rows; each lane checks its 4 elements. */
__global__ void k_mma_layout(float *out) {
    const int lane = threadIdx.x, g = lane >> 2, t = lane % 4;
    auto A = [](int r, int c) { return r == c ? 1.0f : 0.0f; };
    auto B = [](int k, int n) { return (float)(8 * k + n); };
    const uint32_t a[4] = {kern_pack_bf16(A(g, 2 * t), A(g, 2 * t + 1)),
                           kern_pack_bf16(A(g + 8, 2 * t), A(g + 8, 2 * t + 1)),
                           kern_pack_bf16(A(g, 2 * t + 8), A(g, 2 * t + 9)),
                           kern_pack_bf16(A(g + 8, 2 * t + 8), A(g + 8, 2 * t + 9))};
    const uint32_t b[2] = {kern_pack_bf16(B(2 * t, g), B(2 * t + 1, g)),
                           kern_pack_bf16(B(2 * t + 8, g), B(2 * t + 9, g))};
    float c[4] = {0.5f, 0.5f, 0.5f, 0.5f}; /* accumulated onto */
    kern_mma_16816(c, a, b);
    for (int e = 0; e < 4; e++) out[lane * 4 + e] = c[e];
}

static void test_mma_layout(void **) {
    float *d = dev_floats(128), h[128];
    KERN_LAUNCH(k_mma_layout, 1, 32, 0, nullptr)(d);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int lane = 0; lane < 32; lane++) {
        const int g = lane >> 2, t = lane % 4;
        assert_float_equal(h[lane * 4 + 0], 8 * g + 2 * t + 0.5, 0);
        assert_float_equal(h[lane * 4 + 1], 8 * g + 2 * t + 1 + 0.5, 0);
        assert_float_equal(h[lane * 4 + 2], 8 * (g + 8) + 2 * t + 0.5, 0);
        assert_float_equal(h[lane * 4 + 3], 8 * (g + 8) + 2 * t + 1 + 0.5, 0);
    }
    cudaFree(d);
}

/* A 32-bit load at an odd bf16 index faults on a GPU: the emulator reports it. */
__global__ void k_misaligned(float *out) {
    KERN_DYNAMIC_SHARED(uint16_t, s);
    s[threadIdx.x] = 0;
    out[threadIdx.x] = (float)kern_ld_bf16x2(s + 1);
}

static void test_misaligned(void **) {
    float *d = dev_floats(32);
    KERN_LAUNCH(k_misaligned, 1, 32, 128, nullptr)(d);
    expect_error("not 4-byte aligned");
    cudaFree(d);
}

static void test_divergence_reported(void **) {
    float *d = dev_floats(64);
    KERN_LAUNCH(k_early_exit_barrier, 2, 64, 0, nullptr)(d);
    expect_error("__syncthreads() reached by 63 of the 64 threads");
    KERN_LAUNCH(k_half_warp_shuffle, 1, 32, 0, nullptr)(d);
    expect_error("reached by 16 of the 32 lanes");
    cudaFree(d);
}

/* Thread i writes s[i] and reads s[i+1] with no barrier in between: a race on a GPU. */
__global__ void k_missing_barrier(float *out) {
    KERN_DYNAMIC_SHARED(float, s);
    s[threadIdx.x] = (float)threadIdx.x;
    out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

__global__ void k_with_barrier(float *out) {
    KERN_DYNAMIC_SHARED(float, s);
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

static void test_missing_barrier_visible(void **) {
    float *d = dev_floats(32), h[32];
    KERN_LAUNCH(k_missing_barrier, 1, 32, 32 * sizeof(float), nullptr)(d);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(isnan(h[0])); /* thread 0 ran before thread 1 wrote: poisoned shared memory */
    KERN_LAUNCH(k_with_barrier, 1, 32, 32 * sizeof(float), nullptr)(d);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 32; i++) assert_float_equal(h[i], (float)((i + 1) % 32), 0);
    cudaFree(d);
}

__global__ void k_touch(float *out, int n) {
    KERN_DYNAMIC_SHARED(float, s);
    if (threadIdx.x < n) out[threadIdx.x] = s ? 0.0f : 1.0f;
}

static void test_launch_checks(void **) {
    float *d = dev_floats(8), host[8];
    KERN_LAUNCH(k_touch, 1, 32, 0, nullptr)(host, 8);
    expect_error("pointer argument 0 is not device memory");
    KERN_LAUNCH(k_touch, 1, 1025, 0, nullptr)(d, 8);
    expect_error("invalid launch");
    KERN_LAUNCH(k_touch, dim3(1, 65536), 32, 0, nullptr)(d, 8);
    expect_error("invalid launch");
    KERN_LAUNCH(k_touch, 1, 32, 64 * 1024, nullptr)(d, 8);
    expect_error("above the 49152 allowed");
    assert_int_equal(cudaFuncSetAttribute(k_touch, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024),
                     cudaSuccess);
    KERN_LAUNCH(k_touch, 1, 32, 64 * 1024, nullptr)(d, 8);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_not_equal(
        cudaFuncSetAttribute(k_touch, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024), cudaSuccess);
    cudaGetLastError();
    /* copies in the wrong direction */
    assert_int_equal(cudaMemcpy(host, d, 8 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    expect_error("destination is not device memory");
    assert_int_equal(cudaMemcpy(host, d, 9 * sizeof(float), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    cudaGetLastError();
    cudaFree(d);
}

/* Column-major 2x3 A (op N) times 3x2 B (op N), and the same with A stored transposed. */
static void test_gemm(void **) {
    const float a[6] = {1, 2, 3, 4, 5, 6};  /* A = [1 3 5; 2 4 6] */
    const float b[6] = {1, 0, 2, 0, 1, 1};  /* B = [1 0; 0 1; 2 1] */
    const float at[6] = {1, 3, 5, 2, 4, 6}; /* A^T stored column-major (3x2, lda 3) */
    float c[4];
    float *da = dev_floats(6), *db = dev_floats(6), *dat = dev_floats(6), *dc = dev_floats(4);
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    cublasHandle_t h;
    assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    const float one = 1, zero = 0;
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 2, db,
                                  CUDA_R_32F, 3, &zero, dc, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
    const float want[4] = {11, 14, 8, 10}; /* A*B = [11 8; 14 10], column-major */
    for (int i = 0; i < 4; i++) assert_float_equal(c[i], want[i], 0);
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, dat, CUDA_R_32F, 3, db,
                                  CUDA_R_32F, 3, &zero, dc, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 4; i++) assert_float_equal(c[i], want[i], 0);
    /* lda too small for op(A) = T (A stored k x m = 3 x 2 needs lda >= 3) */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, dat, CUDA_R_32F, 2, db,
                                  CUDA_R_32F, 3, &zero, dc, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    /* A fp32 with B bf16 is not in cuBLAS's table of type combinations */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 2, db,
                                  CUDA_R_16BF, 3, &zero, dc, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    /* C's last column reaches past its allocation (ldc 3: 3 * 1 + 2 = 5 > 4 floats) */
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, da, CUDA_R_32F, 2, db,
                                  CUDA_R_32F, 3, &zero, dc, CUDA_R_32F, 3, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_INVALID_VALUE);
    cublasDestroy(h);
    cudaFree(da), cudaFree(db), cudaFree(dat), cudaFree(dc);
}

/* Conversions: fp16 (normal, subnormal, inf) and bf16 round-to-nearest-even. */
static void test_conversions(void **) {
    __half_raw r;
    r.x = 0x3C00; /* 1.0 */
    assert_float_equal(__half2float(__half(r)), 1.0f, 0);
    r.x = 0xC500; /* -5.0 */
    assert_float_equal(__half2float(__half(r)), -5.0f, 0);
    r.x = 0x0001; /* smallest subnormal 2^-24 */
    assert_float_equal(__half2float(__half(r)), 5.9604644775390625e-8f, 0);
    r.x = 0x7C00;
    assert_true(isinf(__half2float(__half(r))));
    /* 1 + 2^-8 is halfway between bf16 1.0 (0x3F80) and 1 + 2^-7 (0x3F81): ties to even -> 0x3F80 */
    assert_int_equal(__float2bfloat16_rn(1.00390625f).x, 0x3F80);
    assert_int_equal(__float2bfloat16_rn(1.01171875f).x, 0x3F82); /* 1 + 3*2^-8: tie -> even 0x3F82 */
    assert_int_equal(__float2bfloat16_rn(-2.0f).x, 0xC000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_kernels),
        cmocka_unit_test(test_divergence_reported),
        cmocka_unit_test(test_missing_barrier_visible),
        cmocka_unit_test(test_launch_checks),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_warp_gather),
        cmocka_unit_test(test_wmma),
        cmocka_unit_test(test_mma_layout),
        cmocka_unit_test(test_misaligned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
