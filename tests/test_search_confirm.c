/* test_search_confirm.c — the confirmation phase (search.h search_config.confirm_samples;
 * search/search_confirm.c; docs/search.md "Confirming the finalists").
 *
 * BOSCH with its default options runs on the synthetic objective of tests/support/synth_search.h
 * (6 layers x 3 KV heads, S = exp(-sum of the SWA heads' weights)) at rho 0.5. The confirmation
 * objective is a second synthetic one the test sets (search_set_confirm), whose answers are worked
 * out by hand from the finalists' bodies:
 *  - it prefers one start (the search's start mask, the worst choice on this objective: answer
 *    probability 0.9 on every sample, the others 0.5): that start is the result, with its own calibration
 * score (the normalized synthetic S of its body, computed here), and the search's calibration evaluations are
 * exactly those of the search without the confirmation (the log is that log plus one entry per finalist);
 *  - it scores every finalist the same: the refined mask is kept (ties keep the first);
 *  - the start's higher mean is within 2 paired standard errors of the refined mask's: kept as well;
 *  - a search saved in the middle of the phase and resumed ends with the same mask, asking the
 *    confirmation objective only for the finalists not in the log;
 *  - without a model and without a confirmation objective the phase is skipped;
 *  - the plan: the phase is there, its evaluations as made, the totals equal to the evaluations;
 *  - the state file keeps confirm_samples and confirm_tokens2.
 */
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
#include "search_plan.h"
#include "synth_search.h"

#define L SYNTH_L
#define H SYNTH_H
#define N_CONFIRM 5

static synth_fixture fx;

/* The confirmation objective: 0.9 on every sample for the mask `prefer` (NULL: none), else `other`;
 * counts its calls and the masks it saw. */
typedef struct {
    const uint8_t *prefer;
    double other;
    int calls;
    int noisy; /* 1: the preferred mask gets 0.9, 0.3, 0.9, 0.3, 0.9 (mean 0.66) instead of 0.9 each */
} confirm_ctx;

static int confirm_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                         size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    confirm_ctx *c = ctx;
    static double nll[N_CONFIRM];
    const int pref = c->prefer && !memcmp(m->z, c->prefer, (size_t)L * H);
    double mean = 0;
    for (int s = 0; s < N_CONFIRM; s++) {
        const double p = !pref ? c->other : c->noisy && s % 2 ? 0.3 : 0.9;
        nll[s] = -log(p);
        mean += p / N_CONFIRM;
    }
    *out = (search_eval){mean, 1.0, -log(mean), 0.001, N_CONFIRM, nll};
    c->calls++;
    return 0;
}

typedef struct {
    int confirm_evals, nan_scores, starts, ends;
    char end_msg[320];
} listen;

static void on_event(const search_event *ev, void *user) {
    listen *c = user;
    if (ev->kind == SEARCH_EV_EVAL && ev->confirm) {
        c->confirm_evals++;
        c->nan_scores += isnan(ev->score) && isnan(ev->accuracy);
        assert_true(ev->raw_score > 0.2 && ev->raw_score < 1);
    }
    const int in_confirm =
        ev->plan && ev->phase >= 0 && ev->plan->phase[ev->phase].kind == SEARCH_PHASE_CONFIRM;
    if (ev->kind == SEARCH_EV_GROUP_START && in_confirm) c->starts++;
    if (ev->kind == SEARCH_EV_GROUP_END && in_confirm) {
        c->ends++;
        snprintf(c->end_msg, sizeof c->end_msg, "%s", ev->message ? ev->message : "");
    }
}

static void config(search_config *cfg, int confirm) {
    char err[256];
    search_config_default(cfg);
    search_config_paper_options(cfg);
    assert_int_equal(search_preset_apply(cfg, "tiny", 0, err, sizeof err), 0);
    cfg->ratio = 0.5, cfg->window = 16, cfg->stage3_budget_per_group = 8;
    assert_int_equal(search_variant_apply(cfg, "bosch", err, sizeof err), 0);
    cfg->confirm_samples = confirm;
}

static search_objective calib_obj(void) {
    return (search_objective){.score = synth_score, .samples = fx.samples, .n_samples = SYNTH_NS};
}

/* Run cfg to the end (model m, confirmation objective co or NULL); *out the search. */
static void run(search_state **out, const search_config *cfg, const model *m, const search_objective *co,
                listen *lis) {
    static search_objective obj;
    obj = calib_obj();
    char err[512];
    assert_int_equal(search_create(out, cfg, L, H, &obj, m, on_event, lis, err, sizeof err), 0);
    if (co) search_set_confirm(*out, co);
    if (search_run(*out, NULL, err, sizeof err) != 1) fail_msg("run: %s", err);
}

/* The normalized synthetic S of body z: (S - S_swa) / (S_full - S_swa), S = exp(-sum of weights). */
static double synth_norm(const uint8_t *z) {
    double cost = 0, all = 0;
    for (int u = 0; u < L * H; u++) {
        all += synth_weight(u);
        if (z[u] == ATTN_SWA) cost += synth_weight(u);
    }
    return (exp(-cost) - exp(-all)) / (1 - exp(-all));
}

