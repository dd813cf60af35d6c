/* forward.c — the transformer forward pass on the CPU (see forward.h).
 * Blocks of tokens: the block's recipe (layer.h) over CPU_BLOCK_OPS, GEMMs through gemm.h (oneDNN,
 * the model's precision) on the prepared weights, Y = X·Wᵀ with W in GGUF's [out][in] layout.
 * Decode (forward_decode.c, one token): the same recipe over matrix-vector products straight from
 * the file's blocks with 8-bit activations (qdot.h). The rest (RMSNorm, RoPE, SwiGLU) is in ops.c
 * and attention in attention.c / kv_cache.c. */
#include "forward.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "forward_internal.h"
#include "layer.h"
#include "ops.h"
#include "qdot.h"

static float *falloc(size_t n) {
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
}

forward_ws *forward_ws_create(const model_hparams *hp, int max_tokens) {
    if (!hp || max_tokens < 1) return NULL;
    forward_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    ws->hp = *hp;
    ws->max_tokens = max_tokens;
    ws->n_q = hp->n_head * hp->head_dim;
    ws->n_kv = hp->n_head_kv * hp->head_dim;
    size_t T = (size_t)max_tokens, E = (size_t)hp->n_embd;
    size_t chunk = T < FWD_FFN_CHUNK ? T : FWD_FFN_CHUNK;
    ws->x = falloc(T * E);
    ws->xn = falloc(T * E);
    ws->qkv = falloc(T * (size_t)(ws->n_q + 2 * ws->n_kv));
    ws->q = falloc(T * ws->n_q);
    ws->k = falloc(T * ws->n_kv);
    ws->v = falloc(T * ws->n_kv);
    ws->att = falloc(T * ws->n_q);
    ws->gu = falloc(chunk * 2 * (size_t)hp->n_ff);
    ws->h = falloc(chunk * (size_t)hp->n_ff);
    ws->z_full = malloc((size_t)hp->n_head_kv);
    ws->rope_cos = falloc(T * (size_t)(hp->rope_dim / 2));
    ws->rope_sin = falloc(T * (size_t)(hp->rope_dim / 2));
    size_t widest = (size_t)(E > (size_t)ws->n_q ? E : (size_t)ws->n_q);
    if ((size_t)hp->n_ff > widest) widest = (size_t)hp->n_ff;
    ws->xq = malloc(sizeof(qdot_act_block) * (widest / QDOT_BLOCK + 1));
    ws->tmp = falloc(E + 2 * (size_t)hp->n_ff);
    ws->spans = calloc((size_t)hp->n_head_kv, sizeof *ws->spans);
    ws->first = calloc((size_t)hp->n_head_kv + 1, sizeof *ws->first);
    if (!ws->rope_cos || !ws->rope_sin || !ws->x || !ws->xn || !ws->qkv || !ws->q || !ws->k || !ws->v ||
        !ws->att || !ws->gu || !ws->h || !ws->z_full || !ws->xq || !ws->tmp || !ws->spans || !ws->first) {
        forward_ws_free(ws);
        return NULL;
    }
    memset(ws->z_full, ATTN_FULL, (size_t)hp->n_head_kv);
    return ws;
}

void forward_ws_free(forward_ws *ws) {
    if (!ws) return;
    free(ws->x);
    free(ws->xn);
    free(ws->qkv);
    free(ws->q);
    free(ws->k);
    free(ws->v);
    free(ws->att);
    free(ws->gu);
    free(ws->h);
    free(ws->z_full);
    free(ws->rope_cos);
    free(ws->rope_sin);
    free(ws->xq);
    free(ws->tmp);
    free(ws->spans);
    free(ws->first);
    free(ws->part);
    gemm_scratch_free(ws->gs);
    free(ws);
}

const char *forward_ws_error(const forward_ws *ws) {
    return ws->err;
}

void forward_ws_set_cancel(forward_ws *ws, const atomic_int *cancel) {
    ws->cancel = cancel;
}

int forward_ws_max_tokens(const forward_ws *ws) {
    return ws->max_tokens;
}

float *forward_ws_residual(forward_ws *ws) {
    return ws->x;
}

int forward_embed(const model *m, const int32_t *tokens, int n_tokens, float *x) {
    int E = m->hp.n_embd;
    for (int t = 0; t < n_tokens; t++)
        if (tokens[t] < 0 || tokens[t] >= m->hp.n_vocab) return -1;
    for (int t = 0; t < n_tokens; t++)
        memcpy(x + (size_t)t * E, m->tok_embd + (size_t)tokens[t] * E, sizeof(float) * E);
    return 0;
}

