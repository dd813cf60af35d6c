/* search_confirm.c — the confirmation phase (search.h search_config.confirm_samples; docs/search.md
 * "Confirming the finalists"): after the refinement, each of its finalists (the refined mask, the
 * stage-3 mask and every start cut it scored) is scored once on a confirmation split the search never
 * chose anything on, and the best there becomes the result when it beats the refined mask there by
 * more than SEARCH_CONFIRM_K paired standard errors.
 *
 * Why: the refinement keeps whichever start and swaps score highest on the calibration samples, so
 * the mask it ends with is, among ~200 masks compared on the same few samples, the one those samples
 * flatter most (the winner's curse: the maximum of noisy estimates is biased upwards; e.g. Thaler,
 * J. Econ. Perspectives 2(1), 1988, and, for model selection, Cawley & Talbot, JMLR 11, 2010). On
 * independent samples each finalist's score is unbiased, so the comparison there is fair.
 *
 * Ties keep the earlier finalist, and the refined mask is always the first, so a confirmation that
 * cannot tell them apart changes nothing. The evaluations are logged (under search_confirm_hash, so
 * they are never taken for calibration scores) and replayed like every other.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"
#include "stats.h"

/* The finalist whose body equals body, or -1. */
static int fin_find(const search_state *st, const uint8_t *body) {
    const size_t n = (size_t)st->L * st->H;
    for (int i = 0; i < st->n_fin; i++)
        if (!memcmp(st->fin + (size_t)i * n, body, n)) return i;
    return -1;
}

int search_confirm_add(search_state *st, const uint8_t *body, const char *what) {
    if (st->cfg.confirm_samples <= 0) return 0;
    const size_t n = (size_t)st->L * st->H;
    if (!st->fin && !(st->fin = malloc(n * SEARCH_FINALISTS_MAX))) return -1;
    int at = fin_find(st, body);
    const int refined = !strcmp(what, "refined");
    if (at < 0) {
        if (st->n_fin == SEARCH_FINALISTS_MAX) return 0;
        at = st->n_fin++;
        memcpy(st->fin + (size_t)at * n, body, n);
        st->fin_what[at] = what;
    }
    if (refined && at > 0) { /* the refined mask goes first (ties keep it): move it to the front */
        uint8_t *tmp = malloc(n);
        if (!tmp) return -1;
        const char *w = st->fin_what[at];
        memcpy(tmp, st->fin + (size_t)at * n, n);
        memmove(st->fin + n, st->fin, (size_t)at * n);
        memmove(st->fin_what + 1, st->fin_what, sizeof st->fin_what[0] * (size_t)at);
        memcpy(st->fin, tmp, n);
        /* a start the refinement could not improve keeps its name: "the Fisher cut" is more telling */
        st->fin_what[0] = w;
        free(tmp);
    }
    return 0;
}

/* Emit the phase's first or last event (GROUP_START / GROUP_END with group -1). */
static void confirm_event(search_state *st, search_event_kind kind, const char *msg) {
    search_event ev = search_event_new(st, kind, 3);
    ev.group = -1;
    ev.mask = &st->result;
    if (kind == SEARCH_EV_GROUP_END) {
        ev.raw_score = st->final_raw;
        ev.score = search_normalize(st, st->final_raw);
    }
    ev.message = msg;
    search_emit(st, &ev);
}

/* The kept finalist: the one with the highest confirmation score (the earlier on a tie), when its
 * paired gain over the refined mask (finalist 0) on the confirmation samples exceeds
 * SEARCH_CONFIRM_K standard errors (stats_paired_diff of the per-sample answer probabilities; a
 * strictly higher score when they are not known); else the refined mask. */
static int confirm_top(const search_state *st) { /* the highest confirmation score, the earlier on a tie */
    int best = 0;
    for (int i = 1; i < st->n_fin; i++)
        if (st->fin_score[i] > st->fin_score[best]) best = i;
    return best;
}

static int confirm_pick(const search_state *st) {
    const int best = confirm_top(st);
    if (best == 0 || !st->fin_p[best] || !st->fin_p[0] || st->fin_n_p[best] != st->fin_n_p[0]) return best;
    double gain, se;
    stats_paired_diff(st->fin_p[best], st->fin_p[0], st->fin_n_p[0], &gain, &se);
    return gain > SEARCH_CONFIRM_K * se ? best : 0;
}

/* The per-sample answer probabilities of evaluation e into st->fin_p[i]. 0, or -1 (OOM). */
static int keep_samples(search_state *st, int i, const search_eval *e) {
    free(st->fin_p[i]);
    st->fin_p[i] = NULL;
    st->fin_n_p[i] = 0;
    if (!e->sample_nll || e->n_samples < 1) return 0;
    if (!(st->fin_p[i] = malloc(sizeof(double) * (size_t)e->n_samples))) return -1;
    for (int s = 0; s < e->n_samples; s++) st->fin_p[i][s] = stats_sample_score(e->sample_nll[s]);
    st->fin_n_p[i] = e->n_samples;
    return 0;
}

