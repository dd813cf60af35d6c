/* backend_cuda_ops.c — the CUDA backend's table (backend.h) over backend_cuda.h: the evaluator's
 * run() (one sample per cuda_forward_layers call) and the batched generation path.
 *
 * Each run() is one call of cuda_forward_layers with n_seq = 1 (one sample, its own length), so the
 * GEMM shapes of a sample are the same whether it starts at layer 0 or later: prefix reuse is
 * bitwise identical to a from-scratch GPU evaluation (cuBLAS and our kernels are deterministic for
 * a given shape on one GPU). The next speed step is batching: samples of equal length (the
 * calibration split's are) in one call, n_seq > 1, one mask each. Every evaluator of a backend
 * shares its cuda_model and activation scratch (eval_open is NULL: run() gets the backend's state).
 */
#ifdef BOSCH_HAVE_CUDA

#include <stdio.h>
#include <stdlib.h>

#include "backend_cuda.h"
#include "err.h"
#include "kernels.h"
#include "kv_cache.h"

typedef struct {
    const model *m;
    int gpu;        /* the device index */
    cuda_model *gm; /* the weights on the GPU */
    cuda_kv *kv;    /* the current batch's cache */
    attn_mask mask; /* its mask (z NULL before backend_start) */
    int n_seq;      /* sequences of the current batch (0 before backend_start) */
} cuda_backend;

/* backend_ops.run: one sequence (n_seq 1) from layer `first`; x_save maps 1:1 onto
 * cuda_forward_layers' x_save (entries for l <= first are NULL, and it ignores them anyway). */
static int cuda_run(void *ws, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
                    int first, float *const *x_save, const int *rows, int n_rows, float *logits,
                    const atomic_int *cancel, char *err, size_t errlen) {
    cuda_backend *c = ws;
    const attn_mask *masks[1] = {mask};
    int rc = cuda_forward_layers_cancel(c->gm, masks, 1, n_tokens, first == 0 ? tokens : NULL,
                                        first > 0 ? x_in : NULL, first, x_save, NULL, NULL, rows, n_rows,
                                        logits, cancel, err, errlen);
    return rc == CUDA_CANCELLED ? BACKEND_CANCELLED : rc;
}

static void drop_batch(cuda_backend *c) {
    cuda_kv_free(c->kv);
    c->kv = NULL;
    c->n_seq = 0;
    if (c->mask.z) mask_free(&c->mask);
}

static int cuda_start(void *ctx, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    cuda_backend *c = ctx;
    char msg[512];
    drop_batch(c);
    if (mask_copy(&c->mask, mask)) {
        base_seterr(err, errlen, "out of memory");
        return -1;
    }
    if (cuda_kv_create(&c->kv, c->gm, mask, n_seq, n_ctx, msg, sizeof msg)) {
        base_seterr(err, errlen, "GPU KV cache of %d sequences x %d positions (%.1f MiB): %s", n_seq, n_ctx,
                    (double)n_seq * kv_cache_bytes(&c->m->hp, mask, n_ctx, 4) / 1048576.0, msg);
        drop_batch(c);
        return -1;
    }
    c->n_seq = n_seq;
    return 0;
}

static int cuda_prefill(void *ctx, const int32_t *tokens, int n_tokens, float *logits, char *err,
                        size_t errlen) {
    cuda_backend *c = ctx;
    int n = c->n_seq, *last = malloc(sizeof(int) * (size_t)n);
    const attn_mask **masks = malloc(sizeof *masks * (size_t)n);
    int rc = -1;
    if (!last || !masks) {
        base_seterr(err, errlen, "out of memory");
    } else {
        for (int s = 0; s < n; s++) last[s] = s * n_tokens + n_tokens - 1, masks[s] = &c->mask;
        cuda_kv_clear(c->kv);
        rc = cuda_forward_prefill(c->gm, masks, n, tokens, n_tokens, c->kv, last, logits ? n : 0, logits, err,
                                  errlen);
    }
    free(last);
    free(masks);
    return rc;
}

static int cuda_fill_random(void *ctx, int n_past, uint64_t seed, char *err, size_t errlen) {
    cuda_backend *c = ctx;
    return cuda_kv_fill_random(c->kv, n_past, seed, err, errlen);
}

static int cuda_decode_step(void *ctx, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    cuda_backend *c = ctx;
    return cuda_decode(c->gm, c->kv, tokens, logits, err, errlen);
}

static int cuda_n_seq(const void *ctx) {
    return ((const cuda_backend *)ctx)->n_seq;
}

static int cuda_n_past(const void *ctx) {
    const cuda_backend *c = ctx;
    return c->kv ? cuda_kv_n_past(c->kv) : 0;
}

static uint64_t cuda_kv_bytes_of(const void *ctx) {
    const cuda_backend *c = ctx;
    return c->kv ? cuda_kv_bytes(c->kv) : 0;
}

static uint64_t cuda_peak(const void *ctx) {
    (void)ctx;
    return cuda_peak_bytes();
}

static void cuda_describe(const void *ctx, char *buf, size_t cap) {
    const cuda_backend *c = ctx;
    char name[256] = "?", msg[256];
    uint64_t total = 0;
    kern_device_info(c->gpu, name, sizeof name, &total, msg, sizeof msg);
    snprintf(buf, cap, "%s (%.1f GiB), %.1f MiB of bf16 weights", name, total / 1073741824.0,
             cuda_model_weight_bytes(c->gm) / 1048576.0);
}

static void cuda_free(void *ctx) {
    cuda_backend *c = ctx;
    if (!c) return;
    drop_batch(c);
    cuda_model_free(c->gm);
    free(c);
}

static const backend_ops CUDA_OPS = {
    .name = "cuda",
    .run = cuda_run,
    .start = cuda_start,
    .prefill = cuda_prefill,
    .fill_random = cuda_fill_random,
    .decode = cuda_decode_step,
    .n_seq = cuda_n_seq,
    .n_past = cuda_n_past,
    .kv_bytes = cuda_kv_bytes_of,
    .peak_bytes = cuda_peak,
    .describe = cuda_describe,
    .free = cuda_free,
};

/* One short prefill and decode: loads every kernel and sets cuBLAS up before anything is timed. */
static int warm_up(backend *b, char *err, size_t errlen) {
    int32_t toks[16] = {0};
    int rc = 0;
    if (backend_start(b, NULL, 1, 17, err, errlen) || backend_prefill(b, toks, 16, NULL, err, errlen) ||
        backend_decode(b, toks, NULL, err, errlen))
        rc = -1;
    drop_batch(b->ctx); /* no batch is started after creation */
    return rc;
}

int backend_cuda_create(backend **out, const backend_options *o, const model *m, char *err, size_t errlen) {
    *out = NULL;
    backend *b = calloc(1, sizeof *b);
    cuda_backend *c = calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        base_seterr(err, errlen, "cuda: out of host memory");
        return -1;
    }
    c->m = m;
    c->gpu = o->gpu;
    *b = (backend){&CUDA_OPS, c, BACKEND_CUDA, m};
    if (cuda_model_create(&c->gm, m, o->gpu, o->cuda_attn, err, errlen) ||
        (o->warm_up && warm_up(b, err, errlen))) {
        backend_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

#endif /* BOSCH_HAVE_CUDA */
