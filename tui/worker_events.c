/* worker_events.c — turn the search's events (search/events.h) into the explorer's snapshot, the
 * event log and the trace. Runs on the worker thread inside search_step(). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

static const char *stage_name(int stage) {
    switch (stage) {
    case 0:
        return "normalization";
    case 1:
        return "stage 1 (layer importance)";
    case 2:
        return "stage 2 (adaptive ratios)";
    case 3:
        return "stage 3 (grouped head selection)";
    default:
        return "done";
    }
}

void worker_reset_search_snapshot_locked(worker *w) {
    ex_snapshot *s = &w->snap;
    s->have_search = 0;
    s->granularity = 0;
    progress_reset(&s->progress);
    s->n_evals = s->eval_budget = 0;
    s->best_score = s->full_raw = s->swa_raw = NAN;
    s->last_score = s->last_accuracy = s->last_seconds = NAN;
    for (int l = 0; l < EX_MAX_LAYERS; l++) {
        s->s_best[l] = s->delta[l] = s->weight[l] = s->ratio[l] = NAN;
        s->bucket[l] = s->n_swa[l] = -1;
        s->probed[l] = 0;
    }
    s->last_mask.n_layer = 0;
    s->result_mask.n_layer = 0;
    s->hist_n = 0;
    trace_rows_clear(&w->trace);
    worker_heat_publish_locked(w); /* the attention view's rankings stay */
}

/* Per-layer statistics and global counters straight from the search's queries. */
void worker_refresh_search_locked(worker *w) {
    ex_snapshot *s = &w->snap;
    const search_state *st = w->search;
    if (!st) return;
    int L = s->hp.n_layer < EX_MAX_LAYERS ? s->hp.n_layer : EX_MAX_LAYERS;
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        if (search_layer_stats(st, l, &li) != 0) continue;
        s->probed[l] = li.probed;
        s->s_best[l] = li.s_best;
        s->delta[l] = li.delta;
        s->weight[l] = li.weight;
        s->ratio[l] = li.ratio;
        s->bucket[l] = li.bucket;
        s->n_swa[l] = li.n_swa;
    }
    worker_heat_publish_locked(w);
    s->n_evals = search_n_evals(st);
    s->eval_budget = search_eval_budget(st);
    s->best_score = search_best_score(st);
    s->full_raw = search_full_score(st);
    s->swa_raw = search_swa_score(st);
    const attn_mask *rm = search_result_mask(st);
    if (rm) {
        ex_mask_from(&s->result_mask, rm);
        s->result_hash = mask_hash(rm);
    }
}

/* An evaluation: the last score, the history for the sparkline, the best so far, the trace. */
static void on_eval_locked(worker *w, const search_event *ev) {
    ex_snapshot *s = &w->snap;
    if (ev->mask) ex_mask_from(&s->last_mask, ev->mask);
    (void)search_trace_add(&w->trace, ev); /* out of memory: the row is lost */
    const int n_swa = ev->mask ? mask_count_swa(ev->mask) : 0;
    if (ev->confirm) { /* a finalist on the confirmation split (search.h confirm_samples): no calibration
                          score */
        worker_log_locked(w, "eval %ld: finalist %d of %d on the confirmation split: S %.3f, %d SWA, %.2f s",
                          ev->eval_index, ev->unit + 1, ev->n_units, ev->raw_score, n_swa, ev->seconds);
        return;
    }
    if (!isfinite(ev->score)) { /* raced out (search_config.race): no score, its gain and noise */
        if (isfinite(ev->gain) && isfinite(ev->gain_se))
            worker_log_locked(w, "eval %ld: %d SWA, dropped after %d samples: gain %.3f +- %.3f",
                              ev->eval_index, n_swa, ev->samples, ev->gain, ev->gain_se);
        else
            worker_log_locked(w, "eval %ld: %d SWA, dropped after %d samples", ev->eval_index, n_swa,
                              ev->samples);
        return;
    }
    s->last_score = ev->score;
    s->last_accuracy = ev->accuracy;
    s->last_seconds = ev->seconds;
    double best = s->hist_n ? s->hist_best[(s->hist_n - 1) % EX_HIST] : -INFINITY;
    if (ev->score > best) best = ev->score;
    s->hist[s->hist_n % EX_HIST] = ev->score;
    s->hist_best[s->hist_n % EX_HIST] = best;
    s->hist_noise[s->hist_n % EX_HIST] =
        (uint8_t)progress_within_noise(s->progress.last_drop, s->progress.last_se);
    s->hist_n++;
    worker_log_locked(w, "eval %ld: score %.3f, acc %.2f, %d SWA, %.2f s", ev->eval_index, ev->score,
                      ev->accuracy, n_swa, ev->seconds);
}

/* Stage 2's statistics of one layer. */
static void on_layer_stats_locked(worker *w, const search_event *ev) {
    ex_snapshot *s = &w->snap;
    if (ev->layer < 0 || ev->layer >= EX_MAX_LAYERS) return;
    s->delta[ev->layer] = ev->delta;
    s->weight[ev->layer] = ev->weight;
    s->ratio[ev->layer] = ev->ratio;
    s->bucket[ev->layer] = ev->bucket;
    s->n_swa[ev->layer] = ev->n_swa;
}

void worker_on_event(const search_event *ev, void *user) {
    worker *w = user;
    ex_snapshot *s = &w->snap;
    pthread_mutex_lock(&w->mu);
    s->have_search = 1;
    progress_on_event(&s->progress, ev);
    const char *msg = ev->message && *ev->message ? ev->message : NULL;
    switch (ev->kind) {
    case SEARCH_EV_SEARCH_START:
        worker_log_locked(w, "%s", msg ? msg : "search started");
        break;
    case SEARCH_EV_STAGE_START:
        worker_log_locked(w, "%s", msg ? msg : stage_name(ev->stage));
        break;
    case SEARCH_EV_STAGE_END:
        worker_log_locked(w, "%s", msg ? msg : "stage finished");
        break;
    case SEARCH_EV_LAYER_START:
        if (msg) worker_log_locked(w, "%s", msg);
        break;
    case SEARCH_EV_LAYER_END:
        if (ev->layer >= 0 && ev->layer < EX_MAX_LAYERS) s->probed[ev->layer] = 1;
        if (msg) worker_log_locked(w, "%s", msg);
        break;
    case SEARCH_EV_EVAL:
        on_eval_locked(w, ev);
        break;
    case SEARCH_EV_INCUMBENT:
        worker_log_locked(w, "%s", msg ? msg : "new best mask");
        break;
    case SEARCH_EV_LAYER_STATS:
        on_layer_stats_locked(w, ev);
        break;
    case SEARCH_EV_GROUP_START:
        worker_log_locked(w, "%s", msg ? msg : "group started");
        break;
    case SEARCH_EV_GROUP_END:
        worker_log_locked(w, "%s", msg ? msg : "group committed");
        break;
    case SEARCH_EV_PAUSED:
        worker_log_locked(w, "paused after eval %ld", s->n_evals);
        break;
    case SEARCH_EV_RESUMED:
        worker_log_locked(w, "resumed");
        break;
    case SEARCH_EV_DONE:
        worker_log_locked(w, "%s", msg ? msg : "search done");
        break;
    case SEARCH_EV_ERROR:
        worker_log_locked(w, "error: %s", msg ? msg : "(no message)");
        break;
    }
    worker_refresh_search_locked(w);
    if (ev->kind == SEARCH_EV_DONE && ev->mask) {
        ex_mask_from(&s->result_mask, ev->mask);
        s->result_hash = mask_hash(ev->mask);
    }
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}
