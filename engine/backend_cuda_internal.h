/* backend_cuda_internal.h — what the GPU backend's files share (not public): the model's device
 * copy (backend_cuda.c), the KV cache's calls the forward makes (backend_cuda_kv.c), for the
 * forward (backend_cuda_forward.c). */
#ifndef BOSCH_BACKEND_CUDA_INTERNAL_H
#define BOSCH_BACKEND_CUDA_INTERNAL_H

#ifdef BOSCH_HAVE_CUDA

#include "backend_cuda.h"
#include "kernels/kernels.h"
#include "err.h" /* base_seterr: every message of the GPU backend */

#define CUDA_LOGIT_CHUNK 256 /* rows per LM-head GEMM: bounds the device logits buffer */

typedef struct {
    float *attn_norm, *ffn_norm; /* [n_embd] fp32 */
    float *q_norm, *k_norm;      /* [head_dim] fp32 when arch->qk_norm, else NULL */
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

/* backend_cuda.c: activation scratch for `rows` token rows (grown, never shrunk). */
int cuda_ensure_rows(cuda_model *g, int rows, char *err, size_t errlen);

/* backend_cuda_kv.c, for the forward (backend_cuda_forward.c). The cache must be empty, made for
 * n_seq sequences of at least n_tokens positions, and every masks[s] (NULL: all full) equal to its
 * mask. */
int cuda_kv_check(const cuda_kv *kv, const attn_mask *const *masks, int n_seq, int n_tokens, char *err,
                  size_t errlen);
/* Store layer l's keys/values k, v [n_seq][n_tokens][n_head_kv*head_dim] at positions 0..n_tokens-1. */
int cuda_kv_store_prefill(cuda_kv *kv, int l, const float *d_k, const float *d_v, int n_tokens, char *err,
                          size_t errlen);
/* Decode at position pos of every sequence: store layer l's k, v [n_seq][n_head_kv*head_dim], then
 * att [n_seq][n_head*head_dim] = each row's query q over the slots its sequence sees
 * (kern_attn_decode_split, or kern_attn_decode for GQA groups over 8). */
int cuda_kv_attend_decode(cuda_kv *kv, int l, int pos, const float *d_q, const float *d_k, const float *d_v,
                          float *d_att, int n_head, char *err, size_t errlen);
int cuda_kv_n_seq(const cuda_kv *kv);
int cuda_kv_n_ctx(const cuda_kv *kv);
void cuda_kv_set_n_past(cuda_kv *kv, int n_past);

#endif /* BOSCH_HAVE_CUDA */
#endif
