/* test_search_plan.c — the plan a search publishes (search/search_plan.h) against what it does.
 *
 * Every method of the registry (BOSCH, its variants, every baseline) runs on a synthetic objective
 * over a random-weight model of 6 layers x 3 KV heads (engine/gguf_write.h; the model is there for
 * locality, echo and the refinement's starts, the scores are the synthetic objective's), at several
 * ratios. A listener checks each event against the plan and the masks:
 *  - the plan at SEARCH_START has the phases written out by hand below for the main methods;
 *  - the events walk the phases in order, a unit is below its phase's units, units and evaluations
 *    planned never grow, the evaluations of each phase never pass its plan, and at the end every
 *    phase's planned evaluations equal the EVAL events it had and the total equals search_n_evals;
 *  - no field a screen shows is -1, NAN or infinite (the unit only when the event is about one);
 *  - each EVAL mask satisfies what its phase's `keeps` says (one layer, one head, each layer's
 *    stage-2 count, the bucket's total, the target total, whole layers, the committed mask), and
 *    the explanation says the same: "every layer keeps" exactly when the layer counts are kept,
 *    "heads move between its layers" when only the bucket's total is (the default bosch's stage 3,
 *    where the test also sees a layer's count change);
 *  - after the search, the layers' planned (stage 2) and final SWA counts are both reported.
 * Runs in 0.3 s (with OMP_WAIT_POLICY=passive, as ctest runs it).
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

#include "model.h"
#include "search.h"
#include "search_methods.h"
#include "synth_search.h"

#define L SYNTH_L
#define H SYNTH_H
#define NS SYNTH_NS

static synth_fixture fx; /* the model and samples (tests/support/synth_search.h) */

/* ---- the listener ----------------------------------------------------------------------------- */

typedef struct {
    search_state *st;
    search_plan first; /* the plan at SEARCH_START */
    int n_ev, last_phase, started, done, failures;
    long last_planned;               /* evals_planned of the previous event */
    int units_seen[SEARCH_PLAN_MAX]; /* n_units of each phase the last time it was seen (-1 never) */
    long evals_in[SEARCH_PLAN_MAX];  /* EVAL events per phase */
    long n_eval_events;
    int group_layers[L], n_group_layers;
    int count_moved; /* a layer of a group ended with another count than stage 2 gave it */
    long target;
    char why[1024];
} check;

static void fail_at(check *c, const search_event *ev, const char *what) {
    if (!c->failures++)
        snprintf(c->why, sizeof c->why, "event %d (kind %d, phase %d, unit %d/%d): %s", c->n_ev, ev->kind,
                 ev->phase, ev->unit, ev->n_units, what);
}

static int layer_swa(const attn_mask *m, int l) {
    int n = 0;
    for (int h = 0; h < m->n_head_kv; h++) n += mask_get(m, l, h) == ATTN_SWA;
    return n;
}

static int same_row(const attn_mask *a, const attn_mask *b, int l) {
    return !memcmp(a->z + (size_t)l * a->n_head_kv, b->z + (size_t)l * b->n_head_kv, (size_t)a->n_head_kv);
}

static int in_group(const check *c, int l) {
    for (int i = 0; i < c->n_group_layers; i++)
        if (c->group_layers[i] == l) return 1;
    return 0;
}

