/* search_plan.c — the plan of a search (search_plan.h): its phases from the configuration, with
 * their explanations, and the bookkeeping the state machine does as it walks them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "search_internal.h"

const char *search_phase_kind_name(search_phase_kind k) {
    static const char *const names[] = {"normalize",     "probe_layers", "singles", "assign", "groups",
                                        "refine_starts", "refine",       "rank",    "final",  "confirm"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const char *search_unit_name(search_unit u) {
    static const char *const names[] = {"candidate", "layer", "head", "group", "swap"};
    return (unsigned)u < sizeof names / sizeof names[0] ? names[u] : "?";
}

int search_stage1_k(const search_config *cfg, int H) {
    if (cfg->method == SEARCH_METHOD_BOSCH && cfg->granularity == SEARCH_GRANULARITY_LAYER) return H;
    int k = (int)ceil(cfg->ratio * H - 1e-9);
    if (!cfg->stage1_k_spec && cfg->ratio < 1 && k > H - 1) k = H - 1;
    if (k < 1) k = 1;
    return k > H ? H : k;
}

long search_target_swa(const search_config *cfg, int L, int H) {
    if (cfg->method == SEARCH_METHOD_BOSCH && cfg->granularity == SEARCH_GRANULARITY_LAYER)
        return lround(cfg->ratio * L) * H;
    return lround(cfg->ratio * L * H);
}

/* ---- building ------------------------------------------------------------------------------ */

