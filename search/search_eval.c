/* search_eval.c — events, the evaluation log and evaluating a candidate (live or replayed), shared
 * by the BOSCH stages (search.c) and the baselines (search_baseline.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* ---- events and evaluation ---------------------------------------------------------------- */

void search_emit(search_state *st, search_event *ev) {
    ev->replayed = st->replaying;
    if (st->listener) st->listener(ev, st->user);
}

search_event search_event_new(search_state *st, search_event_kind kind, int stage) {
    search_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.stage = stage;
    ev.layer = -1;
    ev.group = -1;
    ev.eval_index = (long)st->n_log;
    ev.score = NAN;
    ev.raw_score = NAN;
    ev.accuracy = NAN;
    ev.delta = ev.weight = ev.ratio = NAN;
    ev.bucket = -1;
    ev.n_swa = -1;
    ev.best_score = isfinite(st->best_norm) ? st->best_norm : NAN;
    ev.phase = st->plan.cur;
    ev.unit = st->plan.cur >= 0 ? st->plan_unit : -1;
    ev.n_units = st->plan.cur >= 0 ? st->plan.phase[st->plan.cur].n_units : 0;
    ev.evals_planned = st->plan.evals_planned;
    ev.plan = &st->plan;
    return ev;
}

double search_normalize(const search_state *st, double raw) {
    if (isnan(st->s_full) || isnan(st->s_swa)) return raw;
    double den = st->s_full - st->s_swa;
    if (fabs(den) <= 1e-12) return raw - st->s_swa;
    return (raw - st->s_swa) / den;
}

int search_log_append(search_state *st, const search_eval *e, uint64_t hash) {
    if (st->n_log == st->cap_log) {
        long cap = st->cap_log ? 2 * st->cap_log : 256;
        search_log_entry *p = realloc(st->log, sizeof *p * (size_t)cap);
        if (!p) return -1;
        st->log = p;
        st->cap_log = cap;
    }
    search_log_entry *le = &st->log[st->n_log];
    *le = (search_log_entry){hash, e->score, e->accuracy, e->nll, e->seconds, 0, NULL};
    if (e->sample_nll && e->n_samples > 0) {
        le->sample_nll = malloc(sizeof(double) * (size_t)e->n_samples);
        if (!le->sample_nll) return -1;
        memcpy(le->sample_nll, e->sample_nll, sizeof(double) * (size_t)e->n_samples);
        le->n_samples = e->n_samples;
    }
    st->n_log++;
    return 0;
}

void search_log_free(search_log_entry *log, long n) {
    if (!log) return;
    for (long i = 0; i < n; i++) free(log[i].sample_nll);
    free(log);
}

