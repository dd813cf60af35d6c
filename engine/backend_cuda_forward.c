/* backend_cuda_forward.c — the batched hybrid forward on the GPU (see backend_cuda.h): the block's
 * recipe (layer.h) over the CUDA operations, for prefill (n_seq sequences of T tokens, each with its
 * mask, layer-level entry for the evaluator) and for the decode step (one position of every
 * sequence of a KV cache). Every launch goes on the default stream, so kernels, uploads and
 * downloads run in program order; errors of asynchronous kernels surface at the next download or
 * kern_sync. Weights and scratch: backend_cuda.c; the KV cache: backend_cuda_kv.c. */
#ifdef BOSCH_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backend_cuda_internal.h"
#include "layer.h"

/* Device copy of the masks' z rows: [n_seq][n_layer][n_head_kv] (all full when masks is NULL). */
static int upload_masks(cuda_model *g, const attn_mask *const *masks, int n_seq, char *err, size_t errlen) {
    size_t per = (size_t)g->hp.n_layer * g->hp.n_head_kv, bytes = per * (size_t)n_seq;
    if ((size_t)g->z_cap < bytes) {
        kern_free(g->d_z);
        g->d_z = NULL;
        g->z_cap = 0;
        if (kern_malloc((void **)&g->d_z, bytes, err, errlen)) return -1;
        g->z_cap = (int)bytes;
    }
    uint8_t *h = malloc(bytes);
    if (!h) {
        base_seterr(err, errlen, "cuda: out of host memory");
        return -1;
    }
    for (int s = 0; s < n_seq; s++) {
        if (masks)
            memcpy(h + per * s, masks[s]->z, per);
        else
            memset(h + per * s, ATTN_FULL, per);
    }
    int rc = kern_upload(g->d_z, h, bytes, err, errlen);
    free(h);
    return rc;
}

/* y[rows][n_out] = xb[rows][n_in] · W[n_out][n_in]ᵀ (xb already bf16 in g->xb). */
static int gemm(cuda_model *g, const uint16_t *w, float *y, int rows, int n_in, int n_out, char *err,
                size_t errlen) {
    return kern_gemm_bf16(g->blas, g->xb, w, y, rows, n_in, n_out, NULL, err, errlen);
}

static int to_bf16(cuda_model *g, const float *x, uint64_t n, char *err, size_t errlen) {
    return kern_f32_to_bf16(x, g->xb, n, NULL, err, errlen);
}

#define TRY(call)                                                                                            \
    do {                                                                                                     \
        if ((call) != 0) return -1;                                                                          \
    } while (0)

/* ---- the block's operations (layer.h) on the GPU: bf16 GEMM inputs, fp32 everything else ---- */

/* The batch the recipe runs on: n_seq sequences of T rows each, one after the other in g's scratch. */
typedef struct {
    cuda_model *g;
    const attn_mask *const *masks; /* prefill: masks[s] of sequence s, or NULL (all full) */
    int n_seq, T;                  /* decode: T = 1, one row per sequence */
    int decode;                    /* 1: one new position of every sequence of kv */
    int pos;                       /* decode: the position of every row */
    cuda_kv *kv;                   /* NULL: no cache (prefill only) */
    char *err;
    size_t errlen;
} cuda_block;

static int cu_norm(void *ctx, layer_norm which, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const cuda_layer *G = &g->layers[l];
    int E = g->hp.n_embd;
    return kern_rmsnorm(g->x + (size_t)r0 * E, which == LAYER_ATTN_NORM ? G->attn_norm : G->ffn_norm, g->xn,
                        n, E, g->hp.rms_eps, NULL, b->err, b->errlen);
}

static int cu_qkv(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const model_hparams *hp = &g->hp;
    const cuda_layer *G = &g->layers[l];
    int E = hp->n_embd, nq = hp->n_head * hp->head_dim, nkv = hp->n_head_kv * hp->head_dim;
    TRY(to_bf16(g, g->xn, (uint64_t)n * E, b->err, b->errlen));
    TRY(gemm(g, G->wq, g->q, n, E, nq, b->err, b->errlen));
    TRY(gemm(g, G->wk, g->k, n, E, nkv, b->err, b->errlen));
    return gemm(g, G->wv, g->v, n, E, nkv, b->err, b->errlen);
}

static int cu_qk_norm(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const model_hparams *hp = &g->hp;
    const cuda_layer *G = &g->layers[l];
    TRY(kern_rmsnorm(g->q, G->q_norm, g->q, n * hp->n_head, hp->head_dim, hp->rms_eps, NULL, b->err,
                     b->errlen));
    return kern_rmsnorm(g->k, G->k_norm, g->k, n * hp->n_head_kv, hp->head_dim, hp->rms_eps, NULL, b->err,
                        b->errlen);
}

