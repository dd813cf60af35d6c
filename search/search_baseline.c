/* search_baseline.c — the baselines of docs/design.md §7 (the method registry's layer heuristics and
 * static head rankings, search_methods.h), run through the same step/event machinery as BOSCH
 * (stage 0). Every baseline first scores the all-full and all-SWA masks (the normalizers), then
 * its probes (its row's `probes`: each KV head or each layer alone SWA, scored by its `probe`), or
 * computes its ranking at once (`rank`), or picks its layers from the ratio alone (`pattern`
 * without probes); then it cuts at the ratio and scores its final mask.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"
#include "search_methods.h"

search_rank_input search_rank_input_of(const search_state *st) {
    return (search_rank_input){&st->cfg,
                               st->L,
                               st->H,
                               st->mdl,
                               st->obj->samples,
                               st->obj->n_samples,
                               st->s_full,
                               st->nll_full,
                               st->sample_nll_full,
                               st->n_sample_nll};
}

/* The mask from the ranking in st->importance (a heuristic's pattern, or the head ranking's cut). */
static int finish_mask(search_state *st, const search_method_info *m, char *err, size_t errlen) {
    if (m->kind == SEARCH_KIND_HEAD_RANKING) { /* the cut keeps the pins (search.h) */
        if (search_cut_heads_pinned(&st->cfg, st->importance, &st->result)) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        return 0;
    }
    if (st->pin) /* the pattern over the layers that can go SWA, the nearest count (search_pins.c) */
        return search_pins_layer_pattern(st, m, m->probes == SEARCH_PROBES_NONE ? NULL : st->importance, err,
                                         errlen);
    uint8_t *swa = malloc((size_t)st->L);
    if (!swa || m->pattern(st->L, st->cfg.ratio, st->cfg.seed,
                           m->probes == SEARCH_PROBES_NONE ? NULL : st->importance, swa)) {
        free(swa);
        snprintf(err, errlen, "search: baseline %s: cannot build the layer pattern", m->name);
        return -1;
    }
    for (int l = 0; l < st->L; l++)
        for (int h = 0; h < st->H; h++) mask_set(&st->result, l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
    free(swa);
    return 0;
}

/* A ranking or pattern made at once: every unit of the phase (heads or layers) is done. */
static void all_units_done(search_state *st) {
    const search_plan_phase *ph = &st->plan.phase[st->plan.cur];
    while (ph->units_done < ph->n_units) search_plan_unit_done(st);
}

static int baseline_begin(search_state *st, char *err, size_t errlen) {
    const search_method_info *m = search_method_row(st->cfg.method);
    search_plan_enter(st, SEARCH_PHASE_RANK);
    search_event ev = search_event_new(st, SEARCH_EV_STAGE_START, 0);
    ev.mask = &st->result;
    search_emit(st, &ev);
    st->bl_index = 0;
    st->stage_evals = 0;
    st->final_known = 0;
    if (!m || m->kind == SEARCH_KIND_SEARCH) {
        snprintf(err, errlen, "search: method %d is not a baseline", (int)st->cfg.method);
        return -1;
    }
    if (m->probes != SEARCH_PROBES_NONE) {
        st->bl_total = m->probes == SEARCH_PROBES_EACH_LAYER ? st->L : (long)st->L * st->H;
        st->phase = PH_BL_EVAL;
        return 1;
    }
    if (m->kind == SEARCH_KIND_LAYER_HEURISTIC) { /* a pattern of the ratio alone */
        if (finish_mask(st, m, err, errlen)) return -1;
        all_units_done(st);
        st->phase = PH_BL_END;
        return 1;
    }
    /* one bookkeeping step: the ranking computed at once (e.g. attention statistics), no objective call */
    search_rank_input in = search_rank_input_of(st);
    if (m->rank(&in, st->importance, err, errlen)) return -1;
    st->importance_ready = 1;
    if (finish_mask(st, m, err, errlen)) return -1;
    all_units_done(st);
    st->phase = PH_BL_END;
    return 0;
}

static int baseline_eval(search_state *st, char *err, size_t errlen) {
    const search_method_info *m = search_method_row(st->cfg.method);
    if (st->bl_index < st->bl_total) {
        search_baseline_probe_mask(st, st->bl_index, st->cand.z);
        const int layer =
            m->probes == SEARCH_PROBES_EACH_LAYER ? (int)st->bl_index : (int)(st->bl_index / st->H);
        search_eval e;
        search_plan_unit(st, (int)st->bl_index);
        if (search_eval_cand(st, 0, 0, -1, layer, &e, err, errlen)) return -1;
        search_rank_input in = search_rank_input_of(st);
        st->importance[st->bl_index] = m->probe(&in, &e);
        st->bl_index++;
        search_plan_unit_done(st);
        return 0;
    }
    search_plan_unit(st, -1);
    st->importance_ready = 1;
    if (finish_mask(st, m, err, errlen)) return -1;
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
