/* search_heads.c — the BOSCH options built on head scores (search.h: stage1_singles, stage3_scope,
 * refine_budget): the singles pass of stage 1, stage 3 as a guided swap search (swap_search.h) per
 * layer or per bucket, and the final refinement over all layers. Phases PH_S1_SINGLES, PH_S3_GROUP
 * (with head scores) and PH_REFINE_*; the state machine is search.c's.
 *
 * Head scores come from masks with exactly one SWA KV head (all others full), whatever phase scored
 * them (stage-1 independent probes with k = 1 are such masks): drop = S_full - S(mask), Fisher =
 * mean over samples of (NLL_s(mask) - NLL_s(full))^2, as the ablation and fisher baselines define
 * them (search_baseline.c), on the same calibration objective.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_internal.h"

void search_heads_note(search_state *st, const search_eval *e) {
    if (isnan(st->s_full) || isnan(e->score)) return; /* NAN: a candidate the race dropped */
    int unit = -1, n = st->L * st->H;
    for (int i = 0; i < n; i++)
        if (st->cand.z[i] == ATTN_SWA) {
            if (unit >= 0) return; /* more than one SWA head */
            unit = i;
        }
    if (unit < 0) return;
    st->head_drop[unit] = st->s_full - e->score;
    double f = NAN;
    if (e->sample_nll && st->sample_nll_full && e->n_samples == st->n_sample_nll && e->n_samples > 0) {
        f = 0;
        for (int s = 0; s < e->n_samples; s++) {
            double d = e->sample_nll[s] - st->sample_nll_full[s];
            f += d * d;
        }
        f /= e->n_samples;
    }
    st->head_fisher[unit] = f;
}

/* search_eval_cand, except that a mask this search has already scored is answered from its log
 * (and logged again, so a replay sees the same sequence), without calling the objective. */
static int eval_dedup(search_state *st, int make_base, int stage, int group, int layer, search_eval *out,
                      char *err, size_t errlen) {
    return search_eval_cand(st, make_base | SEARCH_EVAL_DEDUP, stage, group, layer, out, err, errlen);
}

/* ---- stage 1: the singles pass ------------------------------------------------------------- */

int search_heads_singles_step(search_state *st, char *err, size_t errlen) {
    while (st->single_pos >= 0 && !isnan(st->head_drop[st->single_pos])) st->single_pos--;
    if (st->single_pos < 0) return 1; /* every head scored */
    const int u = st->single_pos, l = u / st->H;
    memset(st->cand.z, ATTN_FULL, (size_t)st->L * st->H);
    st->cand.z[u] = ATTN_SWA;
    search_plan_unit(st, st->plan.phase[st->plan.cur].units_done);
    search_eval e;
    /* the all-full base stays: this single recomputes only layers l.. */
    if (eval_dedup(st, 0, 1, -1, l, &e, err, errlen)) return -1;
    if (isnan(st->head_drop[u])) st->head_drop[u] = st->s_full - e.score; /* a degenerate note */
    st->single_pos--;
    search_plan_unit_done(st);
    return 0;
}

/* ---- cutting the head scores at the ratio --------------------------------------------------- */

/* z (an L*H mask body) <- the target_swa heads of lowest score SWA (search_cut_heads's tie rule; NAN
 * the largest), keeping the pins (search_cut_heads_pinned). */
static int cut_scores(search_state *st, const double *score, uint8_t *z) {
    attn_mask m = {st->L, st->H, st->cfg.window, st->cfg.sinks, z};
    return search_cut_heads_pinned(&st->cfg, score, &m);
}

/* ---- stage 3 as a guided swap search ------------------------------------------------------- */

/* 1 when head h of layer l is pinned (never a unit of a swap search). */
static int pinned(const search_state *st, int l, int h) {
    return st->pin && st->pin[l * st->H + h];
}

/* 1 when head h of layer l is SWA in the start mask (search_config.start_*). */
static int start_swa(const search_state *st, int l, int h) {
    return st->start && st->start[l * st->H + h] == ATTN_SWA;
}

