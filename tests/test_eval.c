/* test_eval.c — the mask evaluator on the real model.
 *
 * 1. Answer-token log-probabilities and exact matches against tests/fixtures/eval_smollm2.txt, an
 *    independent float64 numpy forward pass with per-KV-head hybrid attention
 *    (scripts/fixtures/make_eval_fixtures.py), for four masks (full, all SWA, late-layer SWA with
 *    sinks, checkerboard).
 * 2. Prefix reuse: every score from an evaluator with a base equals, bit for bit, the score of a
 *    from-scratch evaluator, and it restarts at the first layer whose computation differs.
 * 3. Backends (engine/backend.h): evaluator_create_on with a NULL backend, or with a shared CPU
 *    backend (backend_cpu_create), is the CPU evaluator bit for bit; a test backend built from forward.h (the
 * same arithmetic as the CPU path) gives bitwise the CPU scores, with and without prefix reuse, and checks on
 * every call that the evaluator honours the contract (x_save only above `first` and only when storing a base,
 *    tokens or x_in as documented, rows = the positions before each answer token); a backend
 *    error reaches the caller with the backend's name and message.
 * `test_eval bf16` (CTest test_eval_bf16) runs all of it as the commands run by default, with bf16
 * GEMMs (gemm.h) and bf16 keys and values in attention (attention.h, --kv): the numpy
 * comparison then allows NLL_TOL_BF16 and checks exact matches only where numpy's top two answer
 * logits are more than GAP_BF16 apart; prefix reuse and the backend checks stay bitwise.
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

#include "eval.h"
#include "forward.h"
#include "mask.h"
#include "model.h"

enum { MAX_S = 8, MAX_M = 8, MAX_A = 8, MAX_T = 256 };

#define NLL_TOL_FP32 5e-3
#define NLL_TOL_BF16 0.05 /* plus NLL_REL_BF16 of the NLL: bf16 errors grow with the logit gap */
#define NLL_REL_BF16 0.02
#define GAP_FP32 0.02
#define GAP_BF16 0.5
static model_opts g_opts = {PRECISION_FP32, 0, ATTN_KV_FP32};
static double g_nll_tol = NLL_TOL_FP32, g_nll_rel = 0.0, g_gap = GAP_FP32;

typedef struct {
    int n_samples, n_masks;
    int32_t tokens[MAX_S][MAX_T];
    eval_sample samples[MAX_S];
    char name[MAX_M][32];
    attn_mask masks[MAX_M];
    double logp[MAX_M][MAX_S][MAX_A];
    int argmax[MAX_M][MAX_S][MAX_A];
    double gap[MAX_M][MAX_S][MAX_A];
} fixture;

typedef struct {
    model *m;
    fixture f;
} suite;

static suite g_suite;

static int find_mask(const fixture *f, const char *name) {
    for (int i = 0; i < f->n_masks; i++)
        if (strcmp(f->name[i], name) == 0) return i;
    return -1;
}

