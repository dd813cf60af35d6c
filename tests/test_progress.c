/* test_progress.c — the explorer's words for a search (tui/progress.h) against the search's own
 * event stream.
 *
 * Every method search_variant_name lists (BOSCH, each variant, every baseline) runs at three ratios
 * on a synthetic objective over a random-weight model of 6 layers x 3 KV heads (the model is there
 * for the methods that read weights; the scores are the synthetic objective's). After each event
 * the listener feeds tui/progress.c and checks what the screen would show against the event itself
 * and what the test recorded from earlier events (the reference):
 *  - the title names the event's phase, "phase i/n: <its label>" (i = event phase + 1);
 *  - the counter is "<the phase's unit> k/n" with n the event's n_units and k <= n; in a phase about
 *    one KV head it names the head the evaluated mask has SWA ("L3 kv1"), in one about one layer
 *    that layer;
 *  - no title, counter, time or explanation shows -1, nan or inf;
 *  - the progress fraction is in [0, 1] and the planned evaluations never grow and never fall
 *    below those made;
 *  - the grid's marks: on an evaluation of a one-layer / one-head / cascade phase exactly one layer
 *    is marked '▶', the layer the mask changes; in a stage-3 group the '•' layers are exactly the
 *    group's (from GROUP_START); nothing else is marked;
 *  - the time left is (planned - made) x the mean of the evaluations' seconds;
 *  - once done: "done: ..." with the search's evaluation count, fraction 1, no marks;
 *  - the noise: each evaluation's drop from all full and its paired standard error over the samples
 *    equal a direct computation here from the events' per-sample NLLs (score exp(-NLL)).
 * The last test pins the duration format.
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
#include "progress.h"
#include "search.h"
#include "search_methods.h"
#include "synth_search.h"

#define L SYNTH_L
#define H SYNTH_H
#define NS SYNTH_NS

static synth_fixture fx; /* the model and samples (tests/support/synth_search.h) */

/* every evaluation takes other seconds, so their mean is no constant a formula would get */
static const synth_options objective = {.vary_seconds = 1};

/* ---- the listener ------------------------------------------------------------------------------ */

typedef struct {
    ex_progress pg;
    int n_ev, failures;
    long last_planned;
    double secs; /* sum of the EVAL events' seconds (the reference for the time left) */
    long n_secs;
    long n_evals; /* EVAL events */
    uint8_t group[L];
    int in_a_group;
    char why[1024];
    const char *method;
    double full_nll[NS]; /* the all-full evaluation's per-sample NLLs */
    int have_full;
} check;

static void fail_at(check *c, const search_event *ev, const char *fmt, ...) {
    if (c->failures++) return;
    va_list ap;
    va_start(ap, fmt);
    char what[512];
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->why, sizeof c->why, "%s: event %d (kind %d, phase %d, unit %d/%d): %s", c->method, c->n_ev,
             ev->kind, ev->phase, ev->unit, ev->n_units, what);
}

/* A number shown that is -1, NaN or infinite: anywhere in a label or counter, as a number in prose
 * (where "stage-1" is a word). */
static int unknown_in(const char *t, const char *const *bad, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strstr(t, bad[i])) return 1;
    return 0;
}
static int unknown_shown(const char *t) {
    static const char *const bad[] = {"-1", "nan", "NAN", "inf", "INF"};
    return unknown_in(t, bad, sizeof bad / sizeof bad[0]);
}
static int unknown_in_prose(const char *t) {
    static const char *const bad[] = {" -1", "(-1", "=-1", "nan", " inf", "(inf", "-inf"};
    return unknown_in(t, bad, sizeof bad / sizeof bad[0]);
}

static int layer_swa(const attn_mask *m, int l) {
    int n = 0;
    for (int h = 0; h < H; h++) n += mask_get(m, l, h) == ATTN_SWA;
    return n;
}

