/* test_race.c — racing and the noise-aware acceptance (search/race.h, search/search_race.c).
 *
 * Hand-worked values:
 *   rounds: n = 9 -> ceil(9/8) = 2, ceil(9/4) = 3, ceil(9/2) = 5, 9; n = 4 -> 1, 1 (merged), 2, 4;
 *           n = 36 -> 5, 9, 18, 36; n = 1 -> 1.
 *   Hoeffding-Serfling bound t = R sqrt((1 - (m-1)/n) ln(K/delta) / (2m)), ln(3/0.05) = ln 60 = 4.0943446:
 *     R 2, m 18, n 36, K 3: (19/36) * 4.0943446 = 2.1608763; / 36 = 0.0600243; sqrt = 0.2450002;
 *       t = 0.4900005;
 *     R 2, m 5, n 9, K 3: (5/9) * 4.0943446 = 2.2746359; / 10 = 0.2274636; sqrt = 0.4769314;
 *       t = 0.9538628 (so with the bench's 9 samples only rule (a) can drop: |mean d| <= 1 and
 *       t(2) = 1.908, t(3) = 1.457);
 *     R 1, m 1, n 1, K 1, delta 0.5: (1/1) ln 2 / 2 = 0.3465736; sqrt = 0.5887050.
 *   Rules after m of n samples (K 3, delta 0.05):
 *     (a) sum_d -0.3 with 0.2 of headroom left: -0.1 < 0, dropped whatever the bound;
 *         sum_d -0.1, headroom 0.2: kept (m 2 of 9: t = 1.908);
 *     (b) m 18 of 36, headroom 18 (no (a)): mean -0.5 < -0.4900 dropped; mean -0.48 kept.
 *   Acceptance gain > k se: k 2, se 0.01: gain 0.02 refused (not strictly above), 0.021 taken;
 *     k 0: any gain > 0; se infinite (one sample) refuses every move when k > 0.
 *
 * The search on a synthetic objective with per-sample values (the independent reference is the
 * unraced search): 32 samples, S = mean_i exp(-w_i * cost(z)), cost(z) = sum of a over the SWA KV
 * heads, w_i in [0.5, 1.5]; four "retrieval" heads cost 4 each, the others 0.01 to 0.1. Racing
 * on, off and in check mode must give the same final mask, the race must drop candidates (those
 * that turn a retrieval head SWA) and the check mode must find no wrong drop; the objective must
 * score fewer samples with racing. A raced search stopped, saved and resumed must end as the
 * uninterrupted one. With per-sample noise added (a hash of the mask and the sample) and a penalty
 * of 0.3 when the two cheapest heads are both SWA (so the cut is not the optimum and one move
 * really improves), accept_k 2 must take only moves whose gain exceeds 2 standard errors, refuse
 * some positive gains as noise, take fewer moves than accept_k 0 and still make the real move.
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

#include "race.h"
#include "search.h"
#include "stats.h"

static void near(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol)) fail_msg("got %.9f, want %.9f", got, want);
}

static void test_parts_and_order(void **state) {
    (void)state;
    int e[RACE_MAX_PARTS];
    assert_int_equal(race_parts(9, e), 4);
    assert_int_equal(e[0], 2), assert_int_equal(e[1], 3), assert_int_equal(e[2], 5),
        assert_int_equal(e[3], 9);
    assert_int_equal(race_parts(4, e), 3);
    assert_int_equal(e[0], 1), assert_int_equal(e[1], 2), assert_int_equal(e[2], 4);
    assert_int_equal(race_parts(36, e), 4);
    assert_int_equal(e[0], 5), assert_int_equal(e[1], 9), assert_int_equal(e[2], 18),
        assert_int_equal(e[3], 36);
    assert_int_equal(race_parts(1, e), 1);
    assert_int_equal(e[0], 1);
    assert_int_equal(race_parts(0, e), 0);
    /* the order: a permutation, the same for the same seed, another for another seed */
    int a[36], b[36], c[36], seen[36] = {0};
    race_order(36, RACE_ORDER_SEED, a);
    race_order(36, RACE_ORDER_SEED, b);
    race_order(36, RACE_ORDER_SEED + 1, c);
    int same_c = 1, identity = 1;
    for (int i = 0; i < 36; i++) {
        assert_true(a[i] >= 0 && a[i] < 36);
        seen[a[i]]++;
        assert_int_equal(a[i], b[i]);
        same_c &= a[i] == c[i];
        identity &= a[i] == i;
    }
    for (int i = 0; i < 36; i++) assert_int_equal(seen[i], 1);
    assert_false(same_c);
    assert_false(identity);
}

