/* model.c — load a GGUF of a registered architecture (arch.h): hyper-parameters from its keys
 * through typed getters, its tensors checked for shape and dequantized to fp32 in parallel (OpenMP
 * over row chunks). */
#include "model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "model_internal.h"
#include "quant.h"
#include "clock.h"
#include "err.h"

#define MODEL_ALIGN 64
/* Dequantization work unit: about this many elements, cut at row boundaries. */
#define MODEL_CHUNK_ELEMS (1u << 18)

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Key `k` of the model's architecture as u32; missing keys take `def` when def >= 0, else fail. */
static int read_u32(const model *m, arch_key k, long def, int *out, char *err, size_t errlen) {
    const gguf_file *g = m->gguf;
    char key[128];
    arch_key_name(m->hp.arch, k, key, sizeof key);
    if (!gguf_find_kv(g, key)) {
        if (def < 0) {
            base_seterr(err, errlen, "model: %s: missing metadata key '%s'", g->path, key);
            return -1;
        }
        *out = (int)def;
        return 0;
    }
    uint32_t v;
    if (gguf_get_u32(g, key, &v, err, errlen) != 0) return -1;
    if (v > (1u << 30)) {
        base_seterr(err, errlen, "model: %s: key '%s' = %u is out of range", g->path, key, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Key `k` as f32; a missing key is an error when `required`, else takes `def`. */
static int read_f32(const model *m, arch_key k, double def, int required, float *out, char *err,
                    size_t errlen) {
    const gguf_file *g = m->gguf;
    char key[128];
    arch_key_name(m->hp.arch, k, key, sizeof key);
    if (!gguf_find_kv(g, key)) {
        if (required) {
            base_seterr(err, errlen, "model: %s: missing metadata key '%s'", g->path, key);
            return -1;
        }
        *out = (float)def;
        return 0;
    }
    return gguf_get_f32(g, key, out, err, errlen);
}

/* RoPE scaling (linear, YaRN, llama3 rope_freqs) would change the angles: refuse it rather than
 * compute silently wrong logits. */
static int refuse_rope_scaling(const model *m, char *err, size_t errlen) {
    const gguf_file *g = m->gguf;
    char key[128], name[96];
    arch_key_name(m->hp.arch, ARCH_KEY_ROPE_SCALING_TYPE, key, sizeof key);
    if (gguf_find_kv(g, key)) {
        char *type = NULL;
        if (gguf_get_str(g, key, &type, err, errlen) != 0) return -1;
        int none = !strcmp(type, "none");
        if (!none)
            base_seterr(err, errlen, "model: %s: %s = '%s' is not supported (no RoPE scaling)", g->path, key,
                        type);
        free(type);
        if (!none) return -1;
    }
    arch_tensor_name(m->hp.arch, ARCH_T_ROPE_FREQS, 0, name, sizeof name);
    if (arch_tensor_use(m->hp.arch, ARCH_T_ROPE_FREQS) == ARCH_USE_REFUSED && gguf_find_tensor(g, name)) {
        base_seterr(err, errlen, "model: %s: tensor '%s' (RoPE frequency factors) is not supported", g->path,
                    name);
        return -1;
    }
    return 0;
}

static int read_hparams(model *m, char *err, size_t errlen) {
    const gguf_file *g = m->gguf;
    model_hparams *hp = &m->hp;
    if (read_u32(m, ARCH_KEY_BLOCK_COUNT, -1, &hp->n_layer, err, errlen) ||
        read_u32(m, ARCH_KEY_EMBEDDING_LENGTH, -1, &hp->n_embd, err, errlen) ||
        read_u32(m, ARCH_KEY_FEED_FORWARD_LENGTH, -1, &hp->n_ff, err, errlen) ||
        read_u32(m, ARCH_KEY_HEAD_COUNT, -1, &hp->n_head, err, errlen) ||
        read_u32(m, ARCH_KEY_HEAD_COUNT_KV, hp->n_head, &hp->n_head_kv, err, errlen) ||
        read_u32(m, ARCH_KEY_CONTEXT_LENGTH, 0, &hp->n_ctx_train, err, errlen) ||
        read_f32(m, ARCH_KEY_ROPE_FREQ_BASE, 10000.0, 0, &hp->rope_base, err, errlen) ||
        read_f32(m, ARCH_KEY_RMS_EPS, 0, 1, &hp->rms_eps, err, errlen))
        return -1;
    if (hp->n_layer < 1 || hp->n_embd < 1 || hp->n_ff < 1 || hp->n_head < 1 || hp->n_head_kv < 1) {
        base_seterr(err, errlen, "model: %s: bad shape n_layer=%d n_embd=%d n_ff=%d n_head=%d n_head_kv=%d",
                    g->path, hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
        return -1;
    }
    if (hp->n_head % hp->n_head_kv != 0) {
        base_seterr(err, errlen, "model: %s: n_head=%d is not a multiple of n_head_kv=%d", g->path,
                    hp->n_head, hp->n_head_kv);
        return -1;
    }
    if (read_u32(m, ARCH_KEY_KEY_LENGTH, hp->n_embd / hp->n_head, &hp->head_dim, err, errlen) ||
        read_u32(m, ARCH_KEY_ROPE_DIMENSION_COUNT, hp->head_dim, &hp->rope_dim, err, errlen))
        return -1;
    if (hp->head_dim < 2 || hp->rope_dim < 2 || hp->rope_dim > hp->head_dim || hp->rope_dim % 2) {
        base_seterr(err, errlen, "model: %s: bad head_dim=%d / rope.dimension_count=%d", g->path,
                    hp->head_dim, hp->rope_dim);
        return -1;
    }
    int vlen;
    if (read_u32(m, ARCH_KEY_VALUE_LENGTH, hp->head_dim, &vlen, err, errlen)) return -1;
    if (vlen != hp->head_dim) {
        char key[128];
        base_seterr(err, errlen, "model: %s: %s=%d differs from key_length=%d (unsupported)", g->path,
                    arch_key_name(hp->arch, ARCH_KEY_VALUE_LENGTH, key, sizeof key), vlen, hp->head_dim);
        return -1;
    }
    if (refuse_rope_scaling(m, err, errlen)) return -1;
    if (!(hp->rms_eps > 0.0f) || !(hp->rope_base > 0.0f)) {
        base_seterr(err, errlen, "model: %s: bad rms epsilon %g or rope base %g", g->path,
                    (double)hp->rms_eps, (double)hp->rope_base);
        return -1;
    }
    return 0;
}

/* One tensor to dequantize into dst. */
typedef struct {
    const gguf_tensor *t;
    float *dst;
} load_job;

typedef struct {
    model *m;
    load_job *jobs;
    int n_jobs;
    size_t arena_elems; /* running size of the arena, in floats */
    char *err;
    size_t errlen;
} loader;

static size_t round_up(size_t n) {
    size_t a = MODEL_ALIGN / sizeof(float);
    return (n + a - 1) / a * a;
}

static void shape_str(char *buf, size_t cap, const uint64_t *ne, int nd) {
    size_t o = 0;
    o += snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)ne[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* Check tensor `name` exists (unless optional) with GGUF shape ne0 x ne1 (ne1 = 1 for vectors) and
 * a supported type; reserve its place in the arena. *slot receives the arena offset + 1 (0: absent). */
static int plan_tensor(loader *ld, const char *name, uint64_t ne0, uint64_t ne1, int optional, size_t *slot) {
    const gguf_file *g = ld->m->gguf;
    const gguf_tensor *t = gguf_find_tensor(g, name);
    *slot = 0;
    if (!t) {
        if (optional) return 0;
        base_seterr(ld->err, ld->errlen, "model: %s: missing tensor '%s'", g->path, name);
        return -1;
    }
    uint64_t want[2] = {ne0, ne1};
    int ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
    if (!ok) {
        char ws[64], hs[96];
        shape_str(ws, sizeof ws, want, ne1 == 1 ? 1 : 2);
        shape_str(hs, sizeof hs, t->ne, t->n_dims ? (int)t->n_dims : 1);
        base_seterr(ld->err, ld->errlen, "model: %s: tensor '%s': expected shape %s, got %s", g->path, name,
                    ws, hs);
        return -1;
    }
    if (!quant_type_supported(t->type)) {
        base_seterr(ld->err, ld->errlen, "model: %s: tensor '%s': unsupported type %u", g->path, name,
                    t->type);
        return -1;
    }
    ld->jobs[ld->n_jobs].t = t;
    ld->jobs[ld->n_jobs].dst = NULL;
    ld->n_jobs++;
    *slot = ld->arena_elems + 1;
    ld->arena_elems += round_up((size_t)(ne0 * ne1));
    return 0;
}

/* Where the fp32 copy of each per-layer tensor lives in a model_layer (NULL: not a weight of L). */
static float **layer_slot(model_layer *L, arch_tensor t) {
    switch (t) {
    case ARCH_T_ATTN_NORM:
        return &L->attn_norm;
    case ARCH_T_ATTN_Q:
        return &L->wq;
    case ARCH_T_ATTN_K:
        return &L->wk;
    case ARCH_T_ATTN_V:
        return &L->wv;
    case ARCH_T_ATTN_OUT:
        return &L->wo;
    case ARCH_T_ATTN_Q_NORM:
        return &L->q_norm;
    case ARCH_T_ATTN_K_NORM:
        return &L->k_norm;
    case ARCH_T_FFN_NORM:
        return &L->ffn_norm;
    case ARCH_T_FFN_GATE:
        return &L->w_gate;
    case ARCH_T_FFN_UP:
        return &L->w_up;
    case ARCH_T_FFN_DOWN:
        return &L->w_down;
    default:
        return NULL;
    }
}

float *model_layer_weight(const model_layer *L, arch_tensor t) {
    float **p = layer_slot((model_layer *)L, t);
    return p ? *p : NULL;
}

/* Arena offset + 1 of every tensor (0 = absent), resolved to pointers after allocation. */
typedef struct {
    size_t slot[ARCH_T_COUNT];
} tensor_slots;

/* Plan tensor t (of layer l for per-layer tensors) as the architecture uses it. */
static int plan_one(loader *ld, arch_tensor t, int l, size_t *slot) {
    const model_hparams *hp = &ld->m->hp;
    arch_use use = arch_tensor_use(hp->arch, t);
    *slot = 0;
    if (use != ARCH_USE_REQUIRED && use != ARCH_USE_OPTIONAL) return 0;
    arch_dims d = {hp->n_embd, hp->n_ff, hp->n_vocab, hp->n_head, hp->n_head_kv, hp->head_dim};
    uint64_t ne[2];
    char name[96];
    arch_tensor_shape(&d, t, ne);
    arch_tensor_name(hp->arch, t, l, name, sizeof name);
    return plan_tensor(ld, name, ne[0], ne[1], use == ARCH_USE_OPTIONAL, slot);
}

/* The model's tensors, then each layer's, in arch_tensor order: wq|wk|wv and w_gate|w_up end up
 * back to back in the arena (the fused GEMMs). */
static int plan_all(loader *ld, tensor_slots *own, tensor_slots *ls) {
    for (int t = 0; t < ARCH_T_FIRST_LAYER; t++)
        if (plan_one(ld, (arch_tensor)t, 0, &own->slot[t])) return -1;
    for (int l = 0; l < ld->m->hp.n_layer; l++)
        for (int t = ARCH_T_FIRST_LAYER; t < ARCH_T_COUNT; t++)
            if (plan_one(ld, (arch_tensor)t, l, &ls[l].slot[t])) return -1;
    return 0;
}

/* Dequantize every job in parallel, in chunks of whole rows. Returns 0 or -1. */
static int dequantize_all(loader *ld) {
    /* count chunks */
    size_t n_chunks = 0;
    for (int j = 0; j < ld->n_jobs; j++) {
        const gguf_tensor *t = ld->jobs[j].t;
        uint64_t rows_per = MODEL_CHUNK_ELEMS / t->ne[0];
        if (rows_per < 1) rows_per = 1;
        n_chunks += (t->ne[1] + rows_per - 1) / rows_per;
    }
    int *c_job = malloc(sizeof(int) * n_chunks);
    uint64_t *c_row = malloc(sizeof(uint64_t) * n_chunks);
    if (!c_job || !c_row) {
        free(c_job);
        free(c_row);
        base_seterr(ld->err, ld->errlen, "model: %s: out of memory", ld->m->path);
        return -1;
    }
    size_t c = 0;
    for (int j = 0; j < ld->n_jobs; j++) {
        const gguf_tensor *t = ld->jobs[j].t;
        uint64_t rows_per = MODEL_CHUNK_ELEMS / t->ne[0];
        if (rows_per < 1) rows_per = 1;
        for (uint64_t r = 0; r < t->ne[1]; r += rows_per, c++) {
            c_job[c] = j;
            c_row[c] = r;
        }
    }
    int failed = -1;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < n_chunks; i++) {
        const load_job *jb = &ld->jobs[c_job[i]];
        const gguf_tensor *t = jb->t;
        uint64_t rows_per = MODEL_CHUNK_ELEMS / t->ne[0];
        if (rows_per < 1) rows_per = 1;
        uint64_t r0 = c_row[i], n_rows = t->ne[1] - r0 < rows_per ? t->ne[1] - r0 : rows_per;
        size_t rb = quant_row_bytes(t->type, t->ne[0]);
        const uint8_t *src = (const uint8_t *)t->data + r0 * rb;
        if (quant_dequantize(t->type, src, jb->dst + r0 * t->ne[0], n_rows * t->ne[0]) != 0) {
#pragma omp critical
            failed = c_job[i];
        }
    }
    free(c_job);
    free(c_row);
    if (failed >= 0) {
        const gguf_tensor *t = ld->jobs[failed].t;
        base_seterr(ld->err, ld->errlen, "model: %s: tensor '%.*s': cannot dequantize type %s", ld->m->path,
                    (int)t->name.len, t->name.ptr, quant_type_name(t->type));
        return -1;
    }
    return 0;
}

static float *arena_at(model *m, size_t slot) {
    return slot ? m->arena + (slot - 1) : NULL;
}

static int load_weights(model *m, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    int max_jobs = ARCH_T_COUNT * (1 + hp->n_layer);
    tensor_slots own = {{0}}, *ls = calloc((size_t)hp->n_layer, sizeof *ls);
    loader ld = {m, calloc((size_t)max_jobs, sizeof(load_job)), 0, 0, err, errlen};
    m->layers = calloc((size_t)hp->n_layer, sizeof(model_layer));
    int rc = -1;
    if (!ls || !ld.jobs || !m->layers) {
        base_seterr(err, errlen, "model: %s: out of memory", m->path);
        goto done;
    }
    if (plan_all(&ld, &own, ls)) goto done;
    if (ld.arena_elems > SIZE_MAX / sizeof(float) ||
        !(m->arena = aligned_alloc(MODEL_ALIGN, ld.arena_elems * sizeof(float)))) {
        base_seterr(err, errlen, "model: %s: out of memory for %zu MiB of fp32 weights", m->path,
                    ld.arena_elems * sizeof(float) >> 20);
        goto done;
    }
    m->arena_bytes = ld.arena_elems * sizeof(float);
    /* resolve job destinations in plan order */
    {
        size_t off = 0;
        for (int j = 0; j < ld.n_jobs; j++) {
            ld.jobs[j].dst = m->arena + off;
            off += round_up((size_t)(ld.jobs[j].t->ne[0] * ld.jobs[j].t->ne[1]));
        }
    }
    m->tok_embd = arena_at(m, own.slot[ARCH_T_TOKEN_EMBD]);
    m->output_norm = arena_at(m, own.slot[ARCH_T_OUTPUT_NORM]);
    m->output = own.slot[ARCH_T_OUTPUT] ? arena_at(m, own.slot[ARCH_T_OUTPUT]) : m->tok_embd;
    for (int l = 0; l < hp->n_layer; l++)
        for (int t = ARCH_T_FIRST_LAYER; t < ARCH_T_COUNT; t++) {
            float **p = layer_slot(&m->layers[l], (arch_tensor)t);
            if (p) *p = arena_at(m, ls[l].slot[t]);
        }
    rc = dequantize_all(&ld);
done:
    free(ls);
    free(ld.jobs);
    return rc;
}

/* Q, K, V weights contiguous (one GEMM for all three) and gate, up contiguous. */
static void check_fusion(model *m) {
    const model_hparams *hp = &m->hp;
    size_t q = (size_t)hp->n_head * hp->head_dim * hp->n_embd;
    size_t kv = (size_t)hp->n_head_kv * hp->head_dim * hp->n_embd;
    size_t ff = (size_t)hp->n_ff * hp->n_embd;
    m->fused_qkv = m->fused_gate_up = 1;
    for (int l = 0; l < hp->n_layer; l++) {
        const model_layer *L = &m->layers[l];
        if (L->wk != L->wq + q || L->wv != L->wk + kv) m->fused_qkv = 0;
        if (L->w_up != L->w_gate + ff) m->fused_gate_up = 0;
    }
}

int model_load(model **out, const char *path, char *err, size_t errlen) {
    return model_load_opts(out, path, NULL, err, errlen);
}

int model_load_opts(model **out, const char *path, const model_opts *opts, char *err, size_t errlen) {
    double t0 = base_now_s();
    model_opts o = {PRECISION_FP32, 0, ATTN_KV_FP32};
    if (opts) o = *opts;
    gemm_precision prec;
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0 && errno != ENOENT) { /* a loop of links, a permission: no download helps */
        base_seterr(err, errlen, "model: %s: %s", path, strerror(errno));
        return -1;
    }
    if (stat(path, &st) != 0) {
        base_seterr(
            err, errlen,
            "model: %s: %s; run scripts/setup to download the default model "
            "(SmolLM2-135M-Instruct Q4_1) into models/, or give another GGUF path (argument or BOSCH_MODEL)",
            path, strerror(errno));
        return -1;
    }
    if (gemm_precision_resolve(o.precision, &prec, err, errlen) != 0) return -1;
    model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = dup_str(path))) {
        free(m);
        base_seterr(err, errlen, "model: %s: out of memory", path);
        return -1;
    }
    char *arch = NULL;
    if (gguf_open(&m->gguf, path, err, errlen) != 0) goto fail;
    if (gguf_get_str(m->gguf, "general.architecture", &arch, err, errlen) != 0) goto fail;
    if (!(m->hp.arch = arch_find(arch))) {
        char names[256];
        base_seterr(err, errlen, "model: %s: unsupported architecture '%s' (supported: %s)", path, arch,
                    arch_names(names, sizeof names));
        goto fail;
    }
    m->hp.rope_neox = m->hp.arch->rope == ARCH_ROPE_NEOX;
    if (read_hparams(m, err, errlen) != 0) goto fail;
    char embd[96];
    arch_tensor_name(m->hp.arch, ARCH_T_TOKEN_EMBD, 0, embd, sizeof embd);
    const gguf_tensor *te = gguf_find_tensor(m->gguf, embd);
    if (!te) {
        base_seterr(err, errlen, "model: %s: missing tensor '%s'", path, embd);
        goto fail;
    }
    if (te->ne[1] < 1 || te->ne[1] > (1u << 24)) {
        base_seterr(err, errlen, "model: %s: tensor '%s': bad vocabulary size %llu", path, embd,
                    (unsigned long long)te->ne[1]);
        goto fail;
    }
    m->hp.n_vocab = (int)te->ne[1];
    int vocab_key = 0; /* the optional <arch>.vocab_size must agree with the embedding it describes */
    if (read_u32(m, ARCH_KEY_VOCAB_SIZE, 0, &vocab_key, err, errlen) != 0) goto fail;
    if (vocab_key && vocab_key != m->hp.n_vocab) {
        char key[128];
        base_seterr(err, errlen, "model: %s: key '%s' is %d, but tensor '%s' has %d rows (one per token)",
                    path, arch_key_name(m->hp.arch, ARCH_KEY_VOCAB_SIZE, key, sizeof key), vocab_key, embd,
                    m->hp.n_vocab);
        goto fail;
    }
    if (gguf_find_kv(m->gguf, "general.name")) {
        if (gguf_get_str(m->gguf, "general.name", &m->name, err, errlen) != 0) goto fail;
    } else {
        const char *b = strrchr(path, '/');
        if (!(m->name = dup_str(b ? b + 1 : path))) goto fail;
    }
    if (tokenizer_load(&m->tok, m->gguf, err, errlen) != 0) goto fail;
    if (tokenizer_n_vocab(m->tok) > m->hp.n_vocab) {
        base_seterr(err, errlen, "model: %s: tokenizer has %d tokens but token_embd has %d rows", path,
                    tokenizer_n_vocab(m->tok), m->hp.n_vocab);
        goto fail;
    }
    if (load_weights(m, err, errlen) != 0) goto fail;
    check_fusion(m);
    if (model_prepare_gemm(m, prec, err, errlen) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", err);
        base_seterr(err, errlen, "model: %s: preparing the %s GEMM weights: %s", path,
                    gemm_precision_name(prec), msg);
        goto fail;
    }
    m->decode_blocks = !o.decode_fp32 && model_map_blocks(m) == 0;
    m->kv_type = o.kv_type;
    free(arch);
    m->load_s = base_now_s() - t0;
    *out = m;
    return 0;
fail:
    free(arch);
    model_free(m);
    return -1;
}

void model_free(model *m) {
    if (!m) return;
    model_free_views(m);
    free(m->arena);
    free(m->layers);
    if (m->tok) tokenizer_free(m->tok);
    if (m->gguf) gguf_close(m->gguf);
    free(m->name);
    free(m->path);
    free(m);
}

uint64_t model_file_bytes(const model *m) {
    uint64_t b = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) b += m->gguf->tensors[i].n_bytes;
    return b;
}