static int parse_fixture(const char *path, fixture *f, int n_layer, int n_head_kv) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[8192];
    memset(f, 0, sizeof *f);
    while (fgets(line, sizeof line, fp)) {
        int n = 0, id, nt, st, na;
        if (line[0] == '#') continue;
        if (sscanf(line, "sample %d %d %d %d%n", &id, &nt, &st, &na, &n) == 4) {
            if (id != f->n_samples || id >= MAX_S || nt > MAX_T || na > MAX_A) goto bad;
            char *p = line + n;
            for (int i = 0; i < nt; i++) f->tokens[id][i] = (int32_t)strtol(p, &p, 10);
            f->samples[id] = (eval_sample){f->tokens[id], nt, st, na};
            f->n_samples++;
        } else if (strncmp(line, "mask ", 5) == 0) {
            char z[4096];
            int W, S, k = f->n_masks;
            if (k >= MAX_M || sscanf(line, "mask %31s %d %d %4095s", f->name[k], &W, &S, z) != 4) goto bad;
            if ((int)strlen(z) != n_layer * n_head_kv) goto bad;
            if (mask_init(&f->masks[k], n_layer, n_head_kv, W, S, ATTN_FULL)) goto bad;
            for (int i = 0; i < n_layer * n_head_kv; i++)
                f->masks[k].z[i] = z[i] == '1' ? ATTN_FULL : ATTN_SWA;
            f->n_masks++;
        } else if (strncmp(line, "ans ", 4) == 0) {
            char name[32];
            int s, a, am;
            double lp, gap;
            if (sscanf(line, "ans %31s %d %d %lf %d %lf", name, &s, &a, &lp, &am, &gap) != 6) goto bad;
            int k = find_mask(f, name);
            if (k < 0 || s >= f->n_samples || a >= MAX_A) goto bad;
            f->logp[k][s][a] = lp, f->argmax[k][s][a] = am, f->gap[k][s][a] = gap;
        }
    }
    fclose(fp);
    return f->n_samples > 0 && f->n_masks > 0 ? 0 : -1;
bad:
    fclose(fp);
    return -1;
}

static int setup(void **state) {
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "test_eval: model %s missing, skipping\n", path);
        exit(77);
    }
    char err[512];
    if (model_load_opts(&g_suite.m, path, &g_opts, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    char fx[1024];
    snprintf(fx, sizeof fx, "%s/tests/fixtures/eval_smollm2.txt", BOSCH_SOURCE_DIR);
    if (parse_fixture(fx, &g_suite.f, g_suite.m->hp.n_layer, g_suite.m->hp.n_head_kv) != 0) {
        fprintf(stderr, "cannot read fixture %s\n", fx);
        return -1;
    }
    *state = &g_suite;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int k = 0; k < g_suite.f.n_masks; k++) mask_free(&g_suite.f.masks[k]);
    model_free(g_suite.m);
    return 0;
}

static void test_against_numpy(void **state) {
    suite *S = *state;
    fixture *f = &S->f;
    char err[512];
    evaluator *ev;
    if (evaluator_create(&ev, S->m, f->samples, f->n_samples, 0, err, sizeof err)) fail_msg("%s", err);
    int some_exact = 0, some_miss = 0;
    double worst = 0.0;
    for (int k = 0; k < f->n_masks; k++) {
        eval_sample_result res[MAX_S];
        eval_result r;
        if (evaluator_score(ev, &f->masks[k], &r, res, err, sizeof err)) fail_msg("%s", err);
        double score = 0.0;
        for (int s = 0; s < f->n_samples; s++) {
            int na = f->samples[s].n_answer, exact = 1, sure = 1;
            double nll = 0.0;
            for (int a = 0; a < na; a++) {
                nll -= f->logp[k][s][a];
                exact &= f->argmax[k][s][a] == f->tokens[s][f->samples[s].answer_start + a];
                sure &= f->gap[k][s][a] > g_gap; /* a near-tie may flip between fp32 (bf16) and fp64 */
            }
            nll /= na;
            const double tol = g_nll_tol + g_nll_rel * nll;
            worst = fmax(worst, fabs(res[s].nll - nll) / tol);
            if (fabs(res[s].nll - nll) > tol)
                print_error("mask %s sample %d: nll %.6f, numpy %.6f\n", f->name[k], s, res[s].nll, nll);
            assert_true(fabs(res[s].nll - nll) <= tol);
            assert_true(fabs(res[s].p_answer - exp(-nll)) <= tol * 1.01 * exp(-nll) + 1e-9);
            if (sure) assert_int_equal(res[s].exact, exact);
            some_exact |= exact, some_miss |= !exact;
            score += exp(-nll);
        }
        assert_true(fabs(r.score - score / f->n_samples) < g_nll_tol); /* p <= 1: |dp| <= |dnll| */
        assert_int_equal(r.first_layer, 0);
    }
    fprintf(stderr, "%s GEMMs: worst |nll - numpy| is %.2f of its limit (%.0e + %.0e * nll)\n",
            gemm_precision_name(S->m->precision), worst, g_nll_tol, g_nll_rel);
    assert_true(some_exact && some_miss); /* the fixture exercises both outcomes */
    evaluator_free(ev);
}

