/* test_search.c — the BOSCH state machine (search/search.h) on a synthetic black-box objective
 * whose optimum is known in closed form:
 *   S(z) = exp(-sum over SWA KV heads of a[layer][head])   (a > 0 fixed per head)
 * so S_full = 1, dropping a head costs its own a, and the best mask with n_l SWA heads in layer l
 * puts SWA on the n_l heads of smallest a. The test computes that optimum itself (independent
 * of the search code) and checks: event order, stage-1 s_best values, stage-2 budget, the final
 * mask, determinism, and that pause/save/resume reaches the same final mask and trace.
 * The options built on head scores (stage1_singles, stage3_scope, refine_budget) are checked on the
 * same objective, whose optimum at any ratio is then the global cut of a (the target number of
 * heads of smallest a), and with a pairwise interaction that makes the cut suboptimal. The other
 * tests run the paper's options (search_config_paper_options). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "search.h"
#include "search_internal.h" /* search_state_parse */

#define L 8
#define H 3

typedef struct {
    double a[L][H];
    long calls;
    int pair[2];    /* units l*H+h penalized when both are SWA (-1: none) */
    double penalty; /* cost added then */
} synth;

static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    synth *s = ctx;
    double cost = 0;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++)
            if (mask_get(m, l, h) == ATTN_SWA) cost += s->a[l][h];
    if (s->pair[0] >= 0 && m->z[s->pair[0]] == ATTN_SWA && m->z[s->pair[1]] == ATTN_SWA) cost += s->penalty;
    s->calls++;
    *out = (search_eval){exp(-cost), cost < 1.0, cost, 0.001, 0, NULL};
    return 0;
}

static void synth_init(synth *s, search_objective *obj) {
    memset(s, 0, sizeof *s);
    s->pair[0] = s->pair[1] = -1;
    uint64_t x = 99;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            /* later layers are cheaper on average, so stage 2 has something to find */
            s->a[l][h] = (0.05 + (double)(x >> 40) / (double)(1 << 24)) * (1.0 + (L - l) * 0.3);
        }
    *obj = (search_objective){.score = synth_score, .ctx = s};
}

/* k smallest a of layer l: their sum and bit set */
static double smallest_sum(const synth *s, int l, int k, uint64_t *bits) {
    int used[H] = {0};
    double sum = 0;
    *bits = 0;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int h = 0; h < H; h++)
            if (!used[h] && (best < 0 || s->a[l][h] < s->a[l][best])) best = h;
        used[best] = 1;
        sum += s->a[l][best];
        *bits |= 1ull << best;
    }
    return sum;
}

/* ---- event recorder ---- */
typedef struct {
    int n;
    search_event_kind kind[4096];
    int stage[4096], layer[4096], replayed[4096];
    long eval_index[4096];
    uint64_t hash[4096];
    double score[4096];
} recorder;

static void record(const search_event *ev, void *user) {
    recorder *r = user;
    if (r->n >= 4096) return;
    r->kind[r->n] = ev->kind;
    r->stage[r->n] = ev->stage;
    r->layer[r->n] = ev->layer;
    r->replayed[r->n] = ev->replayed;
    r->eval_index[r->n] = ev->eval_index;
    r->hash[r->n] = ev->mask ? mask_hash(ev->mask) : 0;
    r->score[r->n] = ev->score;
    r->n++;
}

static void config(search_config *cfg, double ratio) {
    search_config_default(cfg);
    search_config_paper_options(cfg);
    cfg->ratio = ratio;
    cfg->window = 16;
    cfg->seed = 7;
    cfg->stage1_budget_per_layer = 3;
    cfg->stage3_budget_per_group = 40;
    cfg->restarts = 2;
}

