/* backend_cuda.c — the model on the GPU: weight upload and the batched hybrid forward
 * (see backend_cuda.h). Every launch goes on the default stream, so kernels, uploads and
 * downloads run in program order; errors of asynchronous kernels surface at the next
 * download or kern_sync. KV-cache and decode: backend_cuda_kv.c. */
#ifdef BOSCH_HAVE_CUDA

#include "backend_cuda_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

/* Device allocation recorded in g->allocs so cuda_model_free releases it. */
static int dev_alloc(cuda_model *g, void **p, size_t bytes, const char *what, char *err, size_t errlen) {
    if (g->n_allocs == g->cap_allocs) {
        int cap = g->cap_allocs ? 2 * g->cap_allocs : 64;
        void **a = realloc(g->allocs, sizeof(void *) * (size_t)cap);
        if (!a) {
            base_seterr(err, errlen, "cuda: out of host memory");
            return -1;
        }
        g->allocs = a, g->cap_allocs = cap;
    }
    char msg[256];
    if (kern_malloc(p, bytes, msg, sizeof msg)) {
        base_seterr(err, errlen, "cuda: %s (%zu bytes): %s", what, bytes, msg);
        return -1;
    }
    g->allocs[g->n_allocs++] = *p;
    return 0;
}

/* Weight `name` [ne1][ne0] from the GGUF's raw bytes to bf16 into dst (device, ne0*ne1 elements). */
static int upload_matrix(cuda_model *g, const char *name, uint64_t ne0, uint64_t ne1, uint16_t *dst,
                         char *err, size_t errlen) {
    const gguf_tensor *t = gguf_find_tensor(g->m->gguf, name);
    if (!t || t->ne[0] != ne0 || t->ne[1] != ne1) {
        base_seterr(err, errlen, "cuda: %s: tensor '%s' missing or not [%llu][%llu]", g->m->path, name,
                    (unsigned long long)ne1, (unsigned long long)ne0);
        return -1;
    }
    void *raw = NULL;
    char msg[256];
    int rc = kern_malloc(&raw, t->n_bytes, msg, sizeof msg) ||
             kern_upload(raw, t->data, t->n_bytes, msg, sizeof msg) ||
             kern_dequant_bf16(t->type, raw, dst, ne0 * ne1, NULL, msg, sizeof msg) ||
             kern_sync(NULL, msg, sizeof msg);
    kern_free(raw);
    if (rc) base_seterr(err, errlen, "cuda: %s: tensor '%s': %s", g->m->path, name, msg);
    return rc ? -1 : 0;
}

/* A bf16 matrix [rows][cols] on the device, filled from tensor `name`. */
static int matrix(cuda_model *g, const char *name, int rows, int cols, uint16_t **out, char *err,
                  size_t errlen) {
    size_t bytes = (size_t)rows * cols * sizeof(uint16_t);
    if (dev_alloc(g, (void **)out, bytes, name, err, errlen)) return -1;
    g->weight_bytes += bytes;
    return upload_matrix(g, name, (uint64_t)cols, (uint64_t)rows, *out, err, errlen);
}

/* An fp32 vector on the device, copied from the model's host copy (NULL stays NULL). */
static int vector(cuda_model *g, const float *h, int n, float **out, char *err, size_t errlen) {
    *out = NULL;
    if (!h) return 0;
    if (dev_alloc(g, (void **)out, sizeof(float) * n, "norm weights", err, errlen)) return -1;
    g->weight_bytes += sizeof(float) * n;
    return kern_upload(*out, h, sizeof(float) * n, err, errlen);
}

