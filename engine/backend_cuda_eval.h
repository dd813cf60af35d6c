/* backend_cuda_eval.h — the evaluator's forward on the GPU: an eval_backend (eval.h) over
 * cuda_forward_layers (backend_cuda.h).
 *
 * One cuda_eval holds one cuda_model (the weights uploaded once, bf16) and its eval_backend; every
 * evaluator created on that backend shares the model and its activation scratch. Not thread-safe:
 * the evaluators of one cuda_eval must be used from one thread at a time (the explorer's worker,
 * one command); a second thread needs its own cuda_eval.
 *
 * Each run() is one call of cuda_forward_layers with n_seq = 1 (one sample, its own length), so
 * the GEMM shapes of a sample are the same whether it starts at layer 0 or later: prefix reuse is
 * bitwise identical to a from-scratch GPU evaluation (cuBLAS and our kernels are deterministic for
 * a given shape on one GPU). The next speed step is batching: samples of equal length (the
 * calibration split's are) in one call, n_seq > 1, one mask each.
 *
 * Exists only when the build has CUDA (BOSCH_HAVE_CUDA); build-independent access:
 * tui/device_eval.h. Every function returns 0, or -1 with a message in err[errlen].
 */
#ifndef BOSCH_BACKEND_CUDA_EVAL_H
#define BOSCH_BACKEND_CUDA_EVAL_H

#ifdef BOSCH_HAVE_CUDA

#include <stddef.h>

#include "backend_cuda.h"
#include "eval.h"
#include "model.h"

typedef struct cuda_eval cuda_eval;

/* Upload `m` (which must outlive the result) to GPU `device` (cuda_model_create) and make its
 * backend. Errors: those of cuda_model_create, out of host memory. */
int cuda_eval_create(cuda_eval **out, const model *m, int device, char *err, size_t errlen);
/* A backend over an existing GPU model `g` (borrowed: must outlive the result; not freed by
 * cuda_eval_free). The same threading rule applies to every user of g. */
int cuda_eval_wrap(cuda_eval **out, cuda_model *g, char *err, size_t errlen);
void cuda_eval_free(cuda_eval *ce);

/* The backend to pass to evaluator_create_on; valid until cuda_eval_free. */
const eval_backend *cuda_eval_backend(const cuda_eval *ce);
/* The GPU model behind it (for bytes and device descriptions). */
cuda_model *cuda_eval_model(const cuda_eval *ce);

#endif /* BOSCH_HAVE_CUDA */
#endif
