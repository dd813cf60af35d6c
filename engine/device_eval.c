/* device_eval.c — the evaluator's backend for a --device choice (see device_eval.h). */
#include "device_eval.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef BOSCH_HAVE_CUDA
#include "backend_cuda_eval.h"
#include "kernels.h"
#endif

struct device_eval {
    bosch_device d;
#ifdef BOSCH_HAVE_CUDA
    cuda_eval *ce; /* DEVICE_CUDA */
#endif
};

int device_eval_create(device_eval **out, bosch_device d, const model *m, char *err, size_t errlen) {
    *out = NULL;
    if (d != DEVICE_CPU && d != DEVICE_CUDA) {
        snprintf(err, errlen, "device eval: unknown device %d", (int)d);
        return -1;
    }
    if (d == DEVICE_CUDA && device_cuda_count() == 0) return device_no_cuda(err, errlen);
    device_eval *de = calloc(1, sizeof *de);
    if (!de) {
        snprintf(err, errlen, "device eval: out of memory");
        return -1;
    }
    de->d = d;
#ifdef BOSCH_HAVE_CUDA
    if (d == DEVICE_CUDA && cuda_eval_create(&de->ce, m, 0, err, errlen)) {
        free(de);
        return -1;
    }
#else
    (void)m;
#endif
    *out = de;
    return 0;
}

const eval_backend *device_eval_backend(const device_eval *de) {
#ifdef BOSCH_HAVE_CUDA
    if (de && de->ce) return cuda_eval_backend(de->ce);
#else
    (void)de;
#endif
    return NULL;
}

bosch_device device_eval_device(const device_eval *de) {
    return de ? de->d : DEVICE_CPU;
}

void device_eval_describe(const device_eval *de, char *buf, size_t cap) {
    if (!cap) return;
    snprintf(buf, cap, "%s", device_name(device_eval_device(de)));
#ifdef BOSCH_HAVE_CUDA
    if (de && de->ce) {
        char name[128] = "?", msg[128];
        uint64_t total = 0;
        kern_device_info(0, name, sizeof name, &total, msg, sizeof msg);
        snprintf(buf, cap, "cuda: %s (%.1f GiB), %.1f MiB of bf16 weights", name, total / 1073741824.0,
                 cuda_model_weight_bytes(cuda_eval_model(de->ce)) / 1048576.0);
    }
#endif
}

void device_eval_free(device_eval *de) {
    if (!de) return;
#ifdef BOSCH_HAVE_CUDA
    cuda_eval_free(de->ce);
#endif
    free(de);
}
