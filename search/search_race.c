/* search_race.c — racing a swap-search candidate against its incumbent, and the noise-aware
 * acceptance of a move (search_internal.h; the rules and their sources: race.h).
 *
 * The race's order and rounds are race_order(n, RACE_ORDER_SEED) and race_parts(n), functions of
 * the number of samples n alone: the search decides with them on whatever values it has, and an
 * objective that scores in rounds (score_part with the same order) is asked only for the rounds
 * the race needs (search_race_active). So racing changes what is computed, never what is decided.
 *
 * The incumbent is the swap search's current solution; its per-sample values come from its whole
 * evaluation in the log (every solution a swap search moves to was scored whole: a race never
 * drops a candidate it then accepts). Every decision is a function of the logged values, so a
 * replayed search decides as the live one did: a dropped candidate is logged with NAN where it was
 * not scored (and NAN score, accuracy and NLL), and a whole evaluation the race would have dropped
 * (check mode, or answered whole by a memo) is dropped again by the same rules.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "race.h"
#include "search_internal.h"
#include "stats.h"

int search_race_active(const search_state *st) {
    const search_objective *o = st->obj;
    if (!st->cfg.race || !o->score_part || !o->part_order || !o->part_end || st->batch > 1 ||
        st->race_n < 1 || o->n_parts != st->race_parts || o->part_end[o->n_parts - 1] != st->race_n)
        return 0;
    for (int j = 0; j < o->n_parts; j++)
        if (o->part_end[j] != st->race_end[j]) return 0;
    for (int i = 0; i < st->race_n; i++)
        if (o->part_order[i] != st->race_order[i]) return 0;
    return 1;
}

void search_get_race_stats(const search_state *st, search_race_stats *out) {
    *out = st->race_stats;
    out->active = st->cfg.race && st->obj->score_part && st->batch <= 1;
    out->n_calib = st->race_n;
}

/* 1 when every per-sample NLL of log entry le is known. */
static int entry_whole(const search_log_entry *le) {
    if (!le->sample_nll || le->n_samples < 1 || isnan(le->score)) return 0;
    for (int i = 0; i < le->n_samples; i++)
        if (isnan(le->sample_nll[i])) return 0;
    return 1;
}

long search_log_find_whole(const search_state *st, const uint8_t *z) {
    const attn_mask m = {st->L, st->H, st->cand.window, st->cand.sinks, (uint8_t *)z};
    const uint64_t h = mask_hash(&m);
    for (long i = st->n_log - 1; i >= 0; i--)
        if (st->log[i].hash == h && entry_whole(&st->log[i])) return i;
    return -1;
}

/* Buffers for n samples. 0 or -1 (OOM). */
static int race_alloc(search_state *st, int n) {
    if (st->race_n == n && st->race_inc_buf) return 0;
    if (st->race_n != 0 && st->race_n != n) return 1;          /* another sample count: not raced */
    st->race_inc_buf = malloc(sizeof(double) * 3 * (size_t)n); /* incumbent p, then a pair of scratch */
    st->race_nll = malloc(sizeof(double) * (size_t)n);
    st->race_order = malloc(sizeof(int) * (size_t)n);
    if (!st->race_inc_buf || !st->race_nll || !st->race_order) return -1;
    st->race_n = n;
    st->race_parts = race_parts(n, st->race_end);
    race_order(n, RACE_ORDER_SEED, st->race_order);
    return 0;
}

int search_race_set_incumbent(search_state *st, const uint8_t *z) {
    st->race_inc = NULL;
    const long i = search_log_find_whole(st, z);
    if (i < 0) return 0;
    const search_log_entry *le = &st->log[i];
    int a = race_alloc(st, le->n_samples);
    if (a) return a < 0 ? -1 : 0;
    for (int s = 0; s < st->race_n; s++) st->race_inc_buf[s] = stats_sample_score(le->sample_nll[s]);
    st->race_inc = st->race_inc_buf;
    return 0;
}

/* The race's verdict after round j (j < n_parts - 1) on per-sample NLLs nll[n] (sample order):
 * 0 keep, 1 drop by the bound (race.h rule (b)), 2 drop because it cannot win (rule (a)), -1 a
 * sample of the round is unscored. */
static int round_verdict(const search_state *st, const double *nll, int j) {
    const int n = st->race_n, m = st->race_end[j];
    double sum_d = 0.0, headroom = 0.0;
    for (int k = 0; k < m; k++) {
        const int i = st->race_order[k];
        if (isnan(nll[i])) return -1;
        sum_d += stats_sample_score(nll[i]) - st->race_inc[i];
    }
    for (int k = m; k < n; k++) headroom += 1.0 - st->race_inc[st->race_order[k]];
    if (!race_drop(sum_d, headroom, m, n, st->race_parts - 1, RACE_DELTA)) return 0;
    return sum_d + headroom < -1e-9 ? 2 : 1;
}