/* The marks against what the event says the search is doing. */
static void check_marks(check *c, const search_event *ev) {
    const search_plan_phase *ph = ev->phase >= 0 ? &ev->plan->phase[ev->phase] : NULL;
    int n_unit = 0, unit_layer = -1, n_group = 0;
    for (int l = 0; l < L; l++) {
        progress_mark m = progress_layer_mark(&c->pg, l);
        if (m == PROGRESS_MARK_UNIT) n_unit++, unit_layer = l;
        if (m == PROGRESS_MARK_GROUP) {
            n_group++;
            if (!c->in_a_group || !c->group[l]) fail_at(c, ev, "L%d marked as in the group, it is not", l);
        }
    }
    if (n_unit > 1) fail_at(c, ev, "%d layers marked as worked on", n_unit);
    if (c->in_a_group && ev->kind == SEARCH_EV_EVAL) {
        int want = 0;
        for (int l = 0; l < L; l++) want += c->group[l];
        if (n_group != want) fail_at(c, ev, "%d layers marked of the group's %d", n_group, want);
    }
    if (ev->kind != SEARCH_EV_EVAL || !ph) return;
    const unsigned one = SEARCH_KEEPS_ONE_LAYER | SEARCH_KEEPS_ONE_HEAD | SEARCH_KEEPS_CASCADE;
    if (!(ph->keeps & one)) {
        if (n_unit) fail_at(c, ev, "L%d marked as worked on in phase %s", unit_layer, ph->label);
        return;
    }
    if (n_unit != 1) {
        fail_at(c, ev, "no layer marked in phase %s", ph->label);
        return;
    }
    /* the marked layer is the one the mask changes */
    if (ph->keeps & SEARCH_KEEPS_CASCADE) {
        if (unit_layer != ev->layer) fail_at(c, ev, "L%d marked, L%d probed", unit_layer, ev->layer);
    } else {
        for (int l = 0; l < L; l++)
            if ((layer_swa(ev->mask, l) > 0) != (l == unit_layer))
                fail_at(c, ev, "L%d marked, the mask's SWA heads are elsewhere (L%d)", unit_layer, l);
    }
    if (!(ph->keeps & SEARCH_KEEPS_ONE_HEAD)) return;
    char want[32], got[128];
    for (int u = 0; u < L * H; u++)
        if (ev->mask->z[u] == ATTN_SWA) snprintf(want, sizeof want, ": L%d kv%d", u / H, u % H);
    progress_counter(&c->pg, got, sizeof got);
    if (!strstr(got, want)) fail_at(c, ev, "counter '%s' does not name the SWA head '%s'", got, want + 2);
}

/* The strings against the event. */
static void check_strings(check *c, const search_event *ev) {
    char title[256], counter[256], eta[64];
    progress_title(&c->pg, title, sizeof title);
    progress_counter(&c->pg, counter, sizeof counter);
    progress_fmt_duration(progress_eta_s(&c->pg), eta, sizeof eta);
    const char *text = progress_text(&c->pg);
    if (unknown_shown(title) || unknown_shown(counter) || unknown_shown(eta) ||
        (text && unknown_in_prose(text)))
        fail_at(c, ev, "an unknown shown: '%s' '%s' '%s'", title, counter, eta);
    if (ev->kind == SEARCH_EV_DONE) return;
    if (ev->phase >= 0) {
        const search_plan_phase *ph = &ev->plan->phase[ev->phase];
        char want[128];
        snprintf(want, sizeof want, "phase %d/%d: %s", ev->phase + 1, ev->plan->n_phases, ph->label);
        if (strcmp(title, want)) fail_at(c, ev, "title '%s', the event's phase is '%s'", title, want);
        if (!text || strcmp(text, ph->text)) fail_at(c, ev, "the explanation is not the phase's");
        char unit[32];
        int k = -1, n = -1;
        if (sscanf(counter, "%31s %d/%d", unit, &k, &n) != 3)
            fail_at(c, ev, "counter '%s' unreadable", counter);
        else if (strcmp(unit, search_unit_name(ph->unit)) || n != ev->n_units || k > n || k < 0)
            fail_at(c, ev, "counter '%s' (phase unit %s, %d units)", counter, search_unit_name(ph->unit),
                    ev->n_units);
        else if (ev->unit >= 0 && k != ev->unit + 1)
            fail_at(c, ev, "counter '%s' for unit %d", counter, ev->unit);
    }
}

