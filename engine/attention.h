/* attention.h — per-head hybrid causal attention on the CPU (full or SWA per KV head, GQA).
 *
 * Visibility (docs/design.md §2): for a query at position i, a full head sees keys j <= i; an SWA head
 * sees i - window < j <= i plus the sinks j < sinks. Softmax scale 1/sqrt(head_dim).
 * SWA heads cost O(n_tokens * (window + sinks)); no n_tokens x n_tokens buffer is allocated.
 */
#ifndef BOSCH_ATTENTION_H
#define BOSCH_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

/* Element type of keys and values: fp32 (the reference) or bf16 (rounded to nearest even once,
 * when written; products in bf16, accumulation and softmax in fp32, attn_bf16.h). */
typedef enum { ATTN_KV_FP32 = 0, ATTN_KV_BF16 = 1 } attn_kv_type;

/* Bytes of one key or value element: 4 or 2. */
int attn_kv_elem_bytes(attn_kv_type t);
const char *attn_kv_type_name(attn_kv_type t); /* "fp32" or "bf16" */
/* "fp32" or "bf16" into *out: 0, or -1 (out untouched). */
int attn_kv_type_parse(const char *s, attn_kv_type *out);

/* Prefill: q [n_tokens][n_head*head_dim], k and v [n_tokens][n_head_kv*head_dim] (positions
 * 0..n_tokens-1, RoPE already applied), out [n_tokens][n_head*head_dim]. Query head h uses KV head
 * h / (n_head / n_head_kv). z_row [n_head_kv]: 1 full, 0 SWA. window >= 1, sinks >= 0.
 * Runs on all cores (OpenMP over KV head x tile of 32 queries); the result does not depend on
 * the number of threads (each tile is computed by one thread in a fixed order). On allocation
 * failure of a thread's ~100 KB scratch, its outputs are NaN. */
void attn_prefill_hybrid(const float *q, const float *k, const float *v, float *out, int n_tokens, int n_head,
                         int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks);

/* attn_prefill_hybrid with keys and values of `type`: ATTN_KV_FP32 is attn_prefill_hybrid;
 * ATTN_KV_BF16 rounds k and v (fp32 in, as a bf16 cache would store them) and runs
 * attn_prefill_bf16. The same arguments and the same outputs on failure. */
void attn_prefill(attn_kv_type type, const float *q, const float *k, const float *v, float *out, int n_tokens,
                  int n_head, int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks);

/* The slots of one KV head visible to a decode query: k and v are that head's cache,
 * [cap][head_dim] row-major elements of `type` (float or bf16 bit patterns); the visible slots
 * are [lo[0], hi[0]) and [lo[1], hi[1]) (an empty range has hi <= lo). Which slots are visible
 * (window, sinks, ring order) is the caller's business (kv_cache.c); softmax does not depend on
 * slot order. */
typedef struct {
    const void *k, *v;
    attn_kv_type type;
    int lo[2], hi[2];
} attn_kv_span;

/* Decode attention of one query position: q [n_head*head_dim] (RoPE applied, query head h uses KV
 * head h / (n_head / n_head_kv)), spans [n_head_kv], out [n_head*head_dim]. Each KV head's slots
 * are cut into fixed chunks of 256 processed in parallel and merged in order, so the result does
 * not depend on the number of threads. On allocation failure out is filled with NaN. */
void attn_decode_hybrid(const float *q, float *out, int n_head, int n_head_kv, int head_dim,
                        const attn_kv_span *spans);

/* attn_decode_hybrid in pieces, for callers that already run a team of threads (forward.c's
 * decode): plan the work items (fixed chunks of 256 slots per KV head), compute each item into its
 * partial state, then merge each KV head's items in order. Same arithmetic as attn_decode_hybrid.
 *   attn_decode_plan: first [n_head_kv + 1] receives each KV head's first item; returns n_items.
 *   part: n_items * attn_decode_part_floats() floats, item it's state at it * that size.
 *   attn_decode_item: item `it` (0 <= it < n_items) of query q into part.
 *   attn_decode_merge: KV head g's query heads of out [n_head*head_dim] from its items. */
int attn_decode_plan(const attn_kv_span *spans, int n_head_kv, int *first);
size_t attn_decode_part_floats(int n_head, int n_head_kv, int head_dim);
void attn_decode_item(const float *q, int n_head, int n_head_kv, int head_dim, const attn_kv_span *spans,
                      const int *first, int it, float *part);
void attn_decode_merge(int g, int n_head, int n_head_kv, int head_dim, const int *first, const float *part,
                       float *out);

/* Number of keys visible to the query at position i (for tests and cost accounting). */
int attn_visible_keys(int i, int full, int window, int sinks);

#endif
