/* backend_cuda_eval.c — the evaluator's eval_backend over cuda_forward_layers (see
 * backend_cuda_eval.h). */
#ifdef BOSCH_HAVE_CUDA

#include "backend_cuda_eval.h"

#include <stdio.h>
#include <stdlib.h>

struct cuda_eval {
    cuda_model *g;
    int owns_g;
    eval_backend be; /* be.ctx == this */
};

/* eval_backend.run: one sequence (n_seq 1) from layer `first`; x_save maps 1:1 onto
 * cuda_forward_layers' x_save (entries for l <= first are NULL, and it ignores them anyway). */
static int cuda_eval_run(void *ctx, const attn_mask *mask, int n_tokens, const int32_t *tokens,
                         const float *x_in, int first, float *const *x_save, const int *rows, int n_rows,
                         float *logits, const atomic_int *cancel, char *err, size_t errlen) {
    cuda_eval *ce = ctx;
    const attn_mask *masks[1] = {mask};
    int rc = cuda_forward_layers_cancel(ce->g, masks, 1, n_tokens, first == 0 ? tokens : NULL,
                                        first > 0 ? x_in : NULL, first, x_save, NULL, NULL, rows, n_rows,
                                        logits, cancel, err, errlen);
    return rc == CUDA_CANCELLED ? EVAL_CANCELLED : rc;
}

static int make(cuda_eval **out, cuda_model *g, int owns, char *err, size_t errlen) {
    cuda_eval *ce = calloc(1, sizeof *ce);
    if (!ce) {
        if (owns) cuda_model_free(g);
        snprintf(err, errlen, "cuda eval: out of host memory");
        return -1;
    }
    ce->g = g;
    ce->owns_g = owns;
    ce->be = (eval_backend){"cuda", ce, cuda_eval_run};
    *out = ce;
    return 0;
}

int cuda_eval_create(cuda_eval **out, const model *m, int device, char *err, size_t errlen) {
    *out = NULL;
    cuda_model *g = NULL;
    if (cuda_model_create(&g, m, device, err, errlen)) return -1;
    return make(out, g, 1, err, errlen);
}

int cuda_eval_wrap(cuda_eval **out, cuda_model *g, char *err, size_t errlen) {
    *out = NULL;
    if (!g) {
        snprintf(err, errlen, "cuda eval: no GPU model given");
        return -1;
    }
    return make(out, g, 0, err, errlen);
}

void cuda_eval_free(cuda_eval *ce) {
    if (!ce) return;
    if (ce->owns_g) cuda_model_free(ce->g);
    free(ce);
}

const eval_backend *cuda_eval_backend(const cuda_eval *ce) {
    return &ce->be;
}

cuda_model *cuda_eval_model(const cuda_eval *ce) {
    return ce->g;
}

#endif /* BOSCH_HAVE_CUDA */
