/* backend.c — the backend_* calls (see backend.h): each dispatches to the backend's table and
 * reports the entries a backend does not offer. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "err.h"

static int missing(const backend *b, const char *what, char *err, size_t errlen) {
    base_seterr(err, errlen, "the %s backend has no %s", b->ops->name ? b->ops->name : "?", what);
    return -1;
}

const char *backend_device_name(backend_device d) {
    return d == BACKEND_CUDA ? "cuda" : "cpu";
}

void backend_free(backend *b) {
    if (!b) return;
    if (b->ops->free) b->ops->free(b->ctx);
    free(b);
}

void backend_describe(const backend *b, int with_name, char *buf, size_t cap) {
    if (!cap) return;
    char hw[384] = "";
    if (b->ops->describe) b->ops->describe(b->ctx, hw, sizeof hw);
    if (!hw[0])
        snprintf(buf, cap, "%s", backend_device_name(b->device));
    else if (with_name)
        snprintf(buf, cap, "%s: %s", backend_device_name(b->device), hw);
    else
        snprintf(buf, cap, "%s", hw);
}

/* -1 with "<what> before backend_start" when no batch is started. */
static int not_started(const backend *b, const char *what, char *err, size_t errlen) {
    if (backend_n_seq(b) > 0) return 0;
    base_seterr(err, errlen, "%s before backend_start", what);
    return -1;
}

int backend_start(backend *b, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    if (!b->ops->start) return missing(b, "batched generation", err, errlen);
    if (n_seq < 1 || n_ctx < 1) {
        base_seterr(err, errlen, "backend_start: n_seq %d and n_ctx %d must be >= 1", n_seq, n_ctx);
        return -1;
    }
    if (mask) return b->ops->start(b->ctx, mask, n_seq, n_ctx, err, errlen);
    attn_mask full = {0}; /* the table always gets a mask */
    if (!b->m || mask_init(&full, b->m->hp.n_layer, b->m->hp.n_head_kv, 1, 0, ATTN_FULL)) {
        base_seterr(err, errlen, "backend_start: no mask and no model to make a full one");
        return -1;
    }
    int rc = b->ops->start(b->ctx, &full, n_seq, n_ctx, err, errlen);
    mask_free(&full);
    return rc;
}

int backend_prefill(backend *b, const int32_t *tokens, int n_tokens, float *logits, char *err,
                    size_t errlen) {
    if (!b->ops->prefill) return missing(b, "batched prefill", err, errlen);
    if (not_started(b, "prefill", err, errlen)) return -1;
    if (n_tokens < 1) {
        base_seterr(err, errlen, "prefill of %d tokens", n_tokens);
        return -1;
    }
    return b->ops->prefill(b->ctx, tokens, n_tokens, logits, err, errlen);
}

int backend_fill_random(backend *b, int n_past, uint64_t seed, char *err, size_t errlen) {
    if (!b->ops->fill_random) return missing(b, "random KV fill", err, errlen);
    if (not_started(b, "fill", err, errlen)) return -1;
    return b->ops->fill_random(b->ctx, n_past, seed, err, errlen);
}

int backend_decode(backend *b, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    if (!b->ops->decode) return missing(b, "batched decode", err, errlen);
    if (not_started(b, "decode", err, errlen)) return -1;
    return b->ops->decode(b->ctx, tokens, logits, err, errlen);
}

int backend_n_seq(const backend *b) {
    return b->ops->n_seq ? b->ops->n_seq(b->ctx) : 0;
}

int backend_n_past(const backend *b) {
    return b->ops->n_past ? b->ops->n_past(b->ctx) : 0;
}

uint64_t backend_kv_bytes(const backend *b) {
    return b->ops->kv_bytes ? b->ops->kv_bytes(b->ctx) : 0;
}

uint64_t backend_peak_bytes(const backend *b) {
    return b->ops->peak_bytes ? b->ops->peak_bytes(b->ctx) : 0;
}
