/* forward.c — the transformer forward pass on the CPU in fp32 (see forward.h).
 * GEMMs go to OpenBLAS (Y = X·Wᵀ with W in GGUF's [out][in] row-major layout); the rest (RMSNorm,
 * RoPE, SwiGLU) is in ops.c and attention in attention.c / kv_cache.c. */
#include "forward.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "ops.h"

/* The FFN is computed over chunks of this many tokens: bounds the gate/up scratch and keeps it
 * cache-friendly without hurting GEMM efficiency. */
#define FWD_FFN_CHUNK 512

struct forward_ws {
    model_hparams hp;
    int max_tokens;
    int n_q, n_kv;    /* n_head*head_dim, n_head_kv*head_dim */
    float *x;         /* [max_tokens][n_embd] residual stream (forward_prefill / forward_decode) */
    float *xn;        /* [max_tokens][n_embd] normalized input of a sub-block */
    float *qkv;       /* [max_tokens][n_q + 2*n_kv] fused projection output */
    float *q;         /* [max_tokens][n_q] */
    float *k;         /* [max_tokens][n_kv] */
    float *v;         /* [max_tokens][n_kv] */
    float *att;       /* [max_tokens][n_q] attention output */
    float *gu;        /* [FWD_FFN_CHUNK][2*n_ff]: gate | up per row */
    uint8_t *z_full;  /* [n_head_kv] all ATTN_FULL, used when no mask is given */
    float *rope_cos;  /* [max_tokens][rope_dim/2] angle table of positions rope_pos0.. */
    float *rope_sin;  /* same layout */
    int rope_pos0, rope_n; /* positions the table holds (rope_n = 0: none) */
};

static float *falloc(size_t n) { return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64); }

forward_ws *forward_ws_create(const model_hparams *hp, int max_tokens) {
    if (!hp || max_tokens < 1) return NULL;
    forward_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    forward_threads_init();
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
    ws->z_full = malloc((size_t)hp->n_head_kv);
    ws->rope_cos = falloc(T * (size_t)(hp->rope_dim / 2));
    ws->rope_sin = falloc(T * (size_t)(hp->rope_dim / 2));
    if (!ws->rope_cos || !ws->rope_sin || !ws->x || !ws->xn || !ws->qkv || !ws->q || !ws->k ||
        !ws->v || !ws->att || !ws->gu || !ws->z_full) {
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
    free(ws->z_full);
    free(ws->rope_cos);
    free(ws->rope_sin);
    free(ws);
}

int forward_ws_max_tokens(const forward_ws *ws) { return ws->max_tokens; }

float *forward_ws_residual(forward_ws *ws) { return ws->x; }

int forward_embed(const model *m, const int32_t *tokens, int n_tokens, float *x) {
    int E = m->hp.n_embd;
    for (int t = 0; t < n_tokens; t++)
        if (tokens[t] < 0 || tokens[t] >= m->hp.n_vocab) return -1;
    for (int t = 0; t < n_tokens; t++)
        memcpy(x + (size_t)t * E, m->tok_embd + (size_t)tokens[t] * E, sizeof(float) * E);
    return 0;
}

/* Below this many multiply-adds a GEMM runs on one thread (fork/join would cost more). */
#define FWD_PAR_MACS (1 << 18)

/* Y[T][n_out] (row stride ldy) = X[T][n_in] (row stride ldx) · W[n_out][n_in]ᵀ + beta·Y.
 * One thread pool does all the work: the output features are split across the OpenMP threads,
 * each calling single-threaded OpenBLAS on its slice (see forward_threads_init). */
static void matmul_ld(float *Y, int ldy, const float *X, int ldx, const float *W, int T, int n_out,
                      int n_in, float beta) {
    int par = (double)T * n_out * n_in >= FWD_PAR_MACS && n_out >= 64;
#pragma omp parallel if (par)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int chunk = ((n_out + nt - 1) / nt + 15) / 16 * 16;
        int n0 = id * chunk, n1 = n0 + chunk < n_out ? n0 + chunk : n_out;
        if (n1 > n0) {
            const float *w = W + (size_t)n0 * n_in;
            if (T == 1)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, n1 - n0, n_in, 1.0f, w, n_in, X, 1, beta,
                            Y + n0, 1);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, n1 - n0, n_in, 1.0f, X, ldx,
                            w, n_in, beta, Y + n0, ldy);
        }
    }
}