static search_state *run_full(const search_config *cfg, synth *s, search_objective *obj, recorder *r) {
    search_state *st;
    char err[256];
    synth_init(s, obj);
    assert_int_equal(search_create(&st, cfg, L, H, obj, NULL, record, r, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    return st;
}

static void test_event_order_and_optimum(void **state) {
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    synth s;
    search_objective obj;
    search_config cfg;
    config(&cfg, 0.5);
    search_state *st = run_full(&cfg, &s, &obj, &r);

    /* grammar: START EVAL EVAL STAGE_START(1) {LAYER_START(l) EVAL+ INCUMBENT* LAYER_END(l)}
     * l=L-1..0 STAGE_END(1) STAGE_START(2) LAYER_STATS*L STAGE_END(2) STAGE_START(3)
     * {GROUP_START (EVAL INCUMBENT?)* GROUP_END}* STAGE_END(3) EVAL? DONE */
    int i = 0;
    assert_int_equal(r.kind[i++], SEARCH_EV_SEARCH_START);
    assert_int_equal(r.kind[i++], SEARCH_EV_EVAL);
    assert_true(r.score[i - 1] == 1.0);
    assert_int_equal(r.kind[i++], SEARCH_EV_EVAL);
    assert_true(r.score[i - 1] == 0.0);
    assert_int_equal(r.kind[i], SEARCH_EV_STAGE_START);
    assert_int_equal(r.stage[i++], 1);
    for (int l = L - 1; l >= 0; l--) {
        assert_int_equal(r.kind[i], SEARCH_EV_LAYER_START);
        assert_int_equal(r.layer[i++], l);
        int evals = 0;
        while (r.kind[i] == SEARCH_EV_EVAL || r.kind[i] == SEARCH_EV_INCUMBENT) {
            if (r.kind[i] == SEARCH_EV_EVAL)
                evals++;
            else
                assert_int_equal(r.kind[i - 1], SEARCH_EV_EVAL);
            assert_int_equal(r.layer[i++], l);
        }
        assert_int_equal(evals, 3); /* C(3,2) = 3: exhaustive */
        assert_int_equal(r.kind[i], SEARCH_EV_LAYER_END);
        assert_int_equal(r.layer[i++], l);
    }
    assert_int_equal(r.kind[i++], SEARCH_EV_STAGE_END);
    assert_int_equal(r.kind[i], SEARCH_EV_STAGE_START);
    assert_int_equal(r.stage[i++], 2);
    for (int l = 0; l < L; l++) assert_int_equal(r.kind[i++], SEARCH_EV_LAYER_STATS);
    assert_int_equal(r.kind[i++], SEARCH_EV_STAGE_END);
    assert_int_equal(r.kind[i], SEARCH_EV_STAGE_START);
    assert_int_equal(r.stage[i++], 3);
    while (r.kind[i] == SEARCH_EV_GROUP_START) {
        i++;
        while (r.kind[i] == SEARCH_EV_EVAL || r.kind[i] == SEARCH_EV_INCUMBENT) i++;
        assert_int_equal(r.kind[i++], SEARCH_EV_GROUP_END);
    }
    assert_int_equal(r.kind[i++], SEARCH_EV_STAGE_END);
    if (r.kind[i] == SEARCH_EV_EVAL) i++;
    assert_int_equal(r.kind[i++], SEARCH_EV_DONE);
    assert_int_equal(i, r.n);
    /* eval_index counts evaluations 1, 2, 3, ... */
    long k = 0;
    for (int j = 0; j < r.n; j++)
        if (r.kind[j] == SEARCH_EV_EVAL) assert_int_equal(r.eval_index[j], ++k);
    assert_int_equal(k, search_n_evals(st));
    assert_int_equal(s.calls, k);

    /* stage 1: s_best[l] = exp(-(sum over l' >= l of the 2 smallest a of l')) (cascade) */
    double above = 0;
    for (int l = L - 1; l >= 0; l--) {
        uint64_t bits;
        above += smallest_sum(&s, l, 2, &bits);
        search_layer_info li;
        assert_int_equal(search_layer_stats(st, l, &li), 0);
        assert_true(li.probed);
        assert_true(fabs(li.s_best - exp(-above)) < 1e-12);
    }
    /* stage 2 budget and final mask = the n_l smallest-a heads of each layer */
    const attn_mask *m = search_result_mask(st);
    int total = 0;
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        search_layer_stats(st, l, &li);
        total += li.n_swa;
        uint64_t bits, got = 0;
        smallest_sum(&s, l, li.n_swa, &bits);
        for (int h = 0; h < H; h++)
            if (mask_get(m, l, h) == ATTN_SWA) got |= 1ull << h;
        assert_int_equal(got, bits);
    }
    assert_int_equal(total, (int)lround(0.5 * L * H));
    assert_int_equal(mask_count_swa(m), total);
    search_free(st);
}

static void test_deterministic(void **state) {
    (void)state;
    static recorder r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    synth s1, s2;
    search_objective o1, o2;
    search_config cfg;
    config(&cfg, 0.75);
    cfg.delta_marginal = 1;           /* spread ratios: stage-3 groups exist */
    cfg.stage3_budget_per_group = 10; /* local search, not exhaustive: exercises the PRNG */
    search_state *a = run_full(&cfg, &s1, &o1, &r1);
    search_state *b = run_full(&cfg, &s2, &o2, &r2);
    assert_int_equal(r1.n, r2.n);
    assert_memory_equal(r1.kind, r2.kind, sizeof(r1.kind[0]) * (size_t)r1.n);
    assert_memory_equal(r1.hash, r2.hash, sizeof(r1.hash[0]) * (size_t)r1.n);
    assert_memory_equal(search_result_mask(a)->z, search_result_mask(b)->z, L * H);
    search_free(a);
    search_free(b);
}

/* Stop after `cut` steps, save, load into a fresh state with a fresh objective, finish. */
static void check_resume(int cut, double ratio, search_method method, int marginal) {
    static recorder ref, part, rest;
    memset(&ref, 0, sizeof ref);
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    search_config cfg;
    config(&cfg, ratio);
    cfg.method = method;
    cfg.stage3_budget_per_group = 10;
    cfg.delta_marginal = marginal;
    synth s0;
    search_objective o0;
    search_state *full = run_full(&cfg, &s0, &o0, &ref);

    char err[256], path[] = "/tmp/test_search_stateXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    synth s1;
    search_objective o1;
    synth_init(&s1, &o1);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o1, NULL, record, &part, err, sizeof err), 0);
    for (int i = 0; i < cut && !search_is_done(st); i++) assert_true(search_step(st, err, sizeof err) >= 0);
    long done_evals = search_n_evals(st);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);

    synth s2;
    search_objective o2;
    synth_init(&s2, &o2);
    assert_int_equal(search_load(&st, path, L, H, &o2, NULL, record, &rest, err, sizeof err), 0);
    assert_true(s2.calls <= 1); /* replay calls nothing; one call restores and checks the base */
    long base_calls = s2.calls;
    assert_int_equal(search_n_evals(st), done_evals);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    /* live evaluations only, plus the one un-logged call that restored the prefix-reuse base */
    assert_int_equal(s2.calls, search_n_evals(full) - done_evals + base_calls);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(full)->z, L * H);
    /* the resumed stream (replayed + live) equals the uninterrupted one, event by event */
    assert_int_equal(rest.n, ref.n);
    assert_memory_equal(rest.kind, ref.kind, sizeof(ref.kind[0]) * (size_t)ref.n);
    assert_memory_equal(rest.hash, ref.hash, sizeof(ref.hash[0]) * (size_t)ref.n);
    for (int i = 0; i < rest.n; i++)
        if (rest.kind[i] == SEARCH_EV_EVAL)
            assert_int_equal(rest.replayed[i], rest.eval_index[i] <= done_evals);
    search_free(st);
    search_free(full);
    remove(path);
}

