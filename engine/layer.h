/* layer.h — the transformer block, described once: the sequence of operations of one layer (the
 * recipe, layer.c), executed by every backend through a table of operations it supplies
 * (layer_ops): the CPU prefill (forward.c), the CPU decode step (forward_decode.c) and the CUDA
 * prefill and decode (backend_cuda_forward.c). A fix to the block, or an architecture option
 * (arch.h), lands in the recipe once; a backend only says how it computes each operation.
 *
 * The block, for n_rows token rows (llama2.c's forward(), Touvron et al. 2023; qwen3's per-head
 * q/k RMSNorm, Yang et al. 2025), with E = n_embd, Q = n_head*head_dim, KV = n_head_kv*head_dim,
 * F = n_ff:
 *   xn [rows][E]  = RMSNorm(x) · attn_norm
 *   q  [rows][Q]  = xn · Wqᵀ,  k, v [rows][KV] = xn · Wkᵀ, xn · Wvᵀ
 *   q, k          = per-head RMSNorm · q_norm, k_norm           (arch->qk_norm only)
 *   q, k          = RoPE at each row's position                  (arch->rope: pair layout)
 *   att [rows][Q] = hybrid attention of q over the keys and values each row sees: k, v stored in
 *                   the KV cache where there is one; per KV head full or SWA as the mask says
 *   x            += att · Woᵀ
 *   then over chunks of rows (ffn_rows at a time):
 *   xn            = RMSNorm(x) · ffn_norm
 *   gate, up [F]  = xn · Wgateᵀ, xn · Wupᵀ
 *   h        [F]  = silu(gate) ⊙ up                               (SwiGLU, Shazeer 2020)
 *   x            += h · Wdownᵀ
 * Where the arrays live, their precision, and which rows a cache adds, is the backend's business.
 */
#ifndef BOSCH_LAYER_H
#define BOSCH_LAYER_H

#include "model.h"

/* Which RMSNorm weight a norm operation applies. */
typedef enum { LAYER_ATTN_NORM, LAYER_FFN_NORM } layer_norm;

/* One operation over token rows r0..r0+n-1 of layer `layer`. The attention sub-block's operations
 * always get the whole block (r0 = 0, n = n_rows); the FFN's get one chunk at a time, with its
 * scratch (xn, gate, up, h) indexed from the chunk's first row. Returns 0, or non-zero to stop the
 * recipe (the backend keeps the reason). Operations run by a team of threads (the CPU decode step:
 * every thread runs the recipe with its own ctx) must return the same value on every thread. */
typedef int (*layer_op)(void *ctx, int layer, int r0, int n);

typedef struct {
    /* xn = RMSNorm(x) · w, w the layer's attn_norm or ffn_norm */
    int (*norm)(void *ctx, layer_norm which, int layer, int r0, int n);
    layer_op qkv;      /* q, k, v = xn · Wq, Wk, Wvᵀ */
    layer_op qk_norm;  /* per-head RMSNorm of q and k (called only when arch->qk_norm) */
    layer_op rope;     /* RoPE of q and k at the rows' positions, hp->rope_neox layout */
    layer_op attend;   /* k, v into the cache (if any); att = hybrid attention under the mask */
    layer_op attn_out; /* x += att · Woᵀ */
    layer_op gate_up;  /* gate, up = xn · Wgate, Wupᵀ */
    layer_op glu;      /* h = silu(gate) ⊙ up */
    layer_op ffn_down; /* x += h · Wdownᵀ */
    int ffn_rows;      /* rows per FFN chunk (bounds the FFN scratch); 0: all rows at once */
} layer_ops;

/* The attention sub-block up to the rotated queries and keys: RMSNorm, the Q/K/V projections, the
 * architecture's q/k norm, RoPE. For attention statistics (forward_layer_qk) and layer_forward. */
int layer_forward_qk(const layer_ops *o, void *ctx, const model_arch *arch, int layer, int n_rows);

/* One whole block over n_rows rows, in the order of this header's comment. Returns 0 or the first
 * non-zero value an operation returned. */
int layer_forward(const layer_ops *o, void *ctx, const model_arch *arch, int layer, int n_rows);

#endif
