/* test_search_layers.c — BOSCH at layer granularity (search/search_layers.c, search.h's
 * search_config.granularity) on a synthetic black-box objective whose optimum the test finds by
 * brute force over every set of SWA layers (independent of the search code):
 *   S(z) = exp(-(sum over SWA KV heads of a[layer][head] + penalty when layers P and Q are both
 *          wholly SWA))
 * Checked: every mask stage 1 scores has exactly one wholly SWA layer; the final mask has every
 * layer all full or all SWA, exactly round(ratio * n_layer) SWA layers (C round: halves away from
 * zero), and the brute-force optimum's cost (also when the pair penalty makes stage 2's cut
 * wrong, so stage 3 has to move layers); determinism; a stop at any step, save and resume give the
 * same final mask and the same sequence of evaluated masks; the state file records the
 * granularity, and a file without the key loads as head granularity; the bosch_layer variant. */
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
    int pair[2];    /* layers penalized when both are wholly SWA (-1: none) */
    double penalty; /* cost added then */
} synth;

static int layer_swa(const attn_mask *m, int l) {
    for (int h = 0; h < H; h++)
        if (mask_get(m, l, h) != ATTN_SWA) return 0;
    return 1;
}

static double synth_cost(const synth *s, const attn_mask *m) {
    double cost = 0;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++)
            if (mask_get(m, l, h) == ATTN_SWA) cost += s->a[l][h];
    if (s->pair[0] >= 0 && layer_swa(m, s->pair[0]) && layer_swa(m, s->pair[1])) cost += s->penalty;
    return cost;
}

static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    double cost = synth_cost(ctx, m);
    *out = (search_eval){exp(-cost), cost < 1.0, cost, 0.001, 0, NULL};
    return 0;
}

static void synth_init(synth *s, search_objective *obj) {
    memset(s, 0, sizeof *s);
    s->pair[0] = s->pair[1] = -1;
    uint64_t x = 12345;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s->a[l][h] = (0.05 + (double)(x >> 40) / (double)(1 << 24)) * (1.0 + (L - l) * 0.2);
        }
    *obj = (search_objective){.score = synth_score, .ctx = s};
}

/* Brute force: the least cost over every set of exactly n SWA layers. */
static double best_cost(const synth *s, int n) {
    double best = INFINITY;
    attn_mask m;
    assert_int_equal(mask_init(&m, L, H, 16, 0, ATTN_FULL), 0);
    for (unsigned set = 0; set < 1u << L; set++) {
        if (__builtin_popcount(set) != n) continue;
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) mask_set(&m, l, h, set >> l & 1 ? ATTN_SWA : ATTN_FULL);
        double c = synth_cost(s, &m);
        if (c < best) best = c;
    }
    mask_free(&m);
    return best;
}

static void layer_config(search_config *cfg, double ratio) {
    search_config_default(cfg);
    cfg->ratio = ratio;
    cfg->window = 16;
    cfg->seed = 5;
    cfg->stage1_budget_per_layer = 3;
    cfg->stage3_budget_per_group = 10; /* x min(n_buckets 4, H + 1) = 40 at layer granularity */
    cfg->restarts = 1;
    search_config_refine_share(cfg); /* as the default options do; set_granularity gives it back */
    search_config_set_granularity(cfg, SEARCH_GRANULARITY_LAYER);
}

/* ---- event recorder ---- */
typedef struct {
    int n;
    int stage[2048], one_swa_layer[2048];
    uint64_t hash[2048];
} recorder;

static void record(const search_event *ev, void *user) {
    recorder *r = user;
    if (ev->kind != SEARCH_EV_EVAL || r->n >= 2048) return;
    int whole = 0, swa = 0;
    for (int l = 0; l < L; l++) whole += layer_swa(ev->mask, l);
    swa = mask_count_swa(ev->mask);
    r->stage[r->n] = ev->stage;
    r->one_swa_layer[r->n] = whole == 1 && swa == H;
    r->hash[r->n++] = mask_hash(ev->mask);
}