static int upload_layer(cuda_model *g, int l, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    const model_layer *L = &g->m->layers[l];
    cuda_layer *G = &g->layers[l];
    int E = hp->n_embd, nq = hp->n_head * hp->head_dim, nkv = hp->n_head_kv * hp->head_dim, F = hp->n_ff;
    char name[96];
#define MAT(field, suffix, rows, cols)                                                                       \
    (snprintf(name, sizeof name, "blk.%d.%s.weight", l, suffix),                                             \
     matrix(g, name, rows, cols, &G->field, err, errlen))
    if (MAT(wq, "attn_q", nq, E) || MAT(wk, "attn_k", nkv, E) || MAT(wv, "attn_v", nkv, E) ||
        MAT(wo, "attn_output", E, nq) || MAT(w_gate, "ffn_gate", F, E) || MAT(w_up, "ffn_up", F, E) ||
        MAT(w_down, "ffn_down", E, F))
        return -1;
#undef MAT
    if (vector(g, L->attn_norm, E, &G->attn_norm, err, errlen) ||
        vector(g, L->ffn_norm, E, &G->ffn_norm, err, errlen) ||
        vector(g, L->q_norm, hp->head_dim, &G->q_norm, err, errlen) ||
        vector(g, L->k_norm, hp->head_dim, &G->k_norm, err, errlen))
        return -1;
    return 0;
}

int cuda_model_create(cuda_model **out, const model *m, int device, const char *attn_impl, char *err,
                      size_t errlen) {
    *out = NULL;
    int n_dev = kern_device_count();
    if (device < 0 || device >= n_dev) {
        base_seterr(err, errlen, "cuda: device %d does not exist (%d CUDA devices found)", device, n_dev);
        return -1;
    }
    /* prefill attention kernel: mma (head_dim <= 128) else wmma, unless attn_impl says */
    prefill_attn_fn attn = m->hp.head_dim <= 128 ? kern_attn_prefill_mma : kern_attn_prefill_tc;
    const char *impl = attn_impl;
    if (impl && *impl) {
        if (!strcmp(impl, "mma") && m->hp.head_dim <= 128) {
            attn = kern_attn_prefill_mma;
        } else if (!strcmp(impl, "wmma")) {
            attn = kern_attn_prefill_tc;
        } else if (!strcmp(impl, "fp32")) {
            attn = kern_attn_prefill;
        } else {
            base_seterr(err, errlen,
                        "cuda: environment variable BOSCH_CUDA_ATTN is '%s'; use mma (head_dim <= 128; this "
                        "model's is %d), wmma or fp32",
                        impl, m->hp.head_dim);
            return -1;
        }
    }
    if (kern_set_device(device, err, errlen)) return -1;
    cuda_model *g = calloc(1, sizeof *g);
    if (!g || !(g->layers = calloc((size_t)m->hp.n_layer, sizeof(cuda_layer)))) {
        free(g);
        base_seterr(err, errlen, "cuda: out of host memory");
        return -1;
    }
    g->m = m;
    g->hp = m->hp;
    g->prefill_attn = attn;
    const model_hparams *hp = &g->hp;
    int rc = kern_blas_create(&g->blas, err, errlen) ||
             matrix(g, "token_embd.weight", hp->n_vocab, hp->n_embd, &g->tok_embd, err, errlen) ||
             vector(g, m->output_norm, hp->n_embd, &g->output_norm, err, errlen);
    g->output = g->tok_embd; /* tied embedding, unless the file has its own output.weight */
    if (!rc && m->output != m->tok_embd)
        rc = matrix(g, "output.weight", hp->n_vocab, hp->n_embd, &g->output, err, errlen);
    for (int l = 0; l < hp->n_layer && !rc; l++) rc = upload_layer(g, l, err, errlen);
    if (!rc)
        rc = dev_alloc(g, (void **)&g->d_rows, sizeof(int32_t) * CUDA_LOGIT_CHUNK, "logit rows", err,
                       errlen) ||
             dev_alloc(g, (void **)&g->lx, sizeof(float) * CUDA_LOGIT_CHUNK * hp->n_embd, "logit input", err,
                       errlen) ||
             dev_alloc(g, (void **)&g->lxb, sizeof(uint16_t) * CUDA_LOGIT_CHUNK * hp->n_embd, "logit input",
                       err, errlen) ||
             dev_alloc(g, (void **)&g->d_logits, sizeof(float) * CUDA_LOGIT_CHUNK * hp->n_vocab, "logits",
                       err, errlen);
    if (rc) {
        cuda_model_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

static void free_scratch(cuda_model *g) {
    void **bufs[] = {(void **)&g->x,  (void **)&g->xn,  (void **)&g->q,       (void **)&g->k,
                     (void **)&g->v,  (void **)&g->att, (void **)&g->tmp,     (void **)&g->gate,
                     (void **)&g->up, (void **)&g->xb,  (void **)&g->d_tokens};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        kern_free(*bufs[i]);
        *bufs[i] = NULL;
    }
    g->ws_rows = 0;
}

void cuda_model_free(cuda_model *g) {
    if (!g) return;
    free_scratch(g);
    kern_free(g->d_z);
    for (int i = 0; i < g->n_allocs; i++) kern_free(g->allocs[i]);
    free(g->allocs);
    kern_blas_free(g->blas);
    free(g->layers);
    free(g);
}

uint64_t cuda_model_weight_bytes(const cuda_model *g) {
    return g->weight_bytes;
}

uint64_t cuda_peak_bytes(void) {
    char msg[64];
    kern_sync(NULL, msg, sizeof msg);
    return kern_mem_used();
}

/* Activation scratch for `rows` token rows (grown, never shrunk). */
int cuda_ensure_rows(cuda_model *g, int rows, char *err, size_t errlen) {
    if (rows <= g->ws_rows) return 0;
    const model_hparams *hp = &g->hp;
    size_t R = (size_t)rows, E = hp->n_embd, nq = (size_t)hp->n_head * hp->head_dim;
    size_t nkv = (size_t)hp->n_head_kv * hp->head_dim, F = hp->n_ff;
    size_t widest = E > nq ? E : nq;
    widest = widest > F ? widest : F;
    free_scratch(g);
    char msg[256];
    float **f32[] = {&g->x, &g->xn, &g->q, &g->k, &g->v, &g->att, &g->tmp, &g->gate, &g->up};
    size_t width[] = {E, E, nq, nkv, nkv, nq, E, F, F};
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++)
        if (kern_malloc((void **)f32[i], sizeof(float) * R * width[i], msg, sizeof msg)) goto oom;
    if (kern_malloc((void **)&g->xb, sizeof(uint16_t) * R * widest, msg, sizeof msg) ||
        kern_malloc((void **)&g->d_tokens, sizeof(int32_t) * R, msg, sizeof msg))
        goto oom;
    g->ws_rows = rows;
    return 0;
oom:
    free_scratch(g);
    base_seterr(err, errlen, "cuda: activations for %d token rows: %s", rows, msg);
    return -1;
}

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

