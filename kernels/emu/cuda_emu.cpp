// cuda_emu.cpp — the CPU emulator behind cuda_emu.h: fibers for the threads of a block, barriers,
// warp shuffles, device memory bookkeeping and the runtime calls the kernels make.
#include "cuda_emu.h"
#include "emu_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifndef __x86_64__
#include <ucontext.h>
#endif

/* Under AddressSanitizer every fiber switch is announced to it (__sanitizer_start_switch_fiber /
 * __sanitizer_finish_switch_fiber), or it takes a fiber's stack for the thread's and reports false
 * stack-buffer errors; a fiber's stack is unpoisoned before it is reused. */
#if defined(__SANITIZE_ADDRESS__)
#define BOSCH_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOSCH_EMU_ASAN 1
#endif
#endif
#ifdef BOSCH_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <map>
#include <string>
#include <vector>

namespace {

enum fiber_state { READY, AT_BARRIER, AT_SHUFFLE, DONE };

constexpr size_t STACK_BYTES = 256 * 1024;
constexpr int MAX_THREADS = 1024, MAX_GRID_YZ = 65535;
constexpr size_t DEFAULT_SHMEM = 48 * 1024;
constexpr size_t EMU_MAX_BYTES = (size_t)16 << 30; /* reported device size, at most half the host RAM */

thread_local cudaError_t g_error = cudaSuccess; /* pending error (cudaGetLastError clears it) */
thread_local std::string g_message;

std::map<uintptr_t, size_t> g_allocs; /* base -> bytes */
size_t g_alloc_bytes;
std::map<const void *, size_t> g_max_shmem; /* kernel -> raised dynamic shared memory limit */
std::map<const void *, bool> g_uses_sync;   /* kernel -> seen calling __syncthreads or a shuffle */

/* Opt-in dynamic shared memory per block: an H200's 227 KiB, or what a test set with
 * emu_set_shmem_optin (emu_config.h) to emulate another GPU. */
constexpr size_t DEFAULT_SHMEM_OPTIN = 227 * 1024;
size_t g_shmem_optin = DEFAULT_SHMEM_OPTIN;
size_t max_shmem_optin() {
    return g_shmem_optin;
}

/* The emulated device's memory: 16 GiB, or half the host's RAM if that is less (every byte is real
 * host memory, written once by the NaN fill). */
size_t emu_total_bytes() {
    static size_t total = 0;
    if (!total) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        size_t half = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : EMU_MAX_BYTES;
        total = half < EMU_MAX_BYTES ? half : EMU_MAX_BYTES;
    }
    return total;
}

} // namespace

size_t emu_set_shmem_optin(size_t bytes) {
    size_t prev = g_shmem_optin;
    g_shmem_optin = bytes ? bytes : DEFAULT_SHMEM_OPTIN;
    return prev;
}

struct emu::thread_state {
#ifdef __x86_64__
    void *sp; /* saved stack pointer while suspended */
#else
    ucontext_t ctx;
#endif
    uint3 tid;
    int linear, lane, warp;
    fiber_state state;
    uint32_t shfl_value, shfl_result;
    int shfl_src;
    const char *shfl_what;
    const void *gather_in; /* warp_gather: this lane's bytes, and where all lanes' go */
    void *gather_out;
    size_t gather_bytes;
    char *stack;
#ifdef BOSCH_EMU_ASAN
    void *fake_stack; /* ASan's fake stack of this fiber while it is suspended */
#endif
};

namespace emu {
thread_local thread_state *cur;
thread_local dim3 grid_dim, block_dim;
thread_local uint3 block_idx;
} // namespace emu

