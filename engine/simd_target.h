/* simd_target.h — compile a block of functions for an instruction set the build does not assume
 * (no -march flag: the level is chosen at run time from CPUID), with gcc or clang:
 *
 *   SIMD_TARGET_BEGIN("avx2,fma")
 *   ... functions, static inline ones included ...
 *   SIMD_TARGET_END
 *
 * gcc: #pragma GCC push_options / target / pop_options. clang ignores #pragma GCC target, so there
 * the block gets `#pragma clang attribute push(__attribute__((target(...))), apply_to = function)`,
 * which gives every function declared in it that target attribute (clang's documentation,
 * "Specifying an attribute for multiple declarations"). Also cpu_has_f16c(): CPUID leaf 1, ECX bit
 * 29 (Intel SDM vol. 2A, CPUID), since clang's __builtin_cpu_supports does not know "f16c". */
#ifndef BOSCH_SIMD_TARGET_H
#define BOSCH_SIMD_TARGET_H

#define SIMD_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define SIMD_TARGET_BEGIN(t)                                                                                 \
    SIMD_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#define SIMD_TARGET_END _Pragma("clang attribute pop")
#else
#define SIMD_TARGET_BEGIN(t) _Pragma("GCC push_options") SIMD_PRAGMA(GCC target(t))
#define SIMD_TARGET_END _Pragma("GCC pop_options")
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/* 1 when the CPU has the F16C conversions (VCVTPH2PS, VCVTPS2PH), else 0. */
static inline int cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) ? (int)((c >> 29) & 1u) : 0;
}
#endif

#endif
