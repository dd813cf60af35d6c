/* test_eval_cuda.c — the evaluator on the GPU: the CUDA backend from engine/backend.h (over
 * cuda_forward_layers, engine/backend_cuda_ops.c) against the CPU evaluator, and prefix reuse
 * on the GPU against a from-scratch GPU evaluator.
 *
 * Models: a random llama of 6 layers written by mkmodel (the "tiny" preset with more layers and
 * larger weights, so logits spread and exact matches are decided by clear margins), the committed
 * random qwen3 fixture tests/fixtures/tiny_qwen3.gguf (2 layers, F32 weights, per-head q/k
 * RMSNorm), and on a real GPU also the default model (SmolLM2-135M) when its file is present.
 *
 * 1. GPU vs CPU. The reference is the CPU forward (forward.h, itself tested against numpy and
 *    llama.cpp). The GPU evaluator runs through a spy backend that forwards every call to the
 *    cuda backend and keeps the logits it returned, so for each sample and mask the test measures
 *    d = max |logit_gpu - logit_cpu| over the answer rows (all n_vocab logits), which must stay
 *    within test_backend_cuda's bf16 bound 0.05 + 0.02 * max|logit_cpu| (docs/gpu.md). The
 *    evaluator's answer NLL is, per position, LSE(logits) - logit[answer]; each term moves by at
 *    most max|delta logit|, so |nll_gpu - nll_cpu| <= 2 d exactly (plus double rounding), and an
 *    argmax cannot change where the CPU's two best logits are more than 2 d apart: the exact-match
 *    flag must then be equal. So the evaluator-level tolerances are derived, not tuned; the test
 *    counts how many flags were decided by such a margin and requires some of each outcome.
 * 2. Prefix reuse on the GPU: an evaluator with a base (evaluator_set_base) and a from-scratch one
 *    on the same backend, interleaved (they share one cuda_model and its scratch), give bitwise
 *    equal results, restarting at the expected first layer.
 *
 * Skips (77) without CUDA in the build or without a GPU; the _emu build (tests/CMakeLists.txt)
 * runs it on the CPU emulator of the kernels (kernels/emu/), where the default model is skipped
 * (too slow there). */
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

#include "backend.h"
#include "eval.h"
#include "forward.h"
#include "gguf_write.h"
#include "model.h"

#ifdef BOSCH_HAVE_CUDA

enum { N_S = 4, N_MASK = 4, MAX_T = 128, MAX_A = 8 };

typedef struct {
    const char *name;
    model *m;
    int32_t tok[N_S][MAX_T];
    eval_sample samples[N_S];
    attn_mask masks[N_MASK]; /* full, all SWA, late (layers >= L/2: KV head 0 SWA), checkerboard */
    const char *mask_name[N_MASK];
} tcase;

static char err[1024];
static backend *g_dev; /* one per model: the upload is shared by every evaluator */

static void ok(int rc) {
    if (rc) fail_msg("%s", err);
}

static void fill_tokens(int32_t *t, int n, int n_vocab, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull; /* 64-bit LCG (Knuth's MMIX) */
        t[i] = (int32_t)(3 + (seed >> 33) % (uint64_t)(n_vocab - 3));
    }
}

/* CPU logits [n_rows][n_vocab] of rows of a whole prefill (the reference). */
static void cpu_logits(const model *m, const attn_mask *mask, const int32_t *tok, int n, const int *rows,
                       int n_rows, float *logits) {
    forward_ws *ws = forward_ws_create(&m->hp, n);
    assert_non_null(ws);
    assert_int_equal(forward_prefill(m, mask, tok, n, NULL, rows, n_rows, logits, ws), 0);
    forward_ws_free(ws);
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Samples of different lengths; samples 0 and 2 answer with the CPU's greedy tokens under the full
 * mask (exact matches), the others with random tokens (misses). */
static void make_samples(tcase *c, int scale) {
    const model *m = c->m;
    const int V = m->hp.n_vocab;
    const int len[N_S] = {24 * scale, 31 * scale, 40 * scale, 48 * scale}, na[N_S] = {3, 4, 3, 5};
    float *lg = malloc(sizeof(float) * V);
    assert_non_null(lg);
    for (int s = 0; s < N_S; s++) {
        assert_true(len[s] <= MAX_T && na[s] <= MAX_A);
        fill_tokens(c->tok[s], len[s], V, 1000u + (uint64_t)s);
        int start = len[s] - na[s];
        c->samples[s] = (eval_sample){c->tok[s], len[s], start, na[s]};
        if (s % 2) continue;
        for (int a = 0; a < na[s]; a++) {
            int last = start + a - 1;
            cpu_logits(m, &c->masks[0], c->tok[s], start + a, &last, 1, lg);
            c->tok[s][start + a] = argmax(lg, V);
        }
    }
    free(lg);
}

static void make_masks(tcase *c) {
    const int L = c->m->hp.n_layer, H = c->m->hp.n_head_kv;
    static const char *names[N_MASK] = {"full", "all_swa", "late", "checker"};
    for (int k = 0; k < N_MASK; k++) {
        c->mask_name[k] = names[k];
        assert_int_equal(
            mask_init(&c->masks[k], L, H, k == 3 ? 5 : 8, k == 3 ? 1 : 2, k == 1 ? ATTN_SWA : ATTN_FULL), 0);
    }
    for (int l = L / 2; l < L; l++) mask_set(&c->masks[2], l, 0, ATTN_SWA);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) mask_set(&c->masks[3], l, h, (l + h) % 2 ? ATTN_SWA : ATTN_FULL);
}