int cuda_qkv(cuda_model *g, int l, int rows, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    const cuda_layer *G = &g->layers[l];
    int E = hp->n_embd, nq = hp->n_head * hp->head_dim, nkv = hp->n_head_kv * hp->head_dim;
    TRY(kern_rmsnorm(g->x, G->attn_norm, g->xn, rows, E, hp->rms_eps, NULL, err, errlen));
    TRY(to_bf16(g, g->xn, (uint64_t)rows * E, err, errlen));
    TRY(gemm(g, G->wq, g->q, rows, E, nq, err, errlen));
    TRY(gemm(g, G->wk, g->k, rows, E, nkv, err, errlen));
    TRY(gemm(g, G->wv, g->v, rows, E, nkv, err, errlen));
    if (G->q_norm) /* qwen3: RMSNorm of every head's q and k */
        TRY(kern_rmsnorm(g->q, G->q_norm, g->q, rows * hp->n_head, hp->head_dim, hp->rms_eps, NULL, err,
                         errlen));
    if (G->k_norm)
        TRY(kern_rmsnorm(g->k, G->k_norm, g->k, rows * hp->n_head_kv, hp->head_dim, hp->rms_eps, NULL, err,
                         errlen));
    return 0;
}

int cuda_attn_out_ffn(cuda_model *g, int l, int rows, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    const cuda_layer *G = &g->layers[l];
    int E = hp->n_embd, nq = hp->n_head * hp->head_dim, F = hp->n_ff;
    uint64_t nE = (uint64_t)rows * E, nF = (uint64_t)rows * F;
    /* x += att · Woᵀ */
    TRY(to_bf16(g, g->att, (uint64_t)rows * nq, err, errlen));
    TRY(gemm(g, G->wo, g->tmp, rows, nq, E, err, errlen));
    TRY(kern_add(g->x, g->tmp, nE, NULL, err, errlen));
    /* x += Wdown · (silu(Wgate·n) * Wup·n), n = RMSNorm(x) */
    TRY(kern_rmsnorm(g->x, G->ffn_norm, g->xn, rows, E, hp->rms_eps, NULL, err, errlen));
    TRY(to_bf16(g, g->xn, nE, err, errlen));
    TRY(gemm(g, G->w_gate, g->gate, rows, E, F, err, errlen));
    TRY(gemm(g, G->w_up, g->up, rows, E, F, err, errlen));
    TRY(kern_swiglu(g->gate, g->up, g->gate, nF, NULL, err, errlen));
    TRY(to_bf16(g, g->gate, nF, err, errlen));
    TRY(gemm(g, G->w_down, g->tmp, rows, F, E, err, errlen));
    return kern_add(g->x, g->tmp, nE, NULL, err, errlen);
}

