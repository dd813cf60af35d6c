/* test_probe_score.c — datasets/probe_score.h on the real model, against an evaluator the test
 * builds itself from probe_set_generate (engine/eval.h used directly, no scorer code):
 * 1. a reuse scorer's whole-set scores, for masks in any order, equal a from-scratch evaluator's
 *    per-sample results bit for bit;
 * 2. a per-sample scorer's results on any range [first, first + count) equal the same samples of
 *    (1), so cutting a set into ranges (what `mpirun ... bosch eval` does) changes no bit;
 * 3. the cache reopens its scorer only when the cell or the reuse flag changes, and its results
 *    are those of a fresh scorer;
 * 4. refused: a cell from another build (task, haystack, split out of range), a range outside
 *    the set, a partial range on a reuse scorer; the message names the values.
 */
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
#include "mask.h"
#include "model.h"
#include "probe_score.h"
#include "probes.h"

enum { N_SAMPLES = 4, N_MASKS = 3, LENGTH = 160 };

static model *g_model;
static attn_mask g_masks[N_MASKS];
static probe_config g_cfg;
static probe_cell g_cell_a, g_cell_b; /* held-out seed 77; validation seed 78 */
static eval_sample_result g_ref_a[N_MASKS][N_SAMPLES], g_ref_b[N_MASKS][N_SAMPLES];

static void reference(const probe_cell *cell, eval_sample_result ref[N_MASKS][N_SAMPLES]);

static int setup(void **state) {
    (void)state;
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK)) {
        fprintf(stderr, "test_probe_score: %s missing, skipped\n", path);
        exit(77);
    }
    char err[512];
    if (model_load(&g_model, path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    const int L = g_model->hp.n_layer, H = g_model->hp.n_head_kv;
    /* full; the upper half SWA; a checkerboard with sinks (window small enough to matter) */
    if (mask_init(&g_masks[0], L, H, 32, 0, 1) || mask_init(&g_masks[1], L, H, 32, 0, 1) ||
        mask_init(&g_masks[2], L, H, 32, 4, 1))
        return -1;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            if (l >= L / 2) mask_set(&g_masks[1], l, h, 0);
            if ((l + h) % 2) mask_set(&g_masks[2], l, h, 0);
        }
    g_cfg = probe_config_default();
    g_cfg.task = PROBE_PASSKEY;
    g_cfg.length_tokens = LENGTH;
    g_cfg.n_samples = N_SAMPLES;
    g_cell_a = probe_cell_make(&g_cfg, PROBE_SPLIT_HELDOUT, 77);
    g_cell_b = probe_cell_make(&g_cfg, PROBE_SPLIT_VALIDATION, 78);
    reference(&g_cell_a, g_ref_a);
    reference(&g_cell_b, g_ref_b);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < N_MASKS; i++) mask_free(&g_masks[i]);
    model_free(g_model);
    return 0;
}

/* The reference: each mask on each sample of the cell's set, one from-scratch evaluator per sample. */
static void reference(const probe_cell *cell, eval_sample_result ref[N_MASKS][N_SAMPLES]) {
    char err[512];
    probe_set set;
    assert_int_equal(
        probe_set_generate(&set, g_model->tok, &g_cfg, (probe_split)cell->split, cell->seed, err, sizeof err),
        0);
    assert_int_equal(set.n, N_SAMPLES);
    eval_sample es[N_SAMPLES];
    probe_set_eval_samples(&set, es);
    for (int s = 0; s < N_SAMPLES; s++) {
        evaluator *ev = NULL;
        assert_int_equal(evaluator_create(&ev, g_model, &es[s], 1, 0, err, sizeof err), 0);
        for (int k = 0; k < N_MASKS; k++) {
            eval_result r;
            assert_int_equal(evaluator_score(ev, &g_masks[k], &r, &ref[k][s], err, sizeof err), 0);
        }
        evaluator_free(ev);
    }
    probe_set_free(&set);
}

static void assert_same(const eval_sample_result *a, const eval_sample_result *b) {
    assert_int_equal(a->exact, b->exact);
    assert_memory_equal(&a->p_answer, &b->p_answer, sizeof a->p_answer);
    assert_memory_equal(&a->nll, &b->nll, sizeof a->nll);
}