static void test_save_resume_same_result(void **state) {
    (void)state;
    const int cuts[] = {0, 1, 2, 5, 17, 30, 45, 1000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        check_resume(cuts[i], 0.5, SEARCH_METHOD_BOSCH, 0);
        check_resume(cuts[i], 0.5, SEARCH_METHOD_BOSCH, 1); /* stage-3 groups: local search */
    }
    check_resume(29, 0.75, SEARCH_METHOD_BOSCH, 1);
    check_resume(33, 0.75, SEARCH_METHOD_BOSCH, 1);
    check_resume(40, 0.875, SEARCH_METHOD_BOSCH, 0);
    check_resume(9, 0.5, SEARCH_METHOD_ABLATION, 0);
}

/* A state file saved for another search is refused with a reason. */
static void test_resume_mismatch(void **state) {
    (void)state;
    char err[256], path[] = "/tmp/test_search_stateXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    search_config cfg;
    config(&cfg, 0.5);
    synth s;
    search_objective o;
    synth_init(&s, &o);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o, NULL, NULL, NULL, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) search_step(st, err, sizeof err);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);
    assert_int_equal(search_load(&st, path, L + 1, H, &o, NULL, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers"));
    /* a state whose config was changed (stage-1 budget 3 -> 2) replays different masks: refused */
    FILE *f = fopen(path, "r");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strstr(text, "stage1_budget 3");
    assert_non_null(p);
    p[14] = '2';
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    assert_int_equal(search_load(&st, path, L, H, &o, NULL, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "hash"));
    remove(path);
}

/* A state resumed with an objective that now scores differently is refused: cut inside stage 3,
 * where the prefix-reuse base is a stage-3 candidate, then change the head costs. */
static void test_resume_changed_objective(void **state) {
    (void)state;
    char err[256], path[] = "/tmp/test_search_stateXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    search_config cfg;
    config(&cfg, 0.5);
    cfg.delta_marginal = 1; /* spreads the ratios, so stage 3 has groups */
    synth s;
    search_objective o;
    synth_init(&s, &o);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o, NULL, NULL, NULL, err, sizeof err), 0);
    /* step into stage 3: past the 2 normalizers and 3 probes per layer, plus 1 stage-3 evaluation */
    while (!search_is_done(st) && search_n_evals(st) < 2 + 3 * L + 1) search_step(st, err, sizeof err);
    assert_int_equal(search_stage(st), 3);
    int grouped = 0; /* the stage-3 evaluation belongs to a group (it became the base) */
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        search_layer_stats(st, l, &li);
        grouped += li.n_swa > 0 && li.n_swa < H;
    }
    assert_true(grouped > 0);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);
    synth_init(&s, &o); /* same objective: accepted */
    assert_int_equal(search_load(&st, path, L, H, &o, NULL, NULL, NULL, err, sizeof err), 0);
    search_free(st);
    for (int l = 0; l < L; l++) /* changed objective: refused */
        for (int h = 0; h < H; h++) s.a[l][h] *= 1.5;
    assert_int_equal(search_load(&st, path, L, H, &o, NULL, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "objective changed"));
    remove(path);
}

