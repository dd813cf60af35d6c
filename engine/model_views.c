/* model_views.c — the two views of a loaded model's weights besides fp32 (model.h): the GEMM
 * weights reordered for oneDNN in the model's precision, and the file's own blocks for decode. */
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "model_internal.h"
#include "qdot.h"
#include "quant.h"

/* q <- tensor `name` as stored; 0, or -1 when it is absent or its type has no dot product here. */
static int map_qmat(const gguf_file *g, const char *name, model_qmat *q) {
    const gguf_tensor *t = gguf_find_tensor(g, name);
    memset(q, 0, sizeof *q);
    if (!t || !qdot_type_supported(t->type)) return -1;
    q->data = t->data;
    q->type = t->type;
    q->n_cols = (int)t->ne[0];
    q->n_rows = (int)t->ne[1];
    q->row_bytes = quant_row_bytes(t->type, t->ne[0]);
    return 0;
}

int model_map_blocks(model *m) {
    const gguf_file *g = m->gguf;
    const model_arch *a = m->hp.arch;
    char name[96], embd[96];
    int ok = map_qmat(g, arch_tensor_name(a, ARCH_T_OUTPUT, 0, name, sizeof name), &m->q_output) == 0 ||
             map_qmat(g, arch_tensor_name(a, ARCH_T_TOKEN_EMBD, 0, embd, sizeof embd), &m->q_output) == 0;
    static const arch_tensor mats[7] = {ARCH_T_ATTN_Q,   ARCH_T_ATTN_K, ARCH_T_ATTN_V,  ARCH_T_ATTN_OUT,
                                        ARCH_T_FFN_GATE, ARCH_T_FFN_UP, ARCH_T_FFN_DOWN};
    for (int l = 0; ok && l < m->hp.n_layer; l++) {
        model_layer *L = &m->layers[l];
        model_qmat *dst[7] = {&L->q_wq, &L->q_wk, &L->q_wv, &L->q_wo, &L->q_gate, &L->q_up, &L->q_down};
        for (int i = 0; ok && i < 7; i++)
            ok = map_qmat(g, arch_tensor_name(a, mats[i], l, name, sizeof name), dst[i]) == 0;
    }
    return ok ? 0 : -1;
}

int model_prepare_gemm(model *m, gemm_precision prec, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    const int E = hp->n_embd, F = hp->n_ff, Q = hp->n_head * hp->head_dim, KV = hp->n_head_kv * hp->head_dim;
    if (gemm_ctx_create(&m->gemm, prec, err, errlen)) return -1;
    m->precision = prec;
    for (int l = 0; l < hp->n_layer; l++) {
        model_layer *L = &m->layers[l];
        const float *qkv[3] = {L->wq, L->wk, L->wv}, *gu[2] = {L->w_gate, L->w_up};
        const int qkv_rows[3] = {Q, KV, KV}, gu_rows[2] = {F, F};
        if (gemm_weight_create(&L->g_qkv, m->gemm, qkv, qkv_rows, 3, E, err, errlen) ||
            gemm_weight_create(&L->g_o, m->gemm, (const float *const *)&L->wo, &E, 1, Q, err, errlen) ||
            gemm_weight_create(&L->g_gate_up, m->gemm, gu, gu_rows, 2, E, err, errlen) ||
            gemm_weight_create(&L->g_down, m->gemm, (const float *const *)&L->w_down, &E, 1, F, err, errlen))
            return -1;
    }
    const int V = hp->n_vocab;
    return gemm_weight_create(&m->g_output, m->gemm, (const float *const *)&m->output, &V, 1, E, err, errlen);
}

void model_free_views(model *m) {
    for (int l = 0; m->layers && l < m->hp.n_layer; l++) {
        model_layer *L = &m->layers[l];
        gemm_weight_free(L->g_qkv);
        gemm_weight_free(L->g_o);
        gemm_weight_free(L->g_gate_up);
        gemm_weight_free(L->g_down);
    }
    gemm_weight_free(m->g_output);
    gemm_ctx_free(m->gemm);
}

uint64_t model_gemm_bytes(const model *m) {
    uint64_t b = m->g_output ? gemm_weight_bytes(m->g_output) : 0;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const model_layer *L = &m->layers[l];
        if (L->g_qkv)
            b += gemm_weight_bytes(L->g_qkv) + gemm_weight_bytes(L->g_o) + gemm_weight_bytes(L->g_gate_up) +
                 gemm_weight_bytes(L->g_down);
    }
    return b;
}
