/* forward_internal.h — what forward.c and forward_decode.c share (not the engine's interface). */
#ifndef BOSCH_FORWARD_INTERNAL_H
#define BOSCH_FORWARD_INTERNAL_H

#include "attention.h"
#include "forward.h"
#include "qdot.h"
#include "team.h"

/* The FFN is computed over chunks of this many tokens: bounds the gate/up scratch and keeps it
 * cache-friendly without hurting GEMM efficiency. */
#define FWD_FFN_CHUNK 512

struct forward_ws {
    model_hparams hp;
    int max_tokens;
    int n_q, n_kv;         /* n_head*head_dim, n_head_kv*head_dim */
    float *x;              /* [max_tokens][n_embd] residual stream (forward_prefill / forward_decode) */
    float *xn;             /* [max_tokens][n_embd] normalized input of a sub-block */
    float *qkv;            /* [max_tokens][n_q + 2*n_kv] fused projection output */
    float *q;              /* [max_tokens][n_q] */
    float *k;              /* [max_tokens][n_kv] */
    float *v;              /* [max_tokens][n_kv] */
    float *att;            /* [max_tokens][n_q] attention output */
    float *gu;             /* [FWD_FFN_CHUNK][2*n_ff]: gate | up per row */
    float *h;              /* [FWD_FFN_CHUNK][n_ff]: silu(gate) * up, contiguous (oneDNN's fast kernels
                            * want a dense input; a strided one falls back to its reference code) */
    uint8_t *z_full;       /* [n_head_kv] all ATTN_FULL, used when no mask is given */
    float *rope_cos;       /* [max_tokens][rope_dim/2] angle table of positions rope_pos0.. */
    float *rope_sin;       /* same layout */
    int rope_pos0, rope_n; /* positions the table holds (rope_n = 0: none) */
    gemm_scratch *gs;      /* created on first use, for the model's gemm context gs_ctx */
    const gemm_ctx *gs_ctx;
    /* decode from blocks (forward_decode.c) */
    qdot_act_block *xq;  /* [max(n_embd, n_q, n_ff) / 32 + 1] quantized input of a matrix-vector product */
    float *tmp;          /* [n_embd + 2*n_ff] products' outputs */
    attn_kv_span *spans; /* [n_head_kv] visible cache slots of the current layer */
    int *first;          /* [n_head_kv + 1] attention work items (attn_decode_plan) */
    float *part;         /* attention items' partial states, part_cap floats */
    size_t part_cap;
    atomic_int spin_us;       /* the decode barrier's spin budget (team.h), kept between steps */
    const atomic_int *cancel; /* forward_ws_set_cancel (NULL: never) */
    char err[256];            /* why the last call failed */
};

/* Per-head RMSNorm of ws->q and ws->k, T tokens, with L's q_norm and k_norm (arch->qk_norm). T == 1
 * runs on the calling thread alone (decode calls it inside its parallel region). */
void forward_qk_norm(const model *m, const model_layer *L, int T, forward_ws *ws);
/* RoPE of ws->q and ws->k, T tokens at positions pos0..pos0+T-1, through ws's angle table (made
 * again only when the positions change). */
void forward_rope(const model *m, int T, int pos0, forward_ws *ws);

/* 1 when mask is NULL or shaped like the model with window >= 1, sinks >= 0. */
int forward_mask_fits(const model *m, const attn_mask *mask);

#endif
