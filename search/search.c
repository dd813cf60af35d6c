/* search.c — the BOSCH search as a step-by-step state machine (docs/design.md §6; see search.h).
 * Stage 1 probes layers from last to first, stage 2 turns the drops into per-layer ratios
 * (stage2.c), stage 3 optimizes groups of layers with the optimizer (optimizer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_internal.h"

/* ---- create / free ------------------------------------------------------------------------ */

/* BOSCH over whole layers (search_config.granularity; search_layers.c). */
static int layer_mode(const search_config *cfg) {
    return cfg->method == SEARCH_METHOD_BOSCH && cfg->granularity == SEARCH_GRANULARITY_LAYER;
}

int search_create(search_state **out, const search_config *cfg, int n_layer, int n_head_kv,
                  const search_objective *obj, const model *m, search_listener listener, void *user,
                  char *err, size_t errlen) {
    *out = NULL;
    if (search_config_check(cfg, err, errlen)) return -1;
    if (n_layer < 1 || n_head_kv < 1 || n_head_kv > 62) {
        snprintf(err, errlen, "search: unsupported mask shape %d layers x %d KV heads", n_layer, n_head_kv);
        return -1;
    }
    if (!obj || !obj->score) {
        snprintf(err, errlen, "search: no objective");
        return -1;
    }
    if (search_pins_check(cfg, n_layer, n_head_kv, err, errlen) ||
        search_start_check(cfg, n_layer, n_head_kv, err, errlen))
        return -1;
    if (search_method_needs_model(cfg->method) && !m) {
        snprintf(err, errlen, "search: method '%s' needs the model", search_method_name(cfg->method));
        return -1;
    }
    search_state *st = calloc(1, sizeof *st);
    if (!st) goto oom;
    st->cfg = *cfg;
    st->L = n_layer;
    st->H = n_head_kv;
    st->target_swa = search_target_swa(cfg, n_layer, n_head_kv);
    st->obj = obj;
    st->mdl = m;
    st->listener = listener;
    st->user = user;
    st->s_full = st->s_swa = NAN;
    st->best_norm = -INFINITY;
    /* whole layers: each probed with every head SWA; round(rho * L) layers */
    st->k1 = search_stage1_k(cfg, n_head_kv);
    if (search_plan_make(&st->plan, cfg, n_layer, n_head_kv, m != NULL, obj->samples && obj->n_samples > 0))
        goto oom;
    st->plan_unit = -1;
    st->fin_kept = -1; /* the confirmation has not started (search_confirm.c) */
    st->sw_span = 1;
    size_t L = (size_t)n_layer;
    if (mask_init(&st->result, n_layer, n_head_kv, cfg->window, cfg->sinks, ATTN_FULL) ||
        mask_init(&st->cand, n_layer, n_head_kv, cfg->window, cfg->sinks, ATTN_FULL) ||
        mask_init(&st->last, n_layer, n_head_kv, cfg->window, cfg->sinks, ATTN_FULL) ||
        mask_init(&st->base, n_layer, n_head_kv, cfg->window, cfg->sinks, ATTN_FULL))
        goto oom;
    st->opt_layers = calloc(L, sizeof(int));
    st->opt_sol = calloc(L, sizeof(uint64_t));
    st->probed = calloc(L, 1);
    st->stage1_bits = calloc(L, sizeof(uint64_t));
    st->s_best = malloc(sizeof(double) * L);
    st->delta = malloc(sizeof(double) * L);
    st->weight = malloc(sizeof(double) * L);
    st->n_swa = malloc(sizeof(int) * L);
    st->bucket = malloc(sizeof(int) * L);
    st->group_start = calloc(L + 1, sizeof(int));
    st->group_layers = calloc(L, sizeof(int));
    st->group_bucket = calloc(L, sizeof(int));
    st->importance = calloc(L * (size_t)n_head_kv, sizeof(double));
    st->sw_units = calloc(L * (size_t)n_head_kv, sizeof(int));
    st->sw_sol = calloc(L * (size_t)n_head_kv, 1);
    st->race_scratch = calloc(L * (size_t)n_head_kv, 1);
    if (cfg->stage1_singles && !layer_mode(cfg)) {
        st->head_drop = malloc(sizeof(double) * L * (size_t)n_head_kv);
        st->head_fisher = malloc(sizeof(double) * L * (size_t)n_head_kv);
        if (!st->head_drop || !st->head_fisher) goto oom;
        for (size_t i = 0; i < L * (size_t)n_head_kv; i++) st->head_drop[i] = st->head_fisher[i] = NAN;
        st->eval_observer = search_heads_note; /* the head scores of single-head masks */
    }
    if (search_pins_build(st) || search_start_build(st)) goto oom;
    if (!st->sw_units || !st->sw_sol || !st->race_scratch || !st->opt_layers || !st->opt_sol || !st->probed ||
        !st->stage1_bits || !st->s_best || !st->delta || !st->weight || !st->n_swa || !st->bucket ||
        !st->group_start || !st->group_layers || !st->group_bucket || !st->importance)
        goto oom;
    for (size_t l = 0; l < L; l++) {
        st->s_best[l] = st->delta[l] = st->weight[l] = NAN;
        st->n_swa[l] = st->bucket[l] = -1;
    }
    st->phase = PH_START;
    st->batch = 1;
    *out = st;
    return 0;
oom:
    search_free(st);
    snprintf(err, errlen, "search: out of memory");
    return -1;
}

