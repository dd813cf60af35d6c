/* kv_cache.c — the hybrid KV cache (see kv_cache.h).
 *
 * Slots of one (layer, KV head): a full head stores position p in slot p. An SWA head stores the
 * sinks p < sinks in slots 0..sinks-1 and every later position in a ring of `window` slots,
 * slot sinks + (p - sinks) mod window; when n_ctx < sinks + window the cache is only n_ctx slots
 * long and the mapping degenerates to slot p. All K and V of the cache live in one allocation of
 * exactly kv_cache_bytes(.., element bytes) bytes.
 */
#include "kv_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "attn_bf16.h"

static int slot_capacity(int full, int n_ctx, int window, int sinks) {
    if (full) return n_ctx;
    long long c = (long long)sinks + window;
    return c < n_ctx ? (int)c : n_ctx;
}

uint64_t kv_cache_bytes(const model_hparams *hp, const attn_mask *mask, int n_ctx, int bytes_per_elem) {
    if (!hp || !mask || n_ctx <= 0 || bytes_per_elem <= 0) return 0;
    uint64_t slots = 0;
    for (int l = 0; l < mask->n_layer; l++)
        for (int g = 0; g < mask->n_head_kv; g++)
            slots +=
                (uint64_t)slot_capacity(mask_get(mask, l, g) != ATTN_SWA, n_ctx, mask->window, mask->sinks);
    return slots * (uint64_t)hp->head_dim * 2u * (uint64_t)bytes_per_elem; /* keys and values */
}

int kv_cache_init(kv_cache *kv, const model_hparams *hp, const attn_mask *mask, int n_ctx) {
    return kv_cache_init_type(kv, hp, mask, n_ctx, ATTN_KV_FP32);
}

int kv_cache_init_type(kv_cache *kv, const model_hparams *hp, const attn_mask *mask, int n_ctx,
                       attn_kv_type type) {
    memset(kv, 0, sizeof *kv);
    if (!hp || !mask || mask->n_layer != hp->n_layer || mask->n_head_kv != hp->n_head_kv || n_ctx <= 0 ||
        mask->window < 1 || mask->sinks < 0 || hp->head_dim <= 0)
        return -1;
    const size_t n = (size_t)hp->n_layer * hp->n_head_kv;
    const int eb = attn_kv_elem_bytes(type);
    uint64_t bytes = kv_cache_bytes(hp, mask, n_ctx, eb);
    if (bytes == 0 || bytes > (uint64_t)SIZE_MAX) return -1;
    kv->n_layer = hp->n_layer;
    kv->n_head_kv = hp->n_head_kv;
    kv->head_dim = hp->head_dim;
    kv->n_ctx = n_ctx;
    kv->window = mask->window;
    kv->sinks = mask->sinks;
    kv->type = type;
    kv->z = malloc(n);
    kv->cap = malloc(n * sizeof(int));
    kv->k = malloc(n * sizeof(void *));
    kv->v = malloc(n * sizeof(void *));
    char *block = calloc(1, (size_t)bytes); /* untouched pages cost no memory until written */
    if (!kv->z || !kv->cap || !kv->k || !kv->v || !block) {
        free(block), free(kv->z), free(kv->cap), free(kv->k), free(kv->v);
        memset(kv, 0, sizeof *kv);
        return -1;
    }
    memcpy(kv->z, mask->z, n);
    char *p = block;
    for (size_t i = 0; i < n; i++) {
        kv->cap[i] = slot_capacity(kv->z[i] != ATTN_SWA, n_ctx, kv->window, kv->sinks);
        kv->k[i] = p;
        p += (size_t)kv->cap[i] * kv->head_dim * eb;
    }
    for (size_t i = 0; i < n; i++) {
        kv->v[i] = p;
        p += (size_t)kv->cap[i] * kv->head_dim * eb;
    }
    kv->bytes = bytes;
    return 0;
}

void kv_cache_free(kv_cache *kv) {
    if (!kv) return;
    if (kv->k) free(kv->k[0]); /* the single block starts at the first key slot */
    free(kv->k);
    free(kv->v);
    free(kv->z);
    free(kv->cap);
    memset(kv, 0, sizeof *kv);
}

void kv_cache_clear(kv_cache *kv) {
    kv->n_past = 0;
}

/* Slot of position pos in an SWA head's storage (see the file comment). */
static int swa_slot(const kv_cache *kv, int pos) {
    if (pos < kv->sinks) return pos;
    return kv->sinks + (pos - kv->sinks) % kv->window;
}

