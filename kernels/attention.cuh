// attention.cuh — what the prefill and decode attention kernels share (not public).
// Visibility (docs/design.md §2): a query at position i sees key j <= i; an SWA head only the window
// i - window < j <= i and the sinks j < sinks. KV-cache slots: a full head keeps position p in slot
// p; an SWA head keeps sinks in their own slots and the rest in a ring of `window` slots.
#pragma once
#include <float.h>
#include <math.h>

#include "common.cuh"

#define ATT_BR 16   /* query rows per block */
#define ATT_BC 32   /* keys per shared-memory tile (= lanes of a warp) */
#define ATT_WARPS 4 /* warps per block; each owns ATT_BR / ATT_WARPS rows */
#define ATT_MAXT 8  /* head_dim / 32 at most: head_dim <= 256 */
#define ROWS_PER_WARP (ATT_BR / ATT_WARPS)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Four floats at p (16-byte aligned: a GPU faults otherwise, and the emulator says so). */
__device__ __forceinline__ float4 kern_ld_float4(const float *p) {
#ifdef BOSCH_KERN_EMU
    emu::check_aligned(p, 16, "float4 load");
#endif
    return *reinterpret_cast<const float4 *>(p);
}

__device__ __forceinline__ bool visible(int i, int j, bool full, int window, int sinks) {
    return j <= i && (full || j > i - window || j < sinks);
}

__device__ __forceinline__ int kv_slot(int p, bool full, int window, int sinks) {
    return (full || p < sinks) ? p : sinks + (p - sinks) % window;
}

/* Key tiles (of `bc` keys) that a block of query rows [r0, r_last] must visit: pass 0 the sink
 * tiles, pass 1 the window tiles (full heads: everything in pass 0). The two ranges never overlap. */
__device__ __forceinline__ void tile_range(int pass, int r0, int r_last, bool full, int window, int sinks,
                                           int bc, int *t_begin, int *t_end) {
    const int last_tile = r_last / bc;
    const int sink_tiles = full ? last_tile + 1 : (sinks + bc - 1) / bc;
    const int win_first = full ? last_tile + 1 : max(sink_tiles, max(0, r0 - window + 1) / bc);
    *t_begin = pass == 0 ? 0 : win_first;
    *t_end = pass == 0 ? min(sink_tiles, last_tile + 1) : last_tile + 1;
}

/* Number of visible positions and the k-th of them (sinks first, then the window, ascending). */
__device__ __forceinline__ int n_visible(int pos, bool full, int window, int sinks, int *n_sink) {
    if (full) {
        *n_sink = 0;
        return pos + 1;
    }
    int ns = min(sinks, pos + 1);
    int w_first = max(ns, pos - window + 1);
    *n_sink = ns;
    return ns + (pos - w_first + 1);
}

/* Let `kernel` launch with `shmem` bytes of dynamic shared memory: above the default 48 KiB the
 * limit must be raised per kernel (cudaFuncSetAttribute; at most the GPU's opt-in limit, 227 KiB on
 * an H200). Returns 0, or -1 with a message naming `what` in err. */
template <class F>
static int allow_shmem(F *kernel, size_t shmem, const char *what, char *err, size_t errlen) {
    if (shmem <= 48 * 1024) return 0;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem) == cudaSuccess)
        return 0;
    cudaGetLastError(); /* the error is reported here, not by the next launch */
    snprintf(err, errlen, "cuda: %s: cannot use %zu bytes of shared memory per block", what, shmem);
    return -1;
}

static inline int check_shape(int n_head, int n_head_kv, int head_dim, int window, int sinks, char *err,
                              size_t errlen) {
    if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv || head_dim < 32 || head_dim % 32 ||
        head_dim > 32 * ATT_MAXT || window < 1 || sinks < 0) {
        snprintf(
            err, errlen,
            "cuda: attention: unsupported shape (n_head %d, n_head_kv %d, head_dim %d, window %d, sinks %d);"
            " head_dim must be a multiple of 32 up to %d",
            n_head, n_head_kv, head_dim, window, sinks, 32 * ATT_MAXT);
        return -1;
    }
    return 0;
}