namespace {

struct block_runner {
#ifdef __x86_64__
    void *sched_sp;
#else
    ucontext_t sched;
#endif
    std::vector<emu::thread_state> threads;
    char *shared = nullptr; /* dynamic shared memory of the current block, 128-byte aligned */
    size_t shared_cap = 0, shared_bytes = 0;
    void (*body)(void *);
    void *ctx;
    const char *name;
    bool direct; /* running a thread as a plain call (kernel known not to synchronize) */
    bool synced; /* some thread of this launch synchronized */
    emu::thread_state direct_thread;
#ifdef BOSCH_EMU_ASAN
    void *sched_fake_stack = nullptr; /* the scheduler's (the host thread's) stack, for ASan */
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
#endif
    block_runner() = default;
    block_runner(const block_runner &) = delete;
    block_runner &operator=(const block_runner &) = delete;
    /* At the host thread's exit (the runner is thread_local): the fibers' stacks and shared memory. */
    ~block_runner() {
        for (emu::thread_state &t : threads) free(t.stack);
        free(shared);
    }
};
thread_local block_runner *g_run;

void fiber_entry();

#ifdef BOSCH_EMU_ASAN
/* Scheduler -> fiber t. */
void asan_to_fiber(emu::thread_state &t, size_t stack_bytes) {
    __sanitizer_start_switch_fiber(&g_run->sched_fake_stack, t.stack, stack_bytes);
}
/* Back in the scheduler. */
void asan_in_scheduler() {
    __sanitizer_finish_switch_fiber(g_run->sched_fake_stack, nullptr, nullptr);
}
/* Fiber t -> scheduler; a finished fiber's fake stack is dropped (it never runs again). */
void asan_to_scheduler(emu::thread_state &t, bool done) {
    __sanitizer_start_switch_fiber(done ? nullptr : &t.fake_stack, g_run->sched_bottom, g_run->sched_size);
}
/* Running in fiber t (first entry: no fake stack yet); records the scheduler's stack. */
void asan_in_fiber(emu::thread_state *t) {
    __sanitizer_finish_switch_fiber(t ? t->fake_stack : nullptr, &g_run->sched_bottom, &g_run->sched_size);
}
#else
void asan_to_fiber(emu::thread_state &, size_t) {}
void asan_in_scheduler() {}
void asan_to_scheduler(emu::thread_state &, bool) {}
void asan_in_fiber(emu::thread_state *) {}
#endif

/* Fiber switching. On x86-64 a 6-register switch (the System V callee-saved registers and the
 * stack pointer): glibc's swapcontext also saves the signal mask with a system call, which made it
 * 90% of the emulator's time. Elsewhere ucontext. */
#ifdef __x86_64__
extern "C" void bosch_emu_switch(void **save_sp, void *load_sp);
asm(".text\n"
    ".globl bosch_emu_switch\n"
    ".hidden bosch_emu_switch\n"
    ".type bosch_emu_switch,@function\n"
    "bosch_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size bosch_emu_switch,.-bosch_emu_switch\n");

void fiber_init(emu::thread_state &t, size_t stack_bytes) {
#ifdef BOSCH_EMU_ASAN
    __asan_unpoison_memory_region(t.stack, stack_bytes); /* frames of an abandoned run */
    t.fake_stack = nullptr;
#endif
    void **sp = (void **)(((uintptr_t)t.stack + stack_bytes) & ~(uintptr_t)15);
    *--sp = nullptr;                             /* return address of fiber_entry: it never returns */
    *--sp = (void *)fiber_entry;                 /* where the first switch's `ret` goes */
    for (int i = 0; i < 6; i++) *--sp = nullptr; /* rbp rbx r12-r15 */
    t.sp = sp;
}
void fiber_resume(emu::thread_state &t) {
    asan_to_fiber(t, STACK_BYTES);
    bosch_emu_switch(&g_run->sched_sp, t.sp);
    asan_in_scheduler();
}
void fiber_suspend(emu::thread_state &t) {
    asan_to_scheduler(t, t.state == DONE);
    bosch_emu_switch(&t.sp, g_run->sched_sp);
    asan_in_fiber(&t);
}
#else
void fiber_init(emu::thread_state &t, size_t stack_bytes) {
#ifdef BOSCH_EMU_ASAN
    __asan_unpoison_memory_region(t.stack, stack_bytes);
    t.fake_stack = nullptr;
#endif
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = t.stack;
    t.ctx.uc_stack.ss_size = stack_bytes;
    t.ctx.uc_link = nullptr;
    makecontext(&t.ctx, fiber_entry, 0);
}
void fiber_resume(emu::thread_state &t) {
    asan_to_fiber(t, STACK_BYTES);
    swapcontext(&g_run->sched, &t.ctx);
    asan_in_scheduler();
}
void fiber_suspend(emu::thread_state &t) {
    asan_to_scheduler(t, t.state == DONE);
    swapcontext(&t.ctx, &g_run->sched);
    asan_in_fiber(&t);
}
#endif

void yield(fiber_state st) {
    emu::thread_state *t = emu::cur;
    t->state = st;
    fiber_suspend(*t);
}

void fiber_entry() {
    asan_in_fiber(nullptr);
    g_run->body(g_run->ctx);
    yield(DONE); /* never resumed after DONE */
}

} // namespace