static void matmul(float *Y, const float *X, const float *W, int T, int n_out, int n_in, float beta) {
    matmul_ld(Y, n_out, X, n_in, W, T, n_out, n_in, beta);
}

void forward_threads_init(void) {
    static volatile int done = 0;
    if (!done) {
        openblas_set_num_threads(1);
        done = 1;
    }
}

/* q, k, v for T tokens from the normalized input ws->xn: projection, qwen3 per-head RMSNorm, RoPE. */
static void qkv_project(const model *m, const model_layer *L, int T, int pos0, forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    int E = hp->n_embd, nq = ws->n_q, nkv = ws->n_kv;
    if (m->fused_qkv) {
        int nt = nq + 2 * nkv;
        matmul(ws->qkv, ws->xn, L->wq, T, nt, E, 0.0f);
#pragma omp parallel for schedule(static) if (T >= 64)
        for (int t = 0; t < T; t++) {
            const float *r = ws->qkv + (size_t)t * nt;
            memcpy(ws->q + (size_t)t * nq, r, sizeof(float) * nq);
            memcpy(ws->k + (size_t)t * nkv, r + nq, sizeof(float) * nkv);
            memcpy(ws->v + (size_t)t * nkv, r + nq + nkv, sizeof(float) * nkv);
        }
    } else {
        matmul(ws->q, ws->xn, L->wq, T, nq, E, 0.0f);
        matmul(ws->k, ws->xn, L->wk, T, nkv, E, 0.0f);
        matmul(ws->v, ws->xn, L->wv, T, nkv, E, 0.0f);
    }
    if (L->q_norm) ops_rmsnorm_rows(ws->q, ws->q, L->q_norm, T * hp->n_head, hp->head_dim, hp->rms_eps);
    if (L->k_norm)
        ops_rmsnorm_rows(ws->k, ws->k, L->k_norm, T * hp->n_head_kv, hp->head_dim, hp->rms_eps);
    /* the angle table is shared by every layer of a forward over the same positions */
    if (ws->rope_n == 0 || ws->rope_pos0 != pos0 || ws->rope_n < T) {
        ops_rope_table(pos0, T, hp->rope_dim, hp->rope_base, ws->rope_cos, ws->rope_sin);
        ws->rope_pos0 = pos0;
        ws->rope_n = T;
    }
    ops_rope_apply(ws->q, hp->n_head, ws->k, hp->n_head_kv, T, hp->head_dim, hp->rope_dim,
                   hp->rope_neox, ws->rope_cos, ws->rope_sin);
}

/* x[T][E] += Wdown·(silu(Wgate·n) * Wup·n), n = RMSNorm(x), over chunks of tokens. */
static void ffn_block(const model *m, const model_layer *L, float *x, int T, forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    int E = hp->n_embd, F = hp->n_ff;
    for (int t0 = 0; t0 < T; t0 += FWD_FFN_CHUNK) {
        int n = T - t0 < FWD_FFN_CHUNK ? T - t0 : FWD_FFN_CHUNK;
        float *xc = x + (size_t)t0 * E;
        ops_rmsnorm_rows(ws->xn, xc, L->ffn_norm, n, E, hp->rms_eps);
        if (m->fused_gate_up) {
            matmul(ws->gu, ws->xn, L->w_gate, n, 2 * F, E, 0.0f);
            /* h = silu(gate)*up written over the gate half; row stride 2F */
            ops_swiglu(ws->gu, 2 * F, ws->gu, 2 * F, ws->gu + F, 2 * F, n, F);
        } else {
            /* gate rows then up rows, packed [n][F] each */
            float *g = ws->gu, *u = ws->gu + (size_t)n * F;
            matmul(g, ws->xn, L->w_gate, n, F, E, 0.0f);
            matmul(u, ws->xn, L->w_up, n, F, E, 0.0f);
            ops_swiglu(g, F, g, F, u, F, n, F);
        }
        int hs = m->fused_gate_up ? 2 * F : F; /* row stride of h */
        matmul_ld(xc, E, ws->gu, hs, L->w_down, n, E, F, 1.0f);
    }
}