static void test_reuse_and_ranges(void **state) {
    (void)state;
    char err[512];
    const probe_cell cell = g_cell_a;
    eval_sample_result(*ref)[N_SAMPLES] = g_ref_a;
    /* the masks must tell apart, or equality below proves little */
    assert_true(ref[0][0].nll != ref[2][0].nll);

    probe_scorer *s = NULL;
    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &cell, 1, err, sizeof err), 0);
    assert_int_equal(probe_scorer_n(s), N_SAMPLES);
    assert_int_equal(probe_scorer_reuse(s), 1);
    assert_true(probe_cell_equal(probe_scorer_cell(s), &cell));
    const int order[] = {2, 0, 1, 2, 1};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        eval_sample_result res[N_SAMPLES];
        assert_int_equal(probe_scorer_score(s, &g_masks[order[i]], 0, N_SAMPLES, res, err, sizeof err), 0);
        for (int j = 0; j < N_SAMPLES; j++) assert_same(&res[j], &ref[order[i]][j]);
    }
    eval_sample_result one[N_SAMPLES];
    assert_int_equal(probe_scorer_score(s, &g_masks[0], 1, 2, one, err, sizeof err), -1);
    assert_non_null(strstr(err, "[1, 3) of a set of 4"));
    assert_non_null(strstr(err, "reuse scorer"));
    probe_scorer_free(s);

    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &cell, 0, err, sizeof err), 0);
    const int ranges[][2] = {{0, 1}, {1, 2}, {3, 1}, {0, N_SAMPLES}}; /* first, count */
    for (int k = 1; k < N_MASKS; k++)
        for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
            const int first = ranges[r][0], count = ranges[r][1];
            eval_sample_result res[N_SAMPLES];
            assert_int_equal(probe_scorer_score(s, &g_masks[k], first, count, res, err, sizeof err), 0);
            for (int j = 0; j < count; j++) assert_same(&res[j], &ref[k][first + j]);
        }
    assert_int_equal(probe_scorer_score(s, &g_masks[0], 3, 2, one, err, sizeof err), -1);
    assert_non_null(strstr(err, "[3, 5) of a set of 4"));
    assert_int_equal(probe_scorer_score(s, &g_masks[0], -1, 1, one, err, sizeof err), -1);
    assert_int_equal(probe_scorer_score(s, &g_masks[0], 0, 0, one, err, sizeof err), -1);
    probe_scorer_free(s);
    probe_scorer_free(NULL);
}

static void test_cache(void **state) {
    (void)state;
    char err[512];
    const probe_cell a = g_cell_a, b = g_cell_b;
    eval_sample_result(*ref_a)[N_SAMPLES] = g_ref_a, (*ref_b)[N_SAMPLES] = g_ref_b;
    assert_true(probe_cell_equal(&a, &a));
    assert_false(probe_cell_equal(&a, &b));
    assert_true(ref_a[1][0].nll != ref_b[1][0].nll); /* other samples */

    probe_score_cache c = {g_model, NULL, NULL};
    eval_sample_result res[N_SAMPLES];
    assert_int_equal(probe_score_cached(&c, &a, 0, &g_masks[1], 2, 2, res, err, sizeof err), 0);
    const probe_scorer *first = c.s;
    for (int j = 0; j < 2; j++) assert_same(&res[j], &ref_a[1][2 + j]);
    assert_int_equal(probe_score_cached(&c, &a, 0, &g_masks[2], 0, 1, res, err, sizeof err), 0);
    assert_ptr_equal(c.s, first); /* same cell, same flag: kept */
    assert_same(&res[0], &ref_a[2][0]);
    assert_int_equal(probe_score_cached(&c, &b, 0, &g_masks[1], 0, 4, res, err, sizeof err), 0);
    assert_true(probe_cell_equal(probe_scorer_cell(c.s), &b));
    for (int j = 0; j < N_SAMPLES; j++) assert_same(&res[j], &ref_b[1][j]);
    assert_int_equal(probe_score_cached(&c, &b, 1, &g_masks[0], 0, 4, res, err, sizeof err), 0);
    assert_int_equal(probe_scorer_reuse(c.s), 1);
    for (int j = 0; j < N_SAMPLES; j++) assert_same(&res[j], &ref_b[0][j]);
    probe_score_cache_free(&c);
    assert_null(c.s);
    probe_score_cache_free(&c); /* twice is harmless */
}

static void test_bad_cells(void **state) {
    (void)state;
    char err[512];
    probe_scorer *s = (probe_scorer *)&err; /* set to NULL on error */
    const probe_cell good = g_cell_a;
    probe_cell bad = good;
    bad.task = PROBE_TASK_COUNT;
    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &bad, 0, err, sizeof err), -1);
    assert_null(s);
    assert_non_null(strstr(err, "task 3"));
    bad = good, bad.haystack = -1;
    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &bad, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "haystack -1"));
    bad = good, bad.split = 7;
    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &bad, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "split 7"));
    /* in range but not generable: probe_set_generate's own error reaches the caller */
    bad = good, bad.length = 8;
    assert_int_equal(probe_scorer_open(&s, g_model, NULL, &bad, 0, err, sizeof err), -1);
    assert_null(s);
    assert_true(err[0] != '\0');
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_ranges),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_bad_cells),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