namespace emu {

const uint3 &thread_idx() {
    return cur->tid;
}

int lane_id() {
    return cur->lane;
}

void *dynamic_shared() {
    return g_run->shared_bytes ? g_run->shared : nullptr;
}

void launch_failed(cudaError_t code, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_error == cudaSuccess) { /* keep the first error */
        g_error = code;
        g_message = std::string("CPU emulator: ") + buf;
    }
}

void sync_block() {
    if (g_run->direct) {
        launch_failed(cudaErrorLaunchFailure,
                      "%s: __syncthreads() in a block after earlier blocks of the launch never synchronized "
                      "(the emulator cannot switch such a thread)",
                      g_run->name);
        return;
    }
    g_run->synced = true;
    yield(AT_BARRIER);
}

uint32_t shuffle(uint32_t value, int src_lane, unsigned mask, const char *what) {
    if (g_run->direct) {
        launch_failed(cudaErrorLaunchFailure, "%s: %s in a block after earlier blocks never synchronized",
                      g_run->name, what);
        return value;
    }
    if (mask != 0xFFFFFFFFu) {
        launch_failed(cudaErrorLaunchFailure, "%s: %s with mask 0x%08x: only the full mask is emulated",
                      g_run->name, what, mask);
        return value;
    }
    g_run->synced = true;
    thread_state *t = cur;
    t->gather_out = nullptr;
    t->shfl_value = value;
    t->shfl_src = src_lane;
    t->shfl_what = what;
    yield(AT_SHUFFLE);
    return t->shfl_result;
}

void warp_gather(const void *mine, size_t bytes, void *all, const char *what) {
    if (g_run->direct) {
        launch_failed(cudaErrorLaunchFailure, "%s: %s in a block after earlier blocks never synchronized",
                      g_run->name, what);
        return;
    }
    g_run->synced = true;
    thread_state *t = cur;
    t->gather_in = mine;
    t->gather_out = all;
    t->gather_bytes = bytes;
    t->shfl_src = t->lane;
    t->shfl_what = what;
    yield(AT_SHUFFLE);
}

void check_aligned(const void *p, size_t align, const char *what) {
    if ((uintptr_t)p % align)
        launch_failed(cudaErrorLaunchFailure,
                      "%s: %s at %p, not %zu-byte aligned (misaligned address on a GPU)",
                      g_run ? g_run->name : "kernel", what, p, align);
}

void warp_collective(const char *what) {
    shuffle(0, lane_id(), 0xFFFFFFFFu, what);
}

bool wmma_args_ok(const void *p, unsigned ldm, unsigned elem_bytes, const char *what) {
    if ((uintptr_t)p % 32 != 0 || (ldm * elem_bytes) % 16 != 0) {
        launch_failed(cudaErrorLaunchFailure,
                      "%s: %s: pointer %p not 32-byte aligned or ldm %u not a multiple of 16 bytes",
                      g_run->name, what, p, ldm);
        return false;
    }
    return true;
}