static void say(search_plan_phase *ph, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(search_plan_phase *ph, const char *fmt, ...) {
    size_t at = strlen(ph->text);
    va_list ap;
    va_start(ap, fmt);
    if (at < sizeof ph->text) vsnprintf(ph->text + at, sizeof ph->text - at, fmt, ap);
    va_end(ap);
}

static search_plan_phase *add(search_plan *p, search_phase_kind kind, int stage, const char *label,
                              search_unit unit, int n_units, long evals, unsigned keeps) {
    search_plan_phase *ph = &p->phase[p->n_phases++];
    memset(ph, 0, sizeof *ph);
    ph->kind = kind, ph->stage = stage, ph->unit = unit, ph->n_units = n_units;
    ph->evals_planned = evals, ph->keeps = keeps;
    snprintf(ph->label, sizeof ph->label, "%s", label);
    return ph;
}

/* What the plan is made of: the configuration and the numbers every explanation uses. */
typedef struct {
    const search_config *cfg;
    const search_method_info *m;
    int L, H, k1, layer_mode, groups, levels, n_attn;
    long T, per_layer, space1;
} plan_in;

static void add_normalize(search_plan *p, const plan_in *in) {
    search_plan_phase *ph = add(p, SEARCH_PHASE_NORMALIZE, 0, "normalizers", SEARCH_UNIT_CANDIDATE, 2, 2,
                                SEARCH_KEEPS_NORMALIZERS);
    say(ph,
        "Scores two reference masks: every KV head full, the best the model can do, then every KV head SWA "
        "(a window of %d tokens and %d sink tokens). Every later score is normalized between them: 1 is "
        "as good as all full, 0 as bad as all SWA.",
        in->cfg->window, in->cfg->sinks);
}

static void add_stage1(search_plan *p, const plan_in *in) {
    const search_config *c = in->cfg;
    const unsigned keeps = c->stage1_independent ? SEARCH_KEEPS_ONE_LAYER : SEARCH_KEEPS_CASCADE;
    search_plan_phase *ph =
        add(p, SEARCH_PHASE_PROBE_LAYERS, 1, "stage 1: layer probes", SEARCH_UNIT_LAYER, in->L,
            (long)in->L * in->per_layer, keeps | (in->layer_mode ? SEARCH_KEEPS_WHOLE_LAYERS : 0));
    say(ph,
        "Stage 1 measures how much each layer tolerates SWA. It probes the %d layers one at a time, from "
        "the last (%d) to the first (0). ",
        in->L, in->L - 1);
    if (in->layer_mode)
        say(ph,
            "A probe turns the whole layer SWA (all %d KV heads), every other layer full: one evaluation "
            "per layer. ",
            in->H);
    else if (in->per_layer >= in->space1)
        say(ph, "For a layer it tries every set of %d of its %d KV heads as SWA (%ld sets), ", in->k1, in->H,
            in->space1);
    else
        say(ph,
            "For a layer it tries sets of %d of its %d KV heads as SWA by a local search, at most %ld of "
            "the %ld sets, ",
            in->k1, in->H, in->per_layer, in->space1);
    if (!in->layer_mode && c->stage1_independent)
        say(ph, "with every other layer full. ");
    else if (!in->layer_mode)
        say(ph, "while the layers above it keep the best set found for them and the layers below it stay "
                "full. ");
    say(ph, "The best score of a layer's probes, s_best, tells how much it tolerates. ");
    if (c->stage1_independent)
        say(ph, "Nothing is kept: after its probe the layer goes back to full.");
    else
        say(ph, "The best set stays in place for the probes of the layers below.");
}

static void add_singles(search_plan *p, const plan_in *in) {
    search_plan_phase *ph = add(p, SEARCH_PHASE_SINGLES, 1, "stage 1: head scores", SEARCH_UNIT_HEAD,
                                in->L * in->H, (long)in->L * in->H, SEARCH_KEEPS_ONE_HEAD);
    say(ph,
        "Scores KV heads one at a time: the mask with only that head SWA, every other head full. A head's "
        "drop, S_full - S, is its score; stage 3%s in the order of these scores. Of the %d "
        "KV heads, those the stage-1 probes already scored this way are not scored again.",
        in->cfg->refine_budget > 0 ? " and the refinement try their moves" : " tries its moves",
        in->L * in->H);
}

static void add_stage2(search_plan *p, const plan_in *in) {
    const search_config *c = in->cfg;
    search_plan_phase *ph =
        add(p, SEARCH_PHASE_ASSIGN, 2, "stage 2: SWA heads per layer", SEARCH_UNIT_LAYER, in->L, 0, 0);
    say(ph,
        "No evaluation. Turns the stage-1 scores into a drop per layer, delta = %s, scales the drops to "
        "weights w in [0, 1] (0 is the most tolerant layer), ",
        c->delta_marginal ? "s_best of the layer above minus s_best of the layer (marginal)"
                          : "S_full - s_best (cumulative)");
    if (in->layer_mode)
        say(ph, "and turns the %ld most tolerant layers SWA (ratio %.4g of %d layers).", in->T / in->H,
            c->ratio, in->L);
    else
        say(ph,
            "and gives each layer a number of SWA heads out of %d (its ratio r = n_swa / %d), more to the "
            "tolerant layers (%s), so that they add up to exactly %ld of the %d KV heads. Layers with the "
            "same ratio form a bucket (at most %d).",
            in->H, in->H, c->stage2_ranks ? "a rank ladder" : "proportional to the tolerance", in->T,
            in->L * in->H, in->levels);
}

static void add_stage3(search_plan *p, const plan_in *in) {
    const search_config *c = in->cfg;
    if (in->layer_mode) {
        const long b = (long)in->levels * c->stage3_budget_per_group;
        search_plan_phase *ph = add(p, SEARCH_PHASE_GROUPS, 3, "stage 3: layer swaps", SEARCH_UNIT_GROUP, 1,
                                    b, SEARCH_KEEPS_WHOLE_LAYERS | SEARCH_KEEPS_TOTAL);
        say(ph,
            "One swap search over all %d layers (one group), at most %ld evaluations: a move makes one SWA "
            "layer full and one full layer SWA, so %ld layers stay SWA. Moves with the largest stage-1 drops "
            "first; the first that improves is kept.",
            in->L, b, in->T / in->H);
        if (c->start_layers > 0)
            say(ph, " It starts from the start mask's whole SWA layers (as many as stage 2 made SWA).");
        return;
    }
    const unsigned keeps = c->stage3_scope ? SEARCH_KEEPS_BUCKET_TOTAL : SEARCH_KEEPS_LAYER_COUNTS;
    search_plan_phase *ph = add(
        p, SEARCH_PHASE_GROUPS, 3, c->stage3_scope ? "stage 3: heads per bucket" : "stage 3: heads per layer",
        SEARCH_UNIT_GROUP, in->groups, (long)in->groups * c->stage3_budget_per_group, keeps);
    say(ph,
        "Chooses which KV heads are SWA, one group at a time (a group is the layers of one bucket that are "
        "neither all full nor all SWA; at most %d groups), at most %ld evaluations each. ",
        in->groups, c->stage3_budget_per_group);
    if (c->stage3_scope)
        say(ph,
            "A move swaps one SWA head with one full head anywhere in the group: the group keeps its total "
            "of SWA heads, but heads move between its layers, so a layer's count can end up different "
            "from the one stage 2 gave it. ");
    else
        say(ph, "A move swaps one SWA head with one full head of the same layer, so every layer keeps the "
                "number of SWA heads stage 2 gave it. ");
    if (c->n_pins > 0)
        say(ph,
            "The %d pinned heads never move (each layer's count stays between its heads pinned SWA and "
            "those not pinned full). ",
            c->n_pins);
    if (c->start_layers > 0)
        say(ph, "Each layer starts from the start mask's SWA heads, as many as its count allows. ");
    if (c->stage1_singles)
        say(ph, "Moves in head-score order (the most important SWA head made full first); the first that "
                "improves is kept. ");
    else if (c->n_pins > 0)
        say(ph, "Moves in random order, the first that improves kept (with pins a swap search over the free "
                "heads: no restarts, no enumeration). ");
    else
        say(ph,
            "Moves in random order, the first that improves kept, then up to %d random restarts (every "
            "combination when they fit the budget). ",
            c->restarts);
    say(ph, "The layers of the groups still to come stay full until their turn; layers stage 2 made all SWA "
            "are SWA from the start.");
}

static void add_refine(search_plan *p, const plan_in *in) {
    const search_config *c = in->cfg;
    const int starts = 1 + 2 + in->n_attn + (c->start_layers > 0);
    search_plan_phase *ph = add(p, SEARCH_PHASE_REFINE_STARTS, 3, "refinement: start", SEARCH_UNIT_CANDIDATE,
                                starts, starts, SEARCH_KEEPS_TOTAL);
    say(ph,
        "Picks the start of the refinement: the mask stage 3 ended with (scored here only if no group "
        "scored it), or better, a cut at the ratio of a static head ranking: the %ld least important KV "
        "heads SWA by the head scores' drop, by their Fisher form%s%s. A cut equal to the stage-3 mask is "
        "not scored again; the best scored becomes the start.",
        in->T,
        in->n_attn == 2 ? ", by locality and by echo (from the model)"
        : in->n_attn    ? ", by echo"
                        : "",
        c->start_layers > 0 ? "; or the start mask with its SWA heads first, cut to the same count" : "");
    const long swaps = c->refine_budget * (in->groups > 0 ? in->groups : 1) + 1;
    ph = add(p, SEARCH_PHASE_REFINE, 3, "refinement: swaps over all layers", SEARCH_UNIT_SWAP, (int)swaps,
             swaps, SEARCH_KEEPS_TOTAL);
    say(ph,
        "A swap search over every KV head at the fixed total, at most %ld evaluations for each stage-3 group "
        "plus one (the start's score is looked up, not recomputed): a move makes one SWA head full and one "
        "full head SWA anywhere in the model, in head-score order, and is kept when it improves. Layers' "
        "counts and buckets can change; the total stays %ld SWA heads.",
        c->refine_budget, in->T);
}

/* The confirmation (search_config.confirm_samples): each finalist once on the confirmation split,
 * plus the calibration score of the one kept when the race left it without one. */
static void add_confirm(search_plan *p, const plan_in *in) {
    const search_config *c = in->cfg;
    const int fin = 2 + 2 + in->n_attn + (c->start_layers > 0); /* refined, stage 3, the starts */
    search_plan_phase *ph = add(p, SEARCH_PHASE_CONFIRM, 3, "confirm: finalists on new samples",
                                SEARCH_UNIT_CANDIDATE, fin, fin + 1, SEARCH_KEEPS_TOTAL);
    char lengths[64];
    if (c->confirm_tokens2 > 0)
        snprintf(lengths, sizeof lengths, "%d and %d tokens", c->calib_tokens, c->confirm_tokens2);
    else
        snprintf(lengths, sizeof lengths, "%d tokens", c->calib_tokens);
    say(ph,
        "Scores the refinement's finalists (the refined mask, the stage-3 mask and every start cut it "
        "scored) "
        "on %d new samples of the calibration's tasks at %s, none of them a calibration sample, and keeps "
        "the best "
        "there: every finalist was picked on the calibration samples, so the one that fits them best is "
        "flattered by them. A kept mask that the race left without a calibration score is scored once more.",
        c->confirm_samples, lengths);
}

static void add_baseline(search_plan *p, const plan_in *in) {
    const search_method_info *m = in->m;
    char label[SEARCH_PLAN_LABEL];
    const int heads = m->kind == SEARCH_KIND_HEAD_RANKING;
    search_plan_phase *ph;
    if (m->probes == SEARCH_PROBES_EACH_HEAD || m->probes == SEARCH_PROBES_EACH_LAYER) {
        const int n = m->probes == SEARCH_PROBES_EACH_HEAD ? in->L * in->H : in->L;
        snprintf(label, sizeof label, "%s: %s probes", m->name,
                 m->probes == SEARCH_PROBES_EACH_HEAD ? "head" : "layer");
        ph = add(p, SEARCH_PHASE_RANK, 0, label,
                 m->probes == SEARCH_PROBES_EACH_HEAD ? SEARCH_UNIT_HEAD : SEARCH_UNIT_LAYER, n, n,
                 m->probes == SEARCH_PROBES_EACH_HEAD ? SEARCH_KEEPS_ONE_HEAD
                                                      : SEARCH_KEEPS_ONE_LAYER | SEARCH_KEEPS_WHOLE_LAYERS);
        say(ph, "Scores every %s alone SWA, everything else full (%d evaluations). Its importance: %s.",
            m->probes == SEARCH_PROBES_EACH_HEAD ? "KV head" : "layer", n, m->help);
    } else {
        snprintf(label, sizeof label, "%s: %s", m->name, heads ? "ranking" : "layer pattern");
        ph = add(p, SEARCH_PHASE_RANK, 0, label, heads ? SEARCH_UNIT_HEAD : SEARCH_UNIT_LAYER,
                 heads ? in->L * in->H : in->L, 0, 0);
        say(ph, "No evaluation: %s (%s).",
            heads ? "computes every KV head's importance at once" : "picks the layers from the ratio alone",
            m->help);
    }
    if (heads)
        say(ph, " The %ld least important KV heads go SWA.", in->T);
    else
        say(ph, " %ld of the %d layers go SWA, all their KV heads.", lround(in->cfg->ratio * in->L), in->L);
    ph = add(p, SEARCH_PHASE_FINAL, 0, "final mask", SEARCH_UNIT_CANDIDATE, 1, 1,
             SEARCH_KEEPS_RESULT | (heads ? SEARCH_KEEPS_TOTAL : SEARCH_KEEPS_WHOLE_LAYERS));
    say(ph, "Scores the final mask once.");
}

int search_plan_make(search_plan *p, const search_config *cfg, int n_layer, int n_head_kv, int have_model,
                     int have_tokens) {
    memset(p, 0, sizeof *p);
    p->cur = -1;
    plan_in in = {.cfg = cfg, .m = search_method_row(cfg->method), .L = n_layer, .H = n_head_kv};
    if (!in.m || n_layer < 1 || n_head_kv < 1 || n_head_kv > 62) return -1;
    in.layer_mode = cfg->method == SEARCH_METHOD_BOSCH && cfg->granularity == SEARCH_GRANULARITY_LAYER;
    in.k1 = search_stage1_k(cfg, n_head_kv);
    in.T = search_target_swa(cfg, n_layer, n_head_kv);
    p->target_swa =
        in.m->kind == SEARCH_KIND_LAYER_HEURISTIC ? lround(cfg->ratio * n_layer) * n_head_kv : in.T;
    in.space1 = (long)opt_space_size(1, &in.k1, n_head_kv);
    in.per_layer = in.space1 < cfg->stage1_budget_per_layer ? in.space1 : cfg->stage1_budget_per_layer;
    in.levels = cfg->n_buckets < n_head_kv + 1 ? cfg->n_buckets : n_head_kv + 1;
    in.groups = in.layer_mode ? 1 : in.levels;
    in.n_attn = have_model ? 1 + (have_tokens != 0) : 0;
    add_normalize(p, &in);
    if (in.T > 0 && in.T < (long)n_layer * n_head_kv) {
        if (cfg->method != SEARCH_METHOD_BOSCH) {
            add_baseline(p, &in);
        } else {
            add_stage1(p, &in);
            const int singles_free =
                cfg->stage1_independent && in.k1 == 1 && cfg->stage1_budget_per_layer >= n_head_kv;
            if (cfg->stage1_singles && !in.layer_mode && !singles_free) add_singles(p, &in);
            add_stage2(p, &in);
            add_stage3(p, &in);
            if (cfg->stage1_singles && !in.layer_mode && cfg->refine_budget > 0) {
                add_refine(p, &in);
                if (cfg->confirm_samples > 0) add_confirm(p, &in);
            } else if (!in.layer_mode) {
                search_plan_phase *ph = add(p, SEARCH_PHASE_FINAL, 3, "final mask", SEARCH_UNIT_CANDIDATE, 1,
                                            1, SEARCH_KEEPS_RESULT | SEARCH_KEEPS_TOTAL);
                say(ph, "Scores the final mask when no stage-3 group did (every layer all full or all SWA "
                        "after stage 2).");
            }
        }
    }
    for (int i = 0; i < p->n_phases; i++) p->evals_planned += p->phase[i].evals_planned;
    return 0;
}

/* ---- walking it (search.c, search_heads.c, search_baseline.c, search_eval.c) ----------------- */

static void plan_total(search_plan *p) {
    p->evals_planned = 0;
    for (int i = 0; i < p->n_phases; i++) p->evals_planned += p->phase[i].evals_planned;
}

/* Close phase i: what it planned becomes what it did. */
static void close_phase(search_plan_phase *ph) {
    ph->n_units = ph->units_done;
    ph->evals_planned = ph->evals_done;
    ph->state = SEARCH_PHASE_DONE;
}

int search_plan_index(const search_state *st, search_phase_kind kind) {
    for (int i = st->plan.cur > 0 ? st->plan.cur : 0; i < st->plan.n_phases; i++)
        if (st->plan.phase[i].kind == kind) return i;
    return -1;
}

void search_plan_enter(search_state *st, search_phase_kind kind) {
    search_plan *p = &st->plan;
    const int to = search_plan_index(st, kind);
    if (to < 0 || to == p->cur) return;
    for (int i = p->cur < 0 ? 0 : p->cur; i < to; i++) close_phase(&p->phase[i]); /* done, or skipped */
    p->cur = to;
    p->phase[to].state = SEARCH_PHASE_RUNNING;
    st->plan_unit = -1;
    plan_total(p);
}

void search_plan_unit(search_state *st, int unit) {
    st->plan_unit = unit;
}

void search_plan_unit_done(search_state *st) {
    if (st->plan.cur < 0) return;
    search_plan_phase *ph = &st->plan.phase[st->plan.cur];
    if (ph->units_done < ph->n_units) ph->units_done++;
}

void search_plan_cap(search_state *st, int i, int n_units, long evals_left) {
    if (i < 0 || i >= st->plan.n_phases) return;
    search_plan_phase *ph = &st->plan.phase[i];
    if (n_units >= 0) {
        if (n_units < ph->units_done) n_units = ph->units_done;
        if (n_units < ph->n_units) ph->n_units = n_units;
    }
    if (evals_left >= 0 && ph->evals_done + evals_left < ph->evals_planned)
        ph->evals_planned = ph->evals_done + evals_left;
    plan_total(&st->plan);
}

void search_plan_eval(search_state *st) {
    if (st->plan.cur < 0) return;
    search_plan_phase *ph = &st->plan.phase[st->plan.cur];
    ph->evals_done++;
    if (ph->evals_done > ph->evals_planned) { /* a planning error: keep the totals true */
        ph->evals_planned = ph->evals_done;
        plan_total(&st->plan);
    }
}

void search_plan_finish(search_state *st) {
    search_plan *p = &st->plan;
    for (int i = p->cur < 0 ? 0 : p->cur; i < p->n_phases; i++) close_phase(&p->phase[i]);
    if (p->n_phases) p->cur = p->n_phases - 1;
    st->plan_unit = -1;
    plan_total(p);
}

const search_plan *search_get_plan(const search_state *st) {
    return &st->plan;
}
