// gemm.cu — bf16 GEMM with fp32 accumulation through cuBLAS (kernels.h).
#include <stdlib.h>

#include "common.cuh"
#ifdef BOSCH_KERN_EMU
#include "emu/cublas_emu.h"
#else
#include <cublas_v2.h>
#endif
#include "kernels.h"

struct kern_blas {
    cublasHandle_t handle;
};

extern "C" int kern_blas_create(kern_blas **out, char *err, size_t errlen) {
    *out = NULL;
    kern_blas *b = (kern_blas *)calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "cuda: out of host memory for the cuBLAS handle");
        return -1;
    }
    cublasStatus_t s = cublasCreate(&b->handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasCreate: %s", cublasGetStatusString(s));
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

extern "C" void kern_blas_free(kern_blas *b) {
    if (!b) return;
    cublasDestroy(b->handle);
    free(b);
}

/* Row-major Y[n_rows][n_out] = X[n_rows][n_in] · W[n_out][n_in]^T is, in cuBLAS's column-major
 * view, Y^T[n_out][n_rows] = W · X^T with W read transposed: gemm(op(A)=T on W (n_in x n_out col-major),
 * B = X^T (n_in x n_rows col-major)). */
extern "C" int kern_gemm_bf16(kern_blas *b, const uint16_t *d_x, const uint16_t *d_w, float *d_y, int n_rows,
                              int n_in, int n_out, void *stream, char *err, size_t errlen) {
    if (n_rows <= 0) return 0;
    const float alpha = 1.0f, beta = 0.0f;
    cublasSetStream(b->handle, (cudaStream_t)stream);
    cublasStatus_t s = cublasGemmEx(b->handle, CUBLAS_OP_T, CUBLAS_OP_N, n_out, n_rows, n_in, &alpha, d_w,
                                    CUDA_R_16BF, n_in, d_x, CUDA_R_16BF, n_in, &beta, d_y, CUDA_R_32F, n_out,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasGemmEx(%d x %d x %d): %s", n_rows, n_out, n_in,
                 cublasGetStatusString(s));
        return -1;
    }
    return 0;
}
