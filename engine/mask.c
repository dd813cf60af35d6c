/* mask.c — head mask z helpers (see mask.h). */
#include "mask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mask_init(attn_mask *m, int n_layer, int n_head_kv, int window, int sinks, uint8_t value) {
    memset(m, 0, sizeof *m);
    if (n_layer <= 0 || n_head_kv <= 0 || window < 1 || sinks < 0) return -1;
    if (value != ATTN_FULL && value != ATTN_SWA) return -1;
    m->z = malloc((size_t)n_layer * n_head_kv);
    if (!m->z) return -1;
    memset(m->z, value, (size_t)n_layer * n_head_kv);
    m->n_layer = n_layer;
    m->n_head_kv = n_head_kv;
    m->window = window;
    m->sinks = sinks;
    return 0;
}

void mask_free(attn_mask *m) {
    if (!m) return;
    free(m->z);
    m->z = NULL;
}

int mask_copy(attn_mask *dst, const attn_mask *src) {
    if (mask_init(dst, src->n_layer, src->n_head_kv, src->window, src->sinks, ATTN_FULL)) return -1;
    memcpy(dst->z, src->z, (size_t)src->n_layer * src->n_head_kv);
    return 0;
}

int mask_count_swa(const attn_mask *m) {
    int n = 0;
    for (size_t i = 0; i < (size_t)m->n_layer * m->n_head_kv; i++) n += m->z[i] == ATTN_SWA;
    return n;
}

double mask_ratio(const attn_mask *m) {
    return (double)mask_count_swa(m) / ((double)m->n_layer * m->n_head_kv);
}

int mask_first_diff_layer(const attn_mask *a, const attn_mask *b) {
    for (int l = 0; l < a->n_layer; l++)
        if (memcmp(a->z + (size_t)l * a->n_head_kv, b->z + (size_t)l * b->n_head_kv, a->n_head_kv)) return l;
    return a->n_layer;
}

uint64_t mask_hash(const attn_mask *m) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 offset basis */
    for (size_t i = 0; i < (size_t)m->n_layer * m->n_head_kv; i++) {
        h ^= m->z[i];
        h *= 1099511628211ull; /* FNV 64 prime */
    }
    return h;
}

void mask_to_string(const attn_mask *m, char *buf, size_t cap) {
    size_t k = 0;
    if (cap == 0) return;
    for (int l = 0; l < m->n_layer; l++) {
        if (l > 0 && k + 1 < cap) buf[k++] = '/';
        for (int h = 0; h < m->n_head_kv && k + 1 < cap; h++) buf[k++] = mask_get(m, l, h) ? '1' : '0';
    }
    buf[k] = '\0';
}
