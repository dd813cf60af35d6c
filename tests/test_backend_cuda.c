/* test_backend_cuda.c — the GPU forward (engine/backend_cuda.h) against the CPU forward
 * (engine/forward.h, itself tested against llama-cpp-python) on the same GGUF: batched prefill
 * with a different mask per sequence, decode over the GPU hybrid KV cache, and the layer-level
 * entry used for prefix reuse. Models: the tiny qwen3 fixture, mkmodel's tiny model of every
 * registered architecture (engine/arch.h), and (on a GPU)
 * $BOSCH_MODEL or the default model; on a GPU machine
 * without the real model, scripts/gpu-check points BOSCH_MODEL at a random-weight GGUF made by
 * `bosch mkmodel`.
 *
 * Tolerance: the GPU rounds weights and GEMM inputs to bf16 (8 significant bits) and the CPU runs
 * fp32, so logits agree to about 1e-2 relative, compounded over the layers. We require, on the
 * CPU's 10 most likely tokens of every compared row,
 *     |logit_gpu - logit_cpu| <= 0.05 + 0.02 * max|logit_cpu|   (max over the row),
 * and the same argmax unless the CPU's two best logits are within that tolerance.
 * Skips (77) without CUDA in the build, without a GPU, or without the model file. */
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

#ifdef BOSCH_HAVE_CUDA
#include "backend_cuda.h"
#include "forward.h"
#include "kernels.h"
#include "kv_cache.h"
#include "gguf_write.h"
#include "model.h"

#define T_PREFILL 96
#define TOP_K 10

static model *g_model;
static cuda_model *g_gpu;
static char err[1024];

static void ok(int rc) {
    if (rc) fail_msg("%s", err);
}

static void fill_tokens(int32_t *t, int n, int n_vocab, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull; /* 64-bit LCG (Knuth's MMIX) */
        t[i] = (int32_t)((seed >> 33) % (uint64_t)n_vocab);
    }
}

/* Compare one row of logits as described at the top; returns the largest |Δ| seen. */
static double compare_row(const float *cpu, const float *gpu, int V, const char *what) {
    double amax = 0;
    int best = 0, second = -1;
    for (int i = 0; i < V; i++) {
        amax = fmax(amax, fabs(cpu[i]));
        if (cpu[i] > cpu[best]) best = i;
    }
    for (int i = 0; i < V; i++)
        if (i != best && (second < 0 || cpu[i] > cpu[second])) second = i;
    double tol = 0.05 + 0.02 * amax, worst = 0;
    int top[TOP_K];
    for (int k = 0; k < TOP_K; k++) { /* the CPU's k-th most likely token */
        int b = -1;
        for (int i = 0; i < V; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= top[j] == i;
            if (!taken && (b < 0 || cpu[i] > cpu[b])) b = i;
        }
        top[k] = b;
        double d = fabs((double)gpu[b] - cpu[b]);
        worst = fmax(worst, d);
        if (d > tol)
            fail_msg("%s: token %d: gpu %g, cpu %g, |diff| %g > tolerance %g", what, b, gpu[b], cpu[b], d,
                     tol);
    }
    int gbest = 0;
    for (int i = 0; i < V; i++)
        if (gpu[i] > gpu[gbest]) gbest = i;
    if (gbest != best && cpu[best] - cpu[second] > tol)
        fail_msg("%s: argmax gpu %d, cpu %d (cpu margin %g)", what, gbest, best, cpu[best] - cpu[second]);
    return worst;
}

/* Mask with every other (layer, kv_head) SWA, starting at `phase`. */
static void mixed_mask(attn_mask *mk, int window, int sinks, int phase) {
    const model_hparams *hp = &g_model->hp;
    assert_int_equal(mask_init(mk, hp->n_layer, hp->n_head_kv, window, sinks, ATTN_FULL), 0);
    for (int u = 0; u < hp->n_layer * hp->n_head_kv; u++)
        if ((u + phase) % 2 == 0) mk->z[u] = ATTN_SWA;
}

/* Two sequences with different masks in one GPU batch == two CPU forwards. */
static void test_prefill_batch(void **state) {
    (void)state;
    const int T = T_PREFILL, V = g_model->hp.n_vocab, n_rows = 6;
    attn_mask full, mixed;
    assert_int_equal(mask_init(&full, g_model->hp.n_layer, g_model->hp.n_head_kv, 1, 0, ATTN_FULL), 0);
    mixed_mask(&mixed, 16, 2, 0);
    const attn_mask *masks[2] = {&full, &mixed};
    int32_t tok[2 * T_PREFILL];
    fill_tokens(tok, 2 * T, V, 7);
    int cpu_rows[3] = {0, T / 2, T - 1}, gpu_rows[6];
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 3; i++) gpu_rows[s * 3 + i] = s * T + cpu_rows[i];
    float *gpu = malloc(sizeof(float) * n_rows * V), *cpu = malloc(sizeof(float) * 3 * V);
    ok(cuda_forward_prefill(g_gpu, masks, 2, tok, T, NULL, gpu_rows, n_rows, gpu, err, sizeof err));
    forward_ws *ws = forward_ws_create(&g_model->hp, T);
    double worst = 0;
    for (int s = 0; s < 2; s++) {
        assert_int_equal(forward_prefill(g_model, masks[s], tok + s * T, T, NULL, cpu_rows, 3, cpu, ws), 0);
        for (int i = 0; i < 3; i++) {
            char what[64];
            snprintf(what, sizeof what, "prefill seq %d row %d", s, cpu_rows[i]);
            worst = fmax(worst, compare_row(cpu + (size_t)i * V, gpu + (size_t)(s * 3 + i) * V, V, what));
        }
    }
    printf("prefill: max |logit diff| on top-%d tokens: %.4g\n", TOP_K, worst);
    forward_ws_free(ws);
    free(gpu), free(cpu);
    mask_free(&full), mask_free(&mixed);
}

