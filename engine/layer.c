/* layer.c — the transformer block's recipe (see layer.h): the one place that says in which order
 * a layer's operations run and which architecture options add or change a step. */
#include "layer.h"

#define TRY(call)                                                                                            \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        if (rc_ != 0) return rc_;                                                                            \
    } while (0)

int layer_forward_qk(const layer_ops *o, void *ctx, const model_arch *arch, int layer, int n_rows) {
    TRY(o->norm(ctx, LAYER_ATTN_NORM, layer, 0, n_rows));      /* xn = RMSNorm(x) · attn_norm */
    TRY(o->qkv(ctx, layer, 0, n_rows));                        /* q, k, v = xn · Wq, Wk, Wvᵀ */
    if (arch->qk_norm) TRY(o->qk_norm(ctx, layer, 0, n_rows)); /* per-head RMSNorm of q, k */
    return o->rope(ctx, layer, 0, n_rows);                     /* rotate q, k at their positions */
}

int layer_forward(const layer_ops *o, void *ctx, const model_arch *arch, int layer, int n_rows) {
    /* attention: x += Wo · attention(q, k, v), keys and values through the cache and the mask */
    TRY(layer_forward_qk(o, ctx, arch, layer, n_rows));
    TRY(o->attend(ctx, layer, 0, n_rows));
    TRY(o->attn_out(ctx, layer, 0, n_rows));
    /* FFN: x += Wdown · (silu(Wgate · n) ⊙ Wup · n), n = RMSNorm(x), a chunk of rows at a time */
    const int chunk = o->ffn_rows > 0 ? o->ffn_rows : n_rows;
    for (int r0 = 0; r0 < n_rows; r0 += chunk) {
        const int n = n_rows - r0 < chunk ? n_rows - r0 : chunk;
        TRY(o->norm(ctx, LAYER_FFN_NORM, layer, r0, n));
        TRY(o->gate_up(ctx, layer, r0, n));
        TRY(o->glu(ctx, layer, r0, n));
        TRY(o->ffn_down(ctx, layer, r0, n));
    }
    return 0;
}