/* Stage-1 cardinality: rho = .875 on 3 KV heads -> ceil(2.625) = 3 = H; the default caps it at
 * H - 1 = 2 (C(3,2) = 3 probes per layer), stage1_k_spec = 1 keeps the spec's 3 (1 probe). */
static void test_stage1_k_cap(void **state) {
    (void)state;
    for (int spec = 0; spec <= 1; spec++) {
        static recorder r;
        memset(&r, 0, sizeof r);
        synth s;
        search_objective o;
        search_config cfg;
        config(&cfg, 0.875);
        cfg.stage1_k_spec = spec;
        search_state *st = run_full(&cfg, &s, &o, &r);
        int probes = 0;
        for (int i = 0; i < r.n; i++) probes += r.kind[i] == SEARCH_EV_EVAL && r.stage[i] == 1;
        assert_int_equal(probes, L * (spec ? 1 : 3));
        assert_int_equal(mask_count_swa(search_result_mask(st)), (int)lround(0.875 * L * H));
        search_free(st);
    }
}

/* Independent stage-1 probes (stage1_independent = 1): every other layer full, so
 * s_best[l] = exp(-(sum of the 2 smallest a of layer l)) alone. */
static void test_stage1_independent(void **state) {
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    synth s;
    search_objective o;
    search_config cfg;
    config(&cfg, 0.5);
    cfg.stage1_independent = 1;
    search_state *st = run_full(&cfg, &s, &o, &r);
    for (int l = 0; l < L; l++) {
        uint64_t bits;
        double own = smallest_sum(&s, l, 2, &bits);
        search_layer_info li;
        search_layer_stats(st, l, &li);
        assert_true(fabs(li.s_best - exp(-own)) < 1e-12);
        assert_true(fabs(li.delta - (1.0 - exp(-own))) < 1e-12);
    }
    assert_int_equal(mask_count_swa(search_result_mask(st)), (int)lround(0.5 * L * H));
    search_free(st);
}

/* ---- head-score options ---- */

static void heads_config(search_config *cfg, double ratio, int scope) {
    config(cfg, ratio);
    cfg->stage1_independent = 1;
    cfg->stage1_singles = 1;
    cfg->stage3_scope = scope;
    cfg->refine_budget = 60;
    cfg->stage3_budget_per_group = 12;
}

/* The n heads of smallest a (ties: lower unit), as a mask body; returns their total a. */
static double global_cut(const synth *s, int n, uint8_t *z) {
    memset(z, ATTN_FULL, L * H);
    double sum = 0;
    for (int c = 0; c < n; c++) {
        int best = -1;
        for (int u = 0; u < L * H; u++)
            if (z[u] == ATTN_FULL && (best < 0 || s->a[u / H][u % H] < s->a[best / H][best % H])) best = u;
        z[best] = ATTN_SWA;
        sum += s->a[best / H][best % H];
    }
    return sum;
}