/* Prefill into the GPU cache then decode 12 steps for 2 sequences == the CPU cache, step by step.
 * Window 8 < the prompt length, so the SWA rings wrap during prefill and decode. */
static void test_decode(void **state) {
    (void)state;
    const int T = 40, steps = 12, V = g_model->hp.n_vocab;
    attn_mask mk;
    mixed_mask(&mk, 8, 1, 1);
    int32_t tok[2][40 + 12];
    fill_tokens(tok[0], T + steps, V, 11);
    fill_tokens(tok[1], T + steps, V, 13);
    int32_t flat[2 * 40];
    memcpy(flat, tok[0], sizeof(int32_t) * T);
    memcpy(flat + T, tok[1], sizeof(int32_t) * T);
    const attn_mask *masks[2] = {&mk, &mk};
    cuda_kv *gkv;
    ok(cuda_kv_create(&gkv, g_gpu, &mk, 2, T + steps, err, sizeof err));
    float *gpu = malloc(sizeof(float) * 2 * V), *cpu = malloc(sizeof(float) * V);
    int last[2] = {T - 1, 2 * T - 1};
    ok(cuda_forward_prefill(g_gpu, masks, 2, flat, T, gkv, last, 2, gpu, err, sizeof err));
    assert_int_equal(cuda_kv_n_past(gkv), T);
    assert_int_equal(cuda_kv_bytes(gkv), 2 * kv_cache_bytes(&g_model->hp, &mk, T + steps, 4));
    kv_cache ckv[2];
    forward_ws *ws = forward_ws_create(&g_model->hp, T);
    double worst = 0;
    for (int s = 0; s < 2; s++) {
        assert_int_equal(kv_cache_init(&ckv[s], &g_model->hp, &mk, T + steps), 0);
        int row = T - 1;
        assert_int_equal(forward_prefill(g_model, &mk, tok[s], T, &ckv[s], &row, 1, cpu, ws), 0);
        worst = fmax(worst, compare_row(cpu, gpu + (size_t)s * V, V, "prefill into the cache"));
    }
    for (int d = 0; d < steps; d++) {
        int32_t next[2] = {tok[0][T + d], tok[1][T + d]};
        ok(cuda_decode(g_gpu, gkv, next, gpu, err, sizeof err));
        for (int s = 0; s < 2; s++) {
            assert_int_equal(forward_decode(g_model, &mk, next[s], &ckv[s], cpu, ws), 0);
            char what[64];
            snprintf(what, sizeof what, "decode seq %d position %d", s, T + d);
            worst = fmax(worst, compare_row(cpu, gpu + (size_t)s * V, V, what));
        }
    }
    printf("decode: max |logit diff| on top-%d tokens: %.4g\n", TOP_K, worst);
    for (int s = 0; s < 2; s++) kv_cache_free(&ckv[s]);
    cuda_kv_free(gkv);
    forward_ws_free(ws);
    free(gpu), free(cpu);
    mask_free(&mk);
}

/* Prefix reuse: the residual the GPU saves entering layer l equals the CPU's, and restarting the
 * GPU at layer l from the CPU's residual gives the CPU's logits. */
