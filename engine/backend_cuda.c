/* backend_cuda.c — the model on the GPU (see backend_cuda.h): the weights, uploaded as the
 * architecture registry names them (arch.h), and the activation scratch. The forward:
 * backend_cuda_forward.c; the KV cache: backend_cuda_kv.c. */
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

/* The device copy of per-layer tensor t in G: a bf16 matrix or an fp32 vector (NULL: the other). */
static uint16_t **layer_matrix(cuda_layer *G, arch_tensor t) {
    switch (t) {
    case ARCH_T_ATTN_Q:
        return &G->wq;
    case ARCH_T_ATTN_K:
        return &G->wk;
    case ARCH_T_ATTN_V:
        return &G->wv;
    case ARCH_T_ATTN_OUT:
        return &G->wo;
    case ARCH_T_FFN_GATE:
        return &G->w_gate;
    case ARCH_T_FFN_UP:
        return &G->w_up;
    case ARCH_T_FFN_DOWN:
        return &G->w_down;
    default:
        return NULL;
    }
}
static float **layer_vector(cuda_layer *G, arch_tensor t) {
    switch (t) {
    case ARCH_T_ATTN_NORM:
        return &G->attn_norm;
    case ARCH_T_FFN_NORM:
        return &G->ffn_norm;
    case ARCH_T_ATTN_Q_NORM:
        return &G->q_norm;
    case ARCH_T_ATTN_K_NORM:
        return &G->k_norm;
    default:
        return NULL;
    }
}

/* Every tensor the architecture gives a layer (arch.h): matrices from the file's bytes as bf16,
 * vectors from the model's fp32 copy. */
static int upload_layer(cuda_model *g, int l, char *err, size_t errlen) {
    const model_hparams *hp = &g->hp;
    const model_layer *L = &g->m->layers[l];
    cuda_layer *G = &g->layers[l];
    arch_dims d = {hp->n_embd, hp->n_ff, hp->n_vocab, hp->n_head, hp->n_head_kv, hp->head_dim};
    char name[96];
    for (int t = ARCH_T_FIRST_LAYER; t < ARCH_T_COUNT; t++) {
        arch_use use = arch_tensor_use(hp->arch, (arch_tensor)t);
        if (use != ARCH_USE_REQUIRED && use != ARCH_USE_OPTIONAL) continue;
        uint64_t ne[2];
        arch_tensor_shape(&d, (arch_tensor)t, ne);
        uint16_t **mat = layer_matrix(G, (arch_tensor)t);
        float **vec = layer_vector(G, (arch_tensor)t);
        int rc = mat ? matrix(g, arch_tensor_name(hp->arch, (arch_tensor)t, l, name, sizeof name), (int)ne[1],
                              (int)ne[0], mat, err, errlen)
                 : vec ? vector(g, model_layer_weight(L, (arch_tensor)t), (int)ne[0], vec, err, errlen)
                       : 0;
        if (rc) return -1;
    }
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
    char embd[96], output[96];
    arch_tensor_name(hp->arch, ARCH_T_TOKEN_EMBD, 0, embd, sizeof embd);
    arch_tensor_name(hp->arch, ARCH_T_OUTPUT, 0, output, sizeof output);
    int rc = kern_blas_create(&g->blas, err, errlen) ||
             matrix(g, embd, hp->n_vocab, hp->n_embd, &g->tok_embd, err, errlen) ||
             vector(g, m->output_norm, hp->n_embd, &g->output_norm, err, errlen);
    g->output = g->tok_embd; /* tied embedding, unless the file has its own output tensor */
    if (!rc && m->output != m->tok_embd)
        rc = matrix(g, output, hp->n_vocab, hp->n_embd, &g->output, err, errlen);
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

#endif /* BOSCH_HAVE_CUDA */
