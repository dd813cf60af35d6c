/* search_baseline.c — the comparison baselines of DESIGN.md §7, run through the same step/event
 * machinery as BOSCH (stage 0). Every baseline first scores the all-full and all-SWA masks (the
 * normalizers), then its own probes, then its final mask.
 *
 * Layer-level (whole layers go SWA; n = round(ratio * n_layer) SWA layers, so the achieved head
 * ratio is n / n_layer, which can differ from ratio by < 1/(2 n_layer)):
 *  - RAND: n layers drawn uniformly without replacement (xoshiro256** seeded with the seed);
 *    the usual random-placement control of layer-level hybrid studies.
 *  - BME (begin-middle-end): the F = n_layer - n full layers are split into three blocks of
 *    ceil/round/floor(F/3) layers placed at the beginning, the centre and the end of the stack;
 *    every other layer is SWA. A fixed pattern keeping global attention at the input, the middle
 *    and the output.
 *  - INTR (interleaved): the F full layers evenly spaced, layer floor((j + 0.5) * n_layer / F) for
 *    j < F; the periodic local/global interleaving of hybrid models such as Gemma 2/3.
 *  - NLL-guided (Tang et al. 2026, "NLL-Guided Full-Attention Layer Selection for Training-Free
 *    Sliding-Window Adaptation", arXiv:2606.27791): for each layer l, the mean answer-token NLL on
 *    the calibration split when layer l alone is SWA, minus the all-full NLL; the n layers with
 *    the smallest increase go SWA (ties: lower layer first).
 * Head-level static rankings (importance per KV head, higher = keep full; the round(ratio*L*H)
 * least important KV heads go SWA, search_cut_heads):
 *  - ABLATION: importance = S_full - S(only this KV head SWA), raw scores on the calibration split
 *    (single-head ablation drop, as in head-pruning studies, Michel et al. 2019).
 *  - FISHER: importance = mean over calibration samples of (NLL_s(gate 0) - NLL_s(gate 1))^2, the
 *    squared finite difference of the per-sample answer NLL with respect to a head's full/SWA gate
 *    (gate 1 = full, 0 = SWA, step 1: the engine has no fractional gate), i.e. the empirical
 *    Fisher information of the gate (Molchanov et al. 2019 use the same squared-gradient score).
 *  - LOCALITY, ECHO: attention-statistics rankings (search_attn_stats.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_internal.h"

int search_attn_importance(search_state *st, char *err, size_t errlen); /* search_attn_stats.c */

int search_layer_pattern(search_method method, int n_layer, double ratio, uint64_t seed,
                         const double *importance, uint8_t *swa_layer) {
    int L = n_layer;
    if (L < 1 || !(ratio >= 0 && ratio <= 1) || !swa_layer) return -1;
    int n = (int)lround(ratio * L), F = L - n;
    memset(swa_layer, 0, (size_t)L);
    switch (method) {
    case SEARCH_METHOD_RAND: {
        int *perm = malloc(sizeof(int) * (size_t)L);
        if (!perm) return -1;
        for (int i = 0; i < L; i++) perm[i] = i;
        rng_state r;
        rng_seed(&r, seed);
        for (int i = 0; i < n; i++) {
            int j = i + (int)rng_below(&r, (uint64_t)(L - i));
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            swa_layer[perm[i]] = 1;
        }
        free(perm);
        return 0;
    }
    case SEARCH_METHOD_BME: {
        memset(swa_layer, 1, (size_t)L);
        int fb = (F + 2) / 3, fm = (F + 1) / 3, fe = F / 3;
        for (int i = 0; i < fb; i++) swa_layer[i] = 0;
        for (int i = 0; i < fe; i++) swa_layer[L - 1 - i] = 0;
        int m0 = (L - fm) / 2;
        for (int i = 0; i < fm; i++) swa_layer[m0 + i] = 0;
        /* blocks can touch when F is close to L: top up from the centre outwards */
        int full = 0;
        for (int i = 0; i < L; i++) full += !swa_layer[i];
        for (int d = 0; full < F && d < L; d++)
            for (int s = -1; s <= 1 && full < F; s += 2) {
                int i = L / 2 + s * d;
                if (i >= 0 && i < L && swa_layer[i]) swa_layer[i] = 0, full++;
            }
        return 0;
    }
    case SEARCH_METHOD_INTR:
        memset(swa_layer, 1, (size_t)L);
        for (int j = 0; j < F; j++) swa_layer[(int)floor((j + 0.5) * L / F)] = 0;
        return 0;
    case SEARCH_METHOD_NLL: {
        if (!importance) return -1;
        /* selection by repeated minimum keeps ties on the lower layer */
        for (int c = 0; c < n; c++) {
            int best = -1;
            for (int l = 0; l < L; l++)
                if (!swa_layer[l] && (best < 0 || importance[l] < importance[best])) best = l;
            swa_layer[best] = 1;
        }
        return 0;
    }
    default:
        return -1;
    }
}

