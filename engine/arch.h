/* arch.h — the architecture registry: everything that varies between the model architectures the
 * engine runs, one row per architecture (arch.c), after llama.cpp's llama-arch (a name table of
 * tensors and hyper-parameter keys per architecture, read by the loader through typed getters).
 *
 * A row gives the architecture's name (general.architecture), the printf formats of its
 * hyper-parameter keys and of its tensor names, and the options of its transformer block (layer.h:
 * per-head q/k RMSNorm, the RoPE pair layout, whether the LM head may be the token embedding).
 * Readers: the loader (model.c, model_views.c), the random-weight writer (gguf_write.c), the GPU
 * upload (backend_cuda.c), the block's recipe (layer.c), `bosch info` and the interop exports. So
 * an architecture whose block differs from the supported ones only in these fields is one new row
 * in arch.c and nothing else; a new operation (biases, another activation, another norm) is a new
 * step in layer.c and an op in each backend (docs/architecture.md, "Where to add").
 */
#ifndef BOSCH_ARCH_H
#define BOSCH_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* Hyper-parameter keys (GGUF `{arch}.*` metadata). The loader's defaults are in model.h. */
typedef enum {
    ARCH_KEY_BLOCK_COUNT,          /* n_layer */
    ARCH_KEY_CONTEXT_LENGTH,       /* n_ctx_train */
    ARCH_KEY_EMBEDDING_LENGTH,     /* n_embd */
    ARCH_KEY_FEED_FORWARD_LENGTH,  /* n_ff */
    ARCH_KEY_HEAD_COUNT,           /* n_head */
    ARCH_KEY_HEAD_COUNT_KV,        /* n_head_kv */
    ARCH_KEY_KEY_LENGTH,           /* head_dim */
    ARCH_KEY_VALUE_LENGTH,         /* must equal head_dim */
    ARCH_KEY_ROPE_DIMENSION_COUNT, /* rope_dim */
    ARCH_KEY_ROPE_FREQ_BASE,       /* rope_base */
    ARCH_KEY_ROPE_SCALING_TYPE,    /* refused unless "none" */
    ARCH_KEY_RMS_EPS,              /* rms_eps */
    ARCH_KEY_VOCAB_SIZE,           /* written by gguf_write.c; the loader takes n_vocab from token_embd */
    ARCH_KEY_COUNT
} arch_key;

/* Tensors. The model's own first, then a layer's in the order of the file and of the fp32 arena
 * (Q, K, V adjacent and gate, up adjacent: the fused GEMMs of model.h depend on it). */
typedef enum {
    ARCH_T_TOKEN_EMBD,  /* [n_vocab][n_embd] */
    ARCH_T_OUTPUT_NORM, /* [n_embd] */
    ARCH_T_OUTPUT,      /* [n_vocab][n_embd], the LM head */
    ARCH_T_ROPE_FREQS,  /* RoPE frequency factors: refused (no RoPE scaling) */
    ARCH_T_ATTN_NORM,   /* [n_embd] */
    ARCH_T_ATTN_Q,      /* [n_head*head_dim][n_embd] */
    ARCH_T_ATTN_K,      /* [n_head_kv*head_dim][n_embd] */
    ARCH_T_ATTN_V,      /* [n_head_kv*head_dim][n_embd] */
    ARCH_T_ATTN_OUT,    /* [n_embd][n_head*head_dim] */
    ARCH_T_ATTN_Q_NORM, /* [head_dim] */
    ARCH_T_ATTN_K_NORM, /* [head_dim] */
    ARCH_T_FFN_NORM,    /* [n_embd] */
    ARCH_T_FFN_GATE,    /* [n_ff][n_embd] */
    ARCH_T_FFN_UP,      /* [n_ff][n_embd] */
    ARCH_T_FFN_DOWN,    /* [n_embd][n_ff] */
    ARCH_T_COUNT
} arch_tensor;
#define ARCH_T_FIRST_LAYER ARCH_T_ATTN_NORM /* tensors from here on exist once per layer */

/* RoPE pair layout (ops.h ops_rope_row): adjacent pairs (x[2i], x[2i+1]), as llama GGUFs, whose
 * converter permuted the Q/K rows for it; or NEOX halves (x[i], x[i + rope_dim/2]), as qwen2/3. */
typedef enum { ARCH_ROPE_ADJACENT = 0, ARCH_ROPE_NEOX = 1 } arch_rope;

/* Whether a file of the architecture holds a tensor. */
typedef enum {
    ARCH_USE_NONE = 0, /* not part of the block: ignored */
    ARCH_USE_REQUIRED, /* missing: an error naming it */
    ARCH_USE_OPTIONAL, /* may be absent (the LM head when tied to the embedding) */
    ARCH_USE_REFUSED   /* present: an error (the engine cannot compute it faithfully) */
} arch_use;

/* One architecture. */
typedef struct model_arch {
    const char *name;           /* general.architecture, and the `{arch}.` prefix of its keys */
    const char *models;         /* the model families it covers, for `bosch info` */
    const char *hf_model_type;  /* Hugging Face config.json "model_type" (interop exports) */
    int qk_norm;                /* 1: per-head RMSNorm of q and k before RoPE (attn_q_norm, attn_k_norm) */
    arch_rope rope;             /* RoPE pair layout */
    int tied_output;            /* 1: output.weight may be absent, the LM head is then token_embd */
    const char *const *keys;    /* [ARCH_KEY_COUNT] key formats, %s = name ("%s.block_count") */
    const char *const *tensors; /* [ARCH_T_COUNT] tensor names without ".weight"; per layer with %d */
} model_arch;

/* The registered architectures, in table order: n receives their count. */
const model_arch *arch_list(int *n);
/* The row named `name` (general.architecture), or NULL. */
const model_arch *arch_find(const char *name);
/* Every registered name, comma-separated ("llama, qwen3"), into buf[cap]; returns buf. */
const char *arch_names(char *buf, size_t cap);

/* The key `k` of `a` ("llama.block_count") into buf[cap]; returns buf. */
const char *arch_key_name(const model_arch *a, arch_key k, char *buf, size_t cap);
/* The tensor `t` of `a` with ".weight", of layer `layer` for per-layer tensors
 * ("blk.3.attn_q.weight"), into buf[cap]; returns buf. */
const char *arch_tensor_name(const model_arch *a, arch_tensor t, int layer, char *buf, size_t cap);
/* Whether files of `a` hold tensor `t` (from the row's options). */
arch_use arch_tensor_use(const model_arch *a, arch_tensor t);

/* Dimensions a tensor's shape is made of. */
typedef struct {
    int n_embd, n_ff, n_vocab, n_head, n_head_kv, head_dim;
} arch_dims;
/* GGUF shape of tensor `t` for dims `d`: ne[0] (row length, input features) and ne[1] (rows,
 * output features; 1 for a vector), as the comments of arch_tensor say. */
void arch_tensor_shape(const arch_dims *d, arch_tensor t, uint64_t ne[2]);

#endif
