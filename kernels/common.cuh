// common.cuh — error reporting and small helpers shared by the CUDA sources (not public).
#pragma once
#include <stdint.h>
#include <stdio.h>

#ifdef BOSCH_KERN_EMU
/* Tests only: the same sources compiled by the host C++ compiler over a CPU emulator of the
 * CUDA subset used here (kernels/emu/cuda_emu.h), so the kernels also run without a GPU. */
#include "emu/cuda_emu.h"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
/* Launch `k` on `grid` x `block` threads with `shmem` bytes of dynamic shared memory on `stream`;
 * the kernel's arguments follow in parentheses. A macro so the emulator can replace <<< >>>. */
#define KERN_LAUNCH(k, grid, block, shmem, stream) k<<<grid, block, shmem, stream>>>
/* The block's dynamic shared memory (the launch's `shmem` bytes, 128-byte aligned) as `type name[]`. */
#define KERN_DYNAMIC_SHARED(type, name) extern __shared__ __align__(128) type name[]
#endif

// Report the last launch/runtime error of `what` into err; returns 0 or -1.
static inline int kern_check(cudaError_t e, const char *what, char *err, size_t errlen) {
    if (e == cudaSuccess) return 0;
    if (err && errlen) snprintf(err, errlen, "cuda: %s: %s", what, cudaGetErrorString(e));
    return -1;
}
#define KERN_LAUNCHED(what) kern_check(cudaGetLastError(), what, err, errlen)

static inline unsigned kern_blocks(uint64_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}

__device__ __forceinline__ float kern_h2f(uint16_t h) {
    __half_raw r;
    r.x = h;
    return __half2float(__half(r));
}

__device__ __forceinline__ uint16_t kern_f2bf(float f) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *reinterpret_cast<uint16_t *>(&b);
}

__device__ __forceinline__ float kern_bf2f(uint16_t h) {
    return __uint_as_float(((uint32_t)h) << 16);
}
