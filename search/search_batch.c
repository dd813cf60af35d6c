/* search_batch.c — batched evaluation (search.h, search_set_batch): the look-ahead of each phase
 * and the answers of the last batch. docs/distributed.md explains why the trace cannot depend on
 * the batch: every answer is a function of its mask alone (engine/eval.h: prefix reuse is bitwise
 * identical to a from-scratch evaluation), and the search takes the answers in its own order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

int search_set_batch(search_state *st, int batch) {
    if (batch < 1) return -1;
    search_batch_free(st);
    st->batch = batch;
    if (batch == 1) return 0;
    const size_t n = (size_t)batch, body = (size_t)st->L * st->H;
    st->batch_hash = calloc(n, sizeof *st->batch_hash);
    st->batch_eval = calloc(n, sizeof *st->batch_eval);
    st->batch_bodies = malloc(n * body);
    if (!st->batch_hash || !st->batch_eval || !st->batch_bodies) {
        search_batch_free(st);
        st->batch = 1;
        return -1;
    }
    return 0;
}

long search_batch_wasted(const search_state *st) {
    return st->batch_scored - st->batch_used;
}

void search_batch_free(search_state *st) {
    free(st->batch_hash);
    free(st->batch_eval);
    free(st->batch_nll);
    free(st->batch_bodies);
    st->batch_hash = NULL, st->batch_eval = NULL, st->batch_nll = NULL, st->batch_bodies = NULL;
    st->n_batch = 0, st->batch_nll_n = 0;
}

/* ---- look-ahead ------------------------------------------------------------------------------ */

static void body_set_row(uint8_t *z, int H, int layer, uint64_t swa_bits) {
    for (int h = 0; h < H; h++) z[(size_t)layer * H + h] = (swa_bits >> h & 1) ? ATTN_SWA : ATTN_FULL;
}

/* The optimizer sub-search (stage 1 probes, stage 3 without head scores). */
static int ahead_opt(search_state *st, uint8_t *bodies, int max) {
    const size_t nb = (size_t)st->L * st->H;
    uint64_t *sols = malloc(sizeof(uint64_t) * (size_t)max * st->opt_m);
    if (!sols) return 0;
    int n = opt_peek(st->opt, sols, max);
    const int s1 = st->phase == PH_S1_LAYER;
    for (int j = 0; j < n; j++) {
        uint8_t *z = bodies + j * nb;
        if (s1 && st->cfg.stage1_independent)
            memset(z, ATTN_FULL, nb);
        else
            memcpy(z, st->result.z, nb);
        for (int i = 0; i < st->opt_m; i++)
            body_set_row(z, st->H, st->opt_layers[i], sols[(size_t)j * st->opt_m + i]);
    }
    free(sols);
    return n;
}

/* The guided swap sub-search (stage 3 with head scores, the refinement). */
static int ahead_swap(search_state *st, uint8_t *bodies, int max) {
    const size_t nb = (size_t)st->L * st->H;
    uint8_t *sols = malloc((size_t)max * st->sw_n);
    if (!sols) return 0;
    int n = swap_peek(st->sw, sols, max);
    for (int j = 0; j < n; j++) {
        uint8_t *z = bodies + j * nb;
        memcpy(z, st->result.z, nb);
        for (int k = 0; k < st->sw_n; k++)
            z[st->sw_units[k]] = sols[(size_t)j * st->sw_n + k] ? ATTN_SWA : ATTN_FULL;
    }
    free(sols);
    return n;
}

/* Masks with one SWA KV head (the singles pass) or one SWA layer / head (the baselines). */
static int ahead_singles(search_state *st, uint8_t *bodies, int max) {
    const size_t nb = (size_t)st->L * st->H;
    int n = 0;
    if (st->phase == PH_S1_SINGLES) {
        for (int u = st->single_pos - 1; u >= 0 && n < max; u--)
            if (isnan(st->head_drop[u])) {
                memset(bodies + n * nb, ATTN_FULL, nb);
                bodies[n++ * nb + u] = ATTN_SWA;
            }
        return n;
    }
    for (long i = st->bl_index + 1; i < st->bl_total && n < max; i++, n++)
        search_baseline_probe_mask(st, i, bodies + n * nb);
    return n;
}

/* Up to max candidates the search asks after st->cand if none improves, into bodies[max][L*H]. */
static int look_ahead(search_state *st, uint8_t *bodies, int max) {
    switch (st->phase) {
    case PH_S1_LAYER:
        return st->opt ? ahead_opt(st, bodies, max) : 0;
    case PH_S3_GROUP:
        if (st->sw) return ahead_swap(st, bodies, max);
        return st->opt ? ahead_opt(st, bodies, max) : 0;
    case PH_REFINE:
        return st->sw ? ahead_swap(st, bodies, max) : 0;
    case PH_S1_SINGLES:
    case PH_BL_EVAL: /* a baseline with probes */
        return ahead_singles(st, bodies, max);
    default:
        return 0;
    }
}