static search_state *run_full(const search_config *cfg, synth *s, search_objective *obj, recorder *r) {
    search_state *st;
    char err[256];
    assert_int_equal(search_create(&st, cfg, L, H, obj, NULL, r ? record : NULL, r, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    return st;
}

/* Every layer of m all full or all SWA, and n_layers of them SWA. */
static void assert_whole_layers(const attn_mask *m, int n_layers) {
    int n = 0;
    for (int l = 0; l < L; l++) {
        int k = 0;
        for (int h = 0; h < H; h++) k += mask_get(m, l, h) == ATTN_SWA;
        if (k != 0 && k != H) fail_msg("layer %d has %d of %d KV heads SWA", l, k, H);
        n += k == H;
    }
    assert_int_equal(n, n_layers);
}

static void test_layers_separable(void **state) {
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    synth s;
    search_objective obj;
    synth_init(&s, &obj);
    search_config cfg;
    layer_config(&cfg, 0.5);
    search_state *st = run_full(&cfg, &s, &obj, &r);
    assert_whole_layers(search_result_mask(st), 4);
    assert_true(fabs(synth_cost(&s, search_result_mask(st)) - best_cost(&s, 4)) < 1e-12);
    int probes = 0;
    for (int i = 0; i < r.n; i++)
        if (r.stage[i] == 1) {
            assert_true(r.one_swa_layer[i]); /* each probe: one layer wholly SWA, the rest full */
            probes++;
        }
    assert_int_equal(probes, L);
    /* stage 2: every layer's ratio 0 or 1, the stats say which */
    int swa_layers = 0;
    for (int l = 0; l < L; l++) {
        search_layer_info li;
        assert_int_equal(search_layer_stats(st, l, &li), 0);
        assert_true(li.n_swa == 0 || li.n_swa == H);
        swa_layers += li.n_swa == H;
    }
    assert_int_equal(swa_layers, 4);
    assert_true(search_n_evals(st) <= search_eval_budget(st));
    search_free(st);
}

/* The two layers stage 2 finds most tolerant cost a penalty together: the stage-2 cut is then not
 * optimal and stage 3's swaps over layers must reach the brute-force optimum. */
static void test_layers_interaction(void **state) {
    (void)state;
    synth s;
    search_objective obj;
    synth_init(&s, &obj);
    double A[L];
    int lo = -1, lo2 = -1;
    for (int l = 0; l < L; l++) {
        A[l] = s.a[l][0] + s.a[l][1] + s.a[l][2];
        if (lo < 0 || A[l] < A[lo])
            lo2 = lo, lo = l;
        else if (lo2 < 0 || A[l] < A[lo2])
            lo2 = l;
    }
    s.pair[0] = lo, s.pair[1] = lo2, s.penalty = 5.0;
    search_config cfg;
    layer_config(&cfg, 0.5);
    search_state *st = run_full(&cfg, &s, &obj, NULL);
    const attn_mask *m = search_result_mask(st);
    assert_whole_layers(m, 4);
    assert_false(layer_swa(m, lo) && layer_swa(m, lo2));
    assert_true(fabs(synth_cost(&s, m) - best_cost(&s, 4)) < 1e-12);
    search_free(st);
}

/* round(ratio * L) SWA layers, C round (halves away from zero); 0 and L leave nothing to choose. */
static void test_layers_rounding(void **state) {
    (void)state;
    const double ratios[] = {0.3, 0.4375, 0.5625, 0.06, 0.95, 0.125};
    const int want[] = {2, 4, 5, 0, 8, 1}; /* 2.4, 3.5, 4.5, 0.48, 7.6, 1.0 */
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        synth s;
        search_objective obj;
        synth_init(&s, &obj);
        search_config cfg;
        layer_config(&cfg, ratios[i]);
        search_state *st = run_full(&cfg, &s, &obj, NULL);
        assert_whole_layers(search_result_mask(st), want[i]);
        assert_true(fabs(synth_cost(&s, search_result_mask(st)) - best_cost(&s, want[i])) < 1e-12);
        search_free(st);
    }
}

static void test_layers_deterministic(void **state) {
    (void)state;
    static recorder a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    synth s1, s2;
    search_objective o1, o2;
    synth_init(&s1, &o1);
    synth_init(&s2, &o2);
    s1.pair[0] = s2.pair[0] = 6, s1.pair[1] = s2.pair[1] = 7, s1.penalty = s2.penalty = 3.0;
    search_config cfg;
    layer_config(&cfg, 0.625);
    search_state *x = run_full(&cfg, &s1, &o1, &a), *y = run_full(&cfg, &s2, &o2, &b);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.hash, b.hash, sizeof a.hash[0] * (size_t)a.n);
    assert_memory_equal(search_result_mask(x)->z, search_result_mask(y)->z, L * H);
    search_free(x);
    search_free(y);
}

