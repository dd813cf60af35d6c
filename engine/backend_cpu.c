/* backend_cpu.c — the CPU backend (see backend.h) over forward.h: fp32 activations, GEMMs as the
 * model's precision. Each evaluator gets its own activation scratch (eval_open), so evaluators of
 * one CPU backend hold no shared mutable state. Batched generation runs one sequence (n_seq 1)
 * through a host KV cache (kv_cache.h); it has no random KV fill. */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "forward.h"
#include "kv_cache.h"

typedef struct {
    const model *m;
    /* batched generation (backend_start): the current sequence's cache, mask and scratch */
    kv_cache kv;
    int have_kv;
    attn_mask mask; /* z NULL before backend_start */
    forward_ws *ws; /* grown to the longest prefill */
    float *logits;  /* [n_vocab] when the caller wants none */
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

static void drop_batch(cpu_backend *c) {
    if (c->have_kv) kv_cache_free(&c->kv);
    c->have_kv = 0;
    if (c->mask.z) mask_free(&c->mask);
}

/* c->ws with room for n_tokens rows (kept for later calls). */
static int ensure_ws(cpu_backend *c, int n_tokens, char *err, size_t errlen) {
    if (c->ws && forward_ws_max_tokens(c->ws) >= n_tokens) return 0;
    forward_ws_free(c->ws);
    c->ws = forward_ws_create(&c->m->hp, n_tokens);
    if (c->ws) return 0;
    base_seterr(err, errlen, "cpu: out of memory for the activations of %d tokens", n_tokens);
    return -1;
}

static int cpu_start(void *ctx, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    cpu_backend *c = ctx;
    const model_hparams *hp = &c->m->hp;
    if (n_seq != 1) {
        base_seterr(err, errlen, "backend_start: the cpu backend runs n_seq 1, not %d", n_seq);
        return -1;
    }
    drop_batch(c);
    if (!c->logits) c->logits = malloc(sizeof(float) * (size_t)hp->n_vocab);
    if (!c->logits || mask_copy(&c->mask, mask)) {
        base_seterr(err, errlen, "out of memory");
        return -1;
    }
    if (kv_cache_init_type(&c->kv, hp, &c->mask, n_ctx, c->m->kv_type)) {
        base_seterr(err, errlen, "KV cache of %d positions (%.1f MiB, %s): out of memory", n_ctx,
                    kv_cache_bytes(hp, &c->mask, n_ctx, attn_kv_elem_bytes(c->m->kv_type)) / 1048576.0,
                    attn_kv_type_name(c->m->kv_type));
        drop_batch(c);
        return -1;
    }
    c->have_kv = 1;
    /* scratch for a prefill of up to n_ctx tokens now, so no allocation falls in a timed prefill */
    return ensure_ws(c, n_ctx, err, errlen);
}

static int cpu_prefill(void *ctx, const int32_t *tokens, int n_tokens, float *logits, char *err,
                       size_t errlen) {
    cpu_backend *c = ctx;
    if (ensure_ws(c, n_tokens, err, errlen)) return -1;
    kv_cache_clear(&c->kv);
    int last = n_tokens - 1;
    if (forward_prefill(c->m, &c->mask, tokens, n_tokens, &c->kv, &last, 1, logits ? logits : c->logits,
                        c->ws)) {
        base_seterr(err, errlen, "prefill of %d tokens: %s", n_tokens, forward_ws_error(c->ws));
        return -1;
    }
    return 0;
}

static int cpu_decode(void *ctx, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    cpu_backend *c = ctx;
    if (c->kv.n_past >= c->kv.n_ctx) {
        base_seterr(err, errlen, "decode: the KV cache is full (%d positions)", c->kv.n_ctx);
        return -1;
    }
    if (ensure_ws(c, 1, err, errlen)) return -1;
    if (forward_decode(c->m, &c->mask, tokens[0], &c->kv, logits ? logits : c->logits, c->ws)) {
        base_seterr(err, errlen, "decode at position %d: %s", c->kv.n_past, forward_ws_error(c->ws));
        return -1;
    }
    return 0;
}

static int cpu_n_seq(const void *ctx) {
    return ((const cpu_backend *)ctx)->have_kv ? 1 : 0;
}

static int cpu_n_past(const void *ctx) {
    const cpu_backend *c = ctx;
    return c->have_kv ? c->kv.n_past : 0;
}

static uint64_t cpu_kv_bytes(const void *ctx) {
    const cpu_backend *c = ctx;
    return c->have_kv ? c->kv.bytes : 0;
}

static void cpu_free(void *ctx) {
    cpu_backend *c = ctx;
    if (!c) return;
    drop_batch(c);
    forward_ws_free(c->ws);
    free(c->logits);
    free(c);
}

static const backend_ops CPU_OPS = {
    .name = "cpu",
    .eval_open = cpu_eval_open,
    .eval_close = cpu_eval_close,
    .run = cpu_run,
    .start = cpu_start,
    .prefill = cpu_prefill,
    .decode = cpu_decode,
    .n_seq = cpu_n_seq,
    .n_past = cpu_n_past,
    .kv_bytes = cpu_kv_bytes,
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
    *b = (backend){&CPU_OPS, c, BACKEND_CPU, m};
    *out = b;
    return 0;
}