/* Prefill: each sequence's rows at positions 0..T-1. Decode: every row at position pos, so RoPE
 * over one "token" of n_seq*heads heads. */
static int cu_rope(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const model_hparams *hp = &g->hp;
    int hd = hp->head_dim, nq = hp->n_head * hd, nkv = hp->n_head_kv * hd;
    if (b->decode) {
        TRY(kern_rope(g->q, 1, n * hp->n_head, hd, hp->rope_dim, b->pos, hp->rope_base, hp->rope_neox, NULL,
                      b->err, b->errlen));
        return kern_rope(g->k, 1, n * hp->n_head_kv, hd, hp->rope_dim, b->pos, hp->rope_base, hp->rope_neox,
                         NULL, b->err, b->errlen);
    }
    for (int s = 0; s < b->n_seq; s++) {
        size_t s0 = (size_t)s * b->T;
        TRY(kern_rope(g->q + s0 * nq, b->T, hp->n_head, hd, hp->rope_dim, 0, hp->rope_base, hp->rope_neox,
                      NULL, b->err, b->errlen));
        TRY(kern_rope(g->k + s0 * nkv, b->T, hp->n_head_kv, hd, hp->rope_dim, 0, hp->rope_base, hp->rope_neox,
                      NULL, b->err, b->errlen));
    }
    return 0;
}

/* Prefill: each sequence attends within itself under its mask's row; then k, v into the cache.
 * Decode: k, v of position pos into the cache, then each row's query over its sequence's cache. */
static int cu_attend(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const model_hparams *hp = &g->hp;
    int hd = hp->head_dim, nq = hp->n_head * hd, nkv = hp->n_head_kv * hd;
    if (b->decode)
        return cuda_kv_attend_decode(b->kv, l, b->pos, g->q, g->k, g->v, g->att, hp->n_head, b->err,
                                     b->errlen);
    for (int s = 0; s < b->n_seq; s++) {
        size_t s0 = (size_t)s * b->T;
        const attn_mask *mk = b->masks ? b->masks[s] : NULL;
        const uint8_t *z_row = g->d_z + ((size_t)s * hp->n_layer + l) * hp->n_head_kv;
        TRY(g->prefill_attn(g->q + s0 * nq, g->k + s0 * nkv, g->v + s0 * nkv, g->att + s0 * nq, b->T,
                            hp->n_head, hp->n_head_kv, hd, z_row, mk ? mk->window : 1, mk ? mk->sinks : 0,
                            NULL, b->err, b->errlen));
    }
    return b->kv ? cuda_kv_store_prefill(b->kv, l, g->k, g->v, b->T, b->err, b->errlen) : 0;
}

static int cu_attn_out(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const model_hparams *hp = &g->hp;
    int E = hp->n_embd, nq = hp->n_head * hp->head_dim;
    TRY(to_bf16(g, g->att, (uint64_t)n * nq, b->err, b->errlen));
    TRY(gemm(g, g->layers[l].wo, g->tmp, n, nq, E, b->err, b->errlen));
    return kern_add(g->x, g->tmp, (uint64_t)n * E, NULL, b->err, b->errlen);
}

static int cu_gate_up(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    const cuda_layer *G = &g->layers[l];
    int E = g->hp.n_embd, F = g->hp.n_ff;
    TRY(to_bf16(g, g->xn, (uint64_t)n * E, b->err, b->errlen));
    TRY(gemm(g, G->w_gate, g->gate, n, E, F, b->err, b->errlen));
    return gemm(g, G->w_up, g->up, n, E, F, b->err, b->errlen);
}

static int cu_glu(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    return kern_swiglu(g->gate, g->up, g->gate, (uint64_t)n * g->hp.n_ff, NULL, b->err, b->errlen);
}

static int cu_ffn_down(void *ctx, int l, int r0, int n) {
    cuda_block *b = ctx;
    cuda_model *g = b->g;
    int E = g->hp.n_embd, F = g->hp.n_ff;
    TRY(to_bf16(g, g->gate, (uint64_t)n * F, b->err, b->errlen));
    TRY(gemm(g, g->layers[l].w_down, g->tmp, n, F, E, b->err, b->errlen));
    return kern_add(g->x + (size_t)r0 * E, g->tmp, (uint64_t)n * E, NULL, b->err, b->errlen);
}