/* Stop after `cut` steps, save, load, run on: the same evaluations and final mask. */
static void check_resume(int cut) {
    static recorder ref, rest;
    memset(&ref, 0, sizeof ref);
    memset(&rest, 0, sizeof rest);
    search_config cfg;
    layer_config(&cfg, 0.5);
    synth s0, s1, s2;
    search_objective o0, o1, o2;
    synth_init(&s0, &o0);
    synth_init(&s1, &o1);
    synth_init(&s2, &o2);
    s0.pair[0] = s1.pair[0] = s2.pair[0] = 6;
    s0.pair[1] = s1.pair[1] = s2.pair[1] = 7;
    s0.penalty = s1.penalty = s2.penalty = 3.0;
    search_state *full = run_full(&cfg, &s0, &o0, &ref);
    char err[256], path[] = "/tmp/test_search_layersXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o1, NULL, NULL, NULL, err, sizeof err), 0);
    for (int i = 0; i < cut && !search_is_done(st); i++) assert_true(search_step(st, err, sizeof err) >= 0);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);
    search_config back;
    assert_int_equal(search_load_config(path, &back, err, sizeof err), 0);
    assert_int_equal(back.granularity, SEARCH_GRANULARITY_LAYER);
    assert_int_equal(search_load(&st, path, L, H, &o2, NULL, record, &rest, err, sizeof err), 0);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(full)->z, L * H);
    assert_int_equal(search_n_evals(st), search_n_evals(full));
    assert_int_equal(rest.n, ref.n);
    assert_memory_equal(rest.hash, ref.hash, sizeof ref.hash[0] * (size_t)ref.n);
    search_free(st);
    search_free(full);
    remove(path);
}

static void test_layers_resume(void **state) {
    (void)state;
    const int cuts[] = {0, 1, 3, 9, 11, 14, 20, 1000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) check_resume(cuts[i]);
}

/* The state file names the granularity; one written before the key existed (the v2 fixture) is a
 * head-granularity search; a bad value is refused naming the line. */
static void test_layers_state_key(void **state) {
    (void)state;
    char err[256];
    search_state_file sf;
    FILE *f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/state_v2.txt", "r");
    assert_non_null(f);
    assert_int_equal(search_state_parse(f, "v2", &sf, err, sizeof err), 0);
    fclose(f);
    assert_int_equal(sf.cfg.granularity, SEARCH_GRANULARITY_HEAD);
    search_state_file_free(&sf);
    static const char bad[] = "bosch-search-state 2\nmethod bosch\nratio 0.5\nwindow 8\nsinks 0\nseed 1\n"
                              "stage1_budget 3\nstage3_budget 4\nrestarts 1\nn_buckets 4\ngranularity row\n"
                              "n_layer 2\nn_head_kv 2\nlog\n";
    f = fmemopen((void *)bad, sizeof bad - 1, "r");
    assert_int_equal(search_state_parse(f, "bad", &sf, err, sizeof err), -1);
    fclose(f);
    assert_non_null(strstr(err, "bad: line 11: unknown granularity 'row' (valid: head, layer)"));
    /* what search_save writes */
    synth s;
    search_objective obj;
    synth_init(&s, &obj);
    search_config cfg;
    layer_config(&cfg, 0.5);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &obj, NULL, NULL, NULL, err, sizeof err), 0);
    char path[] = "/tmp/test_search_layersXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    char line[256];
    int found = 0;
    f = fopen(path, "r");
    while (fgets(line, sizeof line, f)) found |= !strcmp(line, "granularity layer\n");
    fclose(f);
    assert_true(found);
    search_free(st);
    remove(path);
}

/* bosch_layer = the default options at layer granularity, stage 3 keeping the whole budget; any
 * other BOSCH variant is back at head granularity. */
static void test_variant_bosch_layer(void **state) {
    (void)state;
    char err[256];
    search_config cfg;
    search_config_default(&cfg);
    search_config_paper_options(&cfg);
    const long b3 = cfg.stage3_budget_per_group;
    assert_int_equal(search_variant_apply(&cfg, "bosch_layer", err, sizeof err), 0);
    assert_int_equal(cfg.method, SEARCH_METHOD_BOSCH);
    assert_int_equal(cfg.granularity, SEARCH_GRANULARITY_LAYER);
    assert_int_equal(cfg.stage1_independent, 1);
    assert_int_equal(cfg.stage1_singles, 0);
    assert_int_equal(cfg.stage3_scope, 0);
    assert_int_equal(cfg.refine_budget, 0);
    assert_int_equal(cfg.stage3_budget_per_group, b3);
    assert_int_equal(search_config_check(&cfg, err, sizeof err), 0);
    assert_int_equal(search_variant_apply(&cfg, "bosch", err, sizeof err), 0);
    assert_int_equal(cfg.granularity, SEARCH_GRANULARITY_HEAD);
    search_granularity g;
    assert_int_equal(search_granularity_parse("LAYER", &g, err, sizeof err), 0);
    assert_int_equal(g, SEARCH_GRANULARITY_LAYER);
    assert_int_equal(search_granularity_parse("heads", &g, err, sizeof err), -1);
    assert_string_equal(err, "unknown granularity 'heads' (valid: head, layer)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers_separable),    cmocka_unit_test(test_layers_interaction),
        cmocka_unit_test(test_layers_rounding),     cmocka_unit_test(test_layers_deterministic),
        cmocka_unit_test(test_layers_resume),       cmocka_unit_test(test_layers_state_key),
        cmocka_unit_test(test_variant_bosch_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
