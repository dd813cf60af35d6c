/* test_search_pins.c — pinned heads (search.h search_config.pins; docs/search.md "Pinned heads")
 * and the mask a search starts from (search_config.start_*; "Starting from a mask").
 *
 * Every method of the registry (BOSCH, its variants, every layer heuristic and static head
 * ranking) runs on a synthetic objective over a random-weight model of 6 layers x 3 KV heads (the
 * model is there for locality, echo and the refinement's starts; the scores are the synthetic
 * objective's), at three ratios, with heads pinned against what the objective prefers: the head
 * cheapest to make SWA pinned full, the most expensive pinned SWA. Each must keep the pins in its
 * final mask and in every mask it chooses among (stage 3, the refinement and its starts, the final
 * mask: every EVAL of those phases), and reach the target counting the forced SWA heads: a
 * head-level method exactly round(ratio * L * H); a layer heuristic whole layers plus the forced SWA
 * head, within one head of round(ratio * L) * H (round(ratio L) whole layers and the forced head
 * outside them), saying so in its last message when that is not the target. Also: the lists and the pin
 * file parsed, the pinned cut by hand, the refusals (a ratio the pins make impossible, bosch_layer,
 * every head pinned), and the pins saved in the state and a resumed search ending as the
 * uninterrupted one.
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
#include "search_plan.h"

#define L SYNTH_L
#define H SYNTH_H
#define NS SYNTH_NS

static synth_fixture fx; /* the model and samples (tests/support/synth_search.h) */

/* The cost of making head u SWA: S = exp(-sum over SWA heads). Head 1 (0.1) is the cheapest of
 * all, head 14 (layer 4 kv 2) the most expensive. */
static double weight(int u) {
    return u == 1 ? 0.01 : u == 14 ? 0.9 : 0.05 + 0.03 * ((u * 7 + 3) % 5) + 0.02 * (u / H);
}

static const synth_options objective = {.weight = weight};

/* The pins of these tests: 0.1 (the cheapest head) full, 4.2 (the dearest) SWA. */
static const search_pin want_pins[] = {{0, 1, 0}, {4, 2, 1}};

static int keeps_pins(const attn_mask *m) {
    for (size_t i = 0; i < sizeof want_pins / sizeof want_pins[0]; i++)
        if (mask_get(m, want_pins[i].layer, want_pins[i].kv_head) !=
            (want_pins[i].swa ? ATTN_SWA : ATTN_FULL))
            return 0;
    return 1;
}

typedef struct {
    int evals_chosen, broken; /* EVALs of the choosing phases, those that broke a pin */
    char last[512];           /* the DONE message */
    char first[512];          /* the SEARCH_START message */
} pin_check;

static void on_event(const search_event *ev, void *user) {
    pin_check *c = user;
    if (ev->kind == SEARCH_EV_DONE) snprintf(c->last, sizeof c->last, "%s", ev->message ? ev->message : "");
    if (ev->kind == SEARCH_EV_SEARCH_START)
        snprintf(c->first, sizeof c->first, "%s", ev->message ? ev->message : "");
    if (ev->kind != SEARCH_EV_EVAL || !ev->plan || ev->phase < 0 || !ev->mask) return;
    const search_phase_kind k = ev->plan->phase[ev->phase].kind;
    if (k != SEARCH_PHASE_GROUPS && k != SEARCH_PHASE_REFINE_STARTS && k != SEARCH_PHASE_REFINE &&
        k != SEARCH_PHASE_FINAL && k != SEARCH_PHASE_CONFIRM)
        return; /* measurements: normalizers, stage-1 probes, head scores, a ranking's probes */
    c->evals_chosen++;
    c->broken += !keeps_pins(ev->mask);
}