/* Stage 3's start in layer l without head scores (the paper's stage 3 over the free heads, with
 * pins): the start mask's SWA heads, then stage 1's choice, then the lowest-index free heads, until
 * `want` free heads are SWA (stage3_init_bits's rule). */
static void free_init_stage1(const search_state *st, int l, int want, uint8_t *taken) {
    int n = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int h = 0; h < st->H && n < want; h++)
            if (!pinned(st, l, h) && !taken[h] &&
                (pass == 2 || (pass == 1 && (st->stage1_bits[l] >> h & 1)) ||
                 (pass == 0 && start_swa(st, l, h))))
                taken[h] = 1, n++;
}

int search_heads_group_begin(search_state *st, int g, char *err, size_t errlen) {
    const int *layers = st->group_layers + st->group_start[g];
    const int m = st->group_start[g + 1] - st->group_start[g], H = st->H;
    int *block = malloc(sizeof(int) * (size_t)m * H);
    uint8_t *init = malloc((size_t)m * H);
    double *prio = malloc(sizeof(double) * (size_t)m * H);
    if (!block || !init || !prio) goto oom;
    st->sw_span = 1;
    int k = 0; /* units: the group's heads that are not pinned */
    for (int i = 0; i < m; i++) {
        const int l = layers[i];
        /* the layer's n_swa SWA heads: its pinned SWA heads and its least important free heads
           (ties: lower head), the start mask's first; without head scores (the paper's stage 3 with
           pins), the start mask's, then stage 1's */
        uint8_t taken[64] = {0};
        const int want = st->n_swa[l] - (st->pin ? st->pin_fs[l] : 0);
        if (!st->head_drop) {
            free_init_stage1(st, l, want, taken);
        } else {
            /* the start mask's SWA heads first (search_config.start_*), each kind the least important
               first */
            for (int c = 0; c < want; c++) {
                int best = -1;
                for (int h = 0; h < H; h++) {
                    if (taken[h] || pinned(st, l, h)) continue;
                    if (best < 0 || start_swa(st, l, h) > start_swa(st, l, best) ||
                        (start_swa(st, l, h) == start_swa(st, l, best) &&
                         st->head_drop[l * H + h] < st->head_drop[l * H + best]))
                        best = h;
                }
                taken[best] = 1;
            }
        }
        for (int h = 0; h < H; h++) {
            if (pinned(st, l, h)) continue; /* pinned: in result, never a unit */
            st->sw_units[k] = l * H + h;
            block[k] = st->cfg.stage3_scope ? 0 : l;
            init[k] = taken[h];
            prio[k] = !st->head_drop || isnan(st->head_drop[l * H + h]) ? 0.0 : st->head_drop[l * H + h];
            k++;
        }
    }
    st->sw_n = k;
    /* no head scores: a seeded random move order (swap_search.h) */
    st->sw = swap_create(st->sw_n, block, init, st->head_drop ? prio : NULL, st->cfg.stage3_budget_per_group,
                         rng_derive(st->cfg.seed, 2000 + (uint64_t)g));
    free(block), free(init), free(prio);
    if (!st->sw) goto oom;
    return 0;
oom:
    free(block), free(init), free(prio);
    snprintf(err, errlen, "search: stage 3: cannot create the swap search for group %d", g);
    return -1;
}

/* Write the solution sol (one 0/1 per unit) into z: each unit's sw_span heads from sw_units[k]. */
static void sol_to_body(const search_state *st, const uint8_t *sol, uint8_t *z) {
    for (int k = 0; k < st->sw_n; k++)
        memset(z + st->sw_units[k], sol[k] ? ATTN_SWA : ATTN_FULL, (size_t)st->sw_span);
}

/* Put the sub-search's solution sw_sol into cand (on top of result). */
static void sol_to_cand(search_state *st) {
    memcpy(st->cand.z, st->result.z, (size_t)st->L * st->H);
    sol_to_body(st, st->sw_sol, st->cand.z);
}