/* The phase's end: finalist k becomes the result, with its calibration score from the log. */
static void confirm_finish(search_state *st, int k) {
    const int n = st->L * st->H;
    const uint8_t *body = st->fin + (size_t)k * n;
    if (k > 0) {
        const long at = search_log_find_whole(st, body);
        st->final_raw = at >= 0 ? st->log[at].score : NAN;
        st->final_acc = at >= 0 ? st->log[at].accuracy : NAN;
        memcpy(st->result.z, body, (size_t)n);
    }
    st->fin_kept = k;
    char msg[320];
    double gain = NAN, se = NAN;
    if (k > 0 && st->fin_p[k] && st->fin_p[0] && st->fin_n_p[k] == st->fin_n_p[0])
        stats_paired_diff(st->fin_p[k], st->fin_p[0], st->fin_n_p[k], &gain, &se);
    const int top = confirm_top(st); /* kept or not */
    if (k == 0 && top > 0 && st->fin_p[top] && st->fin_p[0] && st->fin_n_p[top] == st->fin_n_p[0]) {
        stats_paired_diff(st->fin_p[top], st->fin_p[0], st->fin_n_p[0], &gain, &se);
        snprintf(msg, sizeof msg,
                 "confirm: kept the refined mask, S %.4f on the confirmation split: the %s mask's %.4f is "
                 "within the noise (paired gain %+.4f, se %.4f, below %g se)",
                 st->fin_score[0], st->fin_what[top], st->fin_score[top], gain, se, SEARCH_CONFIRM_K);
    } else if (k == 0 && strcmp(st->fin_what[0], "refined"))
        snprintf(
            msg, sizeof msg,
            "confirm: kept the refined mask (the %s start, which the refinement did not move), S %.4f on "
            "the confirmation split",
            st->fin_what[0], st->fin_score[0]);
    else if (k == 0)
        snprintf(msg, sizeof msg, "confirm: kept the refined mask, S %.4f on the confirmation split",
                 st->fin_score[0]);
    else
        snprintf(
            msg, sizeof msg,
            "confirm: kept the %s mask, S %.4f on the confirmation split against the refined mask's %.4f "
            "(paired gain %+.4f, se %.4f)",
            st->fin_what[k], st->fin_score[k], st->fin_score[0], gain, se);
    search_plan_unit(st, -1);
    confirm_event(st, SEARCH_EV_GROUP_END, msg);
}

/* fin_kept: -1 the phase has not started, -3 running, -2 the kept finalist's calibration score is
 * being made, >= 0 done (the index kept). */
int search_confirm_step(search_state *st, char *err, size_t errlen) {
    const int n = st->L * st->H;
    if (st->fin_kept >= 0) return 1;
    if (st->fin_kept == -1) { /* the phase's start */
        search_plan_enter(st, SEARCH_PHASE_CONFIRM);
        /* live without a confirmation objective (no model): the phase is skipped. A replay has its
         * answers in the log, or is live again by the time it asks. */
        int failed = 0;
        if (st->n_fin < 2 ||
            (st->replay_pos >= st->n_replay && !search_confirm_objective(st, &failed, err, errlen))) {
            if (failed) return -1;
            st->fin_kept = 0;
            if (st->plan.cur >= 0 && st->plan.phase[st->plan.cur].kind == SEARCH_PHASE_CONFIRM)
                search_plan_cap(st, st->plan.cur, 0, 0);
            return 1;
        }
        if (st->plan.cur >= 0 && st->plan.phase[st->plan.cur].kind == SEARCH_PHASE_CONFIRM)
            search_plan_cap(st, st->plan.cur, st->n_fin, st->n_fin + 1);
        char msg[160];
        snprintf(msg, sizeof msg, "confirm: %d finalists on %d new samples", st->n_fin,
                 st->cfg.confirm_samples);
        st->fin_kept = -3;
        confirm_event(st, SEARCH_EV_GROUP_START, msg);
    }
    if (st->fin_pos < st->n_fin) { /* the next finalist on the confirmation split */
        const int i = st->fin_pos;
        memcpy(st->cand.z, st->fin + (size_t)i * n, (size_t)n);
        search_plan_unit(st, i);
        search_eval e;
        if (search_eval_cand(st, SEARCH_EVAL_CONFIRM, 3, -1, -1, &e, err, errlen)) return -1;
        if (keep_samples(st, i, &e)) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        st->fin_score[i] = e.score;
        st->fin_pos++;
        search_plan_unit_done(st);
        return 0;
    }
    const int k = confirm_pick(st);
    if (k > 0 && st->fin_kept == -3 && search_log_find_whole(st, st->fin + (size_t)k * n) < 0) {
        /* a start the race dropped (it has no whole calibration score): scored once, for the result's Ŝ */
        memcpy(st->cand.z, st->fin + (size_t)k * n, (size_t)n);
        search_plan_unit(st, k);
        search_eval e;
        if (search_eval_cand(st, 0, 3, -1, -1, &e, err, errlen)) return -1;
        st->fin_kept = -2;
        return 0;
    }
    confirm_finish(st, k);
    return 1;
}

void search_get_confirm_stats(const search_state *st, search_confirm_stats *out) {
    memset(out, 0, sizeof *out);
    out->n_finalists = st->fin_pos;
    out->kept = st->fin_kept >= 0 && st->fin_pos > 0 ? st->fin_kept : -1;
    for (int i = 0; i < st->fin_pos && i < SEARCH_FINALISTS_MAX; i++) {
        out->what[i] = st->fin_what[i];
        out->score[i] = st->fin_score[i];
    }
}
