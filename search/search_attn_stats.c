/* search_attn_stats.c — attention-statistics head rankings (docs/design.md §7; the registry rows
 * locality and echo, search_methods.h), computed once from the model's weights with every head full (no
 * objective evaluations):
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
 * The attention probabilities come from the engine (forward.h forward_attn_probs: the real forward
 * with all heads full, its q and k in the model's precision, softmax over keys j <= i with scale
 * 1/sqrt(head_dim)); this file only sums them into the two scores.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "forward.h"
#include "rng.h"
#include "search_methods.h"

enum { LOCALITY, ECHO }; /* the two rankings of this file */

/* Per-query-head sums over the visited queries of one sequence (forward_attn_probs visits them
 * layer by layer, head by head, in ascending position). */
typedef struct {
    int method, window, sinks, rep, n_head;
    double *sum; /* [L][n_head] */
    int *cnt;    /* [L][n_head] */
} seq_acc;

static void visit_probs(void *user, int layer, int h, int i, const float *p) {
    seq_acc *a = user;
    size_t u = (size_t)layer * a->n_head + h;
    if (a->method == LOCALITY) {
        double in = 0;
        for (int j = 0; j <= i; j++)
            if (j > i - a->window || j < a->sinks) in += p[j];
        a->sum[u] += in;
    } else { /* echo + induction on the repeated half */
        a->sum[u] += p[i - a->rep] + p[i - a->rep + 1];
    }
    a->cnt[u]++;
}

/* Accumulate per-query-head statistics over one token sequence into acc[L][n_head]. */
static int sequence_stats(const model *m, const int32_t *tokens, int T, int method, int window, int sinks,
                          int rep, double *acc, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    const size_t n = (size_t)hp->n_layer * hp->n_head;
    seq_acc a = {method, window, sinks, rep, hp->n_head, calloc(n, sizeof(double)), calloc(n, sizeof(int))};
    char why[384] = "";
    int rc = -1;
    if (!a.sum || !a.cnt) {
        snprintf(err, errlen, "search: attention statistics: out of memory (%d tokens)", T);
    } else {
        /* locality: queries i >= window + sinks; echo: second-copy positions rep + 1 .. 2*rep - 2 */
        int lo = method == LOCALITY ? window + sinks : rep + 1;
        int hi = method == LOCALITY ? T : 2 * rep - 1;
        rc = forward_attn_probs(m, tokens, T, lo, hi, visit_probs, &a, why, sizeof why);
        if (rc) snprintf(err, errlen, "search: attention statistics: %s", why);
    }
    for (size_t u = 0; rc == 0 && u < n; u++) acc[u] += a.cnt[u] ? a.sum[u] / a.cnt[u] : (method == LOCALITY);
    free(a.sum), free(a.cnt);
    return rc;
}

/* The ranking `method` (locality or echo) of in->model into importance[n_layer][n_head_kv]. */
static int attn_importance(const search_rank_input *in, int method, double *importance, char *err,
                           size_t errlen) {
    const model *m = in->model;
    if (!m) {
        snprintf(err, errlen, "search: the %s ranking needs the model",
                 method == LOCALITY ? "locality" : "echo");
        return -1;
    }
    const model_hparams *hp = &m->hp;
    const search_config *cfg = in->cfg;
    int group = hp->n_head / hp->n_head_kv;
    double *acc = calloc((size_t)hp->n_layer * hp->n_head, sizeof(double));
    if (!acc) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    int n_seq = 0, rc = 0;
    if (method == LOCALITY) {
        if (!in->samples || in->n_samples < 1) {
            snprintf(err, errlen, "search: locality needs the calibration tokens (objective has none)");
            free(acc);
            return -1;
        }
        for (int s = 0; !rc && s < in->n_samples && s < 2; s++, n_seq++)
            rc = sequence_stats(m, in->samples[s].tokens, in->samples[s].answer_start, method, cfg->window,
                                cfg->sinks, 0, acc, err, errlen);
    } else {
        const int rep = 256;
        int32_t *tok = malloc(sizeof(int32_t) * 2 * rep);
        if (!tok) rc = -1;
        rng_state r;
        rng_seed(&r, rng_derive(cfg->seed, 77));
        int lo = hp->n_vocab > 41000 ? 1000 : 0, hi = hp->n_vocab > 41000 ? 40000 : hp->n_vocab;
        for (int t = 0; tok && t < rep; t++)
            tok[t] = tok[t + rep] = lo + (int32_t)rng_below(&r, (uint64_t)(hi - lo));
        if (!rc) rc = sequence_stats(m, tok, 2 * rep, method, cfg->window, cfg->sinks, rep, acc, err, errlen);
        n_seq = 1;
        free(tok);
    }
    for (int l = 0; !rc && l < hp->n_layer; l++)
        for (int kv = 0; kv < hp->n_head_kv; kv++) {
            double agg = method == LOCALITY ? INFINITY : -INFINITY;
            for (int g = 0; g < group; g++) {
                double v = acc[(size_t)l * hp->n_head + kv * group + g] / n_seq;
                agg = method == LOCALITY ? fmin(agg, v) : fmax(agg, v);
            }
            importance[(size_t)l * hp->n_head_kv + kv] = method == LOCALITY ? 1.0 - agg : agg;
        }
    free(acc);
    return rc;
}

int search_rank_locality(const search_rank_input *in, double *importance, char *err, size_t errlen) {
    return attn_importance(in, LOCALITY, importance, err, errlen);
}

int search_rank_echo(const search_rank_input *in, double *importance, char *err, size_t errlen) {
    return attn_importance(in, ECHO, importance, err, errlen);
}
