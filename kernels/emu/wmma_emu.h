// wmma_emu.h — the nvcuda::wmma subset (bf16 16x16x16 tiles, fp32 accumulators) on the CPU
// emulator (tests only; see cuda_emu.h). The real API hides which lane holds which element of a
// fragment, so correct code may only touch fragment elements uniformly; here every lane holds the
// whole tile (element (r, c) at x[r * cols + c]) and computes the product itself, which is exact for
// such code; but a store writes only the lane's share (element r * cols + c by lane
// (r * cols + c) % 32), so reading other lanes' elements needs the __syncwarp a GPU needs.
// Each *_sync call is warp-collective: all 32 lanes must reach it (checked, like a
// shuffle), and, as the CUDA documentation requires, the pointer must be 32-byte aligned and ldm a
// multiple of 16 bytes (8 bf16 or 4 fp32 elements).
#pragma once
#include <type_traits>

#include "cuda_emu.h"

namespace emu {
void warp_collective(const char *what); /* all lanes of the warp meet here */
bool wmma_args_ok(const void *p, unsigned ldm, unsigned elem_bytes, const char *what);
} // namespace emu

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
    static constexpr int rows = std::is_same<Use, matrix_b>::value ? K : M;
    static constexpr int cols = std::is_same<Use, matrix_a>::value ? K : N;
    static constexpr int num_elements = rows * cols;
    float x[num_elements];
};

static inline float emu_load(const __nv_bfloat16 &b) {
    return __uint_as_float((unsigned)b.x << 16);
}
static inline float emu_load(const float &f) {
    return f;
}

/* matrix_a / matrix_b from memory in the fragment's own layout. */
template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f, const T *p, unsigned ldm) {
    typedef fragment<Use, M, N, K, T, Layout> F;
    emu::warp_collective("wmma::load_matrix_sync");
    if (!emu::wmma_args_ok(p, ldm, sizeof(T), "wmma::load_matrix_sync")) return;
    const bool row = std::is_same<Layout, row_major>::value;
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++)
            f.x[r * F::cols + c] = emu_load(row ? p[r * ldm + c] : p[c * ldm + r]);
}

/* accumulator from fp32 memory */
template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float> &f, const float *p, unsigned ldm,
                      layout_t layout) {
    emu::warp_collective("wmma::load_matrix_sync");
    if (!emu::wmma_args_ok(p, ldm, 4, "wmma::load_matrix_sync")) return;
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++)
            f.x[r * N + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K>
void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f, unsigned ldm,
                       layout_t layout) {
    emu::warp_collective("wmma::store_matrix_sync");
    if (!emu::wmma_args_ok(p, ldm, 4, "wmma::store_matrix_sync")) return;
    /* each lane writes only its share (on a GPU other lanes' elements are visible only after a
     * __syncwarp), so reading them without one reads stale values here too */
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++)
            if ((r * N + c) % 32 == emu::lane_id())
                (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r * N + c];
}

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout> &f, float v) {
    for (int i = 0; i < f.num_elements; i++) f.x[i] = v;
}

/* d = a * b + c, fp32 accumulation (in the order of k, like one tensor-core step per element). */
template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float> &d, const fragment<matrix_a, M, N, K, T, LA> &a,
              const fragment<matrix_b, M, N, K, T, LB> &b, const fragment<accumulator, M, N, K, float> &c) {
    emu::warp_collective("wmma::mma_sync");
    float out[M * N];
    for (int r = 0; r < M; r++)
        for (int col = 0; col < N; col++) {
            float acc = c.x[r * N + col];
            for (int k = 0; k < K; k++) acc += a.x[r * K + k] * b.x[k * N + col];
            out[r * N + col] = acc;
        }
    for (int i = 0; i < M * N; i++) d.x[i] = out[i];
}
} // namespace wmma
} // namespace nvcuda