static void on_event(const search_event *ev, void *user) {
    check *c = user;
    c->n_ev++;
    progress_on_event(&c->pg, ev);
    if (ev->kind == SEARCH_EV_SEARCH_START) c->last_planned = ev->evals_planned;
    if (ev->kind == SEARCH_EV_GROUP_START) {
        memset(c->group, 0, sizeof c->group);
        c->in_a_group = ev->group >= 0;
        for (int i = 0; i < ev->n_layers_in_group; i++) c->group[ev->group_layers[i]] = 1;
    }
    if (ev->kind == SEARCH_EV_GROUP_END || ev->kind == SEARCH_EV_STAGE_END) c->in_a_group = 0;
    if (ev->kind == SEARCH_EV_EVAL) {
        c->n_evals++, c->secs += ev->seconds, c->n_secs++;
        /* a finalist on the confirmation split: other samples, none given (events.h) */
        if (ev->confirm && (ev->n_samples != 0 || ev->sample_nll))
            fail_at(c, ev, "confirmation samples given");
        if (!ev->confirm && (ev->n_samples != NS || !ev->sample_nll)) fail_at(c, ev, "no per-sample NLLs");
        if (ev->phase == 0 && ev->unit == 0 && ev->n_samples == NS)
            memcpy(c->full_nll, ev->sample_nll, sizeof c->full_nll), c->have_full = 1;
        /* the reference: d_i = exp(-nll_full_i) - exp(-nll_i), mean, sd / sqrt(n) */
        if (c->have_full && ev->n_samples == NS) {
            double d[NS], mean = 0, ss = 0;
            for (int i = 0; i < NS; i++) mean += (d[i] = exp(-c->full_nll[i]) - exp(-ev->sample_nll[i])) / NS;
            for (int i = 0; i < NS; i++) ss += (d[i] - mean) * (d[i] - mean);
            const double se = sqrt(ss / (NS - 1) / NS);
            if (fabs(c->pg.last_drop - mean) > 1e-12 || fabs(c->pg.last_se - se) > 1e-12)
                fail_at(c, ev, "noise: drop %g se %g, want %g %g", c->pg.last_drop, c->pg.last_se, mean, se);
        }
    }
    const long planned = progress_evals_planned(&c->pg);
    const double f = progress_fraction(&c->pg);
    if (planned > c->last_planned)
        fail_at(c, ev, "planned evaluations grew %ld -> %ld", c->last_planned, planned);
    if (planned < c->n_evals) fail_at(c, ev, "%ld planned, %ld made", planned, c->n_evals);
    c->last_planned = planned;
    if (!(f >= 0 && f <= 1)) fail_at(c, ev, "fraction %g", f);
    if (c->pg.n_evals != c->n_evals)
        fail_at(c, ev, "%ld evaluations counted, %ld made", c->pg.n_evals, c->n_evals);
    if (c->n_secs) {
        const double want = c->secs / (double)c->n_secs * (double)(planned - c->n_evals);
        if (fabs(progress_eta_s(&c->pg) - want) > 1e-9 * (1 + want))
            fail_at(c, ev, "time left %g, want %g", progress_eta_s(&c->pg), want);
    }
    check_strings(c, ev);
    check_marks(c, ev);
}