/* Y[T][n_out] (row stride ldy) = X[T][n_in] (row stride ldx) · Wᵀ (+ Y when acc), on the
 * model's prepared weights. 0, or -1 with ws->err set. */
static int gemm(const model *m, forward_ws *ws, const gemm_weight *w, float *Y, int ldy, const float *X,
                int ldx, int T, int acc) {
    if (!ws->gs || ws->gs_ctx != m->gemm) {
        gemm_scratch_free(ws->gs);
        ws->gs_ctx = m->gemm;
        if (!m->gemm || !(ws->gs = gemm_scratch_create(m->gemm))) {
            ws->gs_ctx = NULL;
            snprintf(ws->err, sizeof ws->err, "forward: %s",
                     m->gemm ? "out of memory" : "model has no GEMM weights");
            return -1;
        }
    }
    return gemm_run(ws->gs, w, Y, ldy, X, ldx, T, acc, ws->err, sizeof ws->err);
}

void forward_qk_norm(const model *m, const model_layer *L, int T, forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    if (T == 1) { /* decode runs inside its own parallel region: no nested one per norm */
        for (int h = 0; h < hp->n_head; h++)
            ops_rmsnorm(ws->q + (size_t)h * hp->head_dim, ws->q + (size_t)h * hp->head_dim, L->q_norm,
                        hp->head_dim, hp->rms_eps);
        for (int h = 0; h < hp->n_head_kv; h++)
            ops_rmsnorm(ws->k + (size_t)h * hp->head_dim, ws->k + (size_t)h * hp->head_dim, L->k_norm,
                        hp->head_dim, hp->rms_eps);
    } else {
        ops_rmsnorm_rows(ws->q, ws->q, L->q_norm, T * hp->n_head, hp->head_dim, hp->rms_eps);
        ops_rmsnorm_rows(ws->k, ws->k, L->k_norm, T * hp->n_head_kv, hp->head_dim, hp->rms_eps);
    }
}

void forward_rope(const model *m, int T, int pos0, forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    /* the angle table is shared by every layer of a forward over the same positions */
    if (ws->rope_n == 0 || ws->rope_pos0 != pos0 || ws->rope_n < T) {
        ops_rope_table(pos0, T, hp->rope_dim, hp->rope_base, ws->rope_cos, ws->rope_sin);
        ws->rope_pos0 = pos0;
        ws->rope_n = T;
    }
    ops_rope_apply(ws->q, hp->n_head, ws->k, hp->n_head_kv, T, hp->head_dim, hp->rope_dim, hp->rope_neox,
                   ws->rope_cos, ws->rope_sin);
}

/* ---- the block's operations on a block of tokens (layer.h), GEMMs through gemm.h ---- */

typedef struct {
    const model *m;
    const attn_mask *mask; /* NULL: every head full */
    float *x;              /* [T][n_embd] the residual stream, in place */
    int T, pos0;           /* tokens at positions pos0..pos0+T-1 */
    kv_cache *kv;          /* NULL: self-contained prefill */
    forward_ws *ws;
} cpu_block;

static int cpu_norm(void *ctx, layer_norm which, int layer, int r0, int n) {
    cpu_block *b = ctx;
    const model_layer *L = &b->m->layers[layer];
    const int E = b->m->hp.n_embd;
    ops_rmsnorm_rows(b->ws->xn, b->x + (size_t)r0 * E, which == LAYER_ATTN_NORM ? L->attn_norm : L->ffn_norm,
                     n, E, b->m->hp.rms_eps);
    return 0;
}

/* One fused Q|K|V GEMM, then split into ws->q, ws->k, ws->v. */
static int cpu_qkv(void *ctx, int layer, int r0, int T) {
    cpu_block *b = ctx;
    forward_ws *ws = b->ws;
    const int E = b->m->hp.n_embd, nq = ws->n_q, nkv = ws->n_kv, nt = nq + 2 * nkv;
    if (gemm(b->m, ws, b->m->layers[layer].g_qkv, ws->qkv, nt, ws->xn, E, T, 0)) return -1;
#pragma omp parallel for schedule(static) if (T >= 64)
    for (int t = 0; t < T; t++) {
        const float *r = ws->qkv + (size_t)t * nt;
        memcpy(ws->q + (size_t)t * nq, r, sizeof(float) * nq);
        memcpy(ws->k + (size_t)t * nkv, r + nq, sizeof(float) * nkv);
        memcpy(ws->v + (size_t)t * nkv, r + nq + nkv, sizeof(float) * nkv);
    }
    return 0;
}