/* What the phase's keeps promise, on the evaluated mask m. */
static void check_keeps(check *c, const search_event *ev, const search_plan_phase *ph) {
    const attn_mask *m = ev->mask, *res = search_result_mask(c->st);
    const unsigned k = ph->keeps;
    int total = mask_count_swa(m), layers_with = 0, whole = 1;
    for (int l = 0; l < L; l++) {
        int n = layer_swa(m, l);
        layers_with += n > 0;
        whole &= n == 0 || n == H;
    }
    if ((k & SEARCH_KEEPS_NORMALIZERS) && total != (ev->unit == 0 ? 0 : L * H))
        fail_at(c, ev, "a normalizer is not all full / all SWA");
    if ((k & SEARCH_KEEPS_ONE_LAYER) && (layers_with != 1 || layer_swa(m, ev->layer) == 0))
        fail_at(c, ev, "a one-layer probe has SWA heads outside the event's layer");
    if (k & SEARCH_KEEPS_CASCADE)
        for (int l = 0; l < L; l++)
            if (l != ev->layer && (l < ev->layer ? layer_swa(m, l) != 0 : !same_row(m, res, l)))
                fail_at(c, ev, "a cascade probe: a layer below is not full or one above is not as committed");
    if ((k & SEARCH_KEEPS_ONE_HEAD) && total != 1) fail_at(c, ev, "a single-head probe has another count");
    if (k & (SEARCH_KEEPS_LAYER_COUNTS | SEARCH_KEEPS_BUCKET_TOTAL)) {
        int got = 0, want = 0;
        for (int l = 0; l < L; l++) {
            search_layer_info li;
            search_layer_stats(c->st, l, &li);
            if (!in_group(c, l)) {
                if (!same_row(m, res, l)) fail_at(c, ev, "a layer outside the group is not as committed");
                continue;
            }
            got += layer_swa(m, l), want += li.n_swa;
            if ((k & SEARCH_KEEPS_LAYER_COUNTS) && layer_swa(m, l) != li.n_swa)
                fail_at(c, ev, "a layer lost its stage-2 count where the plan keeps it");
            if (layer_swa(m, l) != li.n_swa) c->count_moved = 1;
        }
        if (got != want) fail_at(c, ev, "the group lost its stage-2 total");
    }
    if ((k & SEARCH_KEEPS_TOTAL) && total != c->target) fail_at(c, ev, "not the target number of SWA heads");
    if ((k & SEARCH_KEEPS_WHOLE_LAYERS) && !whole)
        fail_at(c, ev, "a layer partly SWA where whole layers are kept");
    if ((k & SEARCH_KEEPS_RESULT) && memcmp(m->z, res->z, L * H)) fail_at(c, ev, "not the committed mask");
}

