/* forward_attn.c — attention probabilities of the real forward, for attention statistics
 * (forward.h: forward_attn_probs). q and k come from forward_layer_qk, the residual stream from
 * forward_layer; only the probabilities, which the fused attention kernels never materialize, are
 * computed here: a plain softmax over keys j <= i with scale 1/sqrt(head_dim). The residual stream
 * goes through each layer with every head full, or as a mask says (forward_attn_probs_mask). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "forward.h"
#include "ops.h"

typedef struct {
    const model_hparams *hp;
    float *x, *q, *k; /* [T][n_embd], [T][n_head*hd], [T][n_head_kv*hd] */
    float *p;         /* [T] attention probabilities of one query */
} attn_bufs;

/* Probabilities p[0..i] of query head h at position i over keys j <= i. */
static void attn_probs(attn_bufs *b, int h, int i) {
    const model_hparams *hp = b->hp;
    int hd = hp->head_dim, kvh = h / (hp->n_head / hp->n_head_kv);
    const float *q = b->q + (size_t)i * hp->n_head * hd + (size_t)h * hd;
    float scale = 1.0f / sqrtf((float)hd);
    for (int j = 0; j <= i; j++) {
        const float *k = b->k + (size_t)j * hp->n_head_kv * hd + (size_t)kvh * hd;
        float s = 0;
        for (int d = 0; d < hd; d++) s += q[d] * k[d];
        b->p[j] = s * scale;
    }
    ops_softmax(b->p, i + 1);
}

/* The layers in order: probabilities of every visited query, then the layer itself. */
static int attn_layers(const model *m, const attn_mask *mask, attn_bufs *b, int T, int lo, int hi,
                       forward_attn_visit visit, void *user, forward_ws *fws, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    for (int l = 0; l < hp->n_layer; l++) {
        if (forward_layer_qk(m, l, b->x, T, b->q, b->k, fws)) {
            snprintf(err, errlen, "layer %d: %s", l, forward_ws_error(fws));
            return -1;
        }
        for (int h = 0; h < hp->n_head; h++)
            for (int i = lo; i < hi; i++) {
                attn_probs(b, h, i);
                visit(user, l, h, i, b->p);
            }
        if (forward_layer(m, l, mask, b->x, T, 0, NULL, fws)) {
            snprintf(err, errlen, "forward_layer failed at layer %d", l);
            return -1;
        }
    }
    return 0;
}

int forward_attn_probs_mask(const model *m, const attn_mask *mask, const int32_t *tokens, int n_tokens,
                            int pos_lo, int pos_hi, forward_attn_visit visit, void *user, char *err,
                            size_t errlen) {
    const model_hparams *hp = &m->hp;
    const int T = n_tokens;
    attn_bufs b = {hp, NULL, NULL, NULL, NULL};
    b.x = malloc(sizeof(float) * (size_t)T * hp->n_embd);
    b.q = malloc(sizeof(float) * (size_t)T * hp->n_head * hp->head_dim);
    b.k = malloc(sizeof(float) * (size_t)T * hp->n_head_kv * hp->head_dim);
    b.p = malloc(sizeof(float) * (size_t)T);
    forward_ws *fws = forward_ws_create(hp, T);
    int rc = -1;
    if (!b.x || !b.q || !b.k || !b.p || !fws)
        snprintf(err, errlen, "out of memory (%d tokens)", T);
    else if (mask && (mask->n_layer != hp->n_layer || mask->n_head_kv != hp->n_head_kv))
        snprintf(err, errlen, "mask is %d x %d, the model %d x %d", mask->n_layer, mask->n_head_kv,
                 hp->n_layer, hp->n_head_kv);
    else if (forward_embed(m, tokens, T, b.x))
        snprintf(err, errlen, "token id out of range");
    else
        rc = attn_layers(m, mask, &b, T, pos_lo < 0 ? 0 : pos_lo, pos_hi < T ? pos_hi : T, visit, user, fws,
                         err, errlen);
    forward_ws_free(fws);
    free(b.x), free(b.q), free(b.k), free(b.p);
    return rc;
}

int forward_attn_probs(const model *m, const int32_t *tokens, int n_tokens, int pos_lo, int pos_hi,
                       forward_attn_visit visit, void *user, char *err, size_t errlen) {
    return forward_attn_probs_mask(m, NULL, tokens, n_tokens, pos_lo, pos_hi, visit, user, err, errlen);
}