static int cpu_qk_norm(void *ctx, int layer, int r0, int T) {
    cpu_block *b = ctx;
    forward_qk_norm(b->m, &b->m->layers[layer], T, b->ws);
    return 0;
}

static int cpu_rope(void *ctx, int layer, int r0, int T) {
    cpu_block *b = ctx;
    forward_rope(b->m, T, b->pos0, b->ws);
    return 0;
}

/* Attention of the block's T tokens from ws->q, ws->k, ws->v into ws->att (see forward_layer). */
static int cpu_attend(void *ctx, int layer, int r0, int T) {
    cpu_block *b = ctx;
    const model_hparams *hp = &b->m->hp;
    forward_ws *ws = b->ws;
    const attn_mask *mask = b->mask;
    const int nq = ws->n_q, nkv = ws->n_kv, pos0 = b->pos0;
    const uint8_t *z_row = mask ? mask->z + (size_t)layer * mask->n_head_kv : ws->z_full;
    int window = mask ? mask->window : 1, sinks = mask ? mask->sinks : 0;
    if (pos0 == 0) {
        /* the block's tokens are the whole sequence: attention straight from q, k, v */
        attn_prefill(b->kv ? b->kv->type : b->m->kv_type, ws->q, ws->k, ws->v, ws->att, T, hp->n_head,
                     hp->n_head_kv, hp->head_dim, z_row, window, sinks);
        if (b->kv) kv_cache_store_rows(b->kv, layer, 0, T, ws->k, ws->v);
    } else {
        /* continuing a cached sequence (decode, or a later prefill chunk): one position at a
         * time, so an SWA ring never loses a key that an earlier query of this block needs */
        for (int t = 0; t < T; t++) {
            kv_cache_store(b->kv, layer, pos0 + t, ws->k + (size_t)t * nkv, ws->v + (size_t)t * nkv);
            kv_cache_attend(b->kv, layer, pos0 + t, ws->q + (size_t)t * nq, ws->att + (size_t)t * nq,
                            hp->n_head);
        }
    }
    return 0;
}

/* x += att · Woᵀ, accumulated by the GEMM */
static int cpu_attn_out(void *ctx, int layer, int r0, int T) {
    cpu_block *b = ctx;
    return gemm(b->m, b->ws, b->m->layers[layer].g_o, b->x, b->m->hp.n_embd, b->ws->att, b->ws->n_q, T, 1);
}

/* gate | up of the chunk in one fused GEMM into ws->gu [n][2*n_ff] */
static int cpu_gate_up(void *ctx, int layer, int r0, int n) {
    cpu_block *b = ctx;
    const model_hparams *hp = &b->m->hp;
    return gemm(b->m, b->ws, b->m->layers[layer].g_gate_up, b->ws->gu, 2 * hp->n_ff, b->ws->xn, hp->n_embd, n,
                0);
}

static int cpu_glu(void *ctx, int layer, int r0, int n) {
    cpu_block *b = ctx;
    const int F = b->m->hp.n_ff;
    ops_swiglu(b->ws->h, F, b->ws->gu, 2 * F, b->ws->gu + F, 2 * F, n, F);
    return 0;
}

/* x[r0..r0+n) += h · Wdownᵀ, accumulated by the GEMM */
static int cpu_ffn_down(void *ctx, int layer, int r0, int n) {
    cpu_block *b = ctx;
    const int E = b->m->hp.n_embd;
    return gemm(b->m, b->ws, b->m->layers[layer].g_down, b->x + (size_t)r0 * E, E, b->ws->h, b->m->hp.n_ff, n,
                1);
}

static const layer_ops CPU_BLOCK_OPS = {
    .norm = cpu_norm,
    .qkv = cpu_qkv,
    .qk_norm = cpu_qk_norm,
    .rope = cpu_rope,
    .attend = cpu_attend,
    .attn_out = cpu_attn_out,
    .gate_up = cpu_gate_up,
    .glu = cpu_glu,
    .ffn_down = cpu_ffn_down,
    .ffn_rows = FWD_FFN_CHUNK,
};

