/* model.h — hyper-parameters and weights of a GGUF of a registered architecture (arch.h: llama,
 * qwen3).
 * Three views of the same weights:
 *  - fp32: dequantized at load; matrices keep GGUF's layout, a [rows][cols] row-major matrix whose
 *    rows are output features (ne[1]) and columns input features (ne[0]). The reference, and what
 *    the GPU backend uploads.
 *  - GEMM weights (gemm.h): the fp32 matrices reordered for oneDNN in the model's precision (fp32 or
 *    bf16), Q|K|V and gate|up fused; prefill, the evaluator and the LM head of prefill use them.
 *  - the file's own blocks (model_qmat, read in place from the mapped file): decode (one token)
 *    reads these with 8-bit activations (qdot.h), as llama.cpp does.
 */
#ifndef BOSCH_MODEL_H
#define BOSCH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "attention.h"
#include "gemm.h"
#include "gguf.h"
#include "tokenizer.h"

typedef struct model_hparams {
    const model_arch *arch; /* the registry's row (arch.h); NULL only in hand-made shapes of tests */
    int n_layer;
    int n_head;    /* query heads */
    int n_head_kv; /* KV heads; GQA group = n_head / n_head_kv */
    int head_dim;  /* per-head dimension (key_length) */
    int n_embd;
    int n_ff;
    int n_ctx_train; /* context length the model was trained for, tokens */
    int n_vocab;
    float rope_base;
    int rope_dim;  /* rotated dimensions per head (= head_dim for our architectures) */
    int rope_neox; /* arch->rope: 0 rotates adjacent pairs (llama GGUFs), 1 halves (qwen2/qwen3) */
    float rms_eps;
} model_hparams;

/* A weight matrix as the file stores it: n_rows rows of n_cols elements, each row `row_bytes` of
 * ggml blocks of `type` (quant.h), at `data` inside the mapped GGUF. */
typedef struct {
    const void *data;
    uint32_t type;
    int n_rows, n_cols;
    size_t row_bytes;
} model_qmat;

typedef struct {
    float *attn_norm; /* [n_embd] */
    float *wq;        /* [n_head*head_dim][n_embd] */
    float *wk;        /* [n_head_kv*head_dim][n_embd] */
    float *wv;        /* [n_head_kv*head_dim][n_embd] */
    float *wo;        /* [n_embd][n_head*head_dim] */
    float *q_norm;    /* [head_dim] when arch->qk_norm, else NULL */
    float *k_norm;    /* [head_dim] when arch->qk_norm, else NULL */
    float *ffn_norm;  /* [n_embd] */
    float *w_gate;    /* [n_ff][n_embd] */
    float *w_up;      /* [n_ff][n_embd] */
    float *w_down;    /* [n_embd][n_ff] */
    /* GEMM weights (gemm.h), in the model's precision */
    gemm_weight *g_qkv;     /* [(n_head + 2*n_head_kv)*head_dim][n_embd]: Q | K | V */
    gemm_weight *g_o;       /* [n_embd][n_head*head_dim] */
    gemm_weight *g_gate_up; /* [2*n_ff][n_embd]: gate | up */
    gemm_weight *g_down;    /* [n_embd][n_ff] */
    /* the file's blocks, for decode */
    model_qmat q_wq, q_wk, q_wv, q_wo, q_gate, q_up, q_down;
} model_layer;

/* Options of model_load_opts. */
typedef struct {
    engine_precision precision; /* GEMM precision (gemm.h); PRECISION_FP32 is the reference */
    int decode_fp32;            /* 1: decode through the GEMM weights too, not the file's blocks */
    attn_kv_type kv_type;       /* keys and values of attention and the KV cache; ATTN_KV_FP32 (0) is
                                 * the reference, the commands default to ATTN_KV_BF16 (--kv) */
} model_opts;

typedef struct model {
    char *path;
    char *name; /* general.name or the file name */
    model_hparams hp;
    float *tok_embd;     /* [n_vocab][n_embd] */
    float *output_norm;  /* [n_embd] */
    float *output;       /* [n_vocab][n_embd]; == tok_embd when the embedding is tied */
    model_layer *layers; /* [n_layer] */
    tokenizer *tok;
    gguf_file *gguf;
    double load_s;            /* seconds spent in model_load */
    float *arena;             /* every fp32 weight above lives in this one allocation */
    size_t arena_bytes;       /* its size, bytes */
    int fused_qkv;            /* 1: in every layer wq, wk, wv are back to back, so
                               * wq is also [(n_head + 2*n_head_kv)*head_dim][n_embd] (one GEMM) */
    int fused_gate_up;        /* 1: in every layer w_up follows w_gate: [2*n_ff][n_embd] (one GEMM) */
    gemm_precision precision; /* of the GEMM weights */
    gemm_ctx *gemm;           /* oneDNN context of the GEMM weights */
    gemm_weight *g_output;    /* LM head [n_vocab][n_embd] */
    model_qmat q_output;      /* LM head as stored (output.weight, or token_embd.weight when tied) */
    int decode_blocks;        /* 1: forward_decode reads the q_* blocks (default); 0: GEMM weights */
    attn_kv_type kv_type;     /* model_opts.kv_type: the CPU forward's attention and KV cache elements */
} model;

/* Load and dequantize `path`. general.architecture picks the registry's row (arch.h), whose key and
 * tensor names the loader reads. Hyper-parameters come from the `{arch}.*` keys (block_count,
 * embedding_length, feed_forward_length, attention.head_count, attention.head_count_kv (default
 * n_head), attention.key_length (default n_embd/n_head), rope.freq_base (default 10000),
 * attention.layer_norm_rms_epsilon, context_length (default 0), rope.dimension_count (default
 * head_dim)); n_vocab is the row count of token_embd. Every tensor's shape is checked; `output` is
 * optional when the row says the output may be tied to the embedding. Dequantization runs in parallel
 * (OpenMP) and load_s is recorded. Returns 0, or -1 with a message: a missing file says how to get the
 * default model (scripts/setup); an unsupported architecture names itself; a missing tensor or key is named;
 * a wrong shape names the tensor, the expected and the actual shape (GGUF order, ne[0] first). Free with
 * model_free. */
int model_load(model **out, const char *path, char *err, size_t errlen);
/* model_load with options (NULL = fp32 GEMMs, decode from the file's blocks, as model_load). The GEMM
 * weights are reordered here, once (PRECISION_AUTO resolves to bf16 where the CPU has bf16
 * hardware, gemm_precision_resolve). Decode from blocks needs every matrix in a type qdot.h
 * supports; otherwise decode uses the GEMM weights (decode_blocks = 0). Errors as model_load, plus
 * a precision the CPU cannot run (message names the CPU's ISA). */
int model_load_opts(model **out, const char *path, const model_opts *opts, char *err, size_t errlen);
void model_free(model *m);

/* The fp32 weight of per-layer tensor `t` (ARCH_T_ATTN_NORM .. ARCH_T_FFN_DOWN) of L, or NULL when
 * the architecture has none (arch.h arch_tensor_use). */
float *model_layer_weight(const model_layer *L, arch_tensor t);

/* Bytes of the GEMM weights (the reordered copies, gemm_weight_bytes), for `bosch info`. */
uint64_t model_gemm_bytes(const model *m);

/* Bytes of the model's weights as stored in the file, by tensor type (for `bosch info`). */
uint64_t model_file_bytes(const model *m);

#endif