/* One block over n_seq sequences of T tokens (positions 0..T-1), in place on g->x. */
static int prefill_layer(cuda_model *g, int l, const attn_mask *const *masks, int n_seq, int T, cuda_kv *kv,
                         char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    int hd = hp->head_dim, nq = hp->n_head * hd, nkv = hp->n_head_kv * hd, rows = n_seq * T;
    TRY(cuda_qkv(g, l, rows, err, errlen));
    for (int s = 0; s < n_seq; s++) {
        size_t r0 = (size_t)s * T;
        int window = masks ? masks[s]->window : 1, sinks = masks ? masks[s]->sinks : 0;
        const uint8_t *z_row = g->d_z + ((size_t)s * hp->n_layer + l) * hp->n_head_kv;
        TRY(kern_rope(g->q + r0 * nq, T, hp->n_head, hd, hp->rope_dim, 0, hp->rope_base, hp->rope_neox, NULL,
                      err, errlen));
        TRY(kern_rope(g->k + r0 * nkv, T, hp->n_head_kv, hd, hp->rope_dim, 0, hp->rope_base, hp->rope_neox,
                      NULL, err, errlen));
        TRY(g->prefill_attn(g->q + r0 * nq, g->k + r0 * nkv, g->v + r0 * nkv, g->att + r0 * nq, T, hp->n_head,
                            hp->n_head_kv, hd, z_row, window, sinks, NULL, err, errlen));
    }
    if (kv) TRY(cuda_kv_store_prefill(kv, l, g->k, g->v, T, err, errlen));
    return cuda_attn_out_ffn(g, l, rows, err, errlen);
}

/* Final RMSNorm + LM head for rows of g->x (host indexes), in chunks: logits [n_rows][n_vocab]. */
int cuda_logits(cuda_model *g, const int *rows, int n_rows, float *logits, char *err, size_t errlen) {
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
int cuda_embed(cuda_model *g, const int32_t *tokens, int n, char *err, size_t errlen) {
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
    for (int l = layer0; l < hp->n_layer; l++) {
        if (cancel && atomic_load_explicit(cancel, memory_order_relaxed)) {
            TRY(kern_sync(NULL, err, errlen)); /* the layers already queued finish before we return */
            base_seterr(err, errlen, "cancelled");
            return CUDA_CANCELLED;
        }
        if (x_save && x_save[l] && l > layer0) TRY(kern_download(x_save[l], g->x, x_bytes, err, errlen));
        TRY(prefill_layer(g, l, masks, n_seq, n_tokens, kv, err, errlen));
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

#endif /* BOSCH_HAVE_CUDA */