static int check_layer_call(const model *m, int layer, int n_tokens, int pos0, const kv_cache *kv,
                            forward_ws *ws) {
    if (n_tokens < 1 || n_tokens > ws->max_tokens || layer < 0 || layer >= m->hp.n_layer ||
        (!kv && pos0 != 0) || (kv && pos0 + n_tokens > kv->n_ctx)) {
        snprintf(ws->err, sizeof ws->err,
                 "forward: bad call (layer %d, %d tokens at position %d, workspace of %d tokens%s)", layer,
                 n_tokens, pos0, ws->max_tokens, kv ? ", past the cache's n_ctx?" : "");
        return -1;
    }
    return 0;
}

int forward_layer_qk(const model *m, int layer, const float *x, int n_tokens, float *q, float *k,
                     forward_ws *ws) {
    if (check_layer_call(m, layer, n_tokens, 0, NULL, ws)) return -1;
    cpu_block b = {m, NULL, (float *)x, n_tokens, 0, NULL, ws}; /* the norm only reads x */
    if (layer_forward_qk(&CPU_BLOCK_OPS, &b, m->hp.arch, layer, n_tokens)) return -1;
    memcpy(q, ws->q, sizeof(float) * (size_t)n_tokens * ws->n_q);
    memcpy(k, ws->k, sizeof(float) * (size_t)n_tokens * ws->n_kv);
    return 0;
}

int forward_layer(const model *m, int layer, const attn_mask *mask, float *x, int n_tokens, int pos0,
                  kv_cache *kv, forward_ws *ws) {
    if (check_layer_call(m, layer, n_tokens, pos0, kv, ws)) return -1;
    cpu_block b = {m, mask, x, n_tokens, pos0, kv, ws};
    return layer_forward(&CPU_BLOCK_OPS, &b, m->hp.arch, layer, n_tokens) ? -1 : 0;
}

int forward_logits(const model *m, const float *x, const int *rows, int n_rows, float *logits,
                   forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    int E = hp->n_embd, V = hp->n_vocab;
    for (int r0 = 0; r0 < n_rows; r0 += ws->max_tokens) {
        int n = n_rows - r0 < ws->max_tokens ? n_rows - r0 : ws->max_tokens;
#pragma omp parallel for schedule(static) if (n >= 16)
        for (int i = 0; i < n; i++)
            ops_rmsnorm(ws->xn + (size_t)i * E, x + (size_t)rows[r0 + i] * E, m->output_norm, E, hp->rms_eps);
        if (gemm(m, ws, m->g_output, logits + (size_t)r0 * V, V, ws->xn, E, n, 0)) return -1;
    }
    return 0;
}

int forward_mask_fits(const model *m, const attn_mask *mask) {
    return !mask || (mask->n_layer == m->hp.n_layer && mask->n_head_kv == m->hp.n_head_kv &&
                     mask->window >= 1 && mask->sinks >= 0);
}

int forward_prefill(const model *m, const attn_mask *mask, const int32_t *tokens, int n_tokens, kv_cache *kv,
                    const int *rows, int n_rows, float *logits, forward_ws *ws) {
    int pos0 = kv ? kv->n_past : 0;
    ws->err[0] = 0;
    if (n_tokens < 1 || n_tokens > ws->max_tokens || !forward_mask_fits(m, mask) ||
        (kv && pos0 + n_tokens > kv->n_ctx)) {
        snprintf(ws->err, sizeof ws->err,
                 "forward: %d tokens at position %d do not fit (workspace %d tokens, cache %d) or the mask "
                 "is not shaped like the model",
                 n_tokens, pos0, ws->max_tokens, kv ? kv->n_ctx : 0);
        return -1;
    }
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n_tokens) {
            snprintf(ws->err, sizeof ws->err, "forward: logits row %d is %d, outside 0..%d", i, rows[i],
                     n_tokens - 1);
            return -1;
        }
    if (forward_embed(m, tokens, n_tokens, ws->x) != 0) {
        snprintf(ws->err, sizeof ws->err, "forward: a token id is outside the vocabulary [0, %d)",
                 m->hp.n_vocab);
        return -1;
    }
    for (int l = 0; l < m->hp.n_layer; l++) {
        if (ws->cancel && atomic_load_explicit(ws->cancel, memory_order_relaxed)) {
            snprintf(ws->err, sizeof ws->err, "cancelled");
            return FORWARD_CANCELLED;
        }
        if (forward_layer(m, l, mask, ws->x, n_tokens, pos0, kv, ws) != 0) return -1;
    }
    if (kv) kv->n_past = pos0 + n_tokens;
    if (n_rows > 0 && logits) return forward_logits(m, ws->x, rows, n_rows, logits, ws);
    return 0;
}