static const layer_ops CUDA_OPS = {
    .norm = cu_norm,
    .qkv = cu_qkv,
    .qk_norm = cu_qk_norm,
    .rope = cu_rope,
    .attend = cu_attend,
    .attn_out = cu_attn_out,
    .gate_up = cu_gate_up,
    .glu = cu_glu,
    .ffn_down = cu_ffn_down,
    .ffn_rows = 0,
};

/* ---- the model's own ends: embedding, LM head ---- */

/* Final RMSNorm + LM head for rows of g->x (host indexes), in chunks: logits [n_rows][n_vocab]. */
static int cuda_logits(cuda_model *g, const int *rows, int n_rows, float *logits, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    int E = hp->n_embd, V = hp->n_vocab;
    for (int r0 = 0; r0 < n_rows; r0 += CUDA_LOGIT_CHUNK) {
        int n = n_rows - r0 < CUDA_LOGIT_CHUNK ? n_rows - r0 : CUDA_LOGIT_CHUNK;
        int32_t idx[CUDA_LOGIT_CHUNK];
        for (int i = 0; i < n; i++) idx[i] = rows[r0 + i];
        TRY(kern_upload(g->d_rows, idx, sizeof(int32_t) * n, err, errlen));
        TRY(kern_gather_rows(g->x, g->d_rows, g->lx, n, E, NULL, err, errlen));
        TRY(kern_rmsnorm(g->lx, g->output_norm, g->lx, n, E, hp->rms_eps, NULL, err, errlen));
        TRY(kern_f32_to_bf16(g->lx, g->lxb, (uint64_t)n * E, NULL, err, errlen));
        TRY(kern_gemm_bf16(g->blas, g->lxb, g->output, g->d_logits, n, E, V, NULL, err, errlen));
        TRY(kern_download(logits + (size_t)r0 * V, g->d_logits, sizeof(float) * n * (size_t)V, err, errlen));
    }
    return 0;
}

/* Check ids on the host, upload them and embed: g->x [n][n_embd]. */
static int cuda_embed(cuda_model *g, const int32_t *tokens, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= g->hp.n_vocab) {
            base_seterr(err, errlen, "cuda: token %d (index %d) is outside the vocabulary of %d", tokens[i],
                        i, g->hp.n_vocab);
            return -1;
        }
    TRY(kern_upload(g->d_tokens, tokens, sizeof(int32_t) * n, err, errlen));
    return kern_embed(g->tok_embd, g->d_tokens, g->x, n, g->hp.n_embd, NULL, err, errlen);
}

static int check_args(const cuda_model *g, const attn_mask *const *masks, int n_seq, int n_tokens, int layer0,
                      const cuda_kv *kv, const int *rows, int n_rows, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    if (n_seq < 1 || n_tokens < 1 || (long long)n_seq * n_tokens > (1 << 30) || layer0 < 0 ||
        layer0 >= hp->n_layer) {
        base_seterr(err, errlen, "cuda: forward: bad batch (n_seq %d, n_tokens %d, layer0 %d)", n_seq,
                    n_tokens, layer0);
        return -1;
    }
    for (int s = 0; masks && s < n_seq; s++)
        if (masks[s]->n_layer != hp->n_layer || masks[s]->n_head_kv != hp->n_head_kv ||
            masks[s]->window < 1 || masks[s]->sinks < 0) {
            base_seterr(err, errlen,
                        "cuda: forward: mask %d is %d x %d (window %d, sinks %d); the model has %d x %d", s,
                        masks[s]->n_layer, masks[s]->n_head_kv, masks[s]->window, masks[s]->sinks,
                        hp->n_layer, hp->n_head_kv);
            return -1;
        }
    if (n_rows < 0 || (n_rows > 0 && !rows)) {
        base_seterr(err, errlen, "cuda: forward: %d logit rows need a rows array", n_rows);
        return -1;
    }
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n_seq * n_tokens) {
            base_seterr(err, errlen, "cuda: forward: logit row %d = %d is outside 0..%d", i, rows[i],
                        n_seq * n_tokens - 1);
            return -1;
        }
    if (kv && (layer0 != 0 || cuda_kv_check(kv, masks, n_seq, n_tokens, err, errlen))) {
        if (layer0 != 0) base_seterr(err, errlen, "cuda: forward: a KV cache needs layer0 = 0");
        return -1;
    }
    return 0;
}

