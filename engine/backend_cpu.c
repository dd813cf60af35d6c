/* backend_cpu.c — the CPU backend (see backend.h): the evaluator's run() over forward.h, fp32
 * activations, GEMMs as the model's precision. Each evaluator gets its own activation scratch
 * (eval_open), so evaluators of one CPU backend hold no shared mutable state. */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "forward.h"

typedef struct {
    const model *m;
} cpu_backend;

typedef struct {
    const model *m;
    forward_ws *ws; /* activations for max_tokens rows */
    float *x;       /* [max_tokens][n_embd] the stream being computed */
} cpu_eval;

static void cpu_eval_close(void *ctx, void *ws) {
    (void)ctx;
    cpu_eval *e = ws;
    if (!e) return;
    forward_ws_free(e->ws);
    free(e->x);
    free(e);
}

static int cpu_eval_open(void *ctx, int max_tokens, void **ws, char *err, size_t errlen) {
    const model *m = ((cpu_backend *)ctx)->m;
    cpu_eval *e = calloc(1, sizeof *e);
    *ws = NULL;
    if (e) {
        e->m = m;
        e->ws = forward_ws_create(&m->hp, max_tokens);
        e->x = malloc(sizeof(float) * (size_t)max_tokens * m->hp.n_embd);
    }
    if (!e || !e->ws || !e->x) {
        cpu_eval_close(ctx, e);
        base_seterr(err, errlen, "cpu: out of memory for the activations of %d tokens", max_tokens);
        return -1;
    }
    *ws = e;
    return 0;
}

/* backend_ops.run: embedding or the given stream, forward_layer from `first`, then the LM head. */
static int cpu_run(void *ws, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
                   int first, float *const *x_save, const int *rows, int n_rows, float *logits,
                   const atomic_int *cancel, char *err, size_t errlen) {
    cpu_eval *e = ws;
    const model *m = e->m;
    const size_t plane = (size_t)n_tokens * m->hp.n_embd;
    if (first == 0) {
        if (forward_embed(m, tokens, n_tokens, e->x) != 0) {
            base_seterr(err, errlen, "embedding failed");
            return -1;
        }
    } else {
        memcpy(e->x, x_in, plane * sizeof(float));
    }
    for (int l = first; l < m->hp.n_layer; l++) {
        if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) return BACKEND_CANCELLED;
        if (x_save[l]) memcpy(x_save[l], e->x, plane * sizeof(float));
        if (forward_layer(m, l, mask, e->x, n_tokens, 0, NULL, e->ws) != 0) {
            base_seterr(err, errlen, "layer %d failed", l);
            return -1;
        }
    }
    forward_logits(m, e->x, rows, n_rows, logits, e->ws);
    return 0;
}

static void cpu_free(void *ctx) {
    free(ctx);
}

static const backend_ops CPU_OPS = {
    .name = "cpu",
    .eval_open = cpu_eval_open,
    .eval_close = cpu_eval_close,
    .run = cpu_run,
    .free = cpu_free,
};

int backend_cpu_create(backend **out, const model *m, char *err, size_t errlen) {
    *out = NULL;
    backend *b = calloc(1, sizeof *b);
    cpu_backend *c = calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        base_seterr(err, errlen, "cpu: out of memory");
        return -1;
    }
    c->m = m;
    *b = (backend){&CPU_OPS, c, BACKEND_CPU};
    *out = b;
    return 0;
}