static void test_bound(void **state) {
    (void)state;
    near(race_bound(2, 18, 36, 3, 0.05), 0.4900005, 1e-6);
    near(race_bound(2, 5, 9, 3, 0.05), 0.9538628, 1e-6);
    near(race_bound(1, 1, 1, 1, 0.5), 0.5887050, 1e-6);
    assert_true(race_bound(2, 2, 9, 3, 0.05) > 1.0); /* 1.908: no mean difference is that low */
    assert_true(isnan(race_bound(2, 0, 9, 3, 0.05)));
    assert_true(isnan(race_bound(2, 10, 9, 3, 0.05)));
    assert_true(isnan(race_bound(2, 5, 9, 0, 0.05)));
    assert_true(isnan(race_bound(2, 5, 9, 3, 0.0)));
}

static void test_drop_rules(void **state) {
    (void)state;
    assert_int_equal(race_drop(-0.3, 0.2, 2, 9, 3, 0.05), 1); /* (a) */
    assert_int_equal(race_drop(-0.1, 0.2, 2, 9, 3, 0.05), 0);
    assert_int_equal(race_drop(-0.5 * 18, 18.0, 18, 36, 3, 0.05), 1); /* (b) */
    assert_int_equal(race_drop(-0.48 * 18, 18.0, 18, 36, 3, 0.05), 0);
    assert_int_equal(race_drop(-5.0, 0.0, 9, 9, 3, 0.05), 0); /* the last round never drops */
}

static void test_accept(void **state) {
    (void)state;
    assert_int_equal(race_accept(0.02, 0.01, 2), 0);
    assert_int_equal(race_accept(0.021, 0.01, 2), 1);
    assert_int_equal(race_accept(1e-9, 0.01, 0), 1);
    assert_int_equal(race_accept(0.0, 0.0, 0), 0);
    assert_int_equal(race_accept(0.5, INFINITY, 2), 0);
}

/* ---- the synthetic objective ---------------------------------------------------------------- */

#define L 8
#define H 3
#define N 32

typedef struct {
    double a[L * H], w[N];
    double noise; /* > 0: each sample's NLL gets noise * (1 + u), u in [-1, 1) from a hash */
    int pair[2];  /* units that cost `penalty` more when both are SWA (-1: none) */
    double penalty;
    long samples; /* samples scored, all calls together */
    int order[N], end[RACE_MAX_PARTS], parts;
    double nll[N];
} synth;

static double sample_nll(const synth *s, const attn_mask *m, int i) {
    double cost = 0;
    for (int u = 0; u < L * H; u++)
        if (m->z[u] == ATTN_SWA) cost += s->a[u];
    if (s->pair[0] >= 0 && m->z[s->pair[0]] == ATTN_SWA && m->z[s->pair[1]] == ATTN_SWA) cost += s->penalty;
    double x = cost * s->w[i];
    if (s->noise > 0) {
        uint64_t h = mask_hash(m) ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
        h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33;
        x += s->noise * (1.0 + ((double)(h >> 11) * 0x1.0p-53 * 2.0 - 1.0));
    }
    return x;
}

static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    synth *s = ctx;
    double score = 0, acc = 0, nll = 0;
    for (int i = 0; i < N; i++) {
        s->nll[i] = sample_nll(s, m, i);
        score += exp(-s->nll[i]);
        acc += exp(-s->nll[i]) > 0.5;
        nll += s->nll[i];
    }
    s->samples += N;
    *out = (search_eval){score / N, acc / N, nll / N, 0.001, N, s->nll};
    return 0;
}