static void run_method(const char *name, double ratio, check *c) {
    search_config cfg;
    search_config_default(&cfg);
    search_config_paper_options(&cfg);
    char err[512];
    assert_int_equal(search_preset_apply(&cfg, "tiny", 0, err, sizeof err), 0);
    cfg.ratio = ratio, cfg.window = 16, cfg.stage3_budget_per_group = 8;
    assert_int_equal(search_variant_apply(&cfg, name, err, sizeof err), 0);
    /* bosch_confirm's phase on 2 samples of one length (the real evaluator on the random model), not 16 up to
     * 2k */
    if (cfg.confirm_samples) cfg.confirm_samples = 2, cfg.confirm_tokens2 = 0;
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    memset(c, 0, sizeof *c);
    c->method = name;
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, on_event, c, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    if (c->failures) fail_msg("%s at %g: %s", name, ratio, c->why);
    /* done: the count, the whole bar, no marks, no counter */
    char title[256], want[128], counter[64];
    progress_title(&c->pg, title, sizeof title);
    snprintf(want, sizeof want, "done: %d phase%s, %ld evaluations", search_get_plan(st)->n_phases,
             search_get_plan(st)->n_phases == 1 ? "" : "s", search_n_evals(st));
    assert_string_equal(title, want);
    assert_true(progress_fraction(&c->pg) == 1.0);
    assert_int_equal(progress_evals_planned(&c->pg), search_n_evals(st));
    assert_true(progress_eta_s(&c->pg) == 0.0);
    assert_int_equal(progress_counter(&c->pg, counter, sizeof counter), 0);
    for (int l = 0; l < L; l++) assert_int_equal(progress_layer_mark(&c->pg, l), PROGRESS_MARK_NONE);
    search_free(st);
}

static void test_every_method(void **state) {
    (void)state;
    static const double ratios[] = {0.25, 0.5, 0.75};
    int n = 0;
    for (int i = 0; search_variant_name(i); i++)
        for (int r = 0; r < 3; r++, n++) {
            check c;
            run_method(search_variant_name(i), ratios[r], &c);
        }
    assert_true(n >= 3 * 9); /* bosch, its variants and the baselines */
}

/* The default bosch's phases as the screen names them at the start of each (the old screen said
 * "Stage 1/3: probing layer 0" through the head scores and "bucket -1" in the refinement). */
static void test_bosch_titles(void **state) {
    (void)state;
    check c;
    run_method("bosch", 0.5, &c);
    const search_plan *p = &c.pg.plan;
    char kinds[256] = "";
    for (int i = 0; i < p->n_phases; i++)
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", i ? "|" : "",
                 p->phase[i].label);
    assert_string_equal(kinds,
                        "normalizers|stage 1: layer probes|stage 1: head scores|stage 2: SWA heads per "
                        "layer|stage 3: heads per bucket|refinement: start|refinement: swaps over all "
                        "layers");
}

static void test_duration(void **state) {
    (void)state;
    char b[32];
    progress_fmt_duration(35.4, b, sizeof b);
    assert_string_equal(b, "35 s");
    progress_fmt_duration(245, b, sizeof b);
    assert_string_equal(b, "4 min 05 s");
    progress_fmt_duration(3720, b, sizeof b);
    assert_string_equal(b, "1 h 02 min");
    progress_fmt_duration(NAN, b, sizeof b);
    assert_string_equal(b, "?");
    progress_fmt_duration(-1, b, sizeof b);
    assert_string_equal(b, "?");
    /* before any search: nothing shown */
    ex_progress p;
    progress_reset(&p);
    assert_int_equal(progress_title(&p, b, sizeof b), 0);
    assert_int_equal(progress_counter(&p, b, sizeof b), 0);
    assert_null(progress_text(&p));
    assert_true(isnan(progress_eta_s(&p)));
    assert_true(progress_fraction(&p) == 0);
    assert_true(isnan(progress_score_se(&p)));
    /* within the noise: |d| < 2 se */
    assert_int_equal(progress_within_noise(0.011, 0.006), 1);
    assert_int_equal(progress_within_noise(-0.011, 0.006), 1);
    assert_int_equal(progress_within_noise(0.013, 0.006), 0);
    assert_int_equal(progress_within_noise(0.001, NAN), 0);
}

static int setup(void **state) {
    (void)state;
    return synth_fixture_open(&fx, "test_progress");
}

static int teardown(void **state) {
    (void)state;
    synth_fixture_close(&fx);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_bosch_titles),
        cmocka_unit_test(test_every_method),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