bool is_device_pointer(const void *p) {
    if (!p) return true;
    uintptr_t u = (uintptr_t)p;
    auto it = g_allocs.upper_bound(u);
    if (it == g_allocs.begin()) return false;
    --it;
    return u <= it->first + it->second;
}

cudaError_t set_func_attribute(const void *key, int attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
        (size_t)value > max_shmem_optin()) {
        launch_failed(cudaErrorInvalidValue, "cudaFuncSetAttribute(%d, %d): value above the %zu-byte limit",
                      attr, value, max_shmem_optin());
        return cudaErrorInvalidValue;
    }
    g_max_shmem[key] = (size_t)value;
    return cudaSuccess;
}

/* Resolve the shuffles waiting in warp w; false (with an error) when only part of the warp is there. */
static bool resolve_shuffles(block_runner &r, int w, int n_threads) {
    const int first = 32 * w, last = first + 32 < n_threads ? first + 32 : n_threads;
    int waiting = 0;
    const char *what = nullptr;
    for (int i = first; i < last; i++)
        if (r.threads[i].state == AT_SHUFFLE) waiting++, what = r.threads[i].shfl_what;
    if (waiting == 0) return true;
    if (waiting == last - first && last - first < 32) {
        launch_failed(cudaErrorLaunchFailure, "%s: %s with the full mask in warp %d, which has only %d lanes",
                      r.name, what, w, last - first);
        return false;
    }
    for (int i = first; i < last; i++)
        if (r.threads[i].state == AT_SHUFFLE && strcmp(r.threads[i].shfl_what, what) != 0) {
            launch_failed(cudaErrorLaunchFailure,
                          "%s: lanes of warp %d meet at different warp collectives (%s, %s)", r.name, w, what,
                          r.threads[i].shfl_what);
            return false;
        }
    if (waiting != last - first) {
        launch_failed(
            cudaErrorLaunchFailure,
            "%s: %s reached by %d of the %d lanes of warp %d in block (%u,%u,%u) (the others exited or "
            "wait at another barrier)",
            r.name, what, waiting, last - first, w, emu::block_idx.x, emu::block_idx.y, emu::block_idx.z);
        return false;
    }
    for (int i = first; i < last; i++) {
        thread_state &t = r.threads[i];
        if (t.gather_out) { /* warp_gather: every lane gets every lane's bytes, in lane order */
            for (int j = first; j < last; j++) {
                const thread_state &src = r.threads[j];
                if (!src.gather_out || src.gather_bytes != t.gather_bytes) {
                    launch_failed(cudaErrorLaunchFailure,
                                  "%s: lanes %d and %d of warp %d meet at different warp collectives", r.name,
                                  i - first, j - first, w);
                    return false;
                }
                memcpy(static_cast<char *>(t.gather_out) + (size_t)(j - first) * t.gather_bytes,
                       src.gather_in, t.gather_bytes);
            }
            continue;
        }
        const int src = first + t.shfl_src;
        t.shfl_result = src >= first && src < last ? r.threads[src].shfl_value : t.shfl_value;
    }
    for (int i = first; i < last; i++) r.threads[i].state = READY;
    return true;
}