static int synth_part(void *ctx, const attn_mask *m, int part, int make_base, search_eval *out, char *err,
                      size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    synth *s = ctx;
    const int first = part > 0 ? s->end[part - 1] : 0, count = s->end[part] - first;
    double score = 0, acc = 0, nll = 0;
    for (int k = 0; k < count; k++) {
        s->nll[k] = sample_nll(s, m, s->order[first + k]);
        score += exp(-s->nll[k]);
        acc += exp(-s->nll[k]) > 0.5;
        nll += s->nll[k];
    }
    s->samples += count;
    *out = (search_eval){score / count, acc / count, nll / count, 0.001, count, s->nll};
    return 0;
}

static void synth_init(synth *s, search_objective *obj, double noise) {
    memset(s, 0, sizeof *s);
    uint64_t x = 12345;
    for (int u = 0; u < L * H; u++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s->a[u] = 0.01 + 0.09 * (double)(x >> 40) / (double)(1 << 24);
    }
    s->a[2] = s->a[7] = s->a[13] = s->a[22] = 4.0; /* retrieval heads */
    for (int i = 0; i < N; i++) s->w[i] = 0.5 + (double)i / (N - 1);
    s->noise = noise;
    s->pair[0] = s->pair[1] = -1;
    if (noise > 0) { /* the two cheapest heads: both in the cut, which a real move then improves */
        for (int u = 0; u < L * H; u++)
            if (s->pair[0] < 0 || s->a[u] < s->a[s->pair[0]]) s->pair[0] = u;
        for (int u = 0; u < L * H; u++)
            if (u != s->pair[0] && (s->pair[1] < 0 || s->a[u] < s->a[s->pair[1]])) s->pair[1] = u;
        s->penalty = 0.3;
    }
    s->parts = race_parts(N, s->end);
    race_order(N, RACE_ORDER_SEED, s->order);
    *obj = (search_objective){.score = synth_score, .ctx = s};
    obj->n_parts = s->parts, obj->part_order = s->order, obj->part_end = s->end, obj->score_part = synth_part;
}

static void config(search_config *cfg, int race, double k) {
    search_config_default(cfg); /* the project's options: head scores, bucket scope, refinement */
    cfg->ratio = 0.5;
    cfg->window = 16;
    cfg->seed = 7;
    cfg->race = race;
    cfg->accept_k = k;
}

/* ---- events ---- */
typedef struct {
    int n_eval, n_partial, n_taken, n_taken_checked;
    double gain, se; /* of the last EVAL */
    double k;
    int bad; /* a partial EVAL with a finite score, or a taken move within k se */
} watch;

static void on_event(const search_event *ev, void *user) {
    watch *w = user;
    if (ev->kind == SEARCH_EV_EVAL) {
        w->n_eval++;
        w->gain = ev->gain, w->se = ev->gain_se;
        if (ev->samples > 0 && ev->samples < N) {
            w->n_partial++;
            w->bad |= !isnan(ev->score) || !isfinite(ev->gain);
        }
    } else if (ev->kind == SEARCH_EV_INCUMBENT && isfinite(w->gain)) {
        w->n_taken++;
        if (w->k > 0) {
            w->n_taken_checked++;
            w->bad |= !(w->gain > w->k * w->se);
        }
    }
}

static search_state *run(const search_config *cfg, synth *s, search_objective *obj, watch *w, double noise) {
    search_state *st;
    char err[256];
    synth_init(s, obj, noise);
    memset(w, 0, sizeof *w);
    w->k = cfg->accept_k;
    assert_int_equal(search_create(&st, cfg, L, H, obj, NULL, on_event, w, err, sizeof err), 0);
    if (search_run(st, NULL, err, sizeof err) != 1) fail_msg("search: %s", err);
    return st;
}