static void config(search_config *cfg, const char *name, double ratio) {
    char err[512];
    search_config_default(cfg);
    search_config_paper_options(cfg);
    assert_int_equal(search_preset_apply(cfg, "tiny", 0, err, sizeof err), 0);
    cfg->ratio = ratio, cfg->window = 16, cfg->stage3_budget_per_group = 8;
    assert_int_equal(search_variant_apply(cfg, name, err, sizeof err), 0);
    /* bosch_confirm's phase on 2 samples of one length (the real evaluator on the random model), not 16 up to
     * 2k */
    if (cfg->confirm_samples) cfg->confirm_samples = 2, cfg->confirm_tokens2 = 0;
    cfg->n_pins = 2;
    memcpy(cfg->pins, want_pins, sizeof want_pins);
}

static void test_every_method_keeps_pins(void **state) {
    (void)state;
    static const double ratios[] = {0.25, 0.5, 0.75};
    for (int i = 0; search_variant_name(i); i++)
        for (int r = 0; r < 3; r++) {
            const char *name = search_variant_name(i);
            search_config cfg;
            config(&cfg, name, ratios[r]);
            search_objective obj = {
                .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
            search_state *st;
            char err[512];
            static pin_check c;
            memset(&c, 0, sizeof c);
            const int rc = search_create(&st, &cfg, L, H, &obj, fx.m, on_event, &c, err, sizeof err);
            if (cfg.method == SEARCH_METHOD_BOSCH && cfg.granularity == SEARCH_GRANULARITY_LAYER) {
                assert_int_equal(rc, -1); /* bosch_layer says why it cannot */
                assert_non_null(strstr(err, "bosch_layer"));
                continue;
            }
            if (rc) fail_msg("%s at %g: %s", name, ratios[r], err);
            if (search_run(st, NULL, err, sizeof err) != 1)
                fail_msg("%s at %g: run: %s", name, ratios[r], err);
            const attn_mask *m = search_result_mask(st);
            if (!keeps_pins(m)) fail_msg("%s at %g: the final mask lost a pin", name, ratios[r]);
            if (c.broken)
                fail_msg("%s at %g: %d of %d chosen masks broke a pin", name, ratios[r], c.broken,
                         c.evals_chosen);
            if (!strstr(c.first, ", 2 pinned heads")) fail_msg("%s: start message '%s'", name, c.first);
            const search_method_info *row0 = search_method_row(cfg.method);
            if (row0->kind == SEARCH_KIND_SEARCH && c.evals_chosen == 0)
                fail_msg("%s at %g: no stage-3 or refinement evaluation was checked", name, ratios[r]);
            const long n = mask_count_swa(m);
            const search_method_info *row = search_method_row(cfg.method);
            if (row->kind == SEARCH_KIND_LAYER_HEURISTIC) {
                const long target = lround(ratios[r] * L) * H;
                for (int l = 0; l < L; l++) { /* whole layers, or only the forced SWA head */
                    int s = 0;
                    for (int h = 0; h < H; h++) s += mask_get(m, l, h) == ATTN_SWA;
                    if (s != H && s != (l == 4))
                        fail_msg("%s at %g: layer %d has %d SWA heads", name, ratios[r], l, s);
                }
                /* round(ratio L) whole layers make the target, or one more with the forced SWA head
                   outside them (layer 4's): the nearest count is never further than that */
                assert_true(labs(n - target) <= 1);
                assert_int_equal(strstr(c.last, "not the") != NULL, n != target);
            } else {
                if (n != lround(ratios[r] * L * H))
                    fail_msg("%s at %g: %ld SWA heads, target %ld", name, ratios[r], n,
                             lround(ratios[r] * L * H));
                assert_non_null(strstr(c.last, "pinned heads kept"));
            }
            search_free(st);
        }
}

/* Without the pins the synthetic objective puts the cheapest head (0.1) SWA and the dearest (4.2)
 * full: the pins above change the answer, so keeping them is not luck. */
static void test_pins_matter(void **state) {
    (void)state;
    search_config cfg;
    config(&cfg, "bosch", 0.5);
    cfg.n_pins = 0;
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    search_state *st;
    char err[512];
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    assert_int_equal(mask_get(search_result_mask(st), 0, 1), ATTN_SWA);
    assert_int_equal(mask_get(search_result_mask(st), 4, 2), ATTN_FULL);
    search_free(st);
}

static void test_parse(void **state) {
    (void)state;
    search_pin p[SEARCH_PINS_MAX];
    int n = 0;
    char err[256], buf[128];
    assert_int_equal(search_pins_add_list(p, &n, "3.1, 12.0,3.1", 0, err, sizeof err), 0);
    assert_int_equal(n, 2); /* 3.1 once */
    assert_int_equal(p[1].layer, 12);
    assert_int_equal(p[1].kv_head, 0);
    assert_int_equal(search_pins_add_list(p, &n, "5.2", 1, err, sizeof err), 0);
    assert_int_equal(search_pins_add_list(p, &n, "3.1", 1, err, sizeof err), -1);
    assert_string_equal(err, "bad value '3.1': that head is already pinned full");
    assert_int_equal(search_pins_add_list(p, &n, "3", 0, err, sizeof err), -1);
    assert_string_equal(err, "bad value '3' in '3' (need LAYER.KV_HEAD, e.g. 3.1)");
    assert_int_equal(search_pins_add_list(p, &n, "1.-2", 0, err, sizeof err), -1);
    assert_int_equal(search_pins_add_list(p, &n, "1.2,", 0, err, sizeof err), -1);
    assert_int_equal(search_pins_add_list(p, &n, "", 0, err, sizeof err), -1);
    assert_int_equal(n, 3);
    search_config a = {0}, b = {0};
    a.n_pins = n;
    memcpy(a.pins, p, sizeof(search_pin) * (size_t)n);
    assert_string_equal(search_pins_format(&a, 0, buf, sizeof buf), "3.1,12.0");
    assert_string_equal(search_pins_format(&a, 1, buf, sizeof buf), "5.2");
    /* the same pins in another order are equal; one more, or one the other way, are not */
    b.pins[0] = p[2], b.pins[1] = p[0], b.pins[2] = p[1], b.n_pins = 3;
    assert_true(search_pins_equal(&a, &b));
    b.pins[2].swa = 1;
    assert_false(search_pins_equal(&a, &b));
    b.n_pins = 2;
    assert_false(search_pins_equal(&a, &b));
    /* a pin file: comments, blank lines, both kinds; a bad line names the file and the line */
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_search_pins.%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("# pins\n\nfull 0.1, 2.0  # two\nswa 4.2\n", f);
    fclose(f);
    n = 0;
    assert_int_equal(search_pins_read(p, &n, path, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_true(p[2].layer == 4 && p[2].kv_head == 2 && p[2].swa == 1);
    f = fopen(path, "w");
    fputs("full 0.1\nSWA 4.2\n", f);
    fclose(f);
    n = 0;
    assert_int_equal(search_pins_read(p, &n, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2: need 'full L.H,...' or 'swa L.H,...'"));
    unlink(path);
}

/* The pinned cut by hand: importances 0..5 on 2 x 3, ratio 0.5 (3 SWA heads). */
static void test_cut_by_hand(void **state) {
    (void)state;
    const double imp[6] = {0.0, 1.0, 2.0, 3.0, 4.0, NAN};
    uint8_t z[6];
    attn_mask m = {2, 3, 16, 0, z};
    search_config cfg = {0};
    cfg.ratio = 0.5;
    /* no pins: heads 0, 1, 2 (the NAN one is the largest) */
    assert_int_equal(search_cut_heads_pinned(&cfg, imp, &m), 0);
    const uint8_t want0[6] = {ATTN_SWA, ATTN_SWA, ATTN_SWA, ATTN_FULL, ATTN_FULL, ATTN_FULL};
    assert_memory_equal(z, want0, 6);
    /* 0.0 pinned full, 1.1 (importance 4) pinned SWA: 1.1 then the two smallest free, 0.1 and 0.2 */
    cfg.n_pins = 2;
    cfg.pins[0] = (search_pin){0, 0, 0};
    cfg.pins[1] = (search_pin){1, 1, 1};
    assert_int_equal(search_cut_heads_pinned(&cfg, imp, &m), 0);
    const uint8_t want1[6] = {ATTN_FULL, ATTN_SWA, ATTN_SWA, ATTN_FULL, ATTN_SWA, ATTN_FULL};
    assert_memory_equal(z, want1, 6);
}

static void test_refusals(void **state) {
    (void)state;
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    search_state *st = NULL;
    char err[512];
    search_config cfg;
    /* 4 heads pinned SWA, ratio 0.2 makes round(3.6) = 4: fine; 0.15 makes 3: fewer than 4 */
    config(&cfg, "bosch", 0.15);
    cfg.n_pins = 0;
    for (int h = 0; h < 3; h++) cfg.pins[cfg.n_pins++] = (search_pin){2, (int16_t)h, 1};
    cfg.pins[cfg.n_pins++] = (search_pin){3, 0, 1};
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_string_equal(err,
                        "search: ratio 0.15 makes 3 SWA KV heads of 18, fewer than the 4 heads pinned SWA: "
                        "pin fewer heads or choose a ratio that makes between 4 and 18 SWA heads");
    cfg.ratio = 0.2;
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    assert_int_equal(mask_count_swa(search_result_mask(st)), 4); /* only the pinned ones */
    search_free(st);
    /* too many SWA heads for the heads not pinned full */
    config(&cfg, "fisher", 0.9);
    cfg.n_pins = 0;
    for (int h = 0; h < 3; h++) cfg.pins[cfg.n_pins++] = (search_pin){0, (int16_t)h, 0};
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than the heads not pinned full"));
    /* a head outside the model */
    config(&cfg, "bosch", 0.5);
    cfg.pins[0] = (search_pin){6, 0, 0};
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_string_equal(err, "search: pinned head 6.0 is outside the model's 6 layers x 3 KV heads");
    /* every head pinned */
    config(&cfg, "locality", 0.5);
    cfg.n_pins = 0;
    for (int u = 0; u < L * H; u++)
        cfg.pins[cfg.n_pins++] = (search_pin){(int16_t)(u / H), (int16_t)(u % H), u < 9};
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "nothing is left to choose"));
}

/* Runs cfg to the end (*full), and a second search for `steps` steps, saved to path and freed:
 * what a resume test starts from. */
static void full_and_stopped(const search_config *cfg, const search_objective *obj, int steps,
                             const char *path, search_state **full) {
    char err[512];
    search_state *b;
    assert_int_equal(search_create(full, cfg, L, H, obj, fx.m, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(*full, NULL, err, sizeof err), 1);
    assert_int_equal(search_create(&b, cfg, L, H, obj, fx.m, NULL, NULL, err, sizeof err), 0);
    for (int i = 0; i < steps; i++) assert_true(search_step(b, err, sizeof err) >= 0);
    assert_int_equal(search_save(b, path, err, sizeof err), 0);
    search_free(b);
}

/* Resumes path to its end: the uninterrupted run's mask and evaluation count. Removes path. */
static void resume_equals(const search_state *full, const search_objective *obj, const char *path) {
    char err[512];
    search_state *b;
    assert_int_equal(search_load(&b, path, L, H, obj, fx.m, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(b, NULL, err, sizeof err), 1);
    assert_memory_equal(search_result_mask(full)->z, search_result_mask(b)->z, L * H);
    assert_int_equal(search_n_evals(full), search_n_evals(b));
    search_free(b);
    unlink(path);
}

/* The pins are in the state: a stopped search resumed from its file keeps them and ends with the
 * uninterrupted run's mask; the file's config has them. */
static void test_save_resume(void **state) {
    (void)state;
    search_config cfg;
    config(&cfg, "bosch", 0.5);
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    search_state *a;
    char err[512], path[64];
    snprintf(path, sizeof path, "/tmp/test_search_pins.%d.state", (int)getpid());
    full_and_stopped(&cfg, &obj, 40, path, &a);
    search_config back;
    assert_int_equal(search_load_config(path, &back, err, sizeof err), 0);
    assert_true(search_pins_equal(&back, &cfg));
    char list[64];
    assert_string_equal(search_pins_format(&back, 0, list, sizeof list), "0.1");
    assert_string_equal(search_pins_format(&back, 1, list, sizeof list), "4.2");
    resume_equals(a, &obj, path);
    search_free(a);
}

/* ---- the start mask (search.h search_config.start_*; docs/search.md "Starting from a mask") ---- */

typedef struct {
    const attn_mask *start;
    int first_in_group;  /* the next EVAL is the first of a stage-3 group */
    int groups_checked;  /* groups whose first mask was compared */
    int rows_from_start; /* layers of those whose row was the start's */
    int rows_bad;        /* layers whose count the start fits but whose row was not the start's */
    int start_scored;    /* a refinement start evaluated was the start mask */
    const search_state *st;
    uint8_t in_group[L]; /* the layers of the group being searched */
    int enumerates;      /* the optimizer's stage 3 (no head scores) */
    long budget;         /* its evaluations per group */
} start_check;

static void on_start_event(const search_event *ev, void *user) {
    start_check *c = user;
    if (ev->kind == SEARCH_EV_GROUP_START && ev->group >= 0) {
        c->first_in_group = 1;
        memset(c->in_group, 0, sizeof c->in_group);
        for (int i = 0; i < ev->n_layers_in_group && ev->group_layers; i++)
            c->in_group[ev->group_layers[i]] = 1;
    }
    if (ev->kind != SEARCH_EV_EVAL || !ev->mask || !ev->plan || ev->phase < 0) return;
    const search_phase_kind k = ev->plan->phase[ev->phase].kind;
    if (k == SEARCH_PHASE_REFINE_STARTS && !memcmp(ev->mask->z, c->start->z, L * H)) c->start_scored = 1;
    if (k != SEARCH_PHASE_GROUPS || !c->first_in_group) return;
    c->first_in_group = 0;
    /* the paper's stage 3 (the optimizer, no head scores) enumerates every combination when they fit
       the group's budget (optimizer.h): then nothing starts anywhere, and the start changes nothing */
    if (c->enumerates) {
        long space = 1;
        for (int l = 0; l < L; l++) {
            search_layer_info li;
            search_layer_stats(c->st, l, &li);
            if (c->in_group[l]) space *= li.n_swa == 1 || li.n_swa == 2 ? 3 : 1; /* C(3, n) */
        }
        if (space <= c->budget) return;
    }
    c->groups_checked++;
    /* each layer of the group whose stage-2 count equals the start's starts from the start's row */
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        search_layer_stats(c->st, l, &li);
        int n_start = 0, n_mask = 0, same = 1;
        for (int h = 0; h < H; h++) {
            n_start += mask_get(c->start, l, h) == ATTN_SWA;
            n_mask += mask_get(ev->mask, l, h) == ATTN_SWA;
            same &= mask_get(c->start, l, h) == mask_get(ev->mask, l, h);
        }
        if (!c->in_group[l] || n_start != li.n_swa) continue;
        c->rows_from_start += same;
        c->rows_bad += !same;
    }
}

/* The start mask of these tests: the T dearest heads SWA (the worst choice on the synthetic
 * objective), T = round(0.5 * 18) = 9. */
static void dear_start(attn_mask *m) {
    mask_init(m, L, H, 16, 0, ATTN_FULL);
    for (int c = 0; c < 9; c++) {
        int best = -1;
        for (int u = 0; u < L * H; u++)
            if (m->z[u] == ATTN_FULL && (best < 0 || weight(u) > weight(best))) best = u;
        m->z[best] = ATTN_SWA;
    }
}

/* The start mask for a run of cfg: the run without a start gives each layer's stage-2 count (stage 2
 * is the same with one); each layer's that many dearest heads go SWA (the worst choice there, where
 * stage 3 alone would start from the cheapest). */
static void dear_start_for(const search_config *cfg0, attn_mask *m) {
    search_config cfg = *cfg0;
    cfg.start_layers = 0;
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    search_state *st;
    char err[512];
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    mask_init(m, L, H, 16, 0, ATTN_FULL);
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        search_layer_stats(st, l, &li);
        for (int c = 0; c < li.n_swa; c++) {
            int best = -1;
            for (int h = 0; h < H; h++)
                if (mask_get(m, l, h) == ATTN_FULL && (best < 0 || weight(l * H + h) > weight(l * H + best)))
                    best = h;
            mask_set(m, l, best, ATTN_SWA);
        }
    }
    search_free(st);
}

/* BOSCH and every head-level variant start stage 3 from the start mask: the first mask of each group
 * has the start's row in every layer of the group (the start has each layer's stage-2 count); with a
 * refinement the start mask (at the target: the counts add up to it) is one of the starts scored;
 * the final mask has the target count. */
static void test_start_seeds_bosch(void **state) {
    (void)state;
    int opt_checked = 0; /* variants of the optimizer's stage 3 whose start was seen */
    for (int i = 0; search_variant_name(i); i++) {
        search_config cfg;
        config(&cfg, search_variant_name(i), 0.5);
        if (cfg.method != SEARCH_METHOD_BOSCH || cfg.granularity != SEARCH_GRANULARITY_HEAD) continue;
        cfg.n_pins = 0;
        attn_mask start;
        dear_start_for(&cfg, &start);
        char err[512];
        assert_int_equal(search_start_set(&cfg, &start, err, sizeof err), 0);
        search_objective obj = {
            .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
        static start_check c;
        memset(&c, 0, sizeof c);
        c.start = &start;
        c.enumerates = !cfg.stage1_singles;
        c.budget = cfg.stage3_budget_per_group;
        search_state *st;
        assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, on_start_event, &c, err, sizeof err), 0);
        c.st = st;
        assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
        const char *name = search_variant_name(i);
        if (c.enumerates && c.groups_checked == 0) { /* every group enumerated: nothing to see */
            search_free(st);
            mask_free(&start);
            continue;
        }
        opt_checked += c.enumerates;
        if (c.rows_bad)
            fail_msg("%s: %d rows of a group's first mask were not the start's", name, c.rows_bad);
        if (c.groups_checked == 0 || c.rows_from_start == 0)
            fail_msg("%s: no layer started from the start mask", name);
        if (cfg.refine_budget > 0 && !c.start_scored)
            fail_msg("%s: the start mask was not a refinement start", name);
        assert_int_equal(mask_count_swa(search_result_mask(st)), lround(0.5 * L * H));
        const search_plan *p = search_get_plan(st);
        for (int k = 0; k < p->n_phases; k++)
            if (p->phase[k].kind == SEARCH_PHASE_GROUPS)
                assert_non_null(strstr(p->phase[k].text, "starts from the start mask"));
        search_free(st);
        mask_free(&start);
    }
    assert_true(opt_checked > 0);
}

/* A layer-granularity start: bosch_layer's first stage-3 mask has the start's whole SWA layers. */
static void test_start_layers(void **state) {
    (void)state;
    attn_mask start;
    mask_init(&start, L, H, 16, 0, ATTN_FULL);
    for (int h = 0; h < H; h++)
        mask_set(&start, 1, h, ATTN_SWA), mask_set(&start, 4, h, ATTN_SWA), mask_set(&start, 5, h, ATTN_SWA);
    search_config cfg;
    config(&cfg, "bosch_layer", 0.5);
    cfg.n_pins = 0;
    char err[512];
    assert_int_equal(search_start_set(&cfg, &start, err, sizeof err), 0);
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    static start_check c;
    memset(&c, 0, sizeof c);
    c.start = &start;
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, fx.m, on_start_event, &c, err, sizeof err), 0);
    c.st = st;
    /* run to the first stage-3 evaluation: its mask is the start (3 whole layers, as stage 2 makes) */
    const attn_mask *first = NULL;
    while (search_step(st, err, sizeof err) == 0) {
        const search_plan *p = search_get_plan(st);
        if (p->phase[p->cur].kind == SEARCH_PHASE_GROUPS && p->phase[p->cur].evals_done == 1) {
            first = search_last_mask(st);
            break;
        }
    }
    assert_non_null(first);
    assert_memory_equal(first->z, start.z, L * H);
    search_free(st);
    mask_free(&start);
}