/* Run one block with fibers; false after an error. `reverse` runs threads in descending order. */
static bool run_block_fibers(block_runner &r, int n_threads, bool reverse) {
    for (int i = 0; i < n_threads; i++) {
        thread_state &t = r.threads[i];
        t.state = READY;
        fiber_init(t, STACK_BYTES);
    }
    const int n_warps = (n_threads + 31) / 32;
    for (;;) {
        for (int k = 0; k < n_warps; k++) {
            const int w = reverse ? n_warps - 1 - k : k;
            const int first = 32 * w, last = first + 32 < n_threads ? first + 32 : n_threads;
            for (;;) {
                for (int j = first; j < last; j++) {
                    const int i = reverse ? first + last - 1 - j : j;
                    thread_state &t = r.threads[i];
                    if (t.state != READY) continue;
                    cur = &t;
                    fiber_resume(t);
                    if (g_error != cudaSuccess) return false;
                }
                bool any_shuffle = false;
                for (int i = first; i < last; i++) any_shuffle |= r.threads[i].state == AT_SHUFFLE;
                if (!any_shuffle) break;
                if (!resolve_shuffles(r, w, n_threads)) return false;
            }
        }
        int at_barrier = 0;
        for (int i = 0; i < n_threads; i++) at_barrier += r.threads[i].state == AT_BARRIER;
        if (at_barrier == 0) return true;
        if (at_barrier != n_threads) {
            launch_failed(
                cudaErrorLaunchFailure,
                "%s: __syncthreads() reached by %d of the %d threads of block (%u,%u,%u) (the others "
                "exited)",
                r.name, at_barrier, n_threads, emu::block_idx.x, emu::block_idx.y, emu::block_idx.z);
            return false;
        }
        for (int i = 0; i < n_threads; i++) r.threads[i].state = READY;
    }
}

/* Run one block's threads as plain calls (kernels that never synchronize). */
static bool run_block_direct(block_runner &r, int n_threads) {
    r.direct = true;
    for (int i = 0; i < n_threads && g_error == cudaSuccess; i++) {
        r.direct_thread.tid = r.threads[i].tid;
        r.direct_thread.lane = r.threads[i].lane;
        cur = &r.direct_thread;
        r.body(r.ctx);
    }
    r.direct = false;
    return g_error == cudaSuccess;
}

void run_grid(dim3 grid, dim3 block, size_t shmem, const void *key, const char *name, void (*body)(void *),
              void *ctx) {
    const uint64_t n_threads = (uint64_t)block.x * block.y * block.z;
    if (n_threads == 0 || n_threads > MAX_THREADS || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > MAX_GRID_YZ || grid.z > MAX_GRID_YZ || block.z > 64) {
        launch_failed(cudaErrorInvalidConfiguration, "%s: invalid launch: grid (%u,%u,%u), block (%u,%u,%u)",
                      name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return;
    }
    auto lim = g_max_shmem.find(key);
    const size_t shmem_limit = lim == g_max_shmem.end() ? DEFAULT_SHMEM : lim->second;
    if (shmem > shmem_limit) {
        launch_failed(cudaErrorInvalidValue,
                      "%s: %zu bytes of dynamic shared memory, above the %zu allowed (cudaFuncSetAttribute "
                      "raises it up to %zu)",
                      name, shmem, shmem_limit, max_shmem_optin());
        return;
    }
    static thread_local block_runner runner;
    block_runner &r = runner;
    block_runner *saved = g_run;
    g_run = &r;
    r.body = body;
    r.ctx = ctx;
    r.name = name;
    r.synced = false;
    r.direct = false;
    if (r.threads.size() < n_threads) {
        size_t old = r.threads.size();
        r.threads.resize(n_threads);
        for (size_t i = old; i < n_threads; i++)
            r.threads[i].stack = static_cast<char *>(malloc(STACK_BYTES));
    }
    for (int i = 0; i < (int)n_threads; i++) {
        thread_state &t = r.threads[i];
        t.linear = i;
        t.tid = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
        t.lane = i % 32;
        t.warp = i / 32;
        if (!t.stack) {
            launch_failed(cudaErrorMemoryAllocation, "%s: out of host memory for thread stacks", name);
            g_run = saved;
            return;
        }
    }
    if (shmem > r.shared_cap) {
        free(r.shared);
        r.shared_cap = (shmem + 127) / 128 * 128;
        r.shared = static_cast<char *>(aligned_alloc(128, r.shared_cap));
        if (!r.shared) {
            r.shared_cap = 0;
            launch_failed(cudaErrorMemoryAllocation, "%s: out of host memory for shared memory", name);
            g_run = saved;
            return;
        }
    }
    r.shared_bytes = shmem;
    emu::grid_dim = grid;
    emu::block_dim = block;
    auto known = g_uses_sync.find(key);
    bool fibers = known == g_uses_sync.end() || known->second;
    uint64_t b = 0;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++, b++) {
                emu::block_idx = uint3{x, y, z};
                if (shmem) memset(r.shared, 0xFF, shmem);
                bool ok =
                    fibers ? run_block_fibers(r, (int)n_threads, b & 1) : run_block_direct(r, (int)n_threads);
                if (!ok) goto done;
                if (b == 0 && known == g_uses_sync.end()) {
                    g_uses_sync[key] = r.synced;
                    fibers = r.synced;
                }
            }
done:
    cur = nullptr;
    g_run = saved;
}

} // namespace emu