int cuda_forward_layers(cuda_model *g, const attn_mask *const *masks, int n_seq, int n_tokens,
                        const int32_t *tokens, const float *x_in, int layer0, float *const *x_save,
                        float *x_out, cuda_kv *kv, const int *rows, int n_rows, float *logits, char *err,
                        size_t errlen) {
    return cuda_forward_layers_cancel(g, masks, n_seq, n_tokens, tokens, x_in, layer0, x_save, x_out, kv,
                                      rows, n_rows, logits, NULL, err, errlen);
}

int cuda_forward_layers_cancel(cuda_model *g, const attn_mask *const *masks, int n_seq, int n_tokens,
                               const int32_t *tokens, const float *x_in, int layer0, float *const *x_save,
                               float *x_out, cuda_kv *kv, const int *rows, int n_rows, float *logits,
                               const atomic_int *cancel, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    TRY(check_args(g, masks, n_seq, n_tokens, layer0, kv, rows, n_rows, err, errlen));
    if (n_rows > 0 && !logits) {
        base_seterr(err, errlen, "cuda: forward: %d logit rows need a logits array", n_rows);
        return -1;
    }
    if (layer0 == 0 ? !tokens : !x_in) {
        base_seterr(err, errlen, "cuda: forward: %s is NULL (layer0 %d)", layer0 == 0 ? "tokens" : "x_in",
                    layer0);
        return -1;
    }
    int n = n_seq * n_tokens;
    size_t x_bytes = sizeof(float) * (size_t)n * hp->n_embd;
    TRY(cuda_ensure_rows(g, n, err, errlen));
    TRY(upload_masks(g, masks, n_seq, err, errlen));
    if (layer0 == 0)
        TRY(cuda_embed(g, tokens, n, err, errlen));
    else
        TRY(kern_upload(g->x, x_in, x_bytes, err, errlen));
    cuda_block b = {g, masks, n_seq, n_tokens, 0, 0, kv, err, errlen};
    for (int l = layer0; l < hp->n_layer; l++) {
        if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
            TRY(kern_sync(NULL, err, errlen)); /* the layers already queued finish before we return */
            base_seterr(err, errlen, "cancelled");
            return CUDA_CANCELLED;
        }
        if (x_save && x_save[l] && l > layer0) TRY(kern_download(x_save[l], g->x, x_bytes, err, errlen));
        TRY(layer_forward(&CUDA_OPS, &b, hp->arch, l, n));
    }
    if (x_out) TRY(kern_download(x_out, g->x, x_bytes, err, errlen));
    if (n_rows > 0) TRY(cuda_logits(g, rows, n_rows, logits, err, errlen));
    TRY(kern_sync(NULL, err, errlen));
    if (kv) cuda_kv_set_n_past(kv, n_tokens);
    return 0;
}

int cuda_forward_prefill(cuda_model *g, const attn_mask *const *masks, int n_seq, const int32_t *tokens,
                         int n_tokens, cuda_kv *kv, const int *rows, int n_rows, float *logits, char *err,
                         size_t errlen) {
    return cuda_forward_layers(g, masks, n_seq, n_tokens, tokens, NULL, 0, NULL, NULL, kv, rows, n_rows,
                               logits, err, errlen);
}

int cuda_decode(cuda_model *g, cuda_kv *kv, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    int n = cuda_kv_n_seq(kv), pos = cuda_kv_n_past(kv);
    if (pos >= cuda_kv_n_ctx(kv)) {
        base_seterr(err, errlen, "cuda: decode: the KV cache is full (%d positions)", cuda_kv_n_ctx(kv));
        return -1;
    }
    TRY(cuda_ensure_rows(g, n, err, errlen));
    TRY(cuda_embed(g, tokens, n, err, errlen));
    cuda_block b = {g, NULL, n, 1, 1, pos, kv, err, errlen};
    for (int l = 0; l < g->hp.n_layer; l++) TRY(layer_forward(&CUDA_OPS, &b, g->hp.arch, l, n));
    if (logits) {
        int rows[CUDA_LOGIT_CHUNK];
        for (int r0 = 0; r0 < n; r0 += CUDA_LOGIT_CHUNK) {
            int c = n - r0 < CUDA_LOGIT_CHUNK ? n - r0 : CUDA_LOGIT_CHUNK;
            for (int i = 0; i < c; i++) rows[i] = r0 + i;
            TRY(cuda_logits(g, rows, c, logits + (size_t)r0 * g->hp.n_vocab, err, errlen));
        }
    }
    TRY(kern_sync(NULL, err, errlen));
    cuda_kv_set_n_past(kv, pos + 1);
    return 0;
}

#endif /* BOSCH_HAVE_CUDA */