/* ---- the answers ------------------------------------------------------------------------------ */

/* Keep answer j of the batch (its sample NLLs copied: the buffer grows as needed and the answers
 * kept before are re-pointed). 0 or -1 (OOM). */
static int keep_answer(search_state *st, int j, const attn_mask *mask, const search_eval *ev) {
    const int ns = ev->sample_nll && ev->n_samples > 0 ? ev->n_samples : 0;
    if (ns > st->batch_nll_n) {
        double *p = malloc(sizeof(double) * (size_t)ns * st->batch);
        if (!p) return -1;
        for (int i = 0; i < j; i++)
            if (st->batch_eval[i].sample_nll) {
                memcpy(p + (size_t)i * ns, st->batch_eval[i].sample_nll,
                       sizeof(double) * (size_t)st->batch_eval[i].n_samples);
                st->batch_eval[i].sample_nll = p + (size_t)i * ns;
            }
        free(st->batch_nll);
        st->batch_nll = p, st->batch_nll_n = ns;
    }
    st->batch_hash[j] = mask_hash(mask);
    st->batch_eval[j] = *ev;
    st->batch_eval[j].sample_nll = NULL, st->batch_eval[j].n_samples = 0;
    if (ns) {
        double *dst = st->batch_nll + (size_t)j * st->batch_nll_n;
        memcpy(dst, ev->sample_nll, sizeof(double) * (size_t)ns);
        st->batch_eval[j].sample_nll = dst, st->batch_eval[j].n_samples = ns;
    }
    st->n_batch = j + 1;
    st->batch_scored++;
    return 0;
}

/* Score the batch: score_batch, or the sequential default (score() one mask after the other). */
static int score_all(search_state *st, const attn_mask *masks, const attn_mask **mp, const int *mb, int n,
                     search_eval *ev, char *err, size_t errlen) {
    const search_objective *obj = st->obj;
    if (obj->score_batch) {
        int rc = obj->score_batch(obj->ctx, mp, mb, n, ev, err, errlen);
        for (int j = 0; j < n && !rc; j++)
            if (keep_answer(st, j, &masks[j], &ev[j])) {
                snprintf(err, errlen, "search: out of memory");
                rc = -1;
            }
        return rc;
    }
    for (int j = 0; j < n; j++) {
        int rc = obj->score(obj->ctx, mp[j], mb[j], &ev[j], err, errlen);
        if (rc) return rc;
        if (keep_answer(st, j, &masks[j], &ev[j])) return snprintf(err, errlen, "search: out of memory"), -1;
    }
    return 0;
}

/* The held answer for hash h: 1 (into *out), or 0. */
static int take_answer(search_state *st, uint64_t h, search_eval *out) {
    for (int j = 0; j < st->n_batch; j++)
        if (st->batch_hash[j] == h) {
            *out = st->batch_eval[j];
            st->batch_used++;
            return 1;
        }
    return 0;
}

int search_batch_score(search_state *st, int make_base, search_eval *out, char *err, size_t errlen) {
    const search_objective *obj = st->obj;
    if (st->batch <= 1) return obj->score(obj->ctx, &st->cand, make_base, out, err, errlen);
    if (take_answer(st, mask_hash(&st->cand), out)) return 0;
    const size_t nb = (size_t)st->L * st->H;
    memcpy(st->batch_bodies, st->cand.z, nb);
    int n = 1 + look_ahead(st, st->batch_bodies + nb, st->batch - 1);
    attn_mask *masks = malloc(sizeof *masks * (size_t)n);
    const attn_mask **mp = malloc(sizeof *mp * (size_t)n);
    int *mb = malloc(sizeof *mb * (size_t)n);
    search_eval *ev = calloc((size_t)n, sizeof *ev);
    int rc = -1;
    if (!masks || !mp || !mb || !ev) {
        snprintf(err, errlen, "search: out of memory for a batch of %d", n);
        goto out;
    }
    for (int j = 0; j < n; j++) {
        masks[j] = st->cand;
        masks[j].z = st->batch_bodies + j * nb;
        mp[j] = &masks[j];
        mb[j] = make_base;
    }
    st->n_batch = 0;
    rc = score_all(st, masks, mp, mb, n, ev, err, errlen);
    if (rc) st->n_batch = 0;
    if (rc == 0 && !take_answer(st, mask_hash(&st->cand), out)) {
        snprintf(err, errlen, "search: the batch lost its first mask");
        rc = -1;
    }
out:
    free(masks), free(mp), free(mb), free(ev);
    return rc;
}