static void test_from_layer(void **state) {
    (void)state;
    const model_hparams *hp = &g_model->hp;
    const int T = 64, V = hp->n_vocab, E = hp->n_embd, l0 = hp->n_layer / 2;
    attn_mask mk;
    mixed_mask(&mk, 16, 0, 0);
    const attn_mask *masks[1] = {&mk};
    int32_t tok[64];
    fill_tokens(tok, T, V, 17);
    float *x = malloc(sizeof(float) * T * E), *saved = malloc(sizeof(float) * T * E);
    float *cpu = malloc(sizeof(float) * V), *gpu = malloc(sizeof(float) * V);
    forward_ws *ws = forward_ws_create(hp, T);
    assert_int_equal(forward_embed(g_model, tok, T, x), 0);
    for (int l = 0; l < l0; l++) assert_int_equal(forward_layer(g_model, l, &mk, x, T, 0, NULL, ws), 0);
    float **x_save = calloc((size_t)hp->n_layer, sizeof(float *));
    x_save[l0] = saved;
    int row = T - 1;
    ok(cuda_forward_layers(g_gpu, masks, 1, T, tok, NULL, 0, x_save, NULL, NULL, NULL, 0, NULL, err,
                           sizeof err));
    double dmax = 0, amax = 0;
    for (int i = 0; i < T * E; i++) dmax = fmax(dmax, fabs(saved[i] - x[i])), amax = fmax(amax, fabs(x[i]));
    printf("residual entering layer %d: max |diff| %.4g (max |x| %.4g)\n", l0, dmax, amax);
    if (dmax > 0.02 * amax + 0.05) fail_msg("saved residual differs: %g", dmax);
    ok(cuda_forward_layers(g_gpu, masks, 1, T, NULL, x, l0, NULL, NULL, NULL, &row, 1, gpu, err, sizeof err));
    for (int l = l0; l < hp->n_layer; l++)
        assert_int_equal(forward_layer(g_model, l, &mk, x, T, 0, NULL, ws), 0);
    forward_logits(g_model, x, &row, 1, cpu, ws);
    compare_row(cpu, gpu, V, "restart at the middle layer");
    forward_ws_free(ws);
    free(x_save), free(x), free(saved), free(cpu), free(gpu);
    mask_free(&mk);
}

/* Bad arguments are refused with a message, not run. */
static void test_errors(void **state) {
    (void)state;
    int32_t tok[4] = {0, 1, 2, g_model->hp.n_vocab};
    int row = 99;
    assert_int_equal(cuda_forward_prefill(g_gpu, NULL, 1, tok, 4, NULL, NULL, 0, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "outside the vocabulary"));
    float *logits = malloc(sizeof(float) * g_model->hp.n_vocab);
    assert_int_equal(cuda_forward_prefill(g_gpu, NULL, 1, tok, 3, NULL, &row, 1, logits, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "logit row 0 = 99"));
    assert_int_equal(cuda_forward_layers(g_gpu, NULL, 1, 3, tok, NULL, 1, NULL, NULL, NULL, NULL, 0, NULL,
                                         err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "x_in is NULL"));
    free(logits);
}

/* Load `path` (or, when NULL, write and load mkmodel's tiny model of architecture `arch`), put it on
 * the GPU, run the tests. */
static int run_on(const char *path, const char *arch) {
    char tmp[128] = "";
    if (!path) {
        mkmodel_shape s;
        snprintf(tmp, sizeof tmp, "/tmp/bosch_test_backend_cuda_%d.gguf", (int)getpid());
        if (mkmodel_preset("tiny", &s) || (s.arch = arch, mkmodel_write(tmp, &s, err, sizeof err))) {
            fprintf(stderr, "test_backend_cuda: mkmodel: %s\n", err);
            return 1;
        }
        path = tmp;
    }
    int loaded = model_load(&g_model, path, err, sizeof err) == 0;
    if (*tmp) remove(tmp);
    if (!loaded || cuda_model_create(&g_gpu, g_model, 0, getenv("BOSCH_CUDA_ATTN"), err, sizeof err)) {
        fprintf(stderr, "test_backend_cuda: %s\n", err);
        return 1;
    }
    printf("test_backend_cuda: %s (%s, %d layers) on the GPU: %.1f MiB of bf16 weights\n",
           *tmp ? "mkmodel tiny" : path, g_model->hp.arch->name, g_model->hp.n_layer,
           cuda_model_weight_bytes(g_gpu) / 1048576.0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_batch),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_from_layer),
        cmocka_unit_test(test_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cuda_model_free(g_gpu);
    model_free(g_model);
    return rc;
}

/* Every run covers every registered architecture on tiny models: the committed random qwen3 fixture
 * (q/k norms, untied LM head, written by gguf-py) and mkmodel's tiny model of each row of the
 * registry (engine/arch.h), so a row added there is checked here with no edit. On a GPU it also
 * runs $BOSCH_MODEL or the default model; over the CPU emulator (BOSCH_KERN_EMU) only the tiny
 * ones, which is what the emulator's speed allows. */
int main(void) {
    if (kern_device_count() == 0) {
        printf("test_backend_cuda: SKIP: no CUDA device\n");
        return 77;
    }
    int rc = run_on(BOSCH_SOURCE_DIR "/tests/fixtures/tiny_qwen3.gguf", NULL), n_arch;
    const model_arch *rows = arch_list(&n_arch);
    for (int i = 0; i < n_arch; i++) rc |= run_on(NULL, rows[i].name);
#ifndef BOSCH_KERN_EMU
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        rc |= run_on(path, NULL);
    } else {
        printf("test_backend_cuda: model %s not found; tested on the tiny models only\n", path);
    }
#endif
    printf("test_backend_cuda: peak GPU memory %.1f MiB\n", cuda_peak_bytes() / 1048576.0);
    return rc;
}
#else
int main(void) {
    printf("test_backend_cuda: SKIP: built without CUDA\n");
    return 77;
}
#endif