/* The start mask of these tests: the T = round(0.5 x 18) = 9 dearest heads SWA, the worst choice on
 * the synthetic objective, so the refinement moves away from it and it stays a finalist of its own
 * (with a start mask, BOSCH tries it cut to the target as one more refinement start). */
static void dear_start(attn_mask *m) {
    assert_int_equal(mask_init(m, L, H, 16, 0, ATTN_FULL), 0);
    for (int c = 0; c < 9; c++) {
        int best = -1;
        for (int u = 0; u < L * H; u++)
            if (m->z[u] == ATTN_FULL && (best < 0 || synth_weight(u) > synth_weight(best))) best = u;
        m->z[best] = ATTN_SWA;
    }
}

static void config_start(search_config *cfg, int confirm, const attn_mask *start) {
    char err[256];
    config(cfg, confirm);
    assert_int_equal(search_start_set(cfg, start, err, sizeof err), 0);
}

/* The dear start mask into *start, and the search from it without the confirmation (*cfg its
 * config, to which the tests add the confirmation). */
static search_state *plain_from_start(attn_mask *start, search_config *cfg) {
    dear_start(start);
    config_start(cfg, 0, start);
    search_state *plain;
    listen l0 = {0};
    run(&plain, cfg, NULL, NULL, &l0);
    return plain;
}

static void test_prefers_a_start(void **state) {
    (void)state;
    attn_mask start;
    search_config cfg;
    search_state *plain = plain_from_start(&start, &cfg);
    /* the hand-worked case needs the start to differ from the refined mask */
    assert_memory_not_equal(start.z, search_result_mask(plain)->z, (size_t)L * H);

    config_start(&cfg, N_CONFIRM, &start);
    confirm_ctx cc = {start.z, 0.5, 0, 0};
    search_objective co = {.score = confirm_score, .ctx = &cc};
    search_state *st;
    listen lis = {0};
    run(&st, &cfg, NULL, &co, &lis);
    assert_memory_equal(search_result_mask(st)->z, start.z, (size_t)L * H);
    assert_true(fabs(search_best_score(st) - synth_norm(start.z)) < 1e-12);
    search_confirm_stats cs;
    search_get_confirm_stats(st, &cs);
    assert_true(cs.n_finalists >= 2);
    assert_true(cs.kept > 0);
    assert_string_equal(cs.what[cs.kept], "start");
    assert_true(fabs(cs.score[cs.kept] - 0.9) < 1e-12 && fabs(cs.score[0] - 0.5) < 1e-12);
    assert_int_equal(cc.calls, cs.n_finalists);
    assert_int_equal(lis.confirm_evals, cs.n_finalists);
    assert_int_equal(lis.nan_scores, cs.n_finalists);
    assert_int_equal(lis.starts, 1);
    assert_int_equal(lis.ends, 1);
    assert_non_null(strstr(lis.end_msg, "kept the start mask"));
    /* the calibration evaluations are the plain search's; the finalists come after them, and the
     * start once more on the calibration split when the race dropped it */
    const long extra = search_n_evals(st) - search_n_evals(plain) - cs.n_finalists;
    assert_true(extra == 0 || extra == 1);
    /* the plan: the phase as made, the totals the evaluations */
    const search_plan *p = search_get_plan(st);
    int found = 0;
    for (int i = 0; i < p->n_phases; i++)
        if (p->phase[i].kind == SEARCH_PHASE_CONFIRM) {
            found = 1;
            assert_int_equal(p->phase[i].evals_done, cs.n_finalists + extra);
            assert_int_equal(p->phase[i].n_units, cs.n_finalists);
        }
    assert_true(found);
    assert_int_equal(p->evals_planned, search_n_evals(st));
    fprintf(stderr, "%d finalists, %ld extra calibration evaluation(s): %s\n", cs.n_finalists, extra,
            lis.end_msg);
    search_free(st);
    search_free(plain);
    mask_free(&start);
}

static void test_tie_keeps_refined(void **state) {
    (void)state;
    search_config cfg;
    config(&cfg, 0);
    search_state *plain;
    listen l0 = {0};
    run(&plain, &cfg, NULL, NULL, &l0);
    config(&cfg, N_CONFIRM);
    confirm_ctx cc = {NULL, 0.7, 0, 0};
    search_objective co = {.score = confirm_score, .ctx = &cc};
    search_state *st;
    listen lis = {0};
    run(&st, &cfg, NULL, &co, &lis);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(plain)->z, (size_t)L * H);
    assert_true(search_best_score(st) == search_best_score(plain));
    search_confirm_stats cs;
    search_get_confirm_stats(st, &cs);
    assert_int_equal(cs.kept, 0);
    assert_int_equal(search_n_evals(st), search_n_evals(plain) + cs.n_finalists);
    search_free(st);
    search_free(plain);
}

