/* forward_decode.c — one decode step (forward.h: forward_decode). With model->decode_blocks, every
 * matrix-vector product reads the file's quantized blocks (qdot.h), and the whole step, all layers
 * and the LM head, runs in ONE OpenMP parallel region: every thread runs the block's recipe
 * (layer.h) over DECODE_OPS, whose operations meet at team barriers (team.h):
 *   per layer: [t0] RMSNorm -> Q|K|V: [t0] quantize, rows split -> [t0] q/k norms, RoPE, cache
 *   store, attention plan -> attention items split -> per-KV-head merges split -> Wo: [t0]
 *   quantize, rows split -> [t0] residual, RMSNorm -> gate|up: [t0] quantize, rows split -> [t0]
 *   SwiGLU -> down: [t0] quantize, rows split -> [t0] residual.
 * [t0] marks the short serial phases (thread 0). Rows are split into fixed contiguous ranges, and
 * every product and every attention item is computed by one thread in a fixed order, so the result
 * does not depend on the number of threads. Without decode_blocks, decode is a one-token prefill. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_internal.h"
#include "kv_cache.h"
#include "layer.h"
#include "ops.h"
#include "team.h"

typedef struct {
    const model *m;
    const attn_mask *mask;
    kv_cache *kv;
    forward_ws *ws;
    int pos;
    float *logits;
    team_barrier bar;
    qdot_level level;
    int n_items; /* attention items of the current layer (thread 0 writes, all read after a barrier) */
    int failed;  /* thread 0 could not grow the attention scratch */
} decode_step;

/* This thread's rows of Y[i] = W[i]·(the quantized ws->xq / fp32 x) over the concatenated rows. */
static void matvec_part(const decode_step *d, const model_qmat *const *W, float *const *Y, int n,
                        const float *x, int tid, int nt) {
    int total = 0;
    for (int i = 0; i < n; i++) total += W[i]->n_rows;
    int lo, hi;
    team_split(total, tid, nt, 16, &lo, &hi);
    for (int i = 0, base = 0; i < n && lo < hi; base += W[i]->n_rows, i++) {
        int a = lo > base ? lo - base : 0, b = hi - base < W[i]->n_rows ? hi - base : W[i]->n_rows;
        if (b > a)
            qdot_rows(d->level, W[i]->type, W[i]->data, W[i]->row_bytes, a, b - a, W[i]->n_cols, d->ws->xq, x,
                      Y[i] + a);
    }
}

/* Quantize x (n values) for the products that follow, when any of them uses it. */
static void quantize_for(forward_ws *ws, const model_qmat *const *W, int n, const float *x) {
    int uses = 0;
    for (int i = 0; i < n; i++) uses |= qdot_type_uses_act(W[i]->type);
    if (uses) qdot_quantize_act(x, W[0]->n_cols, ws->xq);
}

/* ---- the block's operations for one token (layer.h), run by every thread of the team ---- */

/* What one thread runs the recipe with. */
typedef struct {
    decode_step *d;
    int tid, nt;
} decode_thread;

/* [t0] quantize x for the products W; all threads: their rows of Y = W · x; the results are
 * complete on return. */
static void team_matvec(decode_thread *th, const model_qmat *const *W, float *const *Y, int n,
                        const float *x) {
    if (th->tid == 0) quantize_for(th->d->ws, W, n, x);
    team_barrier_wait(&th->d->bar);
    matvec_part(th->d, W, Y, n, x, th->tid, th->nt);
    team_barrier_wait(&th->d->bar);
}

/* [t0] x += t (the output of Wo or Wdown in ws->tmp) */
static void residual_add(decode_thread *th) {
    forward_ws *ws = th->d->ws;
    if (th->tid == 0)
        for (int i = 0; i < ws->hp.n_embd; i++) ws->x[i] += ws->tmp[i];
}

static int dec_norm(void *ctx, layer_norm which, int layer, int r0, int n) {
    decode_thread *th = ctx;
    const model_layer *L = &th->d->m->layers[layer];
    forward_ws *ws = th->d->ws;
    if (th->tid == 0)
        ops_rmsnorm(ws->xn, ws->x, which == LAYER_ATTN_NORM ? L->attn_norm : L->ffn_norm, ws->hp.n_embd,
                    ws->hp.rms_eps);
    return 0;
}

static int dec_qkv(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    const model_layer *L = &th->d->m->layers[layer];
    forward_ws *ws = th->d->ws;
    const model_qmat *W[3] = {&L->q_wq, &L->q_wk, &L->q_wv};
    float *Y[3] = {ws->q, ws->k, ws->v};
    team_matvec(th, W, Y, 3, ws->xn);
    return 0;
}

static int dec_qk_norm(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    if (th->tid == 0) forward_qk_norm(th->d->m, &th->d->m->layers[layer], 1, th->d->ws);
    return 0;
}

static int dec_rope(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    if (th->tid == 0) forward_rope(th->d->m, 1, th->d->pos, th->d->ws);
    return 0;
}

/* Thread 0, before the layer's attention: store k/v, plan the items. */
static void attention_prepare(decode_step *d, int layer) {
    const model_hparams *hp = &d->m->hp;
    forward_ws *ws = d->ws;
    kv_cache_store(d->kv, layer, d->pos, ws->k, ws->v);
    d->n_items = -1;
    if (kv_cache_spans(d->kv, layer, d->pos, ws->spans) != 0) return;
    int n = attn_decode_plan(ws->spans, hp->n_head_kv, ws->first);
    size_t need = (size_t)(n > 0 ? n : 1) * attn_decode_part_floats(hp->n_head, hp->n_head_kv, hp->head_dim);
    if (need > ws->part_cap) {
        float *p = realloc(ws->part, need * sizeof(float));
        if (!p) {
            d->failed = 1;
            return;
        }
        ws->part = p;
        ws->part_cap = need;
    }
    d->n_items = n;
}

