/* backend_cuda_internal.h — what backend_cuda.c and backend_cuda_kv.c share (not public). */
#ifndef BOSCH_BACKEND_CUDA_INTERNAL_H
#define BOSCH_BACKEND_CUDA_INTERNAL_H

#ifdef BOSCH_HAVE_CUDA

#include "backend_cuda.h"
#include "kernels/kernels.h"
#include "err.h" /* base_seterr: every message of the GPU backend */

#define CUDA_LOGIT_CHUNK 256 /* rows per LM-head GEMM: bounds the device logits buffer */

typedef struct {
    float *attn_norm, *ffn_norm; /* [n_embd] fp32 */
    float *q_norm, *k_norm;      /* [head_dim] fp32, qwen3 only, else NULL */
    uint16_t *wq;                /* [n_head*head_dim][n_embd] bf16 */
    uint16_t *wk, *wv;           /* [n_head_kv*head_dim][n_embd] bf16 */
    uint16_t *wo;                /* [n_embd][n_head*head_dim] bf16 */
    uint16_t *w_gate, *w_up;     /* [n_ff][n_embd] bf16 */
    uint16_t *w_down;            /* [n_embd][n_ff] bf16 */
} cuda_layer;

/* The signature shared by the prefill attention kernels of kernels.h. */
typedef int (*prefill_attn_fn)(const float *d_q, const float *d_k, const float *d_v, float *d_out,
                               int n_tokens, int n_head, int n_head_kv, int head_dim, const uint8_t *d_z_row,
                               int window, int sinks, void *stream, char *err, size_t errlen);

struct cuda_model {
    const model *m;
    model_hparams hp;
    uint16_t *tok_embd; /* [n_vocab][n_embd] bf16 */
    uint16_t *output;   /* [n_vocab][n_embd] bf16; == tok_embd when tied */
    float *output_norm; /* [n_embd] */
    cuda_layer *layers; /* [n_layer] */
    kern_blas *blas;
    prefill_attn_fn prefill_attn; /* kern_attn_prefill_mma, _tc or (fp32) kern_attn_prefill */
    void **allocs;                /* every weight and logit buffer, freed by cuda_model_free */
    int n_allocs, cap_allocs;
    uint64_t weight_bytes;
    /* activations for ws_rows token rows (grown on demand by cuda_ensure_rows) */
    int ws_rows;
    float *x;          /* [rows][n_embd] residual stream */
    float *xn;         /* [rows][n_embd] normalized input of a sub-block */
    float *q, *att;    /* [rows][n_head*head_dim] */
    float *k, *v;      /* [rows][n_head_kv*head_dim] */
    float *tmp;        /* [rows][n_embd] output of Wo / Wdown before the residual add */
    float *gate, *up;  /* [rows][n_ff] */
    uint16_t *xb;      /* [rows][max(n_embd, n_head*head_dim, n_ff)] bf16 GEMM input */
    int32_t *d_tokens; /* [rows] */
    uint8_t *d_z;      /* [n_seq][n_layer][n_head_kv] masks of the current batch */
    int z_cap;         /* bytes of d_z */
    /* LM head, CUDA_LOGIT_CHUNK rows at a time */
    int32_t *d_rows; /* [CUDA_LOGIT_CHUNK] */
    float *lx;       /* [CUDA_LOGIT_CHUNK][n_embd] */
    uint16_t *lxb;   /* [CUDA_LOGIT_CHUNK][n_embd] */
    float *d_logits; /* [CUDA_LOGIT_CHUNK][n_vocab] */
};

int cuda_ensure_rows(cuda_model *g, int rows, char *err, size_t errlen);
/* g->x [n][n_embd] = embeddings of tokens (ids checked on the host). */
int cuda_embed(cuda_model *g, const int32_t *tokens, int n, char *err, size_t errlen);
/* From g->x: attention RMSNorm, q/k/v GEMMs into g->q, g->k, g->v, qwen3 q/k norms (no RoPE). */
int cuda_qkv(cuda_model *g, int l, int rows, char *err, size_t errlen);
/* From g->att: x += Wo·att, then the SwiGLU FFN sub-block on g->x. */
int cuda_attn_out_ffn(cuda_model *g, int l, int rows, char *err, size_t errlen);
/* Final RMSNorm + LM head of rows of g->x; logits [n_rows][n_vocab] host. */
int cuda_logits(cuda_model *g, const int *rows, int n_rows, float *logits, char *err, size_t errlen);

/* backend_cuda_kv.c: the cache must be empty, made for n_seq sequences of at least n_tokens
 * positions, and every masks[s] (NULL: all full) equal to its mask. */
int cuda_kv_check(const cuda_kv *kv, const attn_mask *const *masks, int n_seq, int n_tokens, char *err,
                  size_t errlen);
/* Store layer l's keys/values k, v [n_seq][n_tokens][n_head_kv*head_dim] at positions 0..n_tokens-1. */
int cuda_kv_store_prefill(cuda_kv *kv, int l, const float *d_k, const float *d_v, int n_tokens, char *err,
                          size_t errlen);
void cuda_kv_set_n_past(cuda_kv *kv, int n_past);

#endif /* BOSCH_HAVE_CUDA */
#endif