// ---- runtime API ----

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev) {
    if (dev != 0) return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "CPU emulator of CUDA (not a GPU)");
    prop->totalGlobalMem = emu_total_bytes();
    prop->major = 9;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev) {
    if (dev != 0) return cudaErrorInvalidDevice;
    if (attr != cudaDevAttrMaxSharedMemoryPerBlockOptin) return cudaErrorInvalidValue;
    *value = (int)max_shmem_optin();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
    return dev == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = nullptr;
    /* 256-byte aligned like CUDA's allocations; a failure is also the next cudaGetLastError */
    void *q = g_alloc_bytes + bytes > emu_total_bytes()
                  ? nullptr
                  : aligned_alloc(256, (bytes + 255) / 256 * 256 + (bytes == 0) * 256);
    if (!q) {
        emu::launch_failed(cudaErrorMemoryAllocation,
                           "cudaMalloc(%zu bytes): out of emulated device memory (%zu of %zu in use)", bytes,
                           g_alloc_bytes, emu_total_bytes());
        return cudaErrorMemoryAllocation;
    }
    memset(q, 0xFF, bytes); /* NaN as fp32: reading unwritten memory shows */
    g_allocs[(uintptr_t)q] = bytes;
    g_alloc_bytes += bytes;
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    auto it = g_allocs.find((uintptr_t)p);
    if (it == g_allocs.end()) {
        emu::launch_failed(cudaErrorInvalidValue, "cudaFree(%p): not a pointer returned by cudaMalloc", p);
        return cudaErrorInvalidValue;
    }
    g_alloc_bytes -= it->second;
    g_allocs.erase(it);
    free(p);
    return cudaSuccess;
}

/* Whether [p, p + bytes) lies inside one allocation. */
bool emu::is_device_range(const void *p, size_t bytes) {
    uintptr_t u = (uintptr_t)p;
    auto it = g_allocs.upper_bound(u);
    if (it == g_allocs.begin()) return false;
    --it;
    return u >= it->first && u + bytes <= it->first + it->second;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (bytes == 0) return cudaSuccess;
    if (dst_dev != emu::is_device_range(dst, bytes) || src_dev != emu::is_device_range(src, bytes)) {
        emu::launch_failed(
            cudaErrorInvalidValue,
            "cudaMemcpy(kind %d, %zu bytes): destination %s device memory, source %s device memory",
            (int)kind, bytes, emu::is_device_range(dst, bytes) ? "is" : "is not",
            emu::is_device_range(src, bytes) ? "is" : "is not");
        return cudaErrorInvalidValue;
    }
    memcpy(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b) {
    *total_b = emu_total_bytes();
    *free_b = emu_total_bytes() - g_alloc_bytes;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
    return cudaGetLastError();
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = g_error;
    g_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e) {
    static thread_local std::string text;
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorMemoryAllocation:
        return "out of memory (emulated device)";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    default:
        text = g_message.empty() ? "emulated CUDA error" : g_message;
        return text.c_str();
    }
}