void search_free(search_state *st) {
    if (!st) return;
    opt_free(st->opt);
    mask_free(&st->result);
    mask_free(&st->cand);
    mask_free(&st->last);
    mask_free(&st->base);
    free(st->opt_layers);
    free(st->opt_sol);
    free(st->probed);
    free(st->stage1_bits);
    free(st->s_best);
    free(st->delta);
    free(st->weight);
    free(st->n_swa);
    free(st->bucket);
    free(st->group_start);
    free(st->group_layers);
    free(st->group_bucket);
    free(st->importance);
    free(st->head_drop);
    free(st->head_fisher);
    for (int r = 0; r < SEARCH_METHODS_MAX; r++) free(st->head_rank[r]);
    free(st->pin);
    free(st->pin_fs);
    free(st->pin_ff);
    free(st->start);
    free(st->sw_units);
    free(st->sw_sol);
    free(st->race_scratch);
    free(st->race_inc_buf);
    free(st->race_nll);
    free(st->race_order);
    swap_free(st->sw);
    free(st->sample_nll_full);
    search_log_free(st->log, st->n_log);
    search_log_free(st->replay, st->n_replay);
    search_batch_free(st);
    search_confirm_free(st);
    free(st);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static void set_row_bits(attn_mask *m, int layer, uint64_t swa_bits) {
    for (int h = 0; h < m->n_head_kv; h++) mask_set(m, layer, h, (swa_bits >> h & 1) ? ATTN_SWA : ATTN_FULL);
}

static void fill_mask(attn_mask *m, uint8_t v) {
    memset(m->z, v, (size_t)m->n_layer * m->n_head_kv);
}

/* Incumbent bookkeeping after an evaluation inside an optimizer sub-search. */
static void note_score(search_state *st, double raw, int stage, int group, int layer) {
    double norm = search_normalize(st, raw);
    if (norm > st->best_norm) {
        st->best_norm = norm;
        search_event ev = search_event_new(st, SEARCH_EV_INCUMBENT, stage);
        ev.layer = layer;
        ev.group = group;
        ev.mask = &st->cand;
        ev.raw_score = raw;
        ev.score = norm;
        ev.best_score = norm;
        search_emit(st, &ev);
    }
}

/* Stage-3 start for one layer needing k SWA heads: keep stage 1's choice where it fits (its
 * lowest-index heads when k is smaller, plus the lowest-index other heads when k is larger). */
static uint64_t stage3_init_bits(uint64_t s1, int k, int H) {
    uint64_t b = 0;
    int n = 0;
    for (int h = 0; h < H && n < k; h++)
        if (s1 >> h & 1) b |= 1ull << h, n++;
    for (int h = 0; h < H && n < k; h++)
        if (!(b >> h & 1)) b |= 1ull << h, n++;
    return b;
}

/* The fewest and the most SWA heads layer l can have: its heads pinned SWA, its heads not pinned
 * full (0 and H without pins). */
static int lo_swa(const search_state *st, int l) {
    return st->pin ? st->pin_fs[l] : 0;
}
static int hi_swa(const search_state *st, int l) {
    return st->H - (st->pin ? st->pin_ff[l] : 0);
}

/* Build stage-3 groups: layers with something to choose (0 < n_swa < H; with pins, between the
 * layer's bounds), grouped by bucket, buckets ascending (bucket 0
 * = highest ratio = most tolerant first); inside a group, layers ascending. */
static void build_groups(search_state *st) {
    st->n_groups = 0;
    int n = 0;
    if (layer_mode(&st->cfg)) { /* one group: every layer, the count of SWA layers fixed */
        for (int l = 0; l < st->L; l++) st->group_layers[l] = l;
        st->group_start[0] = 0, st->group_start[1] = st->L;
        st->group_bucket[0] = 0;
        st->n_groups = 1;
        return;
    }
    for (int b = 0; b <= st->H; b++) {
        int start = n;
        for (int l = 0; l < st->L; l++)
            if (st->bucket[l] == b && st->n_swa[l] > lo_swa(st, l) && st->n_swa[l] < hi_swa(st, l))
                st->group_layers[n++] = l;
        if (n > start) {
            st->group_start[st->n_groups] = start;
            st->group_bucket[st->n_groups] = b;
            st->n_groups++;
        }
    }
    st->group_start[st->n_groups] = n;
}

/* ---- stages ------------------------------------------------------------------------------- */

static void plan_after_stage2(search_state *st);

/* Evaluations a stage-3 group plans at most (opt_planned, swap_budget). */
static long stage3_per_group(const search_state *st) {
    return layer_mode(&st->cfg) ? search_layers_stage3_budget(st) : st->cfg.stage3_budget_per_group;
}

/* Evaluations a stage-1 layer probe plans at most (what opt_planned gives). */
static long stage1_per_layer(const search_state *st) {
    const int64_t c = opt_space_size(1, &st->k1, st->H);
    return c < st->cfg.stage1_budget_per_layer ? (long)c : st->cfg.stage1_budget_per_layer;
}

static int step_stage1(search_state *st, char *err, size_t errlen) {
    int l = st->cur_layer;
    if (!st->opt) {
        st->opt_m = 1;
        st->opt_layers[0] = l;
        st->opt = opt_create(1, &st->k1, st->H, NULL, st->cfg.stage1_budget_per_layer, st->cfg.restarts,
                             rng_derive(st->cfg.seed, 1000 + (uint64_t)l));
        if (!st->opt) {
            snprintf(err, errlen, "search: stage 1: cannot create the optimizer for layer %d", l);
            return -1;
        }
        st->best_norm = -INFINITY;
        const int done = st->L - 1 - l; /* layers probed before this one */
        search_plan_unit(st, done);
        search_plan_cap(st, st->plan.cur, -1,
                        opt_planned(st->opt) + (long)(st->L - done - 1) * stage1_per_layer(st));
        search_event ev = search_event_new(st, SEARCH_EV_LAYER_START, 1);
        ev.layer = l;
        ev.eval_budget = opt_planned(st->opt);
        ev.mask = &st->result;
        search_emit(st, &ev);
    }
    if (opt_ask(st->opt, st->opt_sol)) {
        if (st->cfg.stage1_independent)
            memset(st->cand.z, ATTN_FULL, (size_t)st->L * st->H);
        else
            memcpy(st->cand.z, st->result.z, (size_t)st->L * st->H);
        set_row_bits(&st->cand, l, st->opt_sol[0]);
        search_eval e;
        if (search_eval_cand(st, 0, 1, -1, l, &e, err, errlen)) return -1;
        opt_tell(st->opt, e.score);
        note_score(st, e.score, 1, -1, l);
        return 0;
    }
    st->stage1_bits[l] = opt_best(st->opt)[0];
    st->s_best[l] = opt_best_score(st->opt);
    st->probed[l] = 1;
    set_row_bits(&st->result, l, st->stage1_bits[l]);
    opt_free(st->opt);
    st->opt = NULL;
    search_plan_unit_done(st);
    search_plan_cap(st, st->plan.cur, -1, (long)l * stage1_per_layer(st)); /* layers l-1 .. 0 to go */
    search_event ev = search_event_new(st, SEARCH_EV_LAYER_END, 1);
    ev.layer = l;
    ev.raw_score = st->s_best[l];
    ev.score = search_normalize(st, st->s_best[l]);
    ev.mask = &st->result;
    search_emit(st, &ev);
    st->cur_layer--;
    st->phase = PH_S1_LAYER_BEGIN;
    return 1; /* no evaluation done: caller continues */
}

static int step_stage2(search_state *st, char *err, size_t errlen) {
    search_plan_enter(st, SEARCH_PHASE_ASSIGN);
    search_event ev = search_event_new(st, SEARCH_EV_STAGE_START, 2);
    search_emit(st, &ev);
    for (int l = 0; l < st->L; l++)
        st->delta[l] =
            (st->cfg.delta_marginal && l + 1 < st->L ? st->s_best[l + 1] : st->s_full) - st->s_best[l];
    /* at layer granularity a layer is one unit: n_swa is 0 or 1 layer, then 0 or H heads */
    const int units = layer_mode(&st->cfg) ? 1 : st->H;
    if ((st->cfg.stage2_ranks ? search_stage2_assign_ranks : search_stage2_assign)(
            st->delta, st->L, units, st->cfg.ratio, st->cfg.n_buckets, st->weight, st->n_swa, st->bucket)) {
        snprintf(err, errlen, "search: stage 2 failed (ratio %g, %d layers)", st->cfg.ratio, st->L);
        return -1;
    }
    for (int l = 0; l < st->L; l++) st->n_swa[l] *= st->H / units;
    search_pins_bound_alloc(st); /* each layer within its pinned heads, the same total */
    st->stage2_done = 1;
    for (int l = 0; l < st->L; l++) {
        search_plan_unit(st, l);
        ev = search_event_new(st, SEARCH_EV_LAYER_STATS, 2);
        ev.layer = l;
        ev.delta = st->delta[l];
        ev.weight = st->weight[l];
        ev.n_swa = st->n_swa[l];
        ev.ratio = (double)st->n_swa[l] / st->H;
        ev.bucket = st->bucket[l];
        ev.raw_score = st->s_best[l];
        ev.score = search_normalize(st, st->s_best[l]);
        search_emit(st, &ev);
        search_plan_unit_done(st);
    }
    build_groups(st);
    plan_after_stage2(st);
    search_plan_unit(st, -1);
    ev = search_event_new(st, SEARCH_EV_STAGE_END, 2);
    search_emit(st, &ev);
    st->phase = PH_S3_BEGIN;
    return 0;
}

/* What stage 2 tells the plan: the number of stage-3 groups, so stage 3's evaluations, the
 * refinement's budget and starts, and whether the final mask needs scoring. */
static void plan_after_stage2(search_state *st) {
    const int g = st->n_groups;
    search_plan_cap(st, search_plan_index(st, SEARCH_PHASE_GROUPS), g, (long)g * stage3_per_group(st));
    const int starts = search_plan_index(st, SEARCH_PHASE_REFINE_STARTS);
    if (starts >= 0) { /* the stage-3 mask needs scoring there only when no group scores it */
        const search_plan_phase *ph = &st->plan.phase[starts];
        search_plan_cap(st, starts, ph->n_units - (g > 0), ph->evals_planned - (g > 0));
        const long swaps = st->cfg.refine_budget * (g > 0 ? g : 1) + 1;
        search_plan_cap(st, search_plan_index(st, SEARCH_PHASE_REFINE), (int)swaps, swaps);
    }
    if (g > 0) search_plan_cap(st, search_plan_index(st, SEARCH_PHASE_FINAL), 0, 0); /* a group scores it */
}

/* End of stage-3 group g (its m layers): GROUP_END with the group's final score, next group. */
static int stage3_group_end(search_state *st, int g, int *layers, int m) {
    search_plan_unit_done(st);
    search_plan_cap(st, st->plan.cur, -1, (long)(st->n_groups - g - 1) * stage3_per_group(st));
    search_event ev = search_event_new(st, SEARCH_EV_GROUP_END, 3);
    ev.group = st->group_bucket[g];
    ev.n_layers_in_group = m;
    ev.group_layers = layers;
    ev.raw_score = st->final_raw;
    ev.score = search_normalize(st, st->final_raw);
    ev.mask = &st->result;
    search_emit(st, &ev);
    st->cur_group++;
    st->phase = PH_S3_GROUP_BEGIN;
    search_plan_unit(st, -1);
    return 1;
}

/* The group sub-search of stage 3 has begun (planned evaluations `planned`): the plan's unit g. */
static void plan_group_begin(search_state *st, int g, long planned) {
    search_plan_unit(st, g);
    search_plan_cap(st, st->plan.cur, -1, planned + (long)(st->n_groups - g - 1) * stage3_per_group(st));
}

/* Stage 3 of one group with head scores: the guided swap search (search_heads.c). */
static int step_stage3_group_heads(search_state *st, char *err, size_t errlen) {
    const int g = st->cur_group;
    int *layers = st->group_layers + st->group_start[g];
    const int m = st->group_start[g + 1] - st->group_start[g];
    if (!st->sw) {
        if (layer_mode(&st->cfg) ? search_layers_group_begin(st, err, errlen)
                                 : search_heads_group_begin(st, g, err, errlen))
            return -1;
        st->best_norm = -INFINITY;
        plan_group_begin(st, g, swap_budget(st->sw));
        search_event ev = search_event_new(st, SEARCH_EV_GROUP_START, 3);
        ev.group = st->group_bucket[g];
        ev.n_layers_in_group = m;
        ev.group_layers = layers;
        ev.eval_budget = swap_budget(st->sw);
        ev.mask = &st->result;
        search_emit(st, &ev);
    }
    int r = search_heads_swap_step(st, 3, st->group_bucket[g], err, errlen);
    if (r <= 0) return r;
    st->final_known = 1;
    st->final_raw = search_heads_swap_commit(st);
    return stage3_group_end(st, g, layers, m);
}

static int step_stage3_group(search_state *st, char *err, size_t errlen) {
    /* with pins the swap search over the free heads (the optimizer's enumeration has no fixed heads) */
    if (st->head_drop || st->pin || layer_mode(&st->cfg)) return step_stage3_group_heads(st, err, errlen);
    int g = st->cur_group;
    int *layers = st->group_layers + st->group_start[g];
    int m = st->group_start[g + 1] - st->group_start[g];
    if (!st->opt) {
        int *k = malloc(sizeof(int) * (size_t)m);
        uint64_t *init = malloc(sizeof(uint64_t) * (size_t)m);
        for (int i = 0; k && init && i < m; i++) {
            k[i] = st->n_swa[layers[i]];
            /* from the start mask when there is one (search_config.start_*), else stage 1's choice */
            init[i] = st->start ? search_start_layer_bits(st, layers[i], k[i], st->stage1_bits[layers[i]])
                                : stage3_init_bits(st->stage1_bits[layers[i]], k[i], st->H);
        }
        if (k && init)
            st->opt = opt_create(m, k, st->H, init, st->cfg.stage3_budget_per_group, st->cfg.restarts,
                                 rng_derive(st->cfg.seed, 2000 + (uint64_t)g));
        free(k);
        free(init);
        if (!st->opt) {
            snprintf(err, errlen, "search: stage 3: cannot create the optimizer for group %d", g);
            return -1;
        }
        st->opt_m = m;
        memcpy(st->opt_layers, layers, sizeof(int) * (size_t)m);
        st->best_norm = -INFINITY;
        plan_group_begin(st, g, opt_planned(st->opt));
        search_event ev = search_event_new(st, SEARCH_EV_GROUP_START, 3);
        ev.group = st->group_bucket[g];
        ev.n_layers_in_group = m;
        ev.group_layers = layers;
        ev.eval_budget = opt_planned(st->opt);
        ev.mask = &st->result;
        search_emit(st, &ev);
    }
    if (opt_ask(st->opt, st->opt_sol)) {
        memcpy(st->cand.z, st->result.z, (size_t)st->L * st->H);
        for (int i = 0; i < m; i++) set_row_bits(&st->cand, layers[i], st->opt_sol[i]);
        search_eval e;
        /* every stage-3 candidate becomes the prefix-reuse base: the next candidate is one swap
         * away from the current solution, which is usually the last one evaluated */
        if (search_eval_cand(st, 1, 3, st->group_bucket[g], -1, &e, err, errlen)) return -1;
        opt_tell(st->opt, e.score);
        note_score(st, e.score, 3, st->group_bucket[g], -1);
        return 0;
    }
    const uint64_t *best = opt_best(st->opt);
    for (int i = 0; i < m; i++) set_row_bits(&st->result, layers[i], best[i]);
    st->final_known = 1;
    st->final_raw = opt_best_score(st->opt);
    opt_free(st->opt);
    st->opt = NULL;
    return stage3_group_end(st, g, layers, m);
}

/* ---- the step ----------------------------------------------------------------------------- */

static int normalizer_step(search_state *st, int swa, char *err, size_t errlen) {
    search_plan_enter(st, SEARCH_PHASE_NORMALIZE);
    search_plan_unit(st, swa);
    fill_mask(&st->cand, swa ? ATTN_SWA : ATTN_FULL);
    search_eval e;
    /* all-full is the prefix-reuse base of stage 1 (rows < l are full for every probe of l) */
    if (search_eval_cand(st, !swa, 0, -1, -1, &e, err, errlen)) return -1;
    if (!swa) {
        st->s_full = e.score, st->acc_full = e.accuracy, st->nll_full = e.nll;
        free(st->sample_nll_full);
        st->sample_nll_full = NULL;
        st->n_sample_nll = 0;
        if (e.sample_nll && e.n_samples > 0) {
            st->sample_nll_full = malloc(sizeof(double) * (size_t)e.n_samples);
            if (!st->sample_nll_full) {
                snprintf(err, errlen, "search: out of memory");
                return -1;
            }
            memcpy(st->sample_nll_full, e.sample_nll, sizeof(double) * (size_t)e.n_samples);
            st->n_sample_nll = e.n_samples;
        }
    } else {
        st->s_swa = e.score, st->acc_swa = e.accuracy;
    }
    search_plan_unit_done(st);
    return 0;
}

static void stage_event(search_state *st, search_event_kind kind, int stage) {
    search_event ev = search_event_new(st, kind, stage);
    ev.mask = &st->result;
    search_emit(st, &ev);
}

/* search_step's phases. A phase handler returns PHASE_AGAIN when it made no evaluation (the next
 * phase runs at once), PHASE_DONE when the search is finished, 0 after one evaluation, or < 0 on an
 * error (st->cancelled tells a cancel). PHASE_AGAIN equals the "go on" value 1 of the stage steps
 * (step_stage1, search_heads_*, search_baseline_step), which are returned as they are. */
#define PHASE_AGAIN 1
#define PHASE_DONE 2

static int phase_start(search_state *st) {
    search_event ev = search_event_new(st, SEARCH_EV_SEARCH_START, 0);
    char msg[160];
    int n = snprintf(msg, sizeof msg, "%s search%s, ratio %.4g, window %d, sinks %d, seed %llu",
                     search_method_name(st->cfg.method), layer_mode(&st->cfg) ? " over whole layers" : "",
                     st->cfg.ratio, st->cfg.window, st->cfg.sinks, (unsigned long long)st->cfg.seed);
    if (st->pin && n > 0 && (size_t)n < sizeof msg) /* the constraints it runs under */
        n += snprintf(msg + n, sizeof msg - (size_t)n, ", %d pinned heads", st->cfg.n_pins);
    if (st->start && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, ", from a start mask");
    ev.message = msg;
    ev.mask = &st->result;
    ev.eval_budget = search_eval_budget(st);
    search_emit(st, &ev);
    st->phase = PH_NORM_FULL;
    return PHASE_AGAIN;
}

/* The two normalizer evaluations (all full, then all SWA); after them the search proper starts, or
 * ends at once when the ratio leaves nothing to choose. */
static int phase_normalizer(search_state *st, int swa, char *err, size_t errlen) {
    int r = normalizer_step(st, swa, err, errlen);
    if (r) return r < 0 ? r : 0;
    if (!swa) {
        st->phase = PH_NORM_SWA;
    } else if (st->target_swa == 0 || st->target_swa == (long)st->L * st->H) {
        /* nothing to choose: every head full (rho = 0) or every head SWA (rho = 1) */
        fill_mask(&st->result, st->target_swa ? ATTN_SWA : ATTN_FULL);
        search_pins_apply(st, st->result.z); /* the pins agree (search_pins_check) */
        st->final_known = 1;
        st->final_raw = st->target_swa ? st->s_swa : st->s_full;
        st->final_acc = st->target_swa ? st->acc_swa : st->acc_full;
        st->phase = PH_FINAL;
    } else {
        st->phase = st->cfg.method == SEARCH_METHOD_BOSCH ? PH_S1_BEGIN : PH_BL_BEGIN;
    }
    return 0;
}

static int phase_stage1_layer_begin(search_state *st) {
    if (st->cur_layer >= 0) {
        st->phase = PH_S1_LAYER;
    } else if (st->head_drop) { /* then every head alone (those the probes did not score) */
        st->single_pos = st->L * st->H - 1;
        st->phase = PH_S1_SINGLES;
        int left = 0;
        for (int u = 0; u < st->L * st->H; u++) left += isnan(st->head_drop[u]);
        if (left > 0) search_plan_enter(st, SEARCH_PHASE_SINGLES);
        search_plan_cap(st, search_plan_index(st, SEARCH_PHASE_SINGLES), left, left);
    } else {
        stage_event(st, SEARCH_EV_STAGE_END, 1);
        st->phase = PH_S2;
    }
    return PHASE_AGAIN;
}

static int phase_stage3_begin(search_state *st) {
    search_plan_enter(st, SEARCH_PHASE_GROUPS);
    stage_event(st, SEARCH_EV_STAGE_START, 3);
    st->stage_evals = 0;
    /* layers with nothing to choose at their level, the others full until their group's turn; with
     * pins, the free heads so and the pinned ones as pinned */
    for (int l = 0; l < st->L; l++)
        set_row_bits(&st->result, l, st->n_swa[l] == hi_swa(st, l) ? (1ull << st->H) - 1 : 0);
    search_pins_apply(st, st->result.z);
    st->cur_group = 0;
    st->final_known = 0;
    st->phase = PH_S3_GROUP_BEGIN;
    return PHASE_AGAIN;
}

static int phase_stage3_group_begin(search_state *st) {
    if (st->cur_group < st->n_groups) {
        st->phase = PH_S3_GROUP;
    } else if (st->head_drop && st->cfg.refine_budget > 0) {
        st->refine_inits = 0;
        st->phase = PH_REFINE_BEGIN;
    } else {
        stage_event(st, SEARCH_EV_STAGE_END, 3);
        st->phase = PH_FINAL;
    }
    return PHASE_AGAIN;
}

/* One swap move of the final head-level refinement; at its end the refined mask is the result. */
static int phase_refine(search_state *st, char *err, size_t errlen) {
    int r = search_heads_swap_step(st, 3, -1, err, errlen);
    if (r != 1) return r;
    st->final_known = 1;
    st->final_raw = search_heads_swap_commit(st);
    if (search_confirm_add(st, st->result.z, "refined")) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    search_plan_unit(st, -1);
    search_event ev = search_event_new(st, SEARCH_EV_GROUP_END, 3);
    ev.group = -1;
    ev.raw_score = st->final_raw;
    ev.score = search_normalize(st, st->final_raw);
    ev.mask = &st->result;
    search_emit(st, &ev);
    if (st->cfg.confirm_samples > 0) {
        st->phase = PH_CONFIRM;
        return PHASE_AGAIN;
    }
    stage_event(st, SEARCH_EV_STAGE_END, 3);
    st->phase = PH_FINAL;
    return PHASE_AGAIN;
}

/* One step of the confirmation (search_confirm.c); at its end the kept finalist is the result. */
static int phase_confirm(search_state *st, char *err, size_t errlen) {
    int r = search_confirm_step(st, err, errlen);
    if (r != 1) return r;
    stage_event(st, SEARCH_EV_STAGE_END, 3);
    st->phase = PH_FINAL;
    return PHASE_AGAIN;
}

/* Score the final mask if it never was (no stage-3 group, or a baseline): one evaluation. Then
 * report the end of the search. */
static int phase_final(search_state *st, char *err, size_t errlen) {
    if (!st->final_known) {
        search_plan_enter(st, SEARCH_PHASE_FINAL);
        search_plan_unit(st, 0);
        memcpy(st->cand.z, st->result.z, (size_t)st->L * st->H);
        search_eval e;
        int r =
            search_eval_cand(st, 0, st->cfg.method == SEARCH_METHOD_BOSCH ? 3 : 0, -1, -1, &e, err, errlen);
        if (r) return r < 0 ? r : 0;
        st->final_known = 1;
        st->final_raw = e.score;
        st->final_acc = e.accuracy;
        search_plan_unit_done(st);
        return 0;
    }
    search_plan_finish(st);
    st->best_norm = search_normalize(st, st->final_raw);
    search_event ev = search_event_new(st, SEARCH_EV_DONE, 4);
    ev.mask = &st->result;
    ev.raw_score = st->final_raw;
    ev.score = st->best_norm;
    char msg[320];
    int n = snprintf(msg, sizeof msg, "done: %d of %d KV heads SWA, score %.4f, %ld evaluations",
                     mask_count_swa(&st->result), st->L * st->H, ev.score, st->n_log);
    const long layers_target = lround(st->cfg.ratio * st->L) * st->H;
    if (st->pin && search_method_row(st->cfg.method)->kind == SEARCH_KIND_LAYER_HEURISTIC &&
        mask_count_swa(&st->result) != layers_target && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n,
                 " (not the %ld of round(ratio x layers) whole layers: with the pinned heads, whole layers "
                 "make this count at best)",
                 layers_target);
    else if (st->pin && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, ", pinned heads kept");
    ev.message = msg;
    search_emit(st, &ev);
    st->phase = PH_DONE;
    return PHASE_DONE;
}

static int phase_run(search_state *st, char *err, size_t errlen) {
    int r;
    switch (st->phase) {
    case PH_START:
        return phase_start(st);
    case PH_NORM_FULL:
        return phase_normalizer(st, 0, err, errlen);
    case PH_NORM_SWA:
        return phase_normalizer(st, 1, err, errlen);
    case PH_S1_BEGIN:
        search_plan_enter(st, SEARCH_PHASE_PROBE_LAYERS);
        stage_event(st, SEARCH_EV_STAGE_START, 1);
        st->cur_layer = st->L - 1;
        st->stage_evals = 0;
        st->phase = PH_S1_LAYER_BEGIN;
        return PHASE_AGAIN;
    case PH_S1_LAYER_BEGIN:
        return phase_stage1_layer_begin(st);
    case PH_S1_LAYER:
        return step_stage1(st, err, errlen);
    case PH_S1_SINGLES:
        r = search_heads_singles_step(st, err, errlen);
        if (r == 1) {
            stage_event(st, SEARCH_EV_STAGE_END, 1);
            st->phase = PH_S2;
        }
        return r;
    case PH_S2: /* one evaluation, or the move to stage 3 */
        r = step_stage2(st, err, errlen);
        return r < 0 ? r : 0;
    case PH_S3_BEGIN:
        return phase_stage3_begin(st);
    case PH_S3_GROUP_BEGIN:
        return phase_stage3_group_begin(st);
    case PH_S3_GROUP:
        return step_stage3_group(st, err, errlen);
    case PH_REFINE_BEGIN:
        r = search_heads_refine_begin(st, err, errlen);
        if (r == 1) st->phase = PH_REFINE;
        return r;
    case PH_REFINE:
        return phase_refine(st, err, errlen);
    case PH_CONFIRM:
        return phase_confirm(st, err, errlen);
    case PH_BL_BEGIN:
    case PH_BL_EVAL:
    case PH_BL_END:
        return search_baseline_step(st, err, errlen);
    case PH_FINAL:
        return phase_final(st, err, errlen);
    case PH_DONE:
        return PHASE_DONE;
    }
    return 0;
}

int search_step(search_state *st, char *err, size_t errlen) {
    st->replaying = st->replay_pos < st->n_replay;
    int r;
    while ((r = phase_run(st, err, errlen)) == PHASE_AGAIN) {
    }
    if (r == PHASE_DONE) return 1;
    if (r < 0 && st->cancelled) { /* not an error: nothing was recorded, the step can be redone */
        st->cancelled = 0;
        return SEARCH_CANCELLED;
    }
    if (r < 0) {
        search_event ev = search_event_new(st, SEARCH_EV_ERROR, 0);
        ev.message = err;
        search_emit(st, &ev);
        return -1;
    }
    return 0;
}

int search_run(search_state *st, volatile sig_atomic_t *stop, char *err, size_t errlen) {
    for (;;) {
        if (stop && *stop) return 0;
        int r = search_step(st, err, errlen);
        if (r) return r;
    }
}

void search_notify_paused(search_state *st, int paused) {
    search_event ev = search_event_new(st, paused ? SEARCH_EV_PAUSED : SEARCH_EV_RESUMED, search_stage(st));
    ev.mask = &st->result;
    search_emit(st, &ev);
}

/* ---- queries ------------------------------------------------------------------------------ */

const search_config *search_get_config(const search_state *st) {
    return &st->cfg;
}
int search_is_done(const search_state *st) {
    return st->phase == PH_DONE;
}
long search_n_evals(const search_state *st) {
    return st->n_log;
}
const attn_mask *search_result_mask(const search_state *st) {
    return &st->result;
}
const attn_mask *search_last_mask(const search_state *st) {
    return st->have_last ? &st->last : NULL;
}
double search_best_score(const search_state *st) {
    return st->best_norm;
}
double search_full_score(const search_state *st) {
    return st->s_full;
}
double search_swa_score(const search_state *st) {
    return st->s_swa;
}

int search_stage(const search_state *st) {
    switch (st->phase) {
    case PH_S1_BEGIN:
    case PH_S1_LAYER_BEGIN:
    case PH_S1_LAYER:
        return 1;
    case PH_S2:
        return 2;
    case PH_S1_SINGLES:
        return 1;
    case PH_S3_BEGIN:
    case PH_S3_GROUP_BEGIN:
    case PH_S3_GROUP:
    case PH_REFINE_BEGIN:
    case PH_REFINE:
        return 3;
    case PH_DONE:
        return 4;
    case PH_FINAL:
        return st->cfg.method == SEARCH_METHOD_BOSCH ? 3 : 0;
    default:
        return 0;
    }
}

long search_eval_budget(const search_state *st) {
    return st->plan.evals_planned;
}

int search_layer_stats(const search_state *st, int layer, search_layer_info *out) {
    if (layer < 0 || layer >= st->L) return -1;
    out->probed = st->probed[layer];
    out->s_best = st->s_best[layer];
    out->delta = st->delta[layer];
    out->weight = st->weight[layer];
    out->n_swa = st->n_swa[layer];
    out->ratio = st->n_swa[layer] >= 0 ? (double)st->n_swa[layer] / st->H : NAN;
    out->bucket = st->bucket[layer];
    out->n_swa_final = -1;
    out->ratio_final = NAN;
    if (st->stage2_done) {
        out->n_swa_final = 0;
        for (int h = 0; h < st->H; h++) out->n_swa_final += mask_get(&st->result, layer, h) == ATTN_SWA;
        out->ratio_final = (double)out->n_swa_final / st->H;
    }
    return 0;
}

const double *search_importance(const search_state *st, int *n) {
    if (!st->importance_ready) return NULL; /* also: a layer pattern of the ratio alone */
    if (search_method_row(st->cfg.method)->kind == SEARCH_KIND_LAYER_HEURISTIC) {
        if (n) *n = st->L;
        return st->importance;
    }
    const double *p = search_head_importance(st);
    if (p && n) *n = st->L * st->H;
    return p;
}

const double *search_head_scores(const search_state *st) {
    return st->head_drop;
}

const double *search_head_importance(const search_state *st) {
    if (search_method_row(st->cfg.method)->kind != SEARCH_KIND_HEAD_RANKING) return NULL;
    return st->importance_ready ? st->importance : NULL;
}

const double *search_head_ranking(const search_state *st, int row) {
    const search_method_info *m = search_method_row(row);
    if (!m || m->kind != SEARCH_KIND_HEAD_RANKING) return NULL;
    if (row == st->cfg.method) return search_head_importance(st);
    if (row == SEARCH_METHOD_ABLATION && st->head_drop) return st->head_drop;
    if (row == SEARCH_METHOD_FISHER && st->head_fisher) return st->head_fisher;
    return st->head_rank[row];
}