int search_eval_cand(search_state *st, int make_base, int stage, int group, int layer, search_eval *out,
                     char *err, size_t errlen) {
    const int confirm = (make_base & SEARCH_EVAL_CONFIRM) != 0;
    uint64_t h = mask_hash(&st->cand);
    if (confirm) h = search_confirm_hash(h); /* its own key: never a calibration entry */
    const int dedup = make_base & SEARCH_EVAL_DEDUP;
    make_base = confirm ? 0 : make_base & 1; /* the calibration evaluator's base stays */
    memset(out, 0, sizeof *out);
    /* a mask already in the log: answered from it without moving the base. The log up to here is
     * the same live and replayed, so both take this branch at the same calls and end with the same
     * base. */
    long seen = -1;
    if (dedup) /* a whole evaluation only: a candidate the race dropped is scored again */
        for (long i = st->n_log - 1; i >= 0 && seen < 0; i--)
            if (st->log[i].hash == h && !isnan(st->log[i].score)) seen = i;
    if (seen >= 0) make_base = 0;
    if (seen >= 0 && st->replay_pos >= st->n_replay) {
        const search_log_entry *le = &st->log[seen];
        *out = (search_eval){le->score, le->accuracy, le->nll, 0.0, le->n_samples, le->sample_nll};
    } else if (st->replay_pos < st->n_replay) {
        const search_log_entry *le = &st->replay[st->replay_pos];
        if (le->hash != h) {
            snprintf(err, errlen,
                     "search state: evaluation %ld: replayed mask hash %016llx differs from the "
                     "saved %016llx (different config, objective or program version)",
                     st->replay_pos + 1, (unsigned long long)h, (unsigned long long)le->hash);
            return -1;
        }
        *out = (search_eval){le->score, le->accuracy, le->nll, le->seconds, le->n_samples, le->sample_nll};
        st->replay_pos++;
    } else if (confirm) {
        int failed = 0;
        const search_objective *co = search_confirm_objective(st, &failed, err, errlen);
        if (!co) {
            if (!failed) snprintf(err, errlen, "search: no confirmation objective");
            return -1;
        }
        int rc = co->score(co->ctx, &st->cand, 0, out, err, errlen);
        if (rc) {
            st->cancelled = rc == SEARCH_CANCELLED;
            return -1;
        }
    } else {
        int rc = st->race_inc && search_race_active(st) ? search_race_score(st, make_base, out, err, errlen)
                                                        : search_batch_score(st, make_base, out, err, errlen);
        if (rc) {
            st->cancelled = rc == SEARCH_CANCELLED;
            return -1;
        }
    }
    if (make_base && !isnan(out->score)) { /* a dropped candidate is not every part's base */
        memcpy(st->base.z, st->cand.z, (size_t)st->L * st->H);
        st->have_base = 1;
    }
    /* the log keeps its own copy of sample_nll; point the result at it */
    if (search_log_append(st, out, h)) {
        snprintf(err, errlen, "search: out of memory for the evaluation log");
        return -1;
    }
    out->sample_nll = st->log[st->n_log - 1].sample_nll;
    if (st->eval_observer && !confirm) st->eval_observer(st, out);
    memcpy(st->last.z, st->cand.z, (size_t)st->L * st->H);
    st->have_last = 1;
    st->stage_evals++;
    search_plan_eval(st);

    search_event ev = search_event_new(st, SEARCH_EV_EVAL, stage);
    ev.layer = layer;
    ev.group = group;
    ev.eval_index = st->n_log;
    ev.mask = &st->cand;
    ev.raw_score = out->score;
    ev.score = st->phase == PH_NORM_FULL  ? 1.0
               : st->phase == PH_NORM_SWA ? 0.0
                                          : search_normalize(st, out->score);
    ev.accuracy = out->accuracy;
    ev.seconds = out->seconds;
    ev.n_samples = out->sample_nll ? out->n_samples : 0;
    ev.sample_nll = out->sample_nll;
    ev.samples = out->sample_nll ? out->n_samples : 0;
    ev.gain = ev.gain_se = NAN;
    if (st->race_inc) { /* a candidate against its incumbent: the paired gain, in Ŝ units */
        search_race_note(st, out);
        const double den = isnan(st->s_full) || isnan(st->s_swa) || fabs(st->s_full - st->s_swa) <= 1e-12
                               ? 1.0
                               : st->s_full - st->s_swa;
        ev.samples = st->race_samples;
        ev.gain = st->race_gain / den;
        ev.gain_se = st->race_gain_se / fabs(den);
    }
    if (confirm) { /* another split: no calibration score, accuracy or samples to show */
        ev.confirm = 1;
        ev.score = ev.accuracy = NAN;
        ev.n_samples = ev.samples = 0;
        ev.sample_nll = NULL;
    }
    if (isfinite(ev.score) && !(ev.best_score >= ev.score)) ev.best_score = ev.score; /* this one included */
    if (st->opt) ev.eval_budget = opt_planned(st->opt);
    if (st->phase == PH_BL_EVAL) ev.eval_budget = st->bl_total;
    search_emit(st, &ev);
    return 0;
}