/* One evaluation of the swap sub-search: 0 evaluated, 1 the sub-search is over, -1 error. */
int search_heads_swap_step(search_state *st, int stage, int group, char *err, size_t errlen) {
    if (!swap_ask(st->sw, st->sw_sol)) return 1;
    sol_to_cand(st);
    const search_plan_phase *ph = &st->plan.phase[st->plan.cur];
    if (ph->kind == SEARCH_PHASE_REFINE) search_plan_unit(st, (int)ph->evals_done); /* the swap's number */
    search_eval e;
    /* the incumbent (the current solution, once the start is scored): the race and the acceptance
     * compare the candidate with it */
    const int started = swap_n_evals(st->sw) > 0;
    if (started) {
        memcpy(st->race_scratch, st->result.z, (size_t)st->L * st->H);
        sol_to_body(st, swap_best(st->sw), st->race_scratch);
        if (search_race_set_incumbent(st, st->race_scratch)) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
    }
    /* every candidate becomes the prefix-reuse base: the next one is a swap away from the current
     * solution, usually the last one evaluated */
    int rc = eval_dedup(st, 1, stage, group, -1, &e, err, errlen);
    const int inc = st->race_inc != NULL;
    if (rc) {
        st->race_inc = NULL;
        return -1;
    }
    if (ph->kind == SEARCH_PHASE_REFINE) search_plan_unit_done(st);
    /* not started: the start itself; no incumbent in the log (it cannot happen: every current
     * solution was scored whole): the plain rule */
    const int take = !started ? 1
                     : inc    ? search_race_decide(st, &e, swap_best_score(st->sw))
                              : e.score > swap_best_score(st->sw);
    st->race_inc = NULL;
    swap_tell_accept(st->sw, e.score, take);
    if (!take) return 0;
    double norm = search_normalize(st, e.score);
    if (norm > st->best_norm) {
        st->best_norm = norm;
        search_event ev = search_event_new(st, SEARCH_EV_INCUMBENT, stage);
        ev.group = group;
        ev.mask = &st->cand;
        ev.raw_score = e.score;
        ev.score = norm;
        ev.best_score = norm;
        search_emit(st, &ev);
    }
    return 0;
}

/* Commit the swap sub-search's best solution into result; returns its raw score. */
double search_heads_swap_commit(search_state *st) {
    memcpy(st->sw_sol, swap_best(st->sw), (size_t)st->sw_n);
    sol_to_body(st, st->sw_sol, st->result.z);
    double s = swap_best_score(st->sw);
    swap_free(st->sw);
    st->sw = NULL;
    return s;
}

/* ---- the refinement over all layers --------------------------------------------------------- */

/* The locality (which = 0) or echo (1) ranking of the model into imp[L*H] (the registry rows'
 * `rank`, computed from the weights and the calibration tokens, no objective evaluation). 0, 1 when
 * it is not available (no model, no calibration tokens), -1 error. */
static int attn_ranking_missing(const search_state *st, int which) {
    return !st->mdl || (which == 0 && (!st->obj->samples || st->obj->n_samples < 1));
}

static int attn_ranking(search_state *st, int which, double *imp, char *err, size_t errlen) {
    if (attn_ranking_missing(st, which)) return 1;
    const int row = which == 0 ? SEARCH_METHOD_LOCALITY : SEARCH_METHOD_ECHO;
    const size_t n = (size_t)st->L * st->H;
    if (st->head_rank[row]) { /* computed before (a retried step): the same numbers */
        memcpy(imp, st->head_rank[row], sizeof(double) * n);
        return 0;
    }
    search_rank_input in = search_rank_input_of(st);
    if (search_method_row(row)->rank(&in, imp, err, errlen)) return -1;
    /* kept for search_head_ranking (the explorer's heat map, its attention view's ranks) */
    if ((st->head_rank[row] = malloc(sizeof(double) * n)))
        memcpy(st->head_rank[row], imp, sizeof(double) * n);
    return 0;
}