static void test_start_refusals_and_resume(void **state) {
    (void)state;
    attn_mask start, small;
    dear_start(&start);
    mask_init(&small, L - 1, H, 16, 0, ATTN_FULL);
    search_objective obj = {
        .score = synth_score, .ctx = (void *)&objective, .samples = fx.samples, .n_samples = NS};
    search_state *a;
    char err[512];
    search_config cfg;
    /* a baseline cannot use one */
    config(&cfg, "fisher", 0.5);
    assert_int_equal(search_start_set(&cfg, &start, err, sizeof err), 0);
    assert_false(search_start_usable(&cfg));
    assert_int_equal(search_create(&a, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_string_equal(err,
                        "search: fisher cannot start from a mask: a static ranking's mask comes from its "
                        "ranking alone (BOSCH and its variants can)");
    config(&cfg, "bme", 0.5);
    assert_int_equal(search_start_set(&cfg, &start, err, sizeof err), 0);
    assert_int_equal(search_create(&a, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "a layer heuristic's mask comes from its pattern alone"));
    /* another shape */
    config(&cfg, "bosch", 0.5);
    assert_int_equal(search_start_set(&cfg, &small, err, sizeof err), 0);
    assert_int_equal(search_create(&a, &cfg, L, H, &obj, fx.m, NULL, NULL, err, sizeof err), -1);
    assert_string_equal(err, "search: the start mask has 5 layers x 3 KV heads, the model 6 x 3");
    /* saved in the state (with the pins), resumed to the uninterrupted run's mask */
    assert_int_equal(search_start_set(&cfg, &start, err, sizeof err), 0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_search_start.%d.state", (int)getpid());
    full_and_stopped(&cfg, &obj, 45, path, &a);
    search_config back;
    assert_int_equal(search_load_config(path, &back, err, sizeof err), 0);
    assert_int_equal(back.start_layers, L);
    assert_int_equal(back.start_heads, H);
    assert_memory_equal(back.start_swa, cfg.start_swa, sizeof cfg.start_swa);
    assert_true(search_pins_equal(&back, &cfg));
    resume_equals(a, &obj, path);
    search_free(a);
    mask_free(&start);
    mask_free(&small);
}

static int setup(void **state) {
    (void)state;
    return synth_fixture_open(&fx, "test_search_pins");
}

static int teardown(void **state) {
    (void)state;
    synth_fixture_close(&fx);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_cut_by_hand),
        cmocka_unit_test(test_pins_matter),
        cmocka_unit_test(test_every_method_keeps_pins),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_save_resume),
        cmocka_unit_test(test_start_seeds_bosch),
        cmocka_unit_test(test_start_layers),
        cmocka_unit_test(test_start_refusals_and_resume),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
