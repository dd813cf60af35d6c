/* search_attn_stats.c — attention-statistics head rankings (DESIGN.md §7), computed once from the
 * model's weights with every head full (no objective evaluations):
 *
 *  - LOCALITY: for each query head, the share of its attention probability that falls inside the
 *    SWA visibility (keys i-window < j <= i, plus sinks j < sinks), averaged over query positions
 *    i >= window + sinks (where the window actually cuts) of up to 2 calibration samples. A KV head
 *    scores the minimum over its GQA group (it can go local only if all its query heads are local);
 *    importance = 1 - locality. Source: the "attention locality" criterion of head-level
 *    hybridization studies (e.g. DuoAttention's motivation, Xiao et al. 2024).
 *  - ECHO: RazorAttention-style retrieval score (Tang et al. 2024, "RazorAttention"): on a random
 *    token sequence r_1..r_n repeated twice, for second-copy positions i = n + t (t = 1..n-1) the
 *    echo score is the attention probability on the earlier copy of the same token (position
 *    i - n) and the induction score is the probability on the token after it (i - n + 1);
 *    score = mean echo + mean induction. A KV head scores the maximum over its GQA group;
 *    importance = score (retrieval heads stay full). n = 256, tokens uniform in [1000, 40000)
 *    (or the vocabulary, if smaller), drawn from the search seed.
 *
 * The residual stream entering each layer comes from forward_layer (all heads full); q and k come
 * from the engine (forward_layer_qk: the same RMSNorm, projection, qwen3 q/k norms and RoPE as the
 * forward pass, in the model's precision), and attention probabilities are a plain softmax over
 * keys j <= i with scale 1/sqrt(head_dim).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "ops.h"
#include "rng.h"
#include "search_internal.h"

typedef struct {
    const model *m;
    int T;
    float *x, *q, *k; /* [T][n_embd], [T][n_head*hd], [T][n_head_kv*hd] */
    float *p;         /* [T] attention probabilities of one query */
} attn_ws;

/* Probabilities p[0..i] of query head h at position i over keys j <= i. */
static void attn_probs(attn_ws *ws, int h, int i) {
    const model_hparams *hp = &ws->m->hp;
    int hd = hp->head_dim, kvh = h / (hp->n_head / hp->n_head_kv);
    const float *q = ws->q + (size_t)i * hp->n_head * hd + (size_t)h * hd;
    float scale = 1.0f / sqrtf((float)hd);
    for (int j = 0; j <= i; j++) {
        const float *k = ws->k + (size_t)j * hp->n_head_kv * hd + (size_t)kvh * hd;
        float s = 0;
        for (int d = 0; d < hd; d++) s += q[d] * k[d];
        ws->p[j] = s * scale;
    }
    ops_softmax(ws->p, i + 1);
}