static int refine_score_start(search_state *st, char *err, size_t errlen);

/* Start candidate `which` of the refinement (2: drop cut, 3: Fisher cut, 4: locality, 5: echo, 6:
 * the start mask at the target): its cut, scored unless the ranking is unusable (NaN scores, no
 * model for the attention rankings) or the cut equals the stage-3 mask; a better start replaces
 * sw_sol. 0 an evaluation was made, 1 skipped (nothing scored), -1 error. */
static int refine_try_start(search_state *st, int which, char *err, size_t errlen) {
    const int n = st->L * st->H;
    if (which == 6) { /* the start mask cut to the target (search_config.start_*) */
        if (search_start_cut(st, st->cand.z)) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        return refine_score_start(st, err, errlen);
    }
    double *attn = NULL;
    const double *score = which == 2 ? st->head_drop : st->head_fisher;
    if (which >= 4) {
        if (!(attn = malloc(sizeof(double) * (size_t)n))) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        int a = attn_ranking(st, which - 4, attn, err, errlen);
        if (a) {
            free(attn);
            return a < 0 ? -1 : 1;
        }
        score = attn;
    }
    int usable = 1;
    for (int u = 0; u < n; u++) usable &= !isnan(score[u]);
    if (!usable) {
        free(attn);
        return 1;
    }
    int cut = cut_scores(st, score, st->cand.z);
    free(attn);
    if (cut) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    return refine_score_start(st, err, errlen);
}

/* Score the start candidate in st->cand (not when it is the stage-3 mask) against the current start;
 * a better one replaces sw_sol. 0 an evaluation was made, 1 skipped, -1 error. */
static int refine_score_start(search_state *st, char *err, size_t errlen) {
    const int n = st->L * st->H;
    if (!memcmp(st->cand.z, st->result.z, (size_t)n)) return 1;
    /* the current start is the incumbent: the race and the acceptance compare the cut with it */
    for (int u = 0; u < n; u++) st->race_scratch[u] = st->sw_sol[u] ? ATTN_SWA : ATTN_FULL;
    const long at = search_log_find_whole(st, st->race_scratch);
    if (search_race_set_incumbent(st, st->race_scratch)) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    search_eval e;
    int rc = eval_dedup(st, 0, 3, -1, -1, &e, err, errlen);
    const int inc = st->race_inc != NULL;
    if (rc) {
        st->race_inc = NULL;
        return -1;
    }
    const int take = inc && at >= 0 ? search_race_decide(st, &e, st->log[at].score)
                                    : search_normalize(st, e.score) > st->best_norm;
    st->race_inc = NULL;
    if (take) { /* a better start */
        st->best_norm = search_normalize(st, e.score);
        for (int u = 0; u < n; u++) st->sw_sol[u] = st->cand.z[u] == ATTN_SWA;
    }
    return 0;
}

/* The refinement's sub-search over every unit, one block, from the best start (sw_sol); emits its
 * group start. 1 ready, -1 error. */
