// device.cu — CUDA device discovery and memory (kernels.h).
#include <string.h>

#include "common.cuh"
#include "kernels.h"

static uint64_t g_peak_used; /* only touched from the engine's thread; see kern_mem_used */

extern "C" int kern_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the "no driver / no device" error */
        return 0;
    }
    return n;
}

extern "C" int kern_device_info(int dev, char *name, size_t name_cap, uint64_t *total_bytes, char *err,
                                size_t errlen) {
    cudaDeviceProp prop;
    if (kern_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties", err, errlen)) return -1;
    if (name && name_cap) snprintf(name, name_cap, "%s", prop.name);
    if (total_bytes) *total_bytes = (uint64_t)prop.totalGlobalMem;
    return 0;
}

extern "C" int kern_set_device(int dev, char *err, size_t errlen) {
    return kern_check(cudaSetDevice(dev), "cudaSetDevice", err, errlen);
}

static void sample_used(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && total_b - free_b > g_peak_used)
        g_peak_used = total_b - free_b;
}

extern "C" int kern_malloc(void **d_ptr, size_t bytes, char *err, size_t errlen) {
    *d_ptr = NULL;
    if (kern_check(cudaMalloc(d_ptr, bytes ? bytes : 1), "cudaMalloc", err, errlen)) return -1;
    sample_used();
    return 0;
}

extern "C" void kern_free(void *d_ptr) {
    if (d_ptr) cudaFree(d_ptr);
}

extern "C" int kern_upload(void *d_dst, const void *h_src, size_t bytes, char *err, size_t errlen) {
    return kern_check(cudaMemcpy(d_dst, h_src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(H2D)", err,
                      errlen);
}

extern "C" int kern_download(void *h_dst, const void *d_src, size_t bytes, char *err, size_t errlen) {
    return kern_check(cudaMemcpy(h_dst, d_src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)", err,
                      errlen);
}

extern "C" int kern_sync(void *stream, char *err, size_t errlen) {
    sample_used();
    return kern_check(cudaStreamSynchronize((cudaStream_t)stream), "kernel execution", err, errlen);
}

extern "C" uint64_t kern_mem_used(void) {
    sample_used();
    return g_peak_used;
}