/* The first round that drops nll (1 or 2 as round_verdict, its index into *round), or 0 when none
 * does. */
static int race_verdict(const search_state *st, const double *nll, int *round) {
    for (int j = 0; j + 1 < st->race_parts; j++) {
        int v = round_verdict(st, nll, j);
        *round = j;
        if (v) return v < 0 ? 1 : v; /* unscored before any drop: a partial entry, dropped */
    }
    return 0;
}

int search_race_score(search_state *st, int make_base, search_eval *out, char *err, size_t errlen) {
    const search_objective *o = st->obj;
    const int n = st->race_n;
    if (!st->race_inc || !search_race_active(st)) return search_batch_score(st, make_base, out, err, errlen);
    if (o->lookup && o->lookup(o->ctx, &st->cand, out)) return 0; /* known whole: decided on it */
    for (int i = 0; i < n; i++) st->race_nll[i] = NAN;
    long hits = 0;
    double seconds = 0.0;
    int dropped = 0;
    for (int j = 0; j < o->n_parts && !dropped; j++) {
        search_eval pe;
        int rc = o->score_part(o->ctx, &st->cand, j, make_base, &pe, err, errlen);
        if (rc) return rc;
        const int first = j > 0 ? o->part_end[j - 1] : 0, count = o->part_end[j] - first;
        if (pe.n_samples != count || !pe.sample_nll) {
            snprintf(err, errlen, "search: race: part %d answered %d samples, expected %d", j, pe.n_samples,
                     count);
            return -1;
        }
        for (int k = 0; k < count; k++) st->race_nll[o->part_order[first + k]] = pe.sample_nll[k];
        hits += lround(pe.accuracy * count);
        seconds += pe.seconds;
        /* check mode scores every round; the verdict is taken from the whole values afterwards */
        dropped = st->cfg.race == 1 && j + 1 < o->n_parts && round_verdict(st, st->race_nll, j) > 0;
    }
    double score = NAN, acc = NAN, nll = NAN;
    if (!dropped) { /* objective.c's whole evaluation: the same sums in sample order */
        score = nll = 0.0;
        for (int s = 0; s < n; s++) {
            score += stats_sample_score(st->race_nll[s]);
            nll += st->race_nll[s];
        }
        score /= n, nll /= n, acc = (double)hits / n;
    }
    *out = (search_eval){score, acc, nll, seconds, n, st->race_nll};
    return 0;
}

void search_race_note(search_state *st, const search_eval *e) {
    st->race_gain = st->race_gain_se = NAN;
    st->race_samples = 0;
    if (!st->race_inc || !e->sample_nll || e->n_samples != st->race_n) return;
    double *a = st->race_inc_buf + st->race_n, *b = a + st->race_n;
    int m = 0;
    for (int i = 0; i < st->race_n; i++)
        if (!isnan(e->sample_nll[i])) a[m] = stats_sample_score(e->sample_nll[i]), b[m++] = st->race_inc[i];
    st->race_samples = m;
    if (m > 0) stats_paired_diff(a, b, m, &st->race_gain, &st->race_gain_se);
}

int search_race_decide(search_state *st, const search_eval *e, double inc_score) {
    search_race_stats *rs = &st->race_stats;
    rs->raced++;
    const int whole = st->race_samples == st->race_n && !isnan(e->score);
    const int take =
        whole && (st->cfg.accept_k > 0 ? race_accept(st->race_gain, st->race_gain_se, st->cfg.accept_k)
                                       : e->score > inc_score);
    int round = 0;
    /* the race's rules decide on the values whether or not the objective scored them in rounds (a
     * whole answer: an objective without parts, a batch, a memo, check mode), so the decisions and
     * the counts never depend on how the values were obtained */
    const int verdict = st->cfg.race && st->race_parts >= 2 && e->n_samples == st->race_n
                            ? race_verdict(st, e->sample_nll, &round)
                            : 0;
    rs->samples += verdict ? st->race_end[round] : st->race_samples;
    if (!whole || verdict) { /* dropped by the race */
        rs->dropped++;
        rs->dropped_sure += verdict == 2;
        if (whole && st->cfg.race == 2) rs->checked++, rs->wrong += take;
        return 0;
    }
    if (take) {
        rs->accepted++;
        return 1;
    }
    rs->noise += st->cfg.accept_k > 0 && st->race_gain > 0;
    return 0;
}