static void test_search_race(void **state) {
    (void)state;
    search_config c0, c1, c2;
    config(&c0, 0, 0), config(&c1, 1, 0), config(&c2, 2, 0);
    synth s0, s1, s2;
    search_objective o0, o1, o2;
    watch w0, w1, w2;
    search_state *st0 = run(&c0, &s0, &o0, &w0, 0), *st1 = run(&c1, &s1, &o1, &w1, 0),
                 *st2 = run(&c2, &s2, &o2, &w2, 0);
    search_race_stats r0, r1, r2;
    search_get_race_stats(st0, &r0), search_get_race_stats(st1, &r1), search_get_race_stats(st2, &r2);
    /* the same final mask, and as many evaluations (racing saves samples, not evaluations) */
    assert_memory_equal(search_result_mask(st0)->z, search_result_mask(st1)->z, L * H);
    assert_memory_equal(search_result_mask(st0)->z, search_result_mask(st2)->z, L * H);
    assert_int_equal(search_n_evals(st0), search_n_evals(st1));
    assert_int_equal(search_n_evals(st0), search_n_evals(st2));
    /* the final mask keeps every retrieval head full */
    const uint8_t *z = search_result_mask(st1)->z;
    assert_int_equal(z[2], ATTN_FULL), assert_int_equal(z[7], ATTN_FULL);
    assert_int_equal(z[13], ATTN_FULL), assert_int_equal(z[22], ATTN_FULL);
    /* off: nothing dropped, every raced candidate scored whole */
    assert_int_equal(r0.dropped, 0);
    assert_true(r0.raced > 0);
    assert_int_equal(r0.samples, r0.raced * N);
    /* on: drops, partial evaluations in the events, fewer samples */
    assert_true(r1.active);
    assert_int_equal(r1.n_calib, N);
    assert_int_equal(r1.raced, r0.raced);
    assert_true(r1.dropped > 0);
    assert_true(r1.samples < r1.raced * N);
    assert_int_equal(w1.n_partial, r1.dropped);
    assert_false(w1.bad);
    assert_true(s1.samples < s0.samples);
    /* check: the same decisions and counts, every drop scored whole, none wrong */
    assert_int_equal(r2.dropped, r1.dropped);
    assert_int_equal(r2.dropped_sure, r1.dropped_sure);
    assert_int_equal(r2.samples, r1.samples);
    assert_int_equal(r2.checked, r2.dropped);
    assert_int_equal(r2.wrong, 0);
    assert_int_equal(s2.samples, s0.samples);
    assert_int_equal(r1.accepted, r0.accepted);
    search_free(st0), search_free(st1), search_free(st2);
}

/* The search's reported Ŝ is mask z's whole calibration score on s, normalized between all-SWA (0)
 * and all-full (1), computed here from the synthetic objective. */
static void assert_whole_score(const search_state *st, synth *s, const uint8_t *z) {
    char err[256];
    attn_mask m = {0}, full = {0}, swa = {0};
    assert_int_equal(mask_init(&m, L, H, 16, 0, ATTN_FULL), 0);
    assert_int_equal(mask_init(&full, L, H, 16, 0, ATTN_FULL), 0);
    assert_int_equal(mask_init(&swa, L, H, 16, 0, ATTN_SWA), 0);
    memcpy(m.z, z, L * H);
    search_eval e, ef, es;
    synth_score(s, &m, 0, &e, err, sizeof err);
    synth_score(s, &full, 0, &ef, err, sizeof err);
    synth_score(s, &swa, 0, &es, err, sizeof err);
    assert_true(fabs(search_best_score(st) - (e.score - es.score) / (ef.score - es.score)) < 1e-12);
    mask_free(&m), mask_free(&full), mask_free(&swa);
}

/* The confirmation (search.h confirm_samples) after a raced refinement: a confirmation objective
 * whose answer grows with each call keeps the last finalist (a start cut the race may have
 * dropped); the result is that mask with its whole calibration score, made once more when the race
 * left it without one (so the search makes 0 or 1 evaluation more than its finalists). */
typedef struct {
    int calls;
    uint8_t last[L * H];
} rising;

static int rising_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                        size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    rising *r = ctx;
    static double nll[4];
    const double p = 0.5 + 0.01 * ++r->calls;
    for (int i = 0; i < 4; i++) nll[i] = -log(p);
    memcpy(r->last, m->z, sizeof r->last);
    *out = (search_eval){p, 1, -log(p), 0.001, 4, nll};
    return 0;
}

