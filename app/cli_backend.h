/* cli_backend.h — the commands' side of engine/backend.h: where the environment reaches the
 * backend options (the libraries read no environment variables). */
#ifndef BOSCH_CLI_BACKEND_H
#define BOSCH_CLI_BACKEND_H

#include "backend.h"

/* backend_options for `device` on GPU 0, the CUDA prefill attention kernel from the environment
 * variable BOSCH_CUDA_ATTN (mma, wmma or fp32; unset or empty: the default; docs/gpu.md), warm-up
 * as asked. Never fails: a bad BOSCH_CUDA_ATTN is reported by backend_create. */
backend_options cli_backend_options(backend_device device, int warm_up);

#endif
