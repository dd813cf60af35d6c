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

int backend_start(backend *b, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    if (!b->ops->start) return missing(b, "batched generation", err, errlen);
    return b->ops->start(b->ctx, mask, n_seq, n_ctx, err, errlen);
}

int backend_prefill(backend *b, const int32_t *tokens, int n_tokens, float *logits, char *err,
                    size_t errlen) {
    if (!b->ops->prefill) return missing(b, "batched prefill", err, errlen);
    return b->ops->prefill(b->ctx, tokens, n_tokens, logits, err, errlen);
}

int backend_fill_random(backend *b, int n_past, uint64_t seed, char *err, size_t errlen) {
    if (!b->ops->fill_random) return missing(b, "random KV fill", err, errlen);
    return b->ops->fill_random(b->ctx, n_past, seed, err, errlen);
}

int backend_decode(backend *b, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    if (!b->ops->decode) return missing(b, "batched decode", err, errlen);
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