static void test_confirm_after_race(void **state) {
    (void)state;
    search_config c;
    config(&c, 1, 0);
    synth s0, s;
    search_objective o0, o;
    watch w0, w;
    search_state *plain = run(&c, &s0, &o0, &w0, 0.2); /* noise: the cuts and the refined mask differ */
    c.confirm_samples = 4;
    synth_init(&s, &o, 0.2);
    memset(&w, 0, sizeof w);
    rising ri = {0};
    search_objective co = {.score = rising_score, .ctx = &ri};
    search_state *st;
    char err[256];
    assert_int_equal(search_create(&st, &c, L, H, &o, NULL, on_event, &w, err, sizeof err), 0);
    search_set_confirm(st, &co);
    if (search_run(st, NULL, err, sizeof err) != 1) fail_msg("search: %s", err);
    search_confirm_stats cs;
    search_get_confirm_stats(st, &cs);
    assert_int_equal(cs.n_finalists, ri.calls);
    assert_true(cs.n_finalists >= 2);
    assert_int_equal(cs.kept, cs.n_finalists - 1);
    assert_memory_equal(search_result_mask(st)->z, ri.last, L * H);
    /* its normalized whole calibration score, computed here */
    assert_whole_score(st, &s, ri.last);
    const long extra = search_n_evals(st) - search_n_evals(plain) - cs.n_finalists;
    assert_true(extra == 0 || extra == 1);
    fprintf(stderr, "confirm after a race: %d finalists, kept %s, %ld calibration evaluation(s) more\n",
            cs.n_finalists, cs.what[cs.kept], extra);
    search_free(st), search_free(plain);
}

/* A start the race dropped and the confirmation keeps (search_confirm.c's extra evaluation): the
 * start mask (search_config.start_*) makes the four retrieval heads SWA, so on the calibration
 * objective its cut costs 16 per sample and the race drops it after its first round; a confirmation
 * objective that prefers exactly that mask (answer probability 0.9 against 0.5 on every one of its
 * 4 samples, plus 0.01 * i so the standard error is not 0) makes it the result. The result is then
 * the start mask with its whole calibration score, made once for it: one evaluation more than the
 * unconfirmed search and its finalists (which only a start without a whole score costs). */
typedef struct {
    int calls;
    uint8_t want[L * H];
} prefer;

static int prefer_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                        size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    prefer *pr = ctx;
    static double nll[4];
    const int hit = !memcmp(m->z, pr->want, sizeof pr->want);
    double mean = 0;
    for (int i = 0; i < 4; i++) {
        const double p = (hit ? 0.9 : 0.5) + (hit ? 0.01 * i : 0.0);
        nll[i] = -log(p);
        mean += p / 4;
    }
    pr->calls++;
    *out = (search_eval){mean, 1, 0, 0.001, 4, nll};
    return 0;
}

static void test_confirm_keeps_dropped_start(void **state) {
    (void)state;
    search_config c;
    config(&c, 1, 0);
    c.start_layers = L, c.start_heads = H;
    prefer pr = {0};
    /* the retrieval heads 2, 7, 13, 22 and the first eight others: 12 of 24 (rho 0.5) */
    const int swa[12] = {2, 7, 13, 22, 0, 1, 3, 4, 5, 6, 8, 9};
    for (int u = 0; u < L * H; u++) pr.want[u] = ATTN_FULL;
    for (int i = 0; i < 12; i++) {
        c.start_swa[swa[i] / 8] |= (uint8_t)(1u << (swa[i] % 8));
        pr.want[swa[i]] = ATTN_SWA;
    }
    synth s0, s;
    search_objective o0, o;
    watch w0, w;
    search_state *plain = run(&c, &s0, &o0, &w0, 0);
    search_race_stats r;
    search_get_race_stats(plain, &r);
    assert_true(r.dropped > 0);
    c.confirm_samples = 4;
    synth_init(&s, &o, 0);
    memset(&w, 0, sizeof w);
    search_objective co = {.score = prefer_score, .ctx = &pr};
    search_state *st;
    char err[256];
    assert_int_equal(search_create(&st, &c, L, H, &o, NULL, on_event, &w, err, sizeof err), 0);
    search_set_confirm(st, &co);
    if (search_run(st, NULL, err, sizeof err) != 1) fail_msg("search: %s", err);
    search_confirm_stats cs;
    search_get_confirm_stats(st, &cs);
    assert_int_equal(cs.n_finalists, pr.calls);
    assert_true(cs.kept > 0);
    assert_string_equal(cs.what[cs.kept], "start");
    assert_memory_equal(search_result_mask(st)->z, pr.want, L * H);
    /* one calibration evaluation more than the plain search and the finalists: the dropped start's */
    assert_int_equal(search_n_evals(st) - search_n_evals(plain) - cs.n_finalists, 1);
    /* its Ŝ: the start mask's whole normalized calibration score, computed here */
    assert_whole_score(st, &s, pr.want);
    search_free(st), search_free(plain);
}