static void test_heads_separable(void **state) {
    (void)state;
    const double ratios[] = {0.25, 0.5, 0.75, 0.875};
    for (int scope = 0; scope <= 1; scope++)
        for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
            static recorder r;
            memset(&r, 0, sizeof r);
            synth s;
            search_objective obj;
            search_config cfg;
            heads_config(&cfg, ratios[i], scope);
            search_state *st = run_full(&cfg, &s, &obj, &r);
            const int n = (int)lround(ratios[i] * L * H);
            uint8_t want[L * H];
            double cost = global_cut(&s, n, want);
            assert_int_equal(mask_count_swa(search_result_mask(st)), n);
            assert_memory_equal(search_result_mask(st)->z, want, L * H);
            assert_true(fabs(search_best_score(st) - exp(-cost)) < 1e-12); /* S_full = 1, S_swa ~ 0 */
            /* the head scores are the single-head drops 1 - exp(-a) */
            const double *hs = search_head_scores(st);
            assert_non_null(hs);
            for (int u = 0; u < L * H; u++)
                assert_true(fabs(hs[u] - (1.0 - exp(-s.a[u / H][u % H]))) < 1e-12);
            /* ... which the registry's ablation ranking is, with no second pass (the explorer's heat
               map and attention view take them); no model: no locality or echo */
            assert_ptr_equal(search_head_ranking(st, SEARCH_METHOD_ABLATION), hs);
            assert_non_null(search_head_ranking(st, SEARCH_METHOD_FISHER));
            assert_null(search_head_ranking(st, SEARCH_METHOD_LOCALITY));
            assert_null(search_head_ranking(st, SEARCH_METHOD_BOSCH));
            assert_true(search_n_evals(st) <= search_eval_budget(st));
            search_free(st);
        }
}

/* Two cheap heads that cost a lot together: the cut of the single-head scores takes both; the
 * refinement must trade one of them for the next cheapest head. */
static void test_heads_refinement_beats_cut(void **state) {
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    search_config cfg;
    heads_config(&cfg, 0.5, 1);
    synth s;
    search_objective obj;
    synth_init(&s, &obj);
    uint8_t cut[L * H];
    const int n = (int)lround(0.5 * L * H);
    global_cut(&s, n, cut);
    int k = 0;
    for (int u = 0; u < L * H && k < 2; u++)
        if (cut[u] == ATTN_SWA) s.pair[k++] = u;
    s.penalty = 2.0;
    search_state *st;
    char err[256];
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, NULL, record, &r, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    const attn_mask *res = search_result_mask(st);
    assert_int_equal(mask_count_swa(res), n);
    assert_false(res->z[s.pair[0]] == ATTN_SWA && res->z[s.pair[1]] == ATTN_SWA);
    attn_mask cm = {L, H, cfg.window, cfg.sinks, cut};
    search_eval e;
    synth_score(&s, &cm, 0, &e, err, sizeof err);
    assert_true(search_best_score(st) > e.score); /* S_swa is ~0 here: normalized ~ raw */
    search_free(st);
}

static void test_heads_resume(void **state) {
    (void)state;
    const int cuts[] = {0, 3, 20, 40, 70, 1000};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        static recorder ref, rest;
        memset(&ref, 0, sizeof ref);
        memset(&rest, 0, sizeof rest);
        search_config cfg;
        heads_config(&cfg, 0.75, 1);
        synth s0;
        search_objective o0;
        search_state *full = run_full(&cfg, &s0, &o0, &ref);
        char err[256], path[] = "/tmp/test_search_stateXXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        synth s1;
        search_objective o1;
        synth_init(&s1, &o1);
        search_state *st;
        assert_int_equal(search_create(&st, &cfg, L, H, &o1, NULL, NULL, NULL, err, sizeof err), 0);
        for (int i = 0; i < cuts[c] && !search_is_done(st); i++)
            assert_true(search_step(st, err, sizeof err) >= 0);
        assert_int_equal(search_save(st, path, err, sizeof err), 0);
        search_free(st);
        synth s2;
        search_objective o2;
        synth_init(&s2, &o2);
        assert_int_equal(search_load(&st, path, L, H, &o2, NULL, record, &rest, err, sizeof err), 0);
        assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
        assert_memory_equal(search_result_mask(st)->z, search_result_mask(full)->z, L * H);
        assert_int_equal(search_n_evals(st), search_n_evals(full));
        assert_int_equal(rest.n, ref.n);
        assert_memory_equal(rest.hash, ref.hash, sizeof(ref.hash[0]) * (size_t)ref.n);
        search_free(st);
        search_free(full);
        remove(path);
    }
}