static void expect_same(const eval_sample_result *a, const eval_sample_result *b, int n) {
    for (int s = 0; s < n; s++) {
        assert_int_equal(a[s].exact, b[s].exact);
        assert_memory_equal(&a[s].nll, &b[s].nll, sizeof(double));
        assert_memory_equal(&a[s].p_answer, &b[s].p_answer, sizeof(double));
    }
}

/* Score `m` with the reuse evaluator and from scratch: bitwise equal, restart layer as expected. */
static void check_reuse(evaluator *reuse, evaluator *scratch, const attn_mask *m, int want_first, int n) {
    char err[512];
    eval_sample_result a[MAX_S], b[MAX_S];
    eval_result ra, rb;
    if (evaluator_score(reuse, m, &ra, a, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_score(scratch, m, &rb, b, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(ra.first_layer, want_first);
    assert_int_equal(rb.first_layer, 0);
    expect_same(a, b, n);
    assert_memory_equal(&ra.score, &rb.score, sizeof(double));
}

static void test_prefix_reuse_bitwise(void **state) {
    suite *S = *state;
    fixture *f = &S->f;
    const int n = f->n_samples < 2 ? f->n_samples : 2, L = S->m->hp.n_layer; /* 2 samples: runtime */
    char err[512];
    evaluator *reuse, *scratch;
    if (evaluator_create(&reuse, S->m, f->samples, n, 1, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create(&scratch, S->m, f->samples, n, 0, err, sizeof err)) fail_msg("%s", err);
    const attn_mask *full = &f->masks[find_mask(f, "full")], *late = &f->masks[find_mask(f, "late_w8_s2")];
    const attn_mask *check = &f->masks[find_mask(f, "check_w4_s1")];
    eval_result r;
    if (evaluator_set_base(reuse, full, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, 0);
    check_reuse(reuse, scratch, late, L / 2, n); /* late differs from full at layer L/2 */
    check_reuse(reuse, scratch, check, 0, n);    /* checkerboard differs at layer 0 */
    check_reuse(reuse, scratch, full, L, n);     /* the base itself: nothing recomputed */
    /* move the base to `late` (recomputes from L/2), then masks that change only late layers */
    if (evaluator_set_base(reuse, late, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, L / 2);
    attn_mask tail;
    assert_int_equal(mask_copy(&tail, late), 0);
    int from = L - L / 4; /* the last quarter of layers */
    for (int l = from; l < L; l++) mask_set(&tail, l, 2, ATTN_SWA);
    check_reuse(reuse, scratch, &tail, from, n);
    /* same z, other window: the first layer with an SWA head must be recomputed */
    attn_mask w4;
    assert_int_equal(mask_copy(&w4, late), 0);
    w4.window = 4;
    check_reuse(reuse, scratch, &w4, L / 2, n);
    /* a base moved back and forth keeps giving from-scratch results */
    if (evaluator_set_base(reuse, &tail, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, from);
    check_reuse(reuse, scratch, late, from, n);
    check_reuse(reuse, scratch, full, L / 2, n);
    /* a mask of the wrong shape is refused with a message */
    attn_mask bad;
    assert_int_equal(mask_init(&bad, L - 1, S->m->hp.n_head_kv, 8, 0, ATTN_FULL), 0);
    err[0] = 0;
    assert_int_equal(evaluator_score(reuse, &bad, &r, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers"));
    mask_free(&bad);
    mask_free(&tail);
    mask_free(&w4);
    evaluator_free(reuse);
    evaluator_free(scratch);
}

static void test_bad_samples(void **state) {
    suite *S = *state;
    char err[512];
    evaluator *ev = NULL;
    int32_t toks[4] = {1, 2, 3, 4};
    eval_sample bad = {toks, 4, 0, 2}; /* answer_start 0: nothing predicts the first answer token */
    assert_int_equal(evaluator_create(&ev, S->m, &bad, 1, 0, err, sizeof err), -1);
    assert_null(ev);
    assert_non_null(strstr(err, "answer_start"));
    eval_sample over = {toks, 4, 3, 2}; /* runs past the end */
    assert_int_equal(evaluator_create(&ev, S->m, &over, 1, 0, err, sizeof err), -1);
    int32_t big[3] = {1, 2, 1 << 30};
    eval_sample vocab = {big, 3, 1, 2};
    assert_int_equal(evaluator_create(&ev, S->m, &vocab, 1, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "vocabulary"));
}

/* ---- backends -------------------------------------------------------------------------------- */

static void score_both(evaluator *a, evaluator *b, const attn_mask *m, int n, int want_first_a) {
    char err[512];
    eval_sample_result ra[MAX_S], rb[MAX_S];
    eval_result oa, ob;
    if (evaluator_score(a, m, &oa, ra, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_score(b, m, &ob, rb, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(oa.first_layer, want_first_a);
    expect_same(ra, rb, n);
    assert_memory_equal(&oa.score, &ob.score, sizeof(double));
    assert_memory_equal(&oa.nll, &ob.nll, sizeof(double));
    assert_memory_equal(&oa.accuracy, &ob.accuracy, sizeof(double));
}

static void test_create_on_null_is_cpu(void **state) {
    suite *S = *state;
    fixture *f = &S->f;
    char err[512];
    evaluator *a, *b;
    if (evaluator_create(&a, S->m, f->samples, 1, 0, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create_on(&b, S->m, NULL, f->samples, 1, 0, err, sizeof err)) fail_msg("%s", err);
    /* both run on a CPU backend of their own */
    assert_non_null(evaluator_backend(a));
    assert_non_null(evaluator_backend(b));
    assert_int_equal(evaluator_backend(a)->device, BACKEND_CPU);
    assert_int_equal(evaluator_backend(b)->device, BACKEND_CPU);
    assert_string_equal(evaluator_backend(a)->ops->name, "cpu");
    assert_true(evaluator_backend(a) != evaluator_backend(b));
    score_both(a, b, &f->masks[find_mask(f, "check_w4_s1")], 1, 0);
    /* two evaluators on one shared CPU backend: each has its own scratch, the same scores */
    backend *cpu;
    evaluator *c, *d;
    if (backend_cpu_create(&cpu, S->m, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create_on(&c, S->m, cpu, f->samples, 1, 0, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create_on(&d, S->m, cpu, f->samples, 1, 1, err, sizeof err)) fail_msg("%s", err);
    assert_ptr_equal(evaluator_backend(c), cpu);
    score_both(a, c, &f->masks[find_mask(f, "check_w4_s1")], 1, 0);
    score_both(d, c, &f->masks[find_mask(f, "late_w8_s2")], 1, 0);
    evaluator_free(c);
    evaluator_free(d);
    backend_free(cpu);
    evaluator_free(a);
    evaluator_free(b);
}

/* A backend made of forward.h calls, checking the evaluator's side of the contract on each call. */
typedef struct {
    const model *m;
    forward_ws *ws;
    float *x;
    int cap;
    int fail;                     /* 1: every call fails */
    long calls, saves, bad_calls; /* saves: x_save entries given; bad_calls: contract violations */
    int last_first;
    atomic_int *cancel_flag; /* when set: test_run sets it at the start of call number cancel_at */
    long cancel_at;
    char why[256]; /* the first violation */
} test_backend;

static void violation(test_backend *b, const char *what, int v) {
    if (!b->bad_calls++) snprintf(b->why, sizeof b->why, "%s (%d)", what, v);
}

static int test_run(void *ctx, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
                    int first, float *const *x_save, const int *rows, int n_rows, float *logits,
                    const atomic_int *cancel, char *err, size_t errlen) {
    test_backend *b = ctx;
    const int L = b->m->hp.n_layer, E = b->m->hp.n_embd;
    b->calls++;
    if (b->cancel_flag && b->calls == b->cancel_at) {
        if (cancel != b->cancel_flag) violation(b, "cancel flag not handed to the backend", 0);
        atomic_store(b->cancel_flag, 1); /* "the user quits" during this sample's layer first + 1 */
    }
    b->last_first = first;
    if (b->fail) {
        snprintf(err, errlen, "refused on purpose");
        return -1;
    }
    if (first < 0 || first >= L) violation(b, "first out of range", first);
    if (n_tokens < 1 || n_tokens > b->cap) violation(b, "n_tokens out of range", n_tokens);
    if (first == 0 && !tokens) violation(b, "no tokens at layer 0", first);
    if (first > 0 && !x_in) violation(b, "no x_in above layer 0", first);
    if (!x_save) {
        violation(b, "x_save is NULL", first);
        return -1;
    }
    for (int l = 0; l <= first && l < L; l++)
        if (x_save[l]) violation(b, "x_save set at or below first", l);
    /* rows: the positions before each answer token, i.e. the last n_rows rows of the run */
    if (n_rows < 1 || n_rows > n_tokens) violation(b, "n_rows", n_rows);
    for (int i = 0; i < n_rows; i++)
        if (rows[i] != n_tokens - n_rows + i) violation(b, "row", rows[i]);
    if (b->bad_calls) {
        snprintf(err, errlen, "contract violated: %s", b->why);
        return -1;
    }
    if (first == 0) {
        if (forward_embed(b->m, tokens, n_tokens, b->x)) return -1;
    } else {
        memcpy(b->x, x_in, sizeof(float) * (size_t)n_tokens * E);
    }
    for (int l = first; l < L; l++) {
        if (cancel && atomic_load(cancel)) return EVAL_CANCELLED; /* the contract: between layers */
        if (x_save[l]) {
            memcpy(x_save[l], b->x, sizeof(float) * (size_t)n_tokens * E);
            b->saves++;
        }
        if (forward_layer(b->m, l, mask, b->x, n_tokens, 0, NULL, b->ws)) return -1;
    }
    forward_logits(b->m, b->x, rows, n_rows, logits, b->ws);
    return 0;
}

/* The test backend's table: run() only (no scratch of its own: run() gets the test_backend). */
static const backend_ops TEST_OPS = {.name = "test", .run = test_run};

static void test_backend_contract(void **state) {
    suite *S = *state;
    fixture *f = &S->f;
    const int n = f->n_samples < 2 ? f->n_samples : 2, L = S->m->hp.n_layer;
    char err[512];
    test_backend tb = {.m = S->m, .cap = MAX_T};
    tb.ws = forward_ws_create(&S->m->hp, MAX_T);
    tb.x = malloc(sizeof(float) * MAX_T * S->m->hp.n_embd);
    assert_true(tb.ws && tb.x);
    const backend be = {&TEST_OPS, &tb, BACKEND_CPU, S->m};
    evaluator *cpu, *reuse, *scratch;
    if (evaluator_create(&cpu, S->m, f->samples, n, 0, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create_on(&reuse, S->m, &be, f->samples, n, 1, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create_on(&scratch, S->m, &be, f->samples, n, 0, err, sizeof err)) fail_msg("%s", err);
    assert_ptr_equal(evaluator_backend(reuse), &be);
    const attn_mask *full = &f->masks[find_mask(f, "full")], *late = &f->masks[find_mask(f, "late_w8_s2")];
    const attn_mask *check = &f->masks[find_mask(f, "check_w4_s1")];

    /* from scratch on the backend = CPU, bit for bit; nothing saved without a base */
    score_both(scratch, cpu, check, n, 0);
    assert_int_equal(tb.calls, n);
    assert_int_equal(tb.saves, 0);

    /* a base from scratch saves the streams entering layers 1..L-1 of every sample */
    eval_result r;
    if (evaluator_set_base(reuse, full, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, 0);
    assert_int_equal(tb.saves, (long)n * (L - 1));
    /* scoring from the base's streams: restarts at L/2, saves nothing, equals the CPU */
    tb.saves = 0;
    score_both(reuse, cpu, late, n, L / 2);
    assert_int_equal(tb.last_first, L / 2);
    assert_int_equal(tb.saves, 0);
    /* moving the base to `late` recomputes from L/2 and saves only the layers above it */
    if (evaluator_set_base(reuse, late, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, L / 2);
    assert_int_equal(tb.saves, (long)n * (L - 1 - L / 2));
    attn_mask tail;
    assert_int_equal(mask_copy(&tail, late), 0);
    const int from = L - L / 4;
    for (int l = from; l < L; l++) /* flip KV head 0 of the last quarter */
        mask_set(&tail, l, 0, mask_get(late, l, 0) == ATTN_SWA ? ATTN_FULL : ATTN_SWA);
    score_both(reuse, cpu, &tail, n, from);
    score_both(reuse, cpu, full, n, L / 2); /* streams below L/2 survived the move */
    assert_int_equal(tb.bad_calls, 0);

    /* a backend error reaches the caller with the backend's name and message */
    tb.fail = 1;
    err[0] = 0;
    assert_int_equal(evaluator_score(scratch, check, &r, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "test"));
    assert_non_null(strstr(err, "refused on purpose"));
    /* a table without a run function is refused */
    static const backend_ops NONE_OPS = {.name = "none"};
    const backend none = {&NONE_OPS, NULL, BACKEND_CPU, S->m};
    evaluator *ev = (evaluator *)1;
    assert_int_equal(evaluator_create_on(&ev, S->m, &none, f->samples, 1, 0, err, sizeof err), -1);
    assert_null(ev);
    assert_non_null(strstr(err, "none"));

    mask_free(&tail);
    evaluator_free(cpu);
    evaluator_free(reuse);
    evaluator_free(scratch);
    forward_ws_free(tb.ws);
    free(tb.x);
}

/* Cooperative cancel (evaluator_set_cancel): a set flag stops the evaluation with EVAL_CANCELLED on
 * the CPU and through a backend, no further sample is run, a cancelled set_base leaves no base, and
 * once the flag is cleared results are bit for bit those of an evaluator that was never cancelled. */
static void test_cancel(void **state) {
    suite *S = *state;
    fixture *f = &S->f;
    const int n = f->n_samples < 3 ? f->n_samples : 3;
    char err[512];
    const attn_mask *full = &f->masks[find_mask(f, "full")], *late = &f->masks[find_mask(f, "late_w8_s2")];
    evaluator *ref, *cpu;
    if (evaluator_create(&ref, S->m, f->samples, n, 1, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_create(&cpu, S->m, f->samples, n, 1, err, sizeof err)) fail_msg("%s", err);
    eval_result want_full, want_late, r;
    if (evaluator_set_base(ref, full, &want_full, NULL, err, sizeof err)) fail_msg("%s", err);
    if (evaluator_score(ref, late, &want_late, NULL, err, sizeof err)) fail_msg("%s", err);

    /* CPU: a flag already set stops before the first layer */
    atomic_int flag = 1;
    evaluator_set_cancel(cpu, &flag);
    err[0] = 0;
    assert_int_equal(evaluator_set_base(cpu, full, &r, NULL, err, sizeof err), EVAL_CANCELLED);
    assert_string_equal(err, "cancelled");
    assert_int_equal(evaluator_score(cpu, late, &r, NULL, err, sizeof err), EVAL_CANCELLED);
    /* cleared: no base was kept (from layer 0), and the results are the uncancelled ones */
    atomic_store(&flag, 0);
    if (evaluator_set_base(cpu, full, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, 0);
    assert_memory_equal(&r.score, &want_full.score, sizeof r.score);
    assert_memory_equal(&r.accuracy, &want_full.accuracy, sizeof r.accuracy);
    if (evaluator_score(cpu, late, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_memory_equal(&r.score, &want_late.score, sizeof r.score);

    /* a backend: the flag is handed to run(), which stops between layers; the evaluator runs no
     * further sample */
    test_backend tb = {.m = S->m, .cap = MAX_T, .cancel_flag = &flag, .cancel_at = 2};
    tb.ws = forward_ws_create(&S->m->hp, MAX_T);
    tb.x = malloc(sizeof(float) * MAX_T * S->m->hp.n_embd);
    assert_true(tb.ws && tb.x);
    const backend be = {&TEST_OPS, &tb, BACKEND_CPU, S->m};
    evaluator *gb;
    if (evaluator_create_on(&gb, S->m, &be, f->samples, n, 1, err, sizeof err)) fail_msg("%s", err);
    evaluator_set_cancel(gb, &flag);
    assert_int_equal(evaluator_set_base(gb, full, &r, NULL, err, sizeof err), EVAL_CANCELLED);
    assert_int_equal(tb.calls, 2);
    assert_int_equal(tb.bad_calls, 0);
    atomic_store(&flag, 0);
    tb.cancel_flag = NULL;
    if (evaluator_set_base(gb, full, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.first_layer, 0);
    assert_memory_equal(&r.score, &want_full.score, sizeof r.score);
    if (evaluator_score(gb, late, &r, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_memory_equal(&r.score, &want_late.score, sizeof r.score);

    /* forward_prefill reads the workspace's flag before each layer */
    atomic_store(&flag, 1);
    forward_ws_set_cancel(tb.ws, &flag);
    const eval_sample *x = &f->samples[0];
    assert_int_equal(forward_prefill(S->m, full, x->tokens, x->answer_start, NULL, NULL, 0, NULL, tb.ws),
                     FORWARD_CANCELLED);
    assert_string_equal(forward_ws_error(tb.ws), "cancelled");
    atomic_store(&flag, 0);
    assert_int_equal(forward_prefill(S->m, full, x->tokens, x->answer_start, NULL, NULL, 0, NULL, tb.ws), 0);

    evaluator_free(gb);
    evaluator_free(cpu);
    evaluator_free(ref);
    forward_ws_free(tb.ws);
    free(tb.x);
}

int main(int argc, char **argv) {
    if (argc > 1 && gemm_precision_parse(argv[1], &g_opts.precision) != 0) {
        fprintf(stderr, "usage: test_eval [fp32|bf16]\n");
        return 2;
    }
    if (g_opts.precision == PRECISION_BF16) { /* bf16 GEMMs need oneDNN's bf16 matmul (AVX-512 at least) */
        gemm_precision p;
        char err[256];
        if (gemm_precision_resolve(PRECISION_BF16, &p, err, sizeof err)) {
            fprintf(stderr, "skipped: %s\n", err);
            return 77;
        }
    }
    if (g_opts.precision == PRECISION_BF16) /* the commands' defaults: bf16 GEMMs and KV cache */
        g_nll_tol = NLL_TOL_BF16, g_nll_rel = NLL_REL_BF16, g_gap = GAP_BF16, g_opts.kv_type = ATTN_KV_BF16;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_numpy),    cmocka_unit_test(test_prefix_reuse_bitwise),
        cmocka_unit_test(test_bad_samples),      cmocka_unit_test(test_create_on_null_is_cpu),
        cmocka_unit_test(test_backend_contract), cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