static void test_race_resume(void **state) {
    (void)state;
    search_config c;
    config(&c, 1, 0);
    synth s_ref, s;
    search_objective o_ref, o;
    watch w;
    search_state *ref = run(&c, &s_ref, &o_ref, &w, 0);
    search_race_stats r_ref;
    search_get_race_stats(ref, &r_ref);
    /* stop after the first partial evaluation is logged, save, load, finish */
    char path[] = "/tmp/test_race_XXXXXX", err[256];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    synth_init(&s, &o, 0);
    memset(&w, 0, sizeof w);
    search_state *st;
    assert_int_equal(search_create(&st, &c, L, H, &o, NULL, on_event, &w, err, sizeof err), 0);
    while (w.n_partial < 1) assert_int_equal(search_step(st, err, sizeof err), 0);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);
    synth s2;
    search_objective o2;
    synth_init(&s2, &o2, 0);
    if (search_load(&st, path, L, H, &o2, NULL, NULL, NULL, err, sizeof err)) fail_msg("load: %s", err);
    assert_int_equal(search_run(st, NULL, err, sizeof err), 1);
    assert_memory_equal(search_result_mask(st)->z, search_result_mask(ref)->z, L * H);
    search_race_stats r;
    search_get_race_stats(st, &r);
    assert_int_equal(r.raced, r_ref.raced);
    assert_int_equal(r.dropped, r_ref.dropped);
    assert_int_equal(r.samples, r_ref.samples);
    search_free(st), search_free(ref);
    unlink(path);
}

static void test_accept_k(void **state) {
    (void)state;
    search_config c0, c2;
    config(&c0, 1, 0), config(&c2, 1, 2.0);
    synth s0, s2;
    search_objective o0, o2;
    watch w0, w2;
    search_state *st0 = run(&c0, &s0, &o0, &w0, 0.05), *st2 = run(&c2, &s2, &o2, &w2, 0.05);
    search_race_stats r0, r2;
    search_get_race_stats(st0, &r0), search_get_race_stats(st2, &r2);
    if (getenv("TEST_RACE_VERBOSE"))
        for (int i = 0; i < 2; i++) {
            const search_race_stats *r = i ? &r2 : &r0;
            fprintf(stderr, "k=%d raced %ld samples %ld dropped %ld sure %ld accepted %ld noise %ld\n", 2 * i,
                    r->raced, r->samples, r->dropped, r->dropped_sure, r->accepted, r->noise);
        }
    /* k = 2: every move taken beat 2 standard errors; some positive gains were refused as noise */
    assert_false(w2.bad);
    assert_true(w2.n_taken_checked > 0);
    assert_int_equal(w2.n_taken_checked, w2.n_taken);
    assert_true(r2.noise > 0);
    assert_int_equal(r0.noise, 0);
    /* k = 0 follows the noise further: more moves taken */
    assert_true(r0.accepted > r2.accepted);
    /* k = 2 made the move the penalty asks for: the two penalized heads are not both SWA */
    const uint8_t *z2 = search_result_mask(st2)->z;
    assert_false(z2[s2.pair[0]] == ATTN_SWA && z2[s2.pair[1]] == ATTN_SWA);
    /* both keep the retrieval heads full: the noise is small next to their cost */
    for (int i = 0; i < 2; i++) {
        const uint8_t *z = search_result_mask(i ? st2 : st0)->z;
        assert_int_equal(z[2], ATTN_FULL), assert_int_equal(z[7], ATTN_FULL);
        assert_int_equal(z[13], ATTN_FULL), assert_int_equal(z[22], ATTN_FULL);
    }
    search_free(st0), search_free(st2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_and_order),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_drop_rules),
        cmocka_unit_test(test_accept),
        cmocka_unit_test(test_search_race),
        cmocka_unit_test(test_race_resume),
        cmocka_unit_test(test_accept_k),
        cmocka_unit_test(test_confirm_after_race),
        cmocka_unit_test(test_confirm_keeps_dropped_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
