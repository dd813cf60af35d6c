/* mask.h — the head mask z of head-level hybridization (docs/design.md §2).
 * z[layer][kv_head] = 1: full causal attention; 0: sliding-window attention (SWA) with `window`
 * tokens (a query at i sees keys i-window < j <= i) plus `sinks` first positions (j < sinks).
 * All query heads of a GQA group follow their KV head.
 */
#ifndef BOSCH_MASK_H
#define BOSCH_MASK_H

#include <stddef.h>
#include <stdint.h>

#define ATTN_SWA 0
#define ATTN_FULL 1

typedef struct {
    int n_layer;
    int n_head_kv;
    int window; /* tokens, >= 1 */
    int sinks;  /* tokens, >= 0 */
    uint8_t *z; /* [n_layer][n_head_kv] row-major, ATTN_FULL or ATTN_SWA */
} attn_mask;

/* Allocate a mask with every head set to `value` (ATTN_FULL or ATTN_SWA). 0 or -1 (bad args/OOM). */
int mask_init(attn_mask *m, int n_layer, int n_head_kv, int window, int sinks, uint8_t value);
void mask_free(attn_mask *m);
int mask_copy(attn_mask *dst, const attn_mask *src); /* dst uninitialised; allocates */

static inline uint8_t mask_get(const attn_mask *m, int layer, int kv_head) {
    return m->z[(size_t)layer * m->n_head_kv + kv_head];
}
static inline void mask_set(attn_mask *m, int layer, int kv_head, uint8_t v) {
    m->z[(size_t)layer * m->n_head_kv + kv_head] = v;
}

int mask_count_swa(const attn_mask *m);
/* ratio rho = SWA KV heads / all KV heads (docs/design.md §2). */
double mask_ratio(const attn_mask *m);
/* First layer whose row differs between two masks of the same shape; n_layer when equal. */
int mask_first_diff_layer(const attn_mask *a, const attn_mask *b);
/* 64-bit FNV-1a hash of the z bits (window/sinks excluded), for traces. */
uint64_t mask_hash(const attn_mask *m);
/* z as a string of '1'/'0', row-major, layers separated by '/', into buf (needs L*(H+1) bytes). */
void mask_to_string(const attn_mask *m, char *buf, size_t cap);

/* The servable projection (mask_servable.c): what an engine with one window per layer can run
 * (llama.cpp's sliding_window_pattern, Hugging Face layer_types, TensorRT-LLM's per-layer
 * max_attention_window). A layer stays SWA only if every one of its KV heads is SWA in src;
 * otherwise the whole layer is full. dst is uninitialised and allocated here with src's shape,
 * window and sinks (free with mask_free). 0, or -1 (NULL argument, bad shape, OOM). */
int mask_servable(attn_mask *dst, const attn_mask *src);
/* Layers whose every KV head is SWA (the SWA layers of the servable projection). */
int mask_count_swa_layers(const attn_mask *m);
/* The same per layer: swa_layer[m->n_layer] (may be NULL) gets 1 for a layer the projection keeps
 * SWA, 0 for a full one. Returns the number of SWA layers, or -1 (NULL m). */
int mask_servable_layers(const attn_mask *m, uint8_t *swa_layer);

#endif