/* An objective that returns SEARCH_CANCELLED (as the real one does when the explorer quits) on
 * the calls listed in cancel_calls, without scoring, and otherwise scores like synth. */
typedef struct {
    synth s;
    long calls;
    long cancel_calls[8];
    int n_cancel;
} cancelling;

static int cancelling_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                            size_t errlen) {
    cancelling *c = ctx;
    long k = ++c->calls;
    for (int i = 0; i < c->n_cancel; i++)
        if (c->cancel_calls[i] == k) {
            snprintf(err, errlen, "cancelled");
            return SEARCH_CANCELLED;
        }
    return synth_score(&c->s, m, make_base, out, err, errlen);
}

/* A cancelled evaluation is not recorded: search_step returns SEARCH_CANCELLED without an error
 * event or a new evaluation, and stepping on reaches the same evaluations (mask, score, index) and
 * the same final mask as a search that was never cancelled. */
static void test_cancel_not_recorded(void **state) {
    (void)state;
    static recorder ref, got;
    memset(&ref, 0, sizeof ref);
    memset(&got, 0, sizeof got);
    search_config cfg;
    config(&cfg, 0.5);
    cfg.stage3_budget_per_group = 10;
    synth s0;
    search_objective o0;
    search_state *a = run_full(&cfg, &s0, &o0, &ref);

    static cancelling c;
    memset(&c, 0, sizeof c);
    search_objective o1;
    synth_init(&c.s, &o1);
    o1.score = cancelling_score;
    o1.ctx = &c;
    const long n_ref = search_n_evals(a); /* calls made = evaluations + cancels, so all are reached */
    assert_true(n_ref > 20);
    const long at[] = {1, 2, 3, 9, 10, n_ref / 2, n_ref / 2 + 1, n_ref};
    memcpy(c.cancel_calls, at, sizeof at);
    c.n_cancel = 8;
    search_state *b;
    char err[256];
    assert_int_equal(search_create(&b, &cfg, L, H, &o1, NULL, record, &got, err, sizeof err), 0);
    int rc, n_cancelled = 0;
    do {
        long before = search_n_evals(b);
        int n_ev = got.n;
        rc = search_step(b, err, sizeof err);
        if (rc == SEARCH_CANCELLED) {
            n_cancelled++;
            assert_int_equal(search_n_evals(b), before);
            for (int i = n_ev; i < got.n; i++) {
                assert_int_not_equal(got.kind[i], SEARCH_EV_ERROR);
                assert_int_not_equal(got.kind[i], SEARCH_EV_EVAL);
            }
        } else {
            assert_true(rc == 0 || rc == 1);
        }
    } while (rc != 1);
    assert_int_equal(n_cancelled, 8);
    assert_int_equal(search_n_evals(b), search_n_evals(a));
    assert_memory_equal(search_result_mask(a)->z, search_result_mask(b)->z, L * H);
    int j = 0;
    for (int i = 0; i < ref.n; i++) {
        if (ref.kind[i] != SEARCH_EV_EVAL) continue;
        while (j < got.n && got.kind[j] != SEARCH_EV_EVAL) j++;
        assert_true(j < got.n);
        assert_int_equal(got.eval_index[j], ref.eval_index[i]);
        assert_int_equal(got.hash[j], ref.hash[i]);
        assert_memory_equal(&got.score[j], &ref.score[i], sizeof ref.score[i]);
        j++;
    }
    search_free(a);
    search_free(b);
}

static char *slurp_text(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    *n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*n] = '\0';
    return buf;
}

static void spit_text(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
}

/* The state is a log: the header once (search_save), then one line appended per evaluation
 * (search_append), each readable at once. A last line cut by a kill is dropped and the search
 * resumes from the evaluation before it to the uninterrupted result; a bad line in the middle is
 * an error naming its line. */
