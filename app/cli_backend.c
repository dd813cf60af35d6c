/* cli_backend.c — backend options from the command line's device choice and the environment
 * (see cli_backend.h). */
#include "cli_backend.h"

#include <stdlib.h>

backend_options cli_backend_options(backend_device device, int warm_up) {
    return (backend_options){
        .device = device,
        .gpu = 0,
        .cuda_attn = getenv("BOSCH_CUDA_ATTN"),
        .warm_up = warm_up,
    };
}
