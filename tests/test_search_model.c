/* test_search_model.c — the search on the real default model (skipped, exit 77, when the model
 * file is missing): a short BOSCH run is interrupted, saved and resumed, and the resumed run's
 * next evaluations must equal the uninterrupted run's bit for bit (same masks, same scores), which
 * also checks that the evaluator's prefix-reuse base is restored after a resume. The all-full and
 * all-SWA normalizers are checked against evaluator_score on the same calibration samples, and
 * the calibration set must beat all-SWA with full attention (the probe discriminates). */
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

#include "eval.h"
#include "model.h"
#include "probes.h"
#include "search.h"

static model *g_model;

static int setup(void **state) {
    (void)state;
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK)) {
        fprintf(stderr, "test_search_model: %s missing, skipped\n", path);
        exit(77);
    }
    char err[512];
    if (model_load(&g_model, path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    model_free(g_model);
    return 0;
}

typedef struct {
    int n;
    uint64_t hash[64];
    double raw[64];
} evlog;

static void on_ev(const search_event *ev, void *user) {
    evlog *g = user;
    if (ev->kind == SEARCH_EV_EVAL && g->n < 64) {
        g->hash[g->n] = mask_hash(ev->mask);
        g->raw[g->n++] = ev->raw_score;
    }
}

/* Issue 31 item 2: a calibration split at two lengths, tasks mixed (search_calib_generate with
 * calib_tokens2): 10 samples -> 5 at 192 tokens and 5 at 384, each length shared out 2/2/1 between
 * niah_single, niah_multikey and passkey; prompts as long as asked (within the answer's tokens). */
static void test_calib_two_lengths(void **state) {
    (void)state;
    char err[512];
    search_config cfg;
    search_config_default(&cfg);
    cfg.calib_samples = 10, cfg.calib_tokens = 192, cfg.calib_tokens2 = 384, cfg.calib_mix = 1;
    calib_set *cs = NULL;
    if (search_calib_generate(&cs, g_model, &cfg, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(calib_set_n(cs), 10);
    eval_sample s[10];
    calib_set_eval_samples(cs, s);
    for (int i = 0; i < 10; i++) {
        const int want = i < 5 ? 192 : 384;
        if (!(s[i].answer_start <= want + 8 && s[i].answer_start >= want - 40))
            fail_msg("sample %d: prompt of %d tokens, want about %d", i, s[i].answer_start, want);
    }
    calib_set_free(cs);
    cfg.calib_tokens2 = 0; /* one length: as before */
    assert_int_equal(search_calib_generate(&cs, g_model, &cfg, err, sizeof err), 0);
    calib_set_eval_samples(cs, s);
    for (int i = 0; i < 10; i++) assert_true(s[i].answer_start <= 200);
    calib_set_free(cs);
}

static void test_resume_on_real_model(void **state) {
    (void)state;
    char err[512];
    search_config cfg;
    search_config_default(&cfg);
    cfg.ratio = 0.5;
    cfg.window = 16;
    cfg.calib_samples = 2;
    cfg.calib_tokens = 160;
    calib_set *cs;
    assert_int_equal(search_calib_generate(&cs, g_model, &cfg, err, sizeof err), 0);
    const int L = g_model->hp.n_layer, H = g_model->hp.n_head_kv, steps = 9, more = 5;

    /* uninterrupted: steps + more evaluations */
    search_objective o1;
    assert_int_equal(search_objective_calib(&o1, g_model, cs, err, sizeof err), 0);
    static evlog ref, got;
    memset(&ref, 0, sizeof ref);
    memset(&got, 0, sizeof got);
    search_state *st;
    assert_int_equal(search_create(&st, &cfg, L, H, &o1, g_model, on_ev, &ref, err, sizeof err), 0);
    for (int i = 0; i < steps + more; i++) assert_int_equal(search_step(st, err, sizeof err), 0);
    assert_true(search_full_score(st) > search_swa_score(st));
    search_free(st);
    search_objective_free(&o1);

    /* normalizers against a direct evaluator on the same samples */
    eval_sample es[8];
    calib_set_eval_samples(cs, es);
    evaluator *ev;
    assert_int_equal(evaluator_create(&ev, g_model, es, calib_set_n(cs), 0, err, sizeof err), 0);
    attn_mask m;
    mask_init(&m, L, H, cfg.window, cfg.sinks, ATTN_FULL);
    eval_result r;
    assert_int_equal(evaluator_score(ev, &m, &r, NULL, err, sizeof err), 0);
    assert_true(r.score == ref.raw[0]);
    memset(m.z, ATTN_SWA, (size_t)L * H);
    assert_int_equal(evaluator_score(ev, &m, &r, NULL, err, sizeof err), 0);
    assert_true(r.score == ref.raw[1]);
    mask_free(&m);
    evaluator_free(ev);

    /* interrupted after `steps`, saved, resumed with a fresh evaluator */
    char path[] = "/tmp/test_search_modelXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    search_objective o2, o3;
    assert_int_equal(search_objective_calib(&o2, g_model, cs, err, sizeof err), 0);
    assert_int_equal(search_create(&st, &cfg, L, H, &o2, g_model, NULL, NULL, err, sizeof err), 0);
    for (int i = 0; i < steps; i++) assert_int_equal(search_step(st, err, sizeof err), 0);
    assert_int_equal(search_save(st, path, err, sizeof err), 0);
    search_free(st);
    search_objective_free(&o2);
    assert_int_equal(search_objective_calib(&o3, g_model, cs, err, sizeof err), 0);
    assert_int_equal(search_load(&st, path, L, H, &o3, g_model, on_ev, &got, err, sizeof err), 0);
    for (int i = 0; i < more; i++) assert_int_equal(search_step(st, err, sizeof err), 0);
    assert_int_equal(got.n, ref.n);
    for (int i = 0; i < ref.n; i++) {
        assert_int_equal(got.hash[i], ref.hash[i]);
        assert_true(got.raw[i] == ref.raw[i]); /* bitwise: prefix reuse is exact */
    }
    search_free(st);
    search_objective_free(&o3);
    calib_set_free(cs);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_resume_on_real_model),
                                       cmocka_unit_test(test_calib_two_lengths)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