static void case_free(tcase *c) {
    for (int k = 0; k < N_MASK; k++) mask_free(&c->masks[k]);
    backend_free(g_dev);
    g_dev = NULL;
    model_free(c->m);
    c->m = NULL;
}

static tcase g_llama = {.name = "random llama (mkmodel, 6 layers)"};
static tcase g_qwen3 = {.name = "tiny_qwen3.gguf"};
#ifndef BOSCH_KERN_EMU
static tcase g_real = {.name = "default model"};
#endif

static int setup_common(tcase *c, int scale) {
    make_masks(c);
    make_samples(c, scale);
    const backend_options bo = {.device = BACKEND_CUDA};
    if (backend_create(&g_dev, &bo, c->m, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int setup_llama(void **state) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/bosch_test_eval_cuda_%d.gguf", (int)getpid());
    mkmodel_shape s;
    if (mkmodel_preset("tiny", &s)) return -1;
    s.n_layer = 6;
    s.std = 0.06f; /* logits of std ~ 0.06 * sqrt(n_embd) = 0.7: margins well above bf16 noise */
    if (mkmodel_write(path, &s, err, sizeof err) || model_load(&g_llama.m, path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        remove(path);
        return -1;
    }
    remove(path);
    *state = &g_llama;
    return setup_common(&g_llama, 1);
}

static int setup_qwen3(void **state) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/tiny_qwen3.gguf", BOSCH_SOURCE_DIR);
    if (model_load(&g_qwen3.m, path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = &g_qwen3;
    return setup_common(&g_qwen3, 1);
}

#ifndef BOSCH_KERN_EMU
static int setup_real(void **state) {
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (model_load(&g_real.m, path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = &g_real;
    return setup_common(&g_real, 2);
}
#endif

static int teardown(void **state) {
    case_free(*state);
    return 0;
}

/* ---- 1. GPU vs CPU ----------------------------------------------------------------------------- */

/* Forwards to the cuda backend and keeps the logits of call i (sample i of one evaluation). */
typedef struct {
    const backend *inner;
    float *logits; /* [N_S][MAX_A][n_vocab] */
    int n_vocab, call;
} spy;

static int spy_run(void *ctx, const attn_mask *mask, int n_tokens, const int32_t *tokens, const float *x_in,
                   int first, float *const *x_save, const int *rows, int n_rows, float *logits,
                   const atomic_int *cancel, char *e, size_t elen) {
    spy *p = ctx;
    int rc = p->inner->ops->run(p->inner->ctx, mask, n_tokens, tokens, x_in, first, x_save, rows, n_rows,
                                logits, cancel, e, elen);
    if (rc == 0 && p->call < N_S && n_rows <= MAX_A)
        memcpy(p->logits + (size_t)p->call * MAX_A * p->n_vocab, logits, sizeof(float) * n_rows * p->n_vocab);
    p->call++;
    return rc;
}

static void test_gpu_vs_cpu(void **state) {
    tcase *c = *state;
    const model *m = c->m;
    const int V = m->hp.n_vocab;
    const backend *be = g_dev;
    assert_non_null(be);
    assert_string_equal(be->ops->name, "cuda");
    assert_int_equal(be->device, BACKEND_CUDA);
    spy sp = {be, malloc(sizeof(float) * N_S * MAX_A * V), V, 0};
    static const backend_ops spy_ops = {.name = "cuda", .run = spy_run};
    const backend spy_be = {&spy_ops, &sp, BACKEND_CUDA, m};
    evaluator *cpu, *gpu;
    ok(evaluator_create(&cpu, m, c->samples, N_S, 0, err, sizeof err));
    ok(evaluator_create_on(&gpu, m, &spy_be, c->samples, N_S, 0, err, sizeof err));
    assert_ptr_equal(evaluator_backend(gpu), &spy_be);
    float *lc = malloc(sizeof(float) * MAX_A * V);
    assert_true(lc && sp.logits);
    int decided[2] = {0, 0}; /* exact-match flags decided by a margin > 2d: misses, matches */
    double worst_d = 0, worst_dnll = 0, worst_rel = 0;
    for (int k = 0; k < N_MASK; k++) {
        const attn_mask *mk = &c->masks[k];
        eval_sample_result rc[N_S], rg[N_S];
        eval_result oc, og;
        ok(evaluator_score(cpu, mk, &oc, rc, err, sizeof err));
        sp.call = 0;
        ok(evaluator_score(gpu, mk, &og, rg, err, sizeof err));
        assert_int_equal(og.first_layer, 0);
        assert_int_equal(sp.call, N_S); /* one backend call per sample */
        double bound_score = 0;
        for (int s = 0; s < N_S; s++) {
            const eval_sample *x = &c->samples[s];
            int n = x->answer_start + x->n_answer - 1, rows[MAX_A];
            for (int a = 0; a < x->n_answer; a++) rows[a] = x->answer_start - 1 + a;
            cpu_logits(m, mk, x->tokens, n, rows, x->n_answer, lc);
            const float *lg = sp.logits + (size_t)s * MAX_A * V;
            double d = 0, amax = 0, margin = INFINITY;
            for (int a = 0; a < x->n_answer; a++) {
                const float *pc = lc + (size_t)a * V, *pg = lg + (size_t)a * V;
                int b1 = argmax(pc, V), b2 = b1 ? 0 : 1;
                for (int i = 0; i < V; i++) {
                    d = fmax(d, fabs((double)pg[i] - pc[i]));
                    amax = fmax(amax, fabs((double)pc[i]));
                    if (i != b1 && pc[i] > pc[b2]) b2 = i;
                }
                margin = fmin(margin, (double)pc[b1] - pc[b2]);
            }
            if (d > 0.05 + 0.02 * amax)
                fail_msg("%s, mask %s, sample %d: max |logit gpu - cpu| %.4g over bound %.4g", c->name,
                         c->mask_name[k], s, d, 0.05 + 0.02 * amax);
            double dnll = fabs(rg[s].nll - rc[s].nll);
            if (dnll > 2 * d + 1e-9)
                fail_msg("%s, mask %s, sample %d: nll gpu %.6f cpu %.6f differ by more than 2 x %.3g",
                         c->name, c->mask_name[k], s, rg[s].nll, rc[s].nll, d);
            /* p = exp(-nll): |p_gpu - p_cpu| <= p_cpu (exp(2d) - 1) */
            assert_true(fabs(rg[s].p_answer - rc[s].p_answer) <= rc[s].p_answer * expm1(2 * d) + 1e-12);
            bound_score += rc[s].p_answer * expm1(2 * d) / N_S;
            if (margin > 2 * d) {
                assert_int_equal(rg[s].exact, rc[s].exact);
                decided[rc[s].exact]++;
            }
            worst_d = fmax(worst_d, d);
            worst_dnll = fmax(worst_dnll, dnll);
            worst_rel = fmax(worst_rel, d / fmax(amax, 1e-30));
        }
        assert_true(fabs(og.score - oc.score) <= bound_score + 1e-12);
    }
    fprintf(stderr,
            "  %s: max |logit gpu - cpu| %.3g (%.3g of max|logit|), max |nll gpu - cpu| %.3g; "
            "exact flags decided by margin: %d matches, %d misses\n",
            c->name, worst_d, worst_rel, worst_dnll, decided[1], decided[0]);
    assert_true(decided[0] > 0 && decided[1] > 0); /* both outcomes were really compared */
    free(lc), free(sp.logits);
    evaluator_free(cpu);
    evaluator_free(gpu);
}

/* ---- 2. prefix reuse on the GPU ----------------------------------------------------------------- */

static void expect_same(const eval_sample_result *a, const eval_sample_result *b) {
    for (int s = 0; s < N_S; s++) {
        assert_int_equal(a[s].exact, b[s].exact);
        assert_memory_equal(&a[s].nll, &b[s].nll, sizeof(double));
        assert_memory_equal(&a[s].p_answer, &b[s].p_answer, sizeof(double));
    }
}

static void check_reuse(evaluator *reuse, evaluator *scratch, const attn_mask *m, int want_first) {
    eval_sample_result a[N_S], b[N_S];
    eval_result ra, rb;
    ok(evaluator_score(reuse, m, &ra, a, err, sizeof err));
    ok(evaluator_score(scratch, m, &rb, b, err, sizeof err));
    assert_int_equal(ra.first_layer, want_first);
    assert_int_equal(rb.first_layer, 0);
    expect_same(a, b);
    assert_memory_equal(&ra.score, &rb.score, sizeof(double));
}

static void test_gpu_prefix_reuse(void **state) {
    tcase *c = *state;
    const int L = c->m->hp.n_layer, H = c->m->hp.n_head_kv;
    const backend *be = g_dev;
    evaluator *reuse, *scratch;
    ok(evaluator_create_on(&reuse, c->m, be, c->samples, N_S, 1, err, sizeof err));
    ok(evaluator_create_on(&scratch, c->m, be, c->samples, N_S, 0, err, sizeof err));
    const attn_mask *full = &c->masks[0], *late = &c->masks[2], *check = &c->masks[3];
    eval_result r;
    ok(evaluator_set_base(reuse, full, &r, NULL, err, sizeof err));
    assert_int_equal(r.first_layer, 0);
    check_reuse(reuse, scratch, late, L / 2); /* late differs from full at layer L/2 */
    check_reuse(reuse, scratch, check, 0);
    check_reuse(reuse, scratch, full, L); /* the base itself */
    ok(evaluator_set_base(reuse, late, &r, NULL, err, sizeof err));
    assert_int_equal(r.first_layer, L / 2);
    attn_mask tail, w4;
    assert_int_equal(mask_copy(&tail, late), 0);
    mask_set(&tail, L - 1, H - 1, ATTN_SWA); /* only the last layer differs from late */
    check_reuse(reuse, scratch, &tail, L - 1);
    assert_int_equal(mask_copy(&w4, late), 0);
    w4.window = 4; /* same z, other window: from the first layer with an SWA head */
    check_reuse(reuse, scratch, &w4, L / 2);
    ok(evaluator_set_base(reuse, &tail, &r, NULL, err, sizeof err));
    assert_int_equal(r.first_layer, L - 1);
    check_reuse(reuse, scratch, late, L - 1);
    check_reuse(reuse, scratch, full, L / 2);
    mask_free(&tail);
    mask_free(&w4);
    evaluator_free(reuse);
    evaluator_free(scratch);
}

/* The CPU choice gives the CPU backend (forward.h), which allocates nothing on a GPU. */
static void test_cpu_choice(void **state) {
    tcase *c = *state;
    backend *de = NULL;
    const backend_options bo = {.device = BACKEND_CPU};
    ok(backend_create(&de, &bo, c->m, err, sizeof err));
    assert_int_equal(de->device, BACKEND_CPU);
    assert_string_equal(de->ops->name, "cpu");
    char desc[256];
    backend_describe(de, 1, desc, sizeof desc);
    assert_string_equal(desc, "cpu");
    backend_describe(g_dev, 1, desc, sizeof desc);
    assert_non_null(strstr(desc, "cuda"));
    backend_free(de);
}

#endif /* BOSCH_HAVE_CUDA */

int main(void) {
#ifndef BOSCH_HAVE_CUDA
    fprintf(stderr, "test_eval_cuda: this build has no CUDA backend, skipping\n");
    return 77;
#else
    if (backend_cuda_count() == 0) {
        fprintf(stderr, "test_eval_cuda: no CUDA GPU is visible, skipping (test_eval_cuda_emu runs the same "
                        "checks on the CPU emulator of the kernels)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_vs_cpu),
        cmocka_unit_test(test_gpu_prefix_reuse),
        cmocka_unit_test(test_cpu_choice),
    };
    int fails = cmocka_run_group_tests_name("random llama", tests, setup_llama, teardown);
    fails += cmocka_run_group_tests_name("tiny qwen3", tests, setup_qwen3, teardown);
#ifndef BOSCH_KERN_EMU
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK) == 0)
        fails += cmocka_run_group_tests_name("default model", tests, setup_real, teardown);
    else
        fprintf(stderr, "test_eval_cuda: %s missing, default-model group skipped\n", path);
#endif
    return fails;
#endif
}
