// cuda_emu.h — a CPU emulator of the CUDA subset that kernels/*.cu use, for tests on machines
// without a GPU. Not a product path: `bosch` itself never links it.
//
// The kernels are compiled a second time by the host C++ compiler with BOSCH_KERN_EMU defined
// (common.cuh then includes this header instead of the CUDA headers). A launch runs the grid's
// blocks one after the other on the calling thread; the threads of a block are cooperative fibers
// (ucontext), so __syncthreads() and warp shuffles have their CUDA meaning:
//   - __syncthreads(): every thread of the block must reach the same barrier; a barrier reached by
//     only some threads (others exited or wait elsewhere) is reported as a launch failure;
//   - __shfl_sync / __shfl_xor_sync with the full mask: all 32 lanes of the warp must arrive; a
//     shuffle reached by only some lanes is reported as a launch failure;
//   - between barriers a thread runs alone until it yields, and odd blocks run their threads in
//     reverse order, so a missing barrier between a shared-memory write and another thread's read
//     shows up as wrong results;
//   - dynamic shared memory and every cudaMalloc are filled with 0xFF bytes (NaN as fp32), so a
//     kernel that reads memory nobody wrote fails its test instead of passing on zeros;
//   - launch limits of an H200 (sm_90) are checked: block <= 1024 threads, grid y/z <= 65535,
//     dynamic shared memory <= 48 KiB unless raised by cudaFuncSetAttribute, which accepts at most
//     227 KiB (or what emu_set_shmem_optin in emu_config.h set); pointer arguments must point into memory
//     from cudaMalloc (or be NULL).
// Memory is host memory; streams are synchronous; errors are returned the CUDA way
// (cudaGetLastError, cudaStreamSynchronize) with a message naming the kernel.
// Shared memory must come from KERN_DYNAMIC_SHARED (a bare __shared__ does not compile here).
// One host thread at a time may launch kernels.
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

// ---- execution-space keywords and built-in variables ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* Shared memory only through KERN_DYNAMIC_SHARED, which the emulator poisons for every block (a
 * `static` array would start at zero and keep the previous block's values: lenient). */
#define __shared__ static_assert(false, "emulator: declare shared memory with KERN_DYNAMIC_SHARED");

struct uint3 {
    unsigned x, y, z;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace emu {
struct thread_state; // one fiber
extern thread_local thread_state *cur;
extern thread_local dim3 grid_dim, block_dim;
extern thread_local uint3 block_idx;
const uint3 &thread_idx();
void *dynamic_shared();
void sync_block();
void warp_collective(const char *what);
/* A launch failure when p is not `align`-byte aligned (a misaligned vector load faults on a GPU). */
void check_aligned(const void *p, size_t align, const char *what);
/* A warp collective: every lane gives `bytes` at `mine` and receives all 32 lanes' bytes, lane 0
 * first, at `all` (32 * bytes). How the emulator models register-fragment instructions (mma.sync). */
void warp_gather(const void *mine, size_t bytes, void *all, const char *what);
uint32_t shuffle(uint32_t value, int src_lane, unsigned mask, const char *what);
int lane_id();
} // namespace emu

#define threadIdx (emu::thread_idx())
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)
#define __syncthreads() emu::sync_block()
#define __syncwarp(...) emu::warp_collective("__syncwarp")
#define KERN_DYNAMIC_SHARED(type, name) type *name = static_cast<type *>(emu::dynamic_shared())

// ---- device intrinsics ----
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
    static_assert(sizeof(T) == 4, "emulated shuffles move 4-byte values");
    uint32_t u;
    memcpy(&u, &v, 4);
    const int base = emu::lane_id() & ~(width - 1);
    u = emu::shuffle(u, base + (src_lane & (width - 1)), mask, "__shfl_sync");
    memcpy(&v, &u, 4);
    return v;
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    static_assert(sizeof(T) == 4, "emulated shuffles move 4-byte values");
    uint32_t u;
    memcpy(&u, &v, 4);
    int src = emu::lane_id() ^ lane_mask;
    if ((src & ~(width - 1)) != (emu::lane_id() & ~(width - 1)))
        src = emu::lane_id(); /* outside the segment */
    u = emu::shuffle(u, src, mask, "__shfl_xor_sync");
    memcpy(&v, &u, 4);
    return v;
}
#define __expf(x) expf(x) /* glibc declares its own __expf */
static inline float rsqrtf(float x) {
    return 1.0f / sqrtf(x);
}
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline int min(int a, int b) {
    return a < b ? a : b;
}
static inline int max(int a, int b) {
    return a > b ? a : b;
}
static inline unsigned min(unsigned a, unsigned b) {
    return a < b ? a : b;
}
static inline unsigned max(unsigned a, unsigned b) {
    return a > b ? a : b;
}
static inline long long min(long long a, long long b) {
    return a < b ? a : b;
}
static inline long long max(long long a, long long b) {
    return a > b ? a : b;
}
static inline unsigned long long min(unsigned long long a, unsigned long long b) {
    return a < b ? a : b;
}
static inline unsigned long long max(unsigned long long a, unsigned long long b) {
    return a > b ? a : b;
}