static void test_state_log_append(void **state) {
    (void)state;
    search_config cfg;
    config(&cfg, 0.5);
    synth s0;
    search_objective o0;
    recorder ref = {0};
    search_state *full = run_full(&cfg, &s0, &o0, &ref);

    char err[256], path[] = "/tmp/test_search_logXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    synth s1;
    search_objective o1;
    synth_init(&s1, &o1);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o1, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    long logged = search_n_evals(st);
    assert_int_equal(logged, 0);
    const int cut = 23;
    for (int i = 0; i < cut; i++) {
        assert_true(search_step(st, err, sizeof err) >= 0);
        assert_int_equal(search_append(st, path, &logged, err, sizeof err), 0);
        assert_int_equal(logged, search_n_evals(st));
        /* every evaluation is in the file as soon as search_append returns */
        FILE *f = fopen(path, "r");
        search_state_file sf;
        assert_int_equal(search_state_parse(f, path, &sf, err, sizeof err), 0);
        fclose(f);
        assert_int_equal(sf.version, 2);
        assert_int_equal(sf.n_log, search_n_evals(st));
        assert_int_equal(sf.dropped_line, 0);
        search_state_file_free(&sf);
    }
    long n_done = search_n_evals(st);
    assert_true(n_done >= 10);
    search_free(st);

    size_t n;
    char *text = slurp_text(path, &n);
    char *last = text + n - 1; /* the newline ending the last eval line */
    while (last > text && last[-1] != '\n') last--;
    /* cut inside the last line: that evaluation is dropped, the rest resumes */
    spit_text(path, text, (size_t)(last - text) + 20);
    synth s2;
    search_objective o2;
    synth_init(&s2, &o2);
    assert_int_equal(search_load(&st, path, L, H, &o2, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_n_evals(st), n_done - 1);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(full)->z, L * H);
    assert_int_equal(search_n_evals(st), search_n_evals(full));
    search_free(st);

    /* a malformed middle line: an error naming it */
    text = slurp_text(path, &n);
    char *third = strstr(text, "\nlog\n");
    assert_non_null(third);
    third += 5;
    for (int k = 0; k < 2; k++) third = strchr(third, '\n') + 1; /* the 3rd eval line */
    memcpy(third, "evil", 4);
    spit_text(path, text, n);
    assert_int_equal(search_load(&st, path, L, H, &o2, NULL, NULL, NULL, err, sizeof err), -1);
    int header_lines = 0;
    for (char *q = text; q < third; q++) header_lines += *q == '\n';
    char want[64];
    snprintf(want, sizeof want, "line %d: expected an 'eval' record", header_lines + 1);
    assert_non_null(strstr(err, want));
    search_free(full);
    remove(path);
}

/* A version 1 state (n_evals in the header, written before the log) reads as the same config and
 * log as its version 2 twin: both fixtures hold the first 20 evaluations of one small search. */
static void test_state_v1_and_v2(void **state) {
    (void)state;
    char err[256];
    search_state_file a, b;
    FILE *f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/state_v1.txt", "r");
    assert_non_null(f);
    assert_int_equal(search_state_parse(f, "v1", &a, err, sizeof err), 0);
    fclose(f);
    f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/state_v2.txt", "r");
    assert_non_null(f);
    assert_int_equal(search_state_parse(f, "v2", &b, err, sizeof err), 0);
    fclose(f);
    assert_int_equal(a.version, 1);
    assert_int_equal(b.version, 2);
    assert_int_equal(a.n_log, 20);
    assert_int_equal(b.n_log, 20);
    assert_int_equal(a.n_layer, 30);
    assert_int_equal(a.n_head_kv, 3);
    assert_int_equal(b.cfg.window, 64);
    assert_true(b.cfg.ratio == 0.5);
    assert_memory_equal(&a.cfg, &b.cfg, sizeof a.cfg);
    /* the first record, as written in the fixture */
    assert_true(a.log[0].hash == 0xa820b0dbbb6b4c3dull);
    assert_true(a.log[0].score == 0.96152701288782794);
    assert_int_equal(a.log[0].n_samples, 2);
    assert_true(a.log[0].sample_nll[1] == 0.062058086770223522);
    for (long i = 0; i < a.n_log; i++) {
        assert_true(a.log[i].hash == b.log[i].hash);
        assert_true(a.log[i].score == b.log[i].score);
        assert_int_equal(a.log[i].n_samples, b.log[i].n_samples);
    }
    search_state_file_free(&a);
    search_state_file_free(&b);
    /* version 1 files are atomic: a short one is an error, not a dropped line */
    static const char v1[] = "bosch-search-state 1\nmethod bosch\nratio 0.5\nwindow 8\nsinks 0\nseed 1\n"
                             "stage1_budget 3\nstage3_budget 4\nrestarts 1\nn_buckets 4\nn_layer 2\n"
                             "n_head_kv 2\nn_evals 2\neval 00000000000000ab 1 1 0 0.5 0\n";
    f = fmemopen((void *)v1, sizeof v1 - 1, "r");
    assert_int_equal(search_state_parse(f, "short", &a, err, sizeof err), -1);
    fclose(f);
    assert_non_null(strstr(err, "short: line 15: missing eval record 2 of 2"));
}

