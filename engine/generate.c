/* generate.c — greedy generation over generate_steps, and the CPU forward as steps (generate.h). */
#include "generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "forward.h"
#include "kv_cache.h"
#include "ops.h"

struct generate_cpu {
    const model *m;
    const attn_mask *mask;
    attn_mask full; /* all heads full, when created with mask NULL */
    kv_cache kv;
    forward_ws *ws;
    float *logits;
};

int generate_cpu_create(generate_cpu **out, const model *m, const attn_mask *mask, int max_prompt, int n_ctx,
                        const atomic_int *cancel, char *err, size_t errlen) {
    *out = NULL;
    generate_cpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->m = m;
    g->mask = mask;
    if (!mask && mask_init(&g->full, m->hp.n_layer, m->hp.n_head_kv, 1, 0, ATTN_FULL) != 0) {
        free(g);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (kv_cache_init_type(&g->kv, &m->hp, mask ? mask : &g->full, n_ctx, m->kv_type) != 0) {
        mask_free(&g->full);
        free(g);
        snprintf(err, errlen, "cannot allocate the KV cache for %d tokens", n_ctx);
        return -1;
    }
    g->ws = forward_ws_create(&m->hp, max_prompt);
    g->logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    if (!g->ws || !g->logits) {
        generate_cpu_free(g);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    forward_ws_set_cancel(g->ws, cancel);
    *out = g;
    return 0;
}

void generate_cpu_free(generate_cpu *g) {
    if (!g) return;
    free(g->logits);
    forward_ws_free(g->ws);
    kv_cache_free(&g->kv);
    mask_free(&g->full);
    free(g);
}

static int cpu_prefill(void *ctx, const int32_t *tokens, int n_tokens, char *err, size_t errlen) {
    generate_cpu *g = ctx;
    int last = n_tokens - 1;
    int rc = forward_prefill(g->m, g->mask, tokens, n_tokens, &g->kv, &last, 1, g->logits, g->ws);
    if (rc != 0) snprintf(err, errlen, "%s", forward_ws_error(g->ws));
    return rc;
}

static int cpu_decode(void *ctx, int32_t token, char *err, size_t errlen) {
    generate_cpu *g = ctx;
    int rc = forward_decode(g->m, g->mask, token, &g->kv, g->logits, g->ws);
    if (rc != 0) snprintf(err, errlen, "%s", forward_ws_error(g->ws));
    return rc;
}

generate_steps generate_cpu_steps(generate_cpu *g) {
    return (generate_steps){g, cpu_prefill, cpu_decode, g->logits};
}

static int cancelled(const atomic_int *cancel) {
    return cancel && atomic_load_explicit(cancel, memory_order_relaxed);
}

/* The index of the first logit that is not a finite number, or -1 (a model with NaN or infinite
 * weights: its argmax is meaningless, and was taken for the end-of-generation token). */
static long first_non_finite(const float *logits, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(logits[i])) return i;
    return -1;
}

/* The token loop after a successful prefill (see generate_greedy). */
static int token_loop(const model *m, const generate_opts *o, const generate_steps *s, int32_t *out,
                      generate_result *r, char *err, size_t errlen) {
    r->stage = GENERATE_DECODE;
    while (r->n_gen < o->max_new) {
        if (cancelled(o->cancel)) return FORWARD_CANCELLED;
        long bad = first_non_finite(s->logits, m->hp.n_vocab);
        if (bad >= 0) {
            snprintf(err, errlen,
                     "the model's output is not a number (logit %ld is %g) after %d generated tokens: its "
                     "weights hold NaN or infinite values",
                     bad, (double)s->logits[bad], r->n_gen);
            return -1;
        }
        int32_t next = ops_argmax(s->logits, m->hp.n_vocab);
        if (tokenizer_is_eog(m->tok, next)) break;
        if (out) out[r->n_gen] = next;
        r->n_gen++;
        if (o->on_token) o->on_token(o->user, next);
        if (r->n_gen == o->max_new) break;
        int rc = s->decode(s->ctx, next, err, errlen);
        if (rc != 0) return rc;
    }
    r->stage = GENERATE_DONE;
    return 0;
}

int generate_greedy(const model *m, const int32_t *prompt, int n_prompt, const generate_opts *o, int32_t *out,
                    generate_result *r, char *err, size_t errlen) {
    generate_result local;
    if (!r) r = &local;
    *r = (generate_result){GENERATE_SETUP, 0, 0.0, 0.0};
    generate_cpu *cpu = NULL;
    generate_steps own;
    const generate_steps *s = o->steps;
    if (!s) {
        if (generate_cpu_create(&cpu, m, o->mask, n_prompt, n_prompt + o->max_new, o->cancel, err, errlen))
            return -1;
        own = generate_cpu_steps(cpu);
        s = &own;
    }
    r->stage = GENERATE_PREFILL;
    double t0 = base_now_s();
    int rc = s->prefill(s->ctx, prompt, n_prompt, err, errlen);
    r->prefill_s = base_now_s() - t0;
    if (rc == 0) {
        if (o->on_prefilled) o->on_prefilled(o->user);
        t0 = base_now_s();
        rc = token_loop(m, o, s, out, r, err, errlen);
        r->decode_s = base_now_s() - t0;
    }
    generate_cpu_free(cpu);
    return rc;
}
