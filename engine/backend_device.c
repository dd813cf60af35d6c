/* backend_device.c — the device choice and backend_create (see backend.h). Built once per GPU
 * layer (engine/CMakeLists.txt): with BOSCH_HAVE_CUDA it reaches the CUDA backend, without it
 * every request for CUDA reports that the build has none. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

#include "err.h"

#ifdef BOSCH_HAVE_CUDA
#include "backend_cuda.h"
#include "kernels.h"
#endif

int backend_cuda_count(void) {
#ifdef BOSCH_HAVE_CUDA
    return kern_device_count();
#else
    return 0;
#endif
}

backend_device backend_default_device(void) {
    return backend_cuda_count() > 0 ? BACKEND_CUDA : BACKEND_CPU;
}

int backend_no_cuda(char *err, size_t errlen) {
#ifdef BOSCH_HAVE_CUDA
    base_seterr(err, errlen, "--device cuda: no CUDA GPU is visible (driver missing or no device)");
#else
    base_seterr(err, errlen,
                "--device cuda: this build has no CUDA backend (nvcc was not found at configure time)");
#endif
    return -1;
}

int backend_parse_device(const char *s, backend_device *out, char *err, size_t errlen) {
    if (!strcmp(s, "auto")) {
        *out = backend_default_device();
    } else if (!strcmp(s, "cpu")) {
        *out = BACKEND_CPU;
    } else if (!strcmp(s, "cuda")) {
        if (backend_cuda_count() == 0) return backend_no_cuda(err, errlen);
        *out = BACKEND_CUDA;
    } else {
        base_seterr(err, errlen, "--device must be cpu, cuda or auto, got '%s'", s);
        return -1;
    }
    return 0;
}

int backend_create(backend **out, const backend_options *o, const model *m, char *err, size_t errlen) {
    *out = NULL;
    backend_device d = o->device == BACKEND_AUTO ? backend_default_device() : o->device;
    if (d == BACKEND_CPU) return backend_cpu_create(out, m, err, errlen);
    if (d != BACKEND_CUDA) {
        base_seterr(err, errlen, "backend: unknown device %d", (int)d);
        return -1;
    }
    if (backend_cuda_count() == 0) return backend_no_cuda(err, errlen);
#ifdef BOSCH_HAVE_CUDA
    return backend_cuda_create(out, o, m, err, errlen);
#else
    return backend_no_cuda(err, errlen);
#endif
}
