/* emu_config.h — the settings of the CPU emulator of the kernels (cuda_emu.h), for tests; C and C++.
 * The emulator reads no environment variable: a test that emulates another GPU says so here. */
#ifndef BOSCH_EMU_CONFIG_H
#define BOSCH_EMU_CONFIG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The emulated GPU's opt-in dynamic shared memory per block, in bytes: the most
 * cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) accepts and what
 * cudaDevAttrMaxSharedMemoryPerBlockOptin reports. 0 restores the default, an H200's 227 KiB;
 * 166912 emulates an A100. Returns the previous value. Not thread-safe: set it before launching. */
size_t emu_set_shmem_optin(size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
