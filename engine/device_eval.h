/* device_eval.h — the evaluator's backend for a --device choice (device.h), build-independent:
 * without CUDA in the build these functions exist and DEVICE_CUDA reports that CUDA is
 * unavailable, so commands need no #ifdef.
 *
 * Usage: device_eval_create once per model and thread, then
 * evaluator_create_on(..., device_eval_backend(de), ...) for every evaluator (search objective,
 * held-out evaluation, ...): on the GPU they all share one upload of the weights. A device_eval
 * and its evaluators are used by one thread at a time (engine/backend_cuda_eval.h).
 */
#ifndef BOSCH_DEVICE_EVAL_H
#define BOSCH_DEVICE_EVAL_H

#include <stddef.h>

#include "device.h"
#include "eval.h"
#include "model.h"

typedef struct device_eval device_eval;

/* DEVICE_CPU: a handle whose backend is NULL (the CPU forward; nothing allocated on a GPU).
 * DEVICE_CUDA: upload `m` (which must outlive the result) to GPU 0 (bf16 weights). Errors: no
 * CUDA in this build / no GPU visible, out of GPU memory, an unsupported tensor type.
 * Returns 0, or -1 with a message in err[errlen]. */
int device_eval_create(device_eval **out, bosch_device d, const model *m, char *err, size_t errlen);
/* The backend for evaluator_create_on: NULL = CPU. Valid until device_eval_free (which must come
 * after every evaluator made with it is freed). de may be NULL (CPU). */
const eval_backend *device_eval_backend(const device_eval *de);
/* The device it runs on (DEVICE_CPU when de is NULL). */
bosch_device device_eval_device(const device_eval *de);
/* One line for logs: "cpu" or "cuda: NVIDIA H200 (139.8 GiB), 270.4 MiB of bf16 weights". */
void device_eval_describe(const device_eval *de, char *buf, size_t cap);
void device_eval_free(device_eval *de);

#endif