/* The cache's visible slots cut into items, computed by the team, then merged per KV head. */
static int dec_attend(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    decode_step *d = th->d;
    forward_ws *ws = d->ws;
    const model_hparams *hp = &d->m->hp;
    if (th->tid == 0) attention_prepare(d, layer);
    team_barrier_wait(&d->bar);
    if (d->n_items >= 0) {
        for (int it = th->tid; it < d->n_items; it += th->nt)
            attn_decode_item(ws->q, hp->n_head, hp->n_head_kv, hp->head_dim, ws->spans, ws->first, it,
                             ws->part);
        team_barrier_wait(&d->bar);
        for (int g = th->tid; g < hp->n_head_kv; g += th->nt)
            attn_decode_merge(g, hp->n_head, hp->n_head_kv, hp->head_dim, ws->first, ws->part, ws->att);
    } else if (th->tid == 0) { /* bad position or out of memory: a visible NaN, as kv_cache_attend */
        for (int i = 0; i < ws->n_q; i++) ws->att[i] = 0.0f / 0.0f;
    }
    team_barrier_wait(&d->bar);
    return 0;
}

static int dec_attn_out(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    forward_ws *ws = th->d->ws;
    const model_qmat *W[1] = {&th->d->m->layers[layer].q_wo};
    team_matvec(th, W, &ws->tmp, 1, ws->att);
    residual_add(th);
    return 0;
}

static int dec_gate_up(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    const model_layer *L = &th->d->m->layers[layer];
    forward_ws *ws = th->d->ws;
    const model_qmat *W[2] = {&L->q_gate, &L->q_up};
    float *Y[2] = {ws->gu, ws->gu + ws->hp.n_ff};
    team_matvec(th, W, Y, 2, ws->xn);
    return 0;
}

static int dec_glu(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    forward_ws *ws = th->d->ws;
    const int F = ws->hp.n_ff;
    if (th->tid == 0) ops_swiglu(ws->gu, F, ws->gu, F, ws->gu + F, F, 1, F);
    return 0;
}

static int dec_ffn_down(void *ctx, int layer, int r0, int n) {
    decode_thread *th = ctx;
    forward_ws *ws = th->d->ws;
    const model_qmat *W[1] = {&th->d->m->layers[layer].q_down};
    team_matvec(th, W, &ws->tmp, 1, ws->gu);
    residual_add(th);
    return 0;
}

/* Thread 0 alone does the short serial operations; the next operation of the others starts at a
 * barrier, so every operation needs a barrier only after a product's rows. */
static const layer_ops DECODE_OPS = {
    .norm = dec_norm,
    .qkv = dec_qkv,
    .qk_norm = dec_qk_norm,
    .rope = dec_rope,
    .attend = dec_attend,
    .attn_out = dec_attn_out,
    .gate_up = dec_gate_up,
    .glu = dec_glu,
    .ffn_down = dec_ffn_down,
    .ffn_rows = 0,
};

int forward_decode(const model *m, const attn_mask *mask, int32_t token, kv_cache *kv, float *logits,
                   forward_ws *ws) {
    int row = 0;
    if (!kv) {
        snprintf(ws->err, sizeof ws->err, "forward: decode needs a KV cache");
        return -1;
    }
    if (!m->decode_blocks)
        return forward_prefill(m, mask, &token, 1, kv, logits ? &row : NULL, logits ? 1 : 0, logits, ws);
    const int pos = kv->n_past;
    ws->err[0] = 0;
    if (!forward_mask_fits(m, mask) || pos + 1 > kv->n_ctx || forward_embed(m, &token, 1, ws->x) != 0) {
        snprintf(ws->err, sizeof ws->err,
                 "forward: decode of token %d at position %d: the cache holds %d positions, or the token or "
                 "the mask does not fit the model",
                 (int)token, pos, kv->n_ctx);
        return -1;
    }
    decode_step d = {m, mask, kv, ws, pos, logits, {0}, qdot_level_best(), 0, 0};
    const int nt = omp_get_max_threads();
    team_barrier_init(&d.bar, nt, &ws->spin_us);
#pragma omp parallel num_threads(nt)
    {
        /* the region may get fewer threads than asked (nested, limits): then run on one */
        const int tid = omp_get_thread_num(), got = omp_get_num_threads();
        if (got == nt || tid == 0) {
            if (got != nt) team_barrier_init(&d.bar, 1, &ws->spin_us);
            const int n = got == nt ? nt : 1;
            decode_thread th = {&d, tid, n};
            for (int l = 0; l < m->hp.n_layer; l++) layer_forward(&DECODE_OPS, &th, m->hp.arch, l, 1);
            if (logits) {
                const model_qmat *out[1] = {&m->q_output};
                if (tid == 0) {
                    ops_rmsnorm(ws->xn, ws->x, m->output_norm, m->hp.n_embd, m->hp.rms_eps);
                    quantize_for(ws, out, 1, ws->xn);
                }
                team_barrier_wait(&d.bar);
                matvec_part(&d, out, &logits, 1, ws->xn, tid, n);
            }
        }
    }
    if (d.failed) {
        snprintf(ws->err, sizeof ws->err, "forward: decode: out of memory for the attention scratch");
        return -1;
    }
    kv->n_past = pos + 1;
    return 0;
}
