// mma.cuh — one warp-wide tensor-core step, mma.sync.m16n8k16 (bf16 inputs, fp32 accumulate), with
// the register fragments of the PTX ISA ("Matrix fragments for mma.m16n8k16", floating point
// types). For lane L, g = L / 4 and t = L % 4; a .b32 register holds two bf16, the lower-indexed
// element in its low 16 bits:
//   A (16 x 16, row-major): a[0] = A[g][2t..2t+1],   a[1] = A[g+8][2t..2t+1],
//                           a[2] = A[g][2t+8..2t+9], a[3] = A[g+8][2t+8..2t+9];
//   B (16 x 8, "col"):      b[0] = B[2t..2t+1][g],   b[1] = B[2t+8..2t+9][g];
//   C, D (16 x 8, fp32):    c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1].
// Over the CPU emulator (tests) the same step is computed from these definitions after a warp
// gather of every lane's fragments, so a kernel that gets the layout wrong fails there too.
#pragma once
#include "common.cuh"

/* Two floats as a bf16 pair (round to nearest even), `lo` in the low half. */
__device__ __forceinline__ uint32_t kern_pack_bf16(float lo, float hi) {
    return (uint32_t)kern_f2bf(lo) | ((uint32_t)kern_f2bf(hi) << 16);
}

#ifdef BOSCH_KERN_EMU
static inline float emu_bf16_lo(uint32_t r) {
    return __uint_as_float(r << 16);
}
static inline float emu_bf16_hi(uint32_t r) {
    return __uint_as_float(r & 0xFFFF0000u);
}
#endif

/* c += A · B on tensor cores for the warp (all 32 lanes must call it together). */
__device__ __forceinline__ void kern_mma_16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#ifdef BOSCH_KERN_EMU
    struct frag {
        uint32_t a[4], b[2];
    } mine = {{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all[32];
    emu::warp_gather(&mine, sizeof mine, all, "mma.sync.m16n8k16");
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; L++) {
        const int g = L / 4, t = L % 4;
        for (int h = 0; h < 2; h++) {
            A[g][2 * t + h] = h ? emu_bf16_hi(all[L].a[0]) : emu_bf16_lo(all[L].a[0]);
            A[g + 8][2 * t + h] = h ? emu_bf16_hi(all[L].a[1]) : emu_bf16_lo(all[L].a[1]);
            A[g][2 * t + 8 + h] = h ? emu_bf16_hi(all[L].a[2]) : emu_bf16_lo(all[L].a[2]);
            A[g + 8][2 * t + 8 + h] = h ? emu_bf16_hi(all[L].a[3]) : emu_bf16_lo(all[L].a[3]);
            B[2 * t + h][g] = h ? emu_bf16_hi(all[L].b[0]) : emu_bf16_lo(all[L].b[0]);
            B[2 * t + 8 + h][g] = h ? emu_bf16_hi(all[L].b[1]) : emu_bf16_lo(all[L].b[1]);
        }
    }
    const int g = emu::lane_id() / 4, t = emu::lane_id() % 4;
    for (int e = 0; e < 4; e++) {
        const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
        float acc = c[e];
        for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
        c[e] = acc;
    }
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* Two consecutive bf16 at p (4-byte aligned: a GPU faults otherwise, and the emulator says so) as
 * one fragment register. */
__device__ __forceinline__ uint32_t kern_ld_bf16x2(const uint16_t *p) {
#ifdef BOSCH_KERN_EMU
    emu::check_aligned(p, 4, "32-bit shared-memory load");
    uint32_t v; /* the launch has failed if p is misaligned; the host load itself stays defined */
    __builtin_memcpy(&v, p, sizeof v);
    return v;
#else
    return *reinterpret_cast<const uint32_t *>(p);
#endif
}
