// cublas_emu.cpp — cublasGemmEx on the CPU for the emulator (see cublas_emu.h).
#include "cublas_emu.h"

#include <stdlib.h>

struct emu_cublas {
    int magic;
};

static const int HANDLE_MAGIC = 0x426c6173;

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    *handle = static_cast<emu_cublas *>(malloc(sizeof(emu_cublas)));
    if (!*handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    (*handle)->magic = HANDLE_MAGIC;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (!handle || handle->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->magic = 0;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t) {
    return handle && handle->magic == HANDLE_MAGIC ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    default:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
}

/* Element (row, col) of a column-major matrix with leading dimension ld. */
static double element(const void *p, cudaDataType t, int ld, int row, int col) {
    const size_t i = (size_t)col * (size_t)ld + (size_t)row;
    if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
    return __uint_as_float((unsigned)static_cast<const uint16_t *>(p)[i] << 16);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                            const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t) {
    if (!handle || handle->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (Atype != Btype || (Atype != CUDA_R_32F && Atype != CUDA_R_16BF) || Ctype != CUDA_R_32F ||
        computeType != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const int a_cols = transa == CUBLAS_OP_N ? k : m, b_cols = transb == CUBLAS_OP_N ? n : k;
    const size_t a_bytes = (Atype == CUDA_R_32F ? 4 : 2) * ((size_t)lda * (a_cols - 1) + a_rows);
    const size_t b_bytes = (Btype == CUDA_R_32F ? 4 : 2) * ((size_t)ldb * (b_cols - 1) + b_rows);
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if ((k > 0 && (!emu::is_device_range(A, a_bytes) || !emu::is_device_range(B, b_bytes))) ||
        !emu::is_device_range(C, 4 * ((size_t)ldc * (n - 1) + m)))
        return CUBLAS_STATUS_INVALID_VALUE; /* the real one would fault; say it here */
    const float al = *static_cast<const float *>(alpha), be = *static_cast<const float *>(beta);
    float *c = static_cast<float *>(C);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0.0;
            for (int p = 0; p < k; p++) {
                const double a =
                    transa == CUBLAS_OP_N ? element(A, Atype, lda, i, p) : element(A, Atype, lda, p, i);
                const double b =
                    transb == CUBLAS_OP_N ? element(B, Btype, ldb, p, j) : element(B, Btype, ldb, j, p);
                acc += a * b;
            }
            float *out = c + (size_t)j * ldc + i;
            *out = be == 0.0f ? (float)(al * acc) : (float)(al * acc + be * *out); /* beta 0: C is not read */
        }
    return CUBLAS_STATUS_SUCCESS;
}