/* ---- batched evaluation (search_set_batch) ---- */

static long batch_calls; /* score_batch calls of the current run */

/* A score_batch over synth_score that scores the masks last to first (an objective may score a
 * batch in any order and on any rank; the answers must not depend on it). */
static int synth_batch(void *ctx, const attn_mask *const *masks, const int *make_base, int n,
                       search_eval *out, char *err, size_t errlen) {
    batch_calls++;
    for (int j = n - 1; j >= 0; j--)
        if (synth_score(ctx, masks[j], make_base[j], &out[j], err, errlen)) return -1;
    return 0;
}

typedef struct {
    long n, calls, wasted, batch_calls;
    uint64_t hash[1024];
    double score[1024];
    uint8_t mask[L * H];
} batch_run;

static void run_batched(const search_config *cfg, int batch, int with_fn, batch_run *out) {
    synth s;
    search_objective obj;
    search_state *st;
    char err[256];
    synth_init(&s, &obj);
    s.pair[0] = 2 * H, s.pair[1] = 5 * H + 1, s.penalty = 0.8; /* first improvement has moves to take */
    if (with_fn) obj.score_batch = synth_batch;
    batch_calls = 0;
    assert_int_equal(search_create(&st, cfg, L, H, &obj, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_set_batch(st, batch), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    out->n = st->n_log;
    assert_true(out->n <= 1024);
    for (long i = 0; i < out->n; i++) out->hash[i] = st->log[i].hash, out->score[i] = st->log[i].score;
    memcpy(out->mask, search_result_mask(st)->z, L * H);
    out->calls = s.calls, out->wasted = search_batch_wasted(st), out->batch_calls = batch_calls;
    search_free(st);
}

/* The log (masks and scores in order) and the final mask are those of batch 1 for every batch,
 * with score_batch or the sequential default, in every phase that looks ahead (stage 1 probes,
 * stage 3 with the optimizer, the singles pass, stage 3 and the refinement as swap searches, the
 * baselines' single-head and single-layer masks). The objective's extra work is exactly the
 * unused look-ahead, and the look-ahead is really used (fewer batches than evaluations). */
static void test_batch_same_trace(void **state) {
    (void)state;
    search_config cfgs[4];
    config(&cfgs[0], 0.45); /* the paper's options, stage 3 by local search (space > budget) */
    cfgs[0].stage3_budget_per_group = 6;
    heads_config(&cfgs[1], 0.5, 1);
    config(&cfgs[2], 0.4);
    cfgs[2].method = SEARCH_METHOD_ABLATION;
    config(&cfgs[3], 0.4);
    cfgs[3].method = SEARCH_METHOD_NLL;
    const int batches[] = {2, 3, 7};
    static batch_run ref, got;
    for (int c = 0; c < 4; c++) {
        run_batched(&cfgs[c], 1, 1, &ref);
        assert_int_equal(ref.wasted, 0);
        assert_int_equal(ref.batch_calls, 0); /* batch 1 never calls score_batch */
        long wasted_any = 0;
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
            for (int with_fn = 0; with_fn < 2; with_fn++) {
                run_batched(&cfgs[c], batches[b], with_fn, &got);
                assert_int_equal(got.n, ref.n);
                assert_memory_equal(got.hash, ref.hash, sizeof(uint64_t) * (size_t)ref.n);
                assert_memory_equal(got.score, ref.score, sizeof(double) * (size_t)ref.n);
                assert_memory_equal(got.mask, ref.mask, L * H);
                assert_int_equal(got.calls, ref.calls + got.wasted);
                if (with_fn) assert_true(got.batch_calls > 0 && got.batch_calls < ref.calls);
                wasted_any += got.wasted;
            }
        if (c == 1) assert_true(wasted_any > 0); /* an accepted swap dropped look-ahead answers */
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_order_and_optimum),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_save_resume_same_result),
        cmocka_unit_test(test_resume_mismatch),
        cmocka_unit_test(test_resume_changed_objective),
        cmocka_unit_test(test_stage1_k_cap),
        cmocka_unit_test(test_stage1_independent),
        cmocka_unit_test(test_heads_separable),
        cmocka_unit_test(test_heads_refinement_beats_cut),
        cmocka_unit_test(test_heads_resume),
        cmocka_unit_test(test_cancel_not_recorded),
        cmocka_unit_test(test_state_log_append),
        cmocka_unit_test(test_state_v1_and_v2),
        cmocka_unit_test(test_batch_same_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