static int finish_layer_pattern(search_state *st, char *err, size_t errlen) {
    uint8_t *swa = malloc((size_t)st->L);
    if (!swa ||
        search_layer_pattern(st->cfg.method, st->L, st->cfg.ratio, st->cfg.seed, st->importance, swa)) {
        free(swa);
        snprintf(err, errlen, "search: baseline %s: cannot build the layer pattern",
                 search_method_name(st->cfg.method));
        return -1;
    }
    for (int l = 0; l < st->L; l++)
        for (int h = 0; h < st->H; h++) mask_set(&st->result, l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
    free(swa);
    return 0;
}

static int baseline_begin(search_state *st, char *err, size_t errlen) {
    search_event ev = search_event_new(st, SEARCH_EV_STAGE_START, 0);
    ev.mask = &st->result;
    search_emit(st, &ev);
    st->bl_index = 0;
    st->stage_evals = 0;
    st->final_known = 0;
    switch (st->cfg.method) {
    case SEARCH_METHOD_RAND:
    case SEARCH_METHOD_BME:
    case SEARCH_METHOD_INTR:
        if (finish_layer_pattern(st, err, errlen)) return -1;
        st->phase = PH_BL_END;
        return 1;
    case SEARCH_METHOD_NLL:
        st->bl_total = st->L;
        st->phase = PH_BL_EVAL;
        return 1;
    case SEARCH_METHOD_ABLATION:
    case SEARCH_METHOD_FISHER:
        st->bl_total = (long)st->L * st->H;
        st->phase = PH_BL_EVAL;
        return 1;
    case SEARCH_METHOD_LOCALITY:
    case SEARCH_METHOD_ECHO:
        /* one bookkeeping step: attention statistics from the model, no objective calls */
        if (search_attn_importance(st, err, errlen)) return -1;
        st->importance_ready = 1;
        if (search_cut_heads(st->importance, st->cfg.ratio, &st->result)) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        st->phase = PH_BL_END;
        return 0;
    default:
        snprintf(err, errlen, "search: method %d is not a baseline", (int)st->cfg.method);
        return -1;
    }
}

static int baseline_eval(search_state *st, char *err, size_t errlen) {
    if (st->bl_index < st->bl_total) {
        memset(st->cand.z, ATTN_FULL, (size_t)st->L * st->H);
        int layer;
        if (st->cfg.method == SEARCH_METHOD_NLL) {
            layer = (int)st->bl_index;
            for (int h = 0; h < st->H; h++) mask_set(&st->cand, layer, h, ATTN_SWA);
        } else {
            layer = (int)(st->bl_index / st->H);
            mask_set(&st->cand, layer, (int)(st->bl_index % st->H), ATTN_SWA);
        }
        search_eval e;
        if (search_eval_cand(st, 0, 0, -1, layer, &e, err, errlen)) return -1;
        double imp;
        if (st->cfg.method == SEARCH_METHOD_NLL) {
            imp = e.nll - st->nll_full;
        } else if (st->cfg.method == SEARCH_METHOD_ABLATION) {
            imp = st->s_full - e.score;
        } else if (e.sample_nll && st->sample_nll_full && e.n_samples == st->n_sample_nll) {
            imp = 0;
            for (int s = 0; s < e.n_samples; s++) {
                double d = e.sample_nll[s] - st->sample_nll_full[s];
                imp += d * d;
            }
            imp /= e.n_samples;
        } else {
            imp = (e.nll - st->nll_full) * (e.nll - st->nll_full);
        }
        st->importance[st->bl_index] = imp;
        st->bl_index++;
        return 0;
    }
    st->importance_ready = 1;
    if (st->cfg.method == SEARCH_METHOD_NLL) {
        if (finish_layer_pattern(st, err, errlen)) return -1;
    } else if (search_cut_heads(st->importance, st->cfg.ratio, &st->result)) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    st->phase = PH_BL_END;
    return 1;
}

int search_baseline_step(search_state *st, char *err, size_t errlen) {
    switch (st->phase) {
    case PH_BL_BEGIN:
        return baseline_begin(st, err, errlen);
    case PH_BL_EVAL:
        return baseline_eval(st, err, errlen);
    default: {
        search_event ev = search_event_new(st, SEARCH_EV_STAGE_END, 0);
        ev.mask = &st->result;
        search_emit(st, &ev);
        st->phase = PH_FINAL;
        return 1;
    }
    }
}