/* A number printed that is -1, NaN or infinite (" -1", "(nan", "-inf", ...). */
static int unknown_printed(const char *t) {
    static const char *const bad[] = {" -1", "(-1", "=-1", "nan", " inf", "(inf", "-inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (strstr(t, bad[i])) return 1;
    return 0;
}

/* What a screen shows of the event is finite and not -1. */
static void check_shown(check *c, const search_event *ev) {
    if (ev->kind != SEARCH_EV_SEARCH_START && (ev->phase < 0 || ev->n_units < 0)) fail_at(c, ev, "no phase");
    if (ev->evals_planned < 0 || !ev->plan) fail_at(c, ev, "no plan");
    switch (ev->kind) {
    case SEARCH_EV_EVAL: /* a finalist on the confirmation split has no calibration score (events.h) */
        if ((ev->confirm ? !isnan(ev->score) || !isnan(ev->accuracy)
                         : !isfinite(ev->score) || !isfinite(ev->accuracy)) ||
            !isfinite(ev->raw_score) || !isfinite(ev->seconds) || !isfinite(ev->best_score) ||
            ev->eval_index < 1)
            fail_at(c, ev, "an EVAL field not finite");
        break;
    case SEARCH_EV_INCUMBENT:
    case SEARCH_EV_DONE:
        if (!isfinite(ev->score) || !isfinite(ev->best_score)) fail_at(c, ev, "a score not finite");
        break;
    case SEARCH_EV_LAYER_STATS:
        if (!isfinite(ev->delta) || !isfinite(ev->weight) || !isfinite(ev->ratio) || ev->bucket < 0 ||
            ev->n_swa < 0 || ev->layer < 0)
            fail_at(c, ev, "a stage-2 field unknown");
        break;
    case SEARCH_EV_LAYER_START:
    case SEARCH_EV_LAYER_END:
        if (ev->layer < 0) fail_at(c, ev, "a layer event without its layer");
        break;
    default:
        break;
    }
    for (int i = 0; ev->plan && i < ev->plan->n_phases; i++) {
        const search_plan_phase *ph = &ev->plan->phase[i];
        if (!ph->label[0] || !ph->text[0] || unknown_printed(ph->text) || unknown_printed(ph->label) ||
            ph->n_units < 0 || ph->evals_planned < 0) {
            char what[SEARCH_PLAN_TEXT + 64];
            snprintf(what, sizeof what, "phase %d's label, text or counts: %s", i, ph->text);
            fail_at(c, ev, what);
        }
    }
}

static void on_event(const search_event *ev, void *user) {
    check *c = user;
    c->n_ev++;
    check_shown(c, ev);
    if (ev->kind == SEARCH_EV_SEARCH_START) {
        c->first = *ev->plan;
        c->started = 1;
        if (ev->phase != -1 || ev->evals_planned != ev->plan->evals_planned) fail_at(c, ev, "SEARCH_START");
        c->last_planned = ev->evals_planned;
        return;
    }
    if (!c->started) fail_at(c, ev, "an event before SEARCH_START");
    if (ev->phase < c->last_phase) fail_at(c, ev, "the phases went back");
    c->last_phase = ev->phase;
    if (ev->evals_planned > c->last_planned) fail_at(c, ev, "the planned evaluations grew");
    c->last_planned = ev->evals_planned;
    if (ev->evals_planned < ev->eval_index) fail_at(c, ev, "fewer evaluations planned than made");
    const search_plan_phase *ph = &ev->plan->phase[ev->phase];
    if (ev->unit >= ev->n_units || ev->unit < -1 || ev->n_units != ph->n_units)
        fail_at(c, ev, "unit counter");
    if (c->units_seen[ev->phase] >= 0 && ev->n_units > c->units_seen[ev->phase]) fail_at(c, ev, "units grew");
    c->units_seen[ev->phase] = ev->n_units;
    if (ph->evals_done > ph->evals_planned || ph->units_done > ph->n_units)
        fail_at(c, ev, "a phase past its plan");
    if (ev->kind == SEARCH_EV_GROUP_START) {
        c->n_group_layers = ev->group < 0 ? 0 : ev->n_layers_in_group;
        for (int i = 0; i < c->n_group_layers; i++) c->group_layers[i] = ev->group_layers[i];
    }
    if (ev->kind == SEARCH_EV_EVAL) {
        c->evals_in[ev->phase]++;
        c->n_eval_events++;
        if (ev->unit < 0) fail_at(c, ev, "an evaluation about no unit");
        check_keeps(c, ev, ph);
    }
    if (ev->kind == SEARCH_EV_DONE) c->done = 1;
}

/* ---- running every method ----------------------------------------------------------------------- */

/* Run method `name` at `ratio` under the checks. The model goes to the methods that need it and,
 * with with_model, to BOSCH (its refinement then starts from locality and echo too). */
static void run_method(const char *name, double ratio, int with_model, check *c) {
    search_config cfg;
    search_config_default(&cfg);
    search_config_paper_options(&cfg);
    char err[512];
    assert_int_equal(search_preset_apply(&cfg, "tiny", 0, err, sizeof err), 0);
    cfg.ratio = ratio, cfg.window = 16, cfg.stage3_budget_per_group = 8;
    assert_int_equal(search_variant_apply(&cfg, name, err, sizeof err), 0);
    /* bosch_confirm's phase on 2 samples of one length (the real evaluator on the random model),
     * not 16 up to 2k */
    if (cfg.confirm_samples) cfg.confirm_samples = 2, cfg.confirm_tokens2 = 0;
    search_objective obj = {.score = synth_score, .samples = fx.samples, .n_samples = NS};
    memset(c, 0, sizeof *c);
    memset(c->units_seen, -1, sizeof c->units_seen);
    c->last_phase = -1;
    c->target = cfg.method == SEARCH_METHOD_BOSCH && cfg.granularity == SEARCH_GRANULARITY_LAYER
                    ? lround(ratio * L) * H
                    : lround(ratio * L * H);
    const model *m = with_model || search_method_needs_model(cfg.method) ? fx.m : NULL;
    assert_int_equal(search_create(&c->st, &cfg, L, H, &obj, m, on_event, c, err, sizeof err), 0);
    assert_int_equal(search_run(c->st, NULL, err, sizeof err), 1);
    if (c->failures) fail_msg("%s at %g: %s", name, ratio, c->why);
    assert_true(c->done);
    const search_plan *p = search_get_plan(c->st);
    assert_int_equal(p->evals_planned, search_n_evals(c->st));
    assert_int_equal(search_eval_budget(c->st), search_n_evals(c->st));
    assert_int_equal(c->n_eval_events, search_n_evals(c->st));
    assert_int_equal(p->n_phases, c->first.n_phases);
    /* the target the plan announces (the start form shows it) is what the final mask has */
    if (c->first.n_phases > 1)
        assert_int_equal(mask_count_swa(search_result_mask(c->st)), c->first.target_swa);
    for (int i = 0; i < p->n_phases; i++) {
        const search_plan_phase *ph = &p->phase[i], *was = &c->first.phase[i];
        assert_int_equal(ph->state, SEARCH_PHASE_DONE);
        assert_int_equal(ph->evals_planned, c->evals_in[i]);
        assert_int_equal(ph->evals_done, c->evals_in[i]);
        assert_true(ph->evals_planned <= was->evals_planned && ph->n_units <= was->n_units);
        assert_int_equal(ph->units_done, ph->n_units);
        /* the explanation says what the phase keeps */
        assert_int_equal(strstr(ph->text, "every layer keeps") != NULL,
                         (ph->keeps & SEARCH_KEEPS_LAYER_COUNTS) != 0);
        assert_int_equal(strstr(ph->text, "heads move between its layers") != NULL,
                         (ph->keeps & SEARCH_KEEPS_BUCKET_TOTAL) != 0);
    }
}

/* The phase kinds of a plan, as a string ("normalize probe_layers ..."). */
static const char *kinds(const search_plan *p, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < p->n_phases; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "",
                 search_phase_kind_name(p->phase[i].kind));
    return buf;
}