// fp16 and bf16 storage types with the conversions the kernels use (IEEE 754 binary16; bfloat16 =
// the top 16 bits of a binary32, rounded to nearest even).
struct __half_raw {
    uint16_t x;
};
struct __half {
    uint16_t x;
    __half() : x(0) {}
    __half(__half_raw r) : x(r.x) {}
};
static inline float __half2float(__half h) {
    const uint32_t sign = (uint32_t)(h.x & 0x8000u) << 16, exp = (h.x >> 10) & 0x1Fu, mant = h.x & 0x3FFu;
    uint32_t u;
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
        float f = ldexpf((float)mant, -24);
        memcpy(&u, &f, 4);
        u |= sign;
    } else if (exp == 31) {
        u = sign | 0x7F800000u | (mant << 13);
    } else {
        u = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    return __uint_as_float(u);
}
struct __nv_bfloat16 {
    uint16_t x;
};
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    __nv_bfloat16 b;
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        b.x = (uint16_t)((u >> 16) | 0x40u); /* NaN stays NaN */
    else
        b.x = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    return b;
}

// ---- runtime API ----
typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorLaunchFailure = 719,
};
struct emu_stream;
typedef emu_stream *cudaStream_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor;
};

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);

namespace emu {
cudaError_t set_func_attribute(const void *key, int attr, int value);
/* Whether `p` lies in [base, base + bytes] of an allocation (NULL passes). */
bool is_device_pointer(const void *p);
/* Whether [p, p + bytes) lies inside one allocation. */
bool is_device_range(const void *p, size_t bytes);
void launch_failed(cudaError_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Run `body(ctx)` as every thread of the grid; errors go to cudaGetLastError. */
void run_grid(dim3 grid, dim3 block, size_t shmem, const void *key, const char *name, void (*body)(void *),
              void *ctx);

template <class T> bool arg_ok(const T &) {
    return true;
}
template <class T> bool arg_ok(T *p) {
    return is_device_pointer(p);
}

template <class... P> struct launcher {
    dim3 grid, block;
    size_t shmem;
    void (*kernel)(P...);
    const char *name;
    template <class... A> void operator()(A &&...a) {
        std::tuple<typename std::decay<P>::type...> args(std::forward<A>(a)...);
        bool ok = true;
        int index = 0, bad = -1;
        std::apply(
            [&](const auto &...x) { ((ok = ok && (arg_ok(x) || (bad = index, false)), index++), ...); },
            args);
        if (!ok) {
            launch_failed(cudaErrorInvalidValue, "%s: pointer argument %d is not device memory", name, bad);
            return;
        }
        struct ctx_t {
            launcher *l;
            decltype(args) *a;
        } c{this, &args};
        run_grid(
            grid, block, shmem, (const void *)kernel, name,
            [](void *p) {
                ctx_t *cc = static_cast<ctx_t *>(p);
                std::apply(cc->l->kernel, *cc->a);
            },
            &c);
    }
};
template <class... P>
launcher<P...> launch(dim3 grid, dim3 block, size_t shmem, cudaStream_t, void (*kernel)(P...),
                      const char *name) {
    return launcher<P...>{grid, block, shmem, kernel, name};
}
} // namespace emu

template <class F> cudaError_t cudaFuncSetAttribute(F *func, cudaFuncAttribute attr, int value) {
    return emu::set_func_attribute((const void *)func, (int)attr, value);
}

#define KERN_LAUNCH(k, grid, block, shmem, stream) emu::launch(grid, block, shmem, stream, k, #k)