void kv_cache_store(kv_cache *kv, int layer, int pos, const float *k_row, const float *v_row) {
    if (layer < 0 || layer >= kv->n_layer || pos < 0 || pos >= kv->n_ctx) return;
    const int hd = kv->head_dim;
    for (int g = 0; g < kv->n_head_kv; g++) {
        size_t i = (size_t)layer * kv->n_head_kv + g;
        size_t at = (size_t)(kv->z[i] == ATTN_SWA ? swa_slot(kv, pos) : pos) * hd;
        if (kv->type == ATTN_KV_BF16) {
            attn_round_bf16(k_row + (size_t)g * hd, (uint16_t *)kv->k[i] + at, (size_t)hd);
            attn_round_bf16(v_row + (size_t)g * hd, (uint16_t *)kv->v[i] + at, (size_t)hd);
        } else {
            memcpy((float *)kv->k[i] + at, k_row + (size_t)g * hd, (size_t)hd * sizeof(float));
            memcpy((float *)kv->v[i] + at, v_row + (size_t)g * hd, (size_t)hd * sizeof(float));
        }
    }
}

void kv_cache_store_rows(kv_cache *kv, int layer, int pos0, int n, const float *k, const float *v) {
    if (layer < 0 || layer >= kv->n_layer || pos0 < 0 || n < 1 || pos0 + n > kv->n_ctx) return;
    const int hd = kv->head_dim, eb = attn_kv_elem_bytes(kv->type);
    const size_t ld = (size_t)kv->n_head_kv * hd;
    for (int g = 0; g < kv->n_head_kv; g++) {
        const size_t i = (size_t)layer * kv->n_head_kv + g;
        const int swa = kv->z[i] == ATTN_SWA, end = pos0 + n;
        /* an SWA head: the sinks, and the last `window` positions of the block (earlier ones are
         * overwritten in the ring before the block ends) */
        const int keep_from = swa && end - kv->window > pos0 ? end - kv->window : pos0;
#pragma omp parallel for schedule(static) if (n >= 256)
        for (int p = pos0; p < end; p++) {
            if (p < keep_from && p >= kv->sinks) continue;
            const size_t at = (size_t)(swa ? swa_slot(kv, p) : p) * hd;
            const float *kr = k + (size_t)(p - pos0) * ld + (size_t)g * hd,
                        *vr = v + (size_t)(p - pos0) * ld + (size_t)g * hd;
            if (eb == 2) {
                attn_round_bf16(kr, (uint16_t *)kv->k[i] + at, (size_t)hd);
                attn_round_bf16(vr, (uint16_t *)kv->v[i] + at, (size_t)hd);
            } else {
                memcpy((float *)kv->k[i] + at, kr, (size_t)hd * sizeof(float));
                memcpy((float *)kv->v[i] + at, vr, (size_t)hd * sizeof(float));
            }
        }
    }
}

int kv_cache_spans(const kv_cache *kv, int layer, int pos, attn_kv_span *sp) {
    if (layer < 0 || layer >= kv->n_layer || pos < 0 || pos >= kv->n_ctx) return -1;
    for (int g = 0; g < kv->n_head_kv; g++) {
        size_t i = (size_t)layer * kv->n_head_kv + g;
        attn_kv_span *s = &sp[g];
        s->k = kv->k[i];
        s->v = kv->v[i];
        s->type = kv->type;
        if (kv->z[i] != ATTN_SWA) { /* full: positions 0..pos in slots 0..pos */
            s->lo[0] = 0, s->hi[0] = pos + 1;
            s->lo[1] = s->hi[1] = 0;
            continue;
        }
        /* SWA: the sinks 0..min(sinks, pos+1)-1, then the ring, which holds the most recent
         * min(window, pos+1-sinks) positions >= sinks (pos is the latest stored position) */
        int n_sink = pos + 1 < kv->sinks ? pos + 1 : kv->sinks;
        int n_ring = pos + 1 - kv->sinks;
        if (n_ring < 0) n_ring = 0;
        if (n_ring > kv->window) n_ring = kv->window;
        s->lo[0] = 0, s->hi[0] = n_sink;
        s->lo[1] = kv->sinks, s->hi[1] = kv->sinks + n_ring;
    }
    return 0;
}

void kv_cache_attend(const kv_cache *kv, int layer, int pos, const float *q, float *out, int n_head) {
    attn_kv_span spans[64] = {{0}};
    attn_kv_span *sp = kv->n_head_kv <= 64 ? spans : malloc(sizeof *sp * (size_t)kv->n_head_kv);
    if (!sp || kv_cache_spans(kv, layer, pos, sp) != 0) { /* caller bug or OOM: visible NaN */
        for (size_t i = 0; i < (size_t)n_head * kv->head_dim; i++) out[i] = NAN;
        if (sp && sp != spans) free(sp);
        return;
    }
    attn_decode_hybrid(q, out, n_head, kv->n_head_kv, kv->head_dim, sp);
    if (sp != spans) free(sp);
}