static int refine_create(search_state *st, char *err, size_t errlen) {
    const int n = st->L * st->H;
    double *prio = malloc(sizeof(double) * (size_t)n);
    if (!prio) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    uint8_t *init = malloc((size_t)n);
    if (!init) {
        free(prio);
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    int k = 0; /* units: every head that is not pinned */
    for (int u = 0; u < n; u++) {
        if (st->pin && st->pin[u]) continue;
        st->sw_units[k] = u;
        prio[k] = isnan(st->head_drop[u]) ? 0.0 : st->head_drop[u];
        init[k++] = st->sw_sol[u];
    }
    st->sw_span = 1;
    /* the budget: refine_budget per stage-3 group that ran, plus one for the start (already scored:
     * its ask is answered from the log) */
    const long budget = st->cfg.refine_budget * (st->n_groups > 0 ? st->n_groups : 1) + 1;
    /* the start's body (pins included) goes to result below; the units are the free heads */
    for (int u = 0; u < n; u++) st->result.z[u] = st->sw_sol[u] ? ATTN_SWA : ATTN_FULL;
    st->sw_n = k;
    st->sw = k > 0 ? swap_create(k, NULL, init, prio, budget, rng_derive(st->cfg.seed, 3000)) : NULL;
    free(prio);
    free(init);
    if (!st->sw) {
        snprintf(err, errlen, "search: refinement: cannot create the swap search");
        return -1;
    }
    st->best_norm = -INFINITY;
    search_plan_enter(st, SEARCH_PHASE_REFINE);
    search_plan_cap(st, st->plan.cur, (int)budget, budget);
    search_event ev = search_event_new(st, SEARCH_EV_GROUP_START, 3);
    ev.group = -1;
    ev.n_layers_in_group = 0;
    ev.eval_budget = budget;
    ev.mask = &st->result;
    ev.message = "refinement over all layers (swaps at the fixed ratio)";
    search_emit(st, &ev);
    return 1;
}

/* Steps of PH_REFINE_BEGIN: score the start candidates (the stage-3 mask when unknown, then the
 * cuts of the head-score drop, of the head-score Fisher form, and of the locality and echo
 * rankings when the model is at hand, then the start mask at the target when there is one), keep the best in
 * sw_sol, then create the sub-search. So the refinement, which only accepts improvements, never ends below
 * any static head ranking on the calibration objective. 0 an evaluation was made, 1 ready (phase PH_REFINE),
 * -1 error. */
int search_heads_refine_begin(search_state *st, char *err, size_t errlen) {
    const int n = st->L * st->H;
    search_eval e;
    /* the state moves on only after a step's evaluation succeeded, so a failed step can be retried
     * (search_step's contract) and a replay sees the same sequence */
    if (st->refine_inits == 0) { /* candidate 0: the mask stages 1-3 produced */
        search_plan_enter(st, SEARCH_PHASE_REFINE_STARTS);
        st->best_norm = -INFINITY;
        memcpy(st->cand.z, st->result.z, (size_t)n);
        if (!st->final_known) {
            search_plan_unit(st, 0);
            if (eval_dedup(st, 1, 3, -1, -1, &e, err, errlen)) return -1;
            st->final_raw = e.score, st->final_known = 1;
            st->refine_inits = 1;
            search_plan_unit_done(st);
            return 0;
        }
        st->refine_inits = 1;
    }
    if (st->refine_inits == 1) { /* the stage-3 mask is the incumbent start */
        if (search_confirm_add(st, st->result.z, "stage3")) {
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        for (int u = 0; u < n; u++) st->sw_sol[u] = st->result.z[u] == ATTN_SWA;
        st->best_norm = search_normalize(st, st->final_raw);
        st->refine_inits = 2;
    }
    while (st->refine_inits <= 6) { /* 2: drop cut, 3: Fisher cut, 4: locality, 5: echo, 6: start mask */
        if ((st->refine_inits == 6 && !st->start) || (st->refine_inits >= 4 && st->refine_inits <= 5 &&
                                                      attn_ranking_missing(st, st->refine_inits - 4))) {
            /* not planned */
            st->refine_inits++;
            continue;
        }
        search_plan_unit(st, st->plan.phase[st->plan.cur].units_done);
        int r = refine_try_start(st, st->refine_inits, err, errlen);
        if (r < 0) return -1;
        static const char *const start_name[] = {"", "", "drop", "fisher", "locality", "echo", "start"};
        if (r == 0 && search_confirm_add(st, st->cand.z, start_name[st->refine_inits])) { /* a finalist */
            snprintf(err, errlen, "search: out of memory");
            return -1;
        }
        st->refine_inits++;
        search_plan_unit_done(st);
        const search_plan_phase *ph = &st->plan.phase[st->plan.cur];
        search_plan_cap(st, st->plan.cur, -1, ph->n_units - ph->units_done); /* at most one each */
        if (r == 0) return 0;
    }
    search_plan_unit(st, -1);
    return refine_create(st, err, errlen);
}