/* The preferred start scores 0.9, 0.3, 0.9, 0.3, 0.9 (mean 0.66), every other finalist 0.55: the
 * highest score, but its paired gain over the refined mask, d = 0.35, -0.25, 0.35, -0.25, 0.35, is
 * 0.11 with se = sqrt(0.432 / 4 / 5) = 0.147, below 2 se (SEARCH_CONFIRM_K): the refined mask stays. */
static void test_noise_keeps_refined(void **state) {
    (void)state;
    attn_mask start;
    search_config cfg;
    search_state *plain = plain_from_start(&start, &cfg);
    config_start(&cfg, N_CONFIRM, &start);
    confirm_ctx cc = {start.z, 0.55, 0, 1};
    search_objective co = {.score = confirm_score, .ctx = &cc};
    search_state *st;
    listen lis = {0};
    run(&st, &cfg, NULL, &co, &lis);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(plain)->z, (size_t)L * H);
    search_confirm_stats cs;
    search_get_confirm_stats(st, &cs);
    assert_int_equal(cs.kept, 0);
    int top = 0;
    for (int i = 1; i < cs.n_finalists; i++)
        if (cs.score[i] > cs.score[top]) top = i;
    assert_string_equal(cs.what[top], "start");
    assert_true(fabs(cs.score[top] - 0.66) < 1e-12);
    assert_non_null(strstr(lis.end_msg, "paired gain +0.1100, se 0.1470"));
    search_free(st);
    search_free(plain);
    mask_free(&start);
}

static void test_skipped_without_objective(void **state) {
    (void)state;
    search_config cfg;
    config(&cfg, 0);
    search_state *plain, *st;
    listen l0 = {0}, lis = {0};
    run(&plain, &cfg, NULL, NULL, &l0);
    config(&cfg, N_CONFIRM);
    run(&st, &cfg, NULL, NULL, &lis); /* no model, no confirmation objective */
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(plain)->z, (size_t)L * H);
    assert_int_equal(search_n_evals(st), search_n_evals(plain));
    assert_int_equal(lis.confirm_evals, 0);
    assert_int_equal(search_get_plan(st)->evals_planned, search_n_evals(st));
    search_free(st);
    search_free(plain);
}

static void test_resume_mid_phase(void **state) {
    (void)state;
    attn_mask cut;
    dear_start(&cut);
    search_config cfg;
    config_start(&cfg, N_CONFIRM, &cut);
    cfg.confirm_tokens2 = 777;
    confirm_ctx whole = {cut.z, 0.5, 0, 0};
    search_objective co = {.score = confirm_score, .ctx = &whole};
    search_state *ref;
    listen l0 = {0};
    run(&ref, &cfg, NULL, &co, &l0);

    /* step until two finalists are confirmed, save, resume with a fresh confirmation objective */
    search_objective obj = calib_obj();
    confirm_ctx first = {cut.z, 0.5, 0, 0};
    search_objective co1 = {.score = confirm_score, .ctx = &first};
    search_state *a;
    char err[512], path[256];
    assert_int_equal(search_create(&a, &cfg, L, H, &obj, NULL, NULL, NULL, err, sizeof err), 0);
    search_set_confirm(a, &co1);
    while (first.calls < 2) assert_int_equal(search_step(a, err, sizeof err), 0);
    snprintf(path, sizeof path, "/tmp/test_search_confirm.%d.state", (int)getpid());
    assert_int_equal(search_save(a, path, err, sizeof err), 0);
    search_config back;
    assert_int_equal(search_load_config(path, &back, err, sizeof err), 0);
    assert_int_equal(back.confirm_samples, N_CONFIRM);
    assert_int_equal(back.confirm_tokens2, 777);
    confirm_ctx rest = {cut.z, 0.5, 0, 0};
    search_objective co2 = {.score = confirm_score, .ctx = &rest};
    search_state *b;
    if (search_load(&b, path, L, H, &obj, NULL, NULL, NULL, err, sizeof err)) fail_msg("load: %s", err);
    search_set_confirm(b, &co2);
    if (search_run(b, NULL, err, sizeof err) != 1) fail_msg("resume: %s", err);
    assert_memory_equal(search_result_mask(b)->z, search_result_mask(ref)->z, (size_t)L * H);
    assert_true(search_best_score(b) == search_best_score(ref));
    assert_int_equal(search_n_evals(b), search_n_evals(ref));
    search_confirm_stats cs;
    search_get_confirm_stats(ref, &cs);
    assert_int_equal(rest.calls, cs.n_finalists - 2); /* the two in the log are not asked again */
    unlink(path);
    search_free(a);
    search_free(b);
    search_free(ref);
    mask_free(&cut);
}

static int setup(void **state) {
    (void)state;
    return synth_fixture_open(&fx, "test_search_confirm");
}

static int teardown(void **state) {
    (void)state;
    synth_fixture_close(&fx);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefers_a_start),     cmocka_unit_test(test_tie_keeps_refined),
        cmocka_unit_test(test_noise_keeps_refined), cmocka_unit_test(test_skipped_without_objective),
        cmocka_unit_test(test_resume_mid_phase),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