int forward_layer(const model *m, int layer, const attn_mask *mask, float *x, int n_tokens, int pos0,
                  kv_cache *kv, forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    if (n_tokens < 1 || n_tokens > ws->max_tokens || layer < 0 || layer >= hp->n_layer) return -1;
    if (!kv && pos0 != 0) return -1;
    if (kv && pos0 + n_tokens > kv->n_ctx) return -1;
    const model_layer *L = &m->layers[layer];
    int E = hp->n_embd, nq = ws->n_q, nkv = ws->n_kv, T = n_tokens;
    const uint8_t *z_row = mask ? mask->z + (size_t)layer * mask->n_head_kv : ws->z_full;
    int window = mask ? mask->window : 1, sinks = mask ? mask->sinks : 0;

    ops_rmsnorm_rows(ws->xn, x, L->attn_norm, T, E, hp->rms_eps);
    qkv_project(m, L, T, pos0, ws);
    if (pos0 == 0) {
        /* the block's tokens are the whole sequence: attention straight from q, k, v */
        attn_prefill_hybrid(ws->q, ws->k, ws->v, ws->att, T, hp->n_head, hp->n_head_kv,
                            hp->head_dim, z_row, window, sinks);
        if (kv)
            for (int t = 0; t < T; t++)
                kv_cache_store(kv, layer, t, ws->k + (size_t)t * nkv, ws->v + (size_t)t * nkv);
    } else {
        /* continuing a cached sequence (decode, or a later prefill chunk): one position at a
         * time, so an SWA ring never loses a key that an earlier query of this block needs */
        for (int t = 0; t < T; t++) {
            kv_cache_store(kv, layer, pos0 + t, ws->k + (size_t)t * nkv, ws->v + (size_t)t * nkv);
            kv_cache_attend(kv, layer, pos0 + t, ws->q + (size_t)t * nq, ws->att + (size_t)t * nq,
                            hp->n_head);
        }
    }
    /* x += att · Woᵀ */
    matmul(x, ws->att, L->wo, T, E, nq, 1.0f);
    ffn_block(m, L, x, T, ws);
    return 0;
}

void forward_logits(const model *m, const float *x, const int *rows, int n_rows, float *logits,
                    forward_ws *ws) {
    const model_hparams *hp = &m->hp;
    int E = hp->n_embd, V = hp->n_vocab;
    for (int r0 = 0; r0 < n_rows; r0 += ws->max_tokens) {
        int n = n_rows - r0 < ws->max_tokens ? n_rows - r0 : ws->max_tokens;
#pragma omp parallel for schedule(static) if (n >= 16)
        for (int i = 0; i < n; i++)
            ops_rmsnorm(ws->xn + (size_t)i * E, x + (size_t)rows[r0 + i] * E, m->output_norm, E,
                        hp->rms_eps);
        matmul(logits + (size_t)r0 * V, ws->xn, m->output, n, V, E, 0.0f);
    }
}

static int mask_fits(const model *m, const attn_mask *mask) {
    return !mask || (mask->n_layer == m->hp.n_layer && mask->n_head_kv == m->hp.n_head_kv &&
                     mask->window >= 1 && mask->sinks >= 0);
}

int forward_prefill(const model *m, const attn_mask *mask, const int32_t *tokens, int n_tokens,
                    kv_cache *kv, const int *rows, int n_rows, float *logits, forward_ws *ws) {
    int pos0 = kv ? kv->n_past : 0;
    if (n_tokens < 1 || n_tokens > ws->max_tokens || !mask_fits(m, mask)) return -1;
    if (kv && pos0 + n_tokens > kv->n_ctx) return -1;
    for (int i = 0; i < n_rows; i++)
        if (rows[i] < 0 || rows[i] >= n_tokens) return -1;
    if (forward_embed(m, tokens, n_tokens, ws->x) != 0) return -1;
    for (int l = 0; l < m->hp.n_layer; l++)
        if (forward_layer(m, l, mask, ws->x, n_tokens, pos0, kv, ws) != 0) return -1;
    if (kv) kv->n_past = pos0 + n_tokens;
    if (n_rows > 0 && logits) forward_logits(m, ws->x, rows, n_rows, logits, ws);
    return 0;
}

int forward_decode(const model *m, const attn_mask *mask, int32_t token, kv_cache *kv, float *logits,
                   forward_ws *ws) {
    int row = 0;
    if (!kv) return -1;
    return forward_prefill(m, mask, &token, 1, kv, logits ? &row : NULL, logits ? 1 : 0, logits, ws);
}
