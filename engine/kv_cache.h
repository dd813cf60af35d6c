/* kv_cache.h — the hybrid KV cache (docs/design.md §4): full heads keep every position, SWA heads a ring
 * of `window` entries plus `sinks` fixed entries. Keys are stored after RoPE at their true
 * positions; sinks keep theirs. Elements are fp32 (the reference) or bf16 (the engine's default:
 * each key and value rounded to nearest even once, when stored), attention.h's attn_kv_type.
 */
#ifndef BOSCH_KV_CACHE_H
#define BOSCH_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "attention.h"
#include "mask.h"
#include "model.h"

typedef struct {
    int n_layer, n_head_kv, head_dim;
    int n_ctx; /* maximum positions, tokens */
    int window, sinks;
    int n_past;        /* positions stored so far */
    uint8_t *z;        /* [n_layer][n_head_kv] copy of the mask */
    int *cap;          /* [n_layer][n_head_kv] slots: n_ctx (full) or min(n_ctx, sinks + window) (SWA) */
    attn_kv_type type; /* element type of k and v */
    void **k;          /* [n_layer*n_head_kv] -> [cap][head_dim] elements of `type` */
    void **v;          /* same layout as k */
    uint64_t bytes;    /* bytes allocated for k and v, equals kv_cache_bytes(.., attn_kv_elem_bytes(type)) */
} kv_cache;

/* Exact KV bytes for `mask` at context n_ctx: sum over (layer, kv_head) of slots x head_dim x 2
 * (keys and values) x bytes_per_elem (4 for this fp32 cache, 2 for bf16), slots = n_ctx for a
 * full head and min(n_ctx, sinks + window) for an SWA head (mask->window, mask->sinks).
 * 0 on bad arguments. */
uint64_t kv_cache_bytes(const model_hparams *hp, const attn_mask *mask, int n_ctx, int bytes_per_elem);

/* Allocate for `mask` (z, window, sinks are copied) and n_ctx positions with elements of `type`:
 * one block of exactly kv_cache_bytes(hp, mask, n_ctx, attn_kv_elem_bytes(type)) bytes, zeroed
 * lazily (calloc). 0 or -1 (OOM, shape mismatch: mask n_layer/n_head_kv differ from hp, n_ctx < 1,
 * window < 1, sinks < 0). */
int kv_cache_init_type(kv_cache *kv, const model_hparams *hp, const attn_mask *mask, int n_ctx,
                       attn_kv_type type);
/* kv_cache_init_type with fp32 elements (the reference). */
int kv_cache_init(kv_cache *kv, const model_hparams *hp, const attn_mask *mask, int n_ctx);
void kv_cache_free(kv_cache *kv);
void kv_cache_clear(kv_cache *kv); /* n_past = 0 */

/* Store position `pos` of `layer`: k_row and v_row are [n_head_kv*head_dim] fp32, rounded to the
 * cache's element type (bf16: nearest even, NaN kept). An SWA head keeps
 * positions < sinks in their own slots and later ones in a ring slot sinks + (pos-sinks) % window
 * (overwriting the position pos - window). Positions must be stored in increasing order;
 * pos outside [0, n_ctx) or a bad layer is ignored. Does not change n_past. */
void kv_cache_store(kv_cache *kv, int layer, int pos, const float *k_row, const float *v_row);

/* kv_cache_store of positions pos0..pos0+n-1 in order (k and v [n][n_head_kv*head_dim]), with the
 * same result, in parallel over positions: an SWA head's ring gets only the positions no later
 * one of the block overwrites. Positions outside [0, n_ctx) or a bad layer: nothing is stored. */
void kv_cache_store_rows(kv_cache *kv, int layer, int pos0, int n, const float *k, const float *v);

/* Decode attention of one query position `pos` (keys 0..pos must be stored, and pos must be the
 * latest stored position, because an SWA ring keeps only the last `window` positions) for `layer`:
 * q [n_head*head_dim] -> out [n_head*head_dim], visibility as in attention.h with the cache's
 * window and sinks (the mask given to forward must be the one the cache was made for). Parallel
 * over fixed chunks of slots; the result does not depend on threads. A bad layer or pos, or an
 * allocation failure, gives NaN outputs. */
void kv_cache_attend(const kv_cache *kv, int layer, int pos, const float *q, float *out, int n_head);

/* The visible slots of every KV head of `layer` for the query at `pos` (what kv_cache_attend
 * attends over): sp [n_head_kv]. 0, or -1 for a bad layer or pos. */
int kv_cache_spans(const kv_cache *kv, int layer, int pos, attn_kv_span *sp);

#endif
