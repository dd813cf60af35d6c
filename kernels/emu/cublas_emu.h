// cublas_emu.h — the cuBLAS calls of kernels/gemm.cu on the CPU emulator (tests only; see
// cuda_emu.h). cublasGemmEx follows the cuBLAS documentation: column-major matrices,
// C = alpha * op(A) * op(B) + beta * C with op(A) m x k, op(B) k x n, C m x n, and the argument
// checks it lists (m, n, k >= 0; lda >= max(1, rows of A as stored); likewise ldb, ldc), so a
// wrong transpose or leading dimension in our call fails here as it would on the GPU.
// Supported (a subset of cuBLAS's table): A and B both bf16 or both fp32; C fp32; compute fp32
// (accumulated in double here); any other combination is CUBLAS_STATUS_NOT_SUPPORTED.
#pragma once
#include "cuda_emu.h"

typedef struct emu_cublas *cublasHandle_t;
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
const char *cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                            const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);