static void test_every_method(void **state) {
    (void)state;
    static const double ratios[] = {0.25, 0.5, 0.75};
    for (int i = 0; search_variant_name(i); i++)
        for (int r = 0; r < 3; r++) {
            check c;
            run_method(search_variant_name(i), ratios[r], 0, &c);
            search_free(c.st);
        }
}

static void test_phases_by_hand(void **state) {
    (void)state;
    static const struct {
        const char *method, *phases;
    } want[] = {
        /* the default: k = 2 of 3 at rho 0.5, so the head scores need their own pass */
        {"bosch", "normalize probe_layers singles assign groups refine_starts refine"},
        {"bosch_paper", "normalize probe_layers assign groups final"},
        {"bosch_heads", "normalize probe_layers singles assign groups final"},
        {"bosch_plus", "normalize probe_layers singles assign groups refine_starts refine"},
        {"bosch_layer", "normalize probe_layers assign groups"},
        {"bosch_confirm", "normalize probe_layers singles assign groups refine_starts refine confirm"},
        {"rand", "normalize rank final"},
        {"nll", "normalize rank final"},
        {"ablation", "normalize rank final"},
        {"locality", "normalize rank final"},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        check c;
        run_method(want[i].method, 0.5, 1, &c);
        assert_string_equal(kinds(&c.first, buf, sizeof buf), want[i].phases);
        if (!strcmp(want[i].method, "bosch")) {
            /* stage 3 per bucket moved heads between layers here, and its text says so */
            const search_plan *p = search_get_plan(c.st);
            assert_non_null(strstr(p->phase[4].text, "heads move between its layers"));
            assert_null(strstr(p->phase[4].text, "every layer keeps"));
            assert_true(c.count_moved);
            /* stage 2's counts and the final ones, both reported (here L2 ends with 1 of its 2, L5
             * with 1 where stage 2 gave it none) */
            int planned = 0, final = 0, differ = 0;
            for (int l = 0; l < L; l++) {
                search_layer_info li;
                assert_int_equal(search_layer_stats(c.st, l, &li), 0);
                planned += li.n_swa, final += li.n_swa_final, differ += li.n_swa != li.n_swa_final;
                int n = 0;
                for (int h = 0; h < H; h++) n += mask_get(search_result_mask(c.st), l, h) == ATTN_SWA;
                assert_int_equal(li.n_swa_final, n);
                assert_true(fabs(li.ratio_final - (double)n / H) < 1e-12);
            }
            assert_int_equal(planned, 9);
            assert_int_equal(final, 9);
            assert_true(differ > 0);
        }
        search_free(c.st);
    }
    /* nothing to choose: the normalizers only */
    check c;
    run_method("bosch", 0.0, 0, &c);
    assert_string_equal(kinds(&c.first, buf, sizeof buf), "normalize");
    assert_int_equal(search_n_evals(c.st), 2);
    search_free(c.st);
}

static int setup(void **state) {
    (void)state;
    return synth_fixture_open(&fx, "test_search_plan");
}

static int teardown(void **state) {
    (void)state;
    synth_fixture_close(&fx);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phases_by_hand),
        cmocka_unit_test(test_every_method),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