/* Accumulate per-query-head statistics over one token sequence into acc[L][n_head]. */
static int sequence_stats(const model *m, const int32_t *tokens, int T, int method, int window, int sinks,
                          int rep, double *acc, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    attn_ws ws = {m, T, NULL, NULL, NULL, NULL};
    ws.x = malloc(sizeof(float) * (size_t)T * hp->n_embd);
    ws.q = malloc(sizeof(float) * (size_t)T * hp->n_head * hp->head_dim);
    ws.k = malloc(sizeof(float) * (size_t)T * hp->n_head_kv * hp->head_dim);
    ws.p = malloc(sizeof(float) * (size_t)T);
    forward_ws *fws = forward_ws_create(hp, T);
    attn_mask full = {0};
    int ok = ws.x && ws.q && ws.k && ws.p && fws &&
             !mask_init(&full, hp->n_layer, hp->n_head_kv, window, sinks, ATTN_FULL);
    if (ok && forward_embed(m, tokens, T, ws.x)) {
        snprintf(err, errlen, "search: attention statistics: token id out of range");
        ok = 0;
    } else if (!ok) {
        snprintf(err, errlen, "search: attention statistics: out of memory (%d tokens)", T);
    }
    for (int l = 0; ok && l < hp->n_layer; l++) {
        if (forward_layer_qk(m, l, ws.x, T, ws.q, ws.k, fws)) {
            snprintf(err, errlen, "search: attention statistics: layer %d: %s", l, forward_ws_error(fws));
            ok = 0;
            break;
        }
        for (int h = 0; h < hp->n_head; h++) {
            double sum = 0;
            int cnt = 0;
            if (method == SEARCH_METHOD_LOCALITY) {
                for (int i = window + sinks; i < T; i++) {
                    attn_probs(&ws, h, i);
                    double in = 0;
                    for (int j = 0; j <= i; j++)
                        if (j > i - window || j < sinks) in += ws.p[j];
                    sum += in, cnt++;
                }
            } else { /* echo + induction on the repeated half */
                for (int t = 1; t + 1 < rep; t++) {
                    int i = rep + t;
                    attn_probs(&ws, h, i);
                    sum += ws.p[i - rep] + ws.p[i - rep + 1];
                    cnt++;
                }
            }
            acc[(size_t)l * hp->n_head + h] += cnt ? sum / cnt : (method == SEARCH_METHOD_LOCALITY);
        }
        if (forward_layer(m, l, &full, ws.x, T, 0, NULL, fws)) {
            snprintf(err, errlen, "search: attention statistics: forward_layer failed at layer %d", l);
            ok = 0;
        }
    }
    mask_free(&full);
    forward_ws_free(fws);
    free(ws.x), free(ws.q), free(ws.k), free(ws.p);
    return ok ? 0 : -1;
}

int search_attn_importance(search_state *st, char *err, size_t errlen) {
    const model *m = st->mdl;
    const model_hparams *hp = &m->hp;
    int method = st->cfg.method, group = hp->n_head / hp->n_head_kv;
    double *acc = calloc((size_t)hp->n_layer * hp->n_head, sizeof(double));
    if (!acc) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    int n_seq = 0, rc = 0;
    if (method == SEARCH_METHOD_LOCALITY) {
        if (!st->obj->samples || st->obj->n_samples < 1) {
            snprintf(err, errlen, "search: locality needs the calibration tokens (objective has none)");
            free(acc);
            return -1;
        }
        for (int s = 0; !rc && s < st->obj->n_samples && s < 2; s++, n_seq++)
            rc = sequence_stats(m, st->obj->samples[s].tokens, st->obj->samples[s].answer_start, method,
                                st->cfg.window, st->cfg.sinks, 0, acc, err, errlen);
    } else {
        const int rep = 256;
        int32_t *tok = malloc(sizeof(int32_t) * 2 * rep);
        if (!tok) rc = -1;
        rng_state r;
        rng_seed(&r, rng_derive(st->cfg.seed, 77));
        int lo = hp->n_vocab > 41000 ? 1000 : 0, hi = hp->n_vocab > 41000 ? 40000 : hp->n_vocab;
        for (int t = 0; tok && t < rep; t++)
            tok[t] = tok[t + rep] = lo + (int32_t)rng_below(&r, (uint64_t)(hi - lo));
        if (!rc)
            rc =
                sequence_stats(m, tok, 2 * rep, method, st->cfg.window, st->cfg.sinks, rep, acc, err, errlen);
        n_seq = 1;
        free(tok);
    }
    for (int l = 0; !rc && l < hp->n_layer; l++)
        for (int kv = 0; kv < hp->n_head_kv; kv++) {
            double agg = method == SEARCH_METHOD_LOCALITY ? INFINITY : -INFINITY;
            for (int g = 0; g < group; g++) {
                double v = acc[(size_t)l * hp->n_head + kv * group + g] / n_seq;
                agg = method == SEARCH_METHOD_LOCALITY ? fmin(agg, v) : fmax(agg, v);
            }
            st->importance[(size_t)l * hp->n_head_kv + kv] =
                method == SEARCH_METHOD_LOCALITY ? 1.0 - agg : agg;
        }
    free(acc);
    return rc;
}
