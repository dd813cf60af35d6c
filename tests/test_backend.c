/* test_backend.c — engine/backend.h: one interface, the CPU and CUDA backends behind it.
 *
 * 1. The CPU backend's batched generation (backend_start / prefill / decode) gives bit for bit the
 *    logits of forward_prefill / forward_decode on a host KV cache (it is the same arithmetic), and
 *    a repeated prefill empties the cache first.
 * 2. What a backend does not offer is reported (the CPU: more than one sequence, the random KV
 *    fill), calls before backend_start fail with a message, the device choice and descriptions.
 * 3. On a GPU (or the kernels' CPU emulator, test_backend_emu): the same caller code on the CPU
 *    and the CUDA backend, logits within the GPU's bf16 bound (test_device's 0.05); backend_options
 *    chooses the prefill attention kernel (cuda_attn, the app's BOSCH_CUDA_ATTN), an unknown one
 *    is refused with the message the commands have always printed.
 * Models: mkmodel's "tiny" shape with 2 layers (no model file needed). */
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
#include "forward.h"
#include "gguf_write.h"
#include "kv_cache.h"
#include "model.h"

#define GPU_CPU_TOL 0.05f
#define N_PROMPT 20
#define N_DECODE 3

static char err[512];
static model *g_m;

static int setup(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "/tmp/bosch_test_backend_%d.gguf", (int)getpid());
    mkmodel_shape s;
    if (mkmodel_preset("tiny", &s)) return -1;
    s.n_layer = 2;
    int rc = mkmodel_write(path, &s, err, sizeof err) || model_load(&g_m, path, err, sizeof err);
    remove(path);
    if (rc) fprintf(stderr, "%s\n", err);
    return rc ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    model_free(g_m);
    return 0;
}

/* One SWA head (window 4, one sink) that the 20-token prompt wraps; the rest full. */
static void make_mask(attn_mask *mk) {
    assert_int_equal(mask_init(mk, g_m->hp.n_layer, g_m->hp.n_head_kv, 4, 1, ATTN_FULL), 0);
    mk->z[0] = ATTN_SWA;
}

static void make_tokens(int32_t *toks, int n) {
    for (int i = 0; i < n; i++) toks[i] = (int32_t)((i * 37 + 5) % g_m->hp.n_vocab);
}

/* The caller's side, the same for every backend: start, prefill, N_DECODE decode steps; logits
 * [1 + N_DECODE][n_vocab]. */
static void generate(backend *b, const attn_mask *mk, const int32_t *toks, float *logits) {
    const int V = g_m->hp.n_vocab, n_ctx = N_PROMPT + N_DECODE + 1;
    if (backend_start(b, mk, 1, n_ctx, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_seq(b), 1);
    assert_int_equal(backend_n_past(b), 0);
    assert_true(backend_kv_bytes(b) == kv_cache_bytes(&g_m->hp, mk, n_ctx, 4));
    if (backend_prefill(b, toks, N_PROMPT, logits, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_past(b), N_PROMPT);
    for (int d = 0; d < N_DECODE; d++) {
        if (backend_decode(b, &toks[N_PROMPT + d], logits + (size_t)(d + 1) * V, err, sizeof err))
            fail_msg("%s", err);
        assert_int_equal(backend_n_past(b), N_PROMPT + d + 1);
    }
}

/* forward.h directly: the reference of the CPU backend. */
static void reference(const attn_mask *mk, const int32_t *toks, float *logits) {
    const int V = g_m->hp.n_vocab;
    kv_cache kv;
    assert_int_equal(kv_cache_init(&kv, &g_m->hp, mk, N_PROMPT + N_DECODE + 1), 0);
    forward_ws *ws = forward_ws_create(&g_m->hp, N_PROMPT);
    assert_non_null(ws);
    int last = N_PROMPT - 1;
    assert_int_equal(forward_prefill(g_m, mk, toks, N_PROMPT, &kv, &last, 1, logits, ws), 0);
    for (int d = 0; d < N_DECODE; d++)
        assert_int_equal(forward_decode(g_m, mk, toks[N_PROMPT + d], &kv, logits + (size_t)(d + 1) * V, ws),
                         0);
    forward_ws_free(ws);
    kv_cache_free(&kv);
}

static void test_cpu_generation_is_forward(void **state) {
    (void)state;
    const size_t n = (size_t)(1 + N_DECODE) * g_m->hp.n_vocab;
    float *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n),
          *again = malloc(sizeof(float) * n);
    assert_true(want && got && again);
    int32_t toks[N_PROMPT + N_DECODE];
    make_tokens(toks, N_PROMPT + N_DECODE);
    attn_mask mk;
    make_mask(&mk);
    reference(&mk, toks, want);
    backend *b;
    const backend_options bo = {.device = BACKEND_CPU};
    if (backend_create(&b, &bo, g_m, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(b->device, BACKEND_CPU);
    generate(b, &mk, toks, got);
    assert_memory_equal(got, want, sizeof(float) * n);
    generate(b, &mk, toks, again); /* a new batch on the same backend: the same logits */
    assert_memory_equal(again, want, sizeof(float) * n);
    /* a repeated prefill empties the cache first */
    if (backend_prefill(b, toks, N_PROMPT, again, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_past(b), N_PROMPT);
    assert_memory_equal(again, want, sizeof(float) * g_m->hp.n_vocab);
    /* logits may be NULL */
    if (backend_decode(b, &toks[N_PROMPT], NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_past(b), N_PROMPT + 1);
    backend_free(b);
    mask_free(&mk);
    free(want), free(got), free(again);
}

static void test_cpu_refusals(void **state) {
    (void)state;
    backend *b;
    if (backend_cpu_create(&b, g_m, err, sizeof err)) fail_msg("%s", err);
    int32_t tok = 1;
    assert_int_equal(backend_prefill(b, &tok, 1, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "before backend_start"));
    assert_int_equal(backend_decode(b, &tok, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "before backend_start"));
    assert_int_equal(backend_start(b, NULL, 2, 8, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_seq 1"));
    assert_int_equal(backend_n_seq(b), 0);
    assert_true(backend_kv_bytes(b) == 0);
    /* NULL mask: all full; the cache holds n_ctx positions and is then full */
    if (backend_start(b, NULL, 1, 2, err, sizeof err)) fail_msg("%s", err);
    int32_t two[2] = {1, 2};
    if (backend_prefill(b, two, 2, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_decode(b, &tok, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "full"));
    assert_int_equal(backend_fill_random(b, 1, 1, err, sizeof err), -1);
    assert_string_equal(err, "the cpu backend has no random KV fill");
    assert_true(backend_peak_bytes(b) == 0);
    char desc[64];
    backend_describe(b, 1, desc, sizeof desc);
    assert_string_equal(desc, "cpu");
    backend_free(b);
    backend_free(NULL);
}

static void test_device_choice(void **state) {
    (void)state;
    backend *b;
    const backend_options bo = {.device = BACKEND_AUTO};
    if (backend_create(&b, &bo, g_m, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(b->device, backend_default_device());
    assert_string_equal(b->ops->name, backend_device_name(b->device));
    backend_free(b);
    const backend_options bad = {.device = (backend_device)7};
    b = (backend *)1;
    assert_int_equal(backend_create(&b, &bad, g_m, err, sizeof err), -1);
    assert_null(b);
    if (backend_cuda_count() > 0) return;
    const backend_options cuda = {.device = BACKEND_CUDA};
    assert_int_equal(backend_create(&b, &cuda, g_m, err, sizeof err), -1);
    assert_non_null(strstr(err, "--device cuda"));
}

/* ---- on a GPU (or the emulator) ---- */

static void test_same_calls_cpu_and_cuda(void **state) {
    (void)state;
    if (backend_cuda_count() == 0) skip();
    const int V = g_m->hp.n_vocab;
    const size_t n = (size_t)(1 + N_DECODE) * V;
    float *cpu = malloc(sizeof(float) * n), *gpu = malloc(sizeof(float) * n);
    assert_true(cpu && gpu);
    int32_t toks[N_PROMPT + N_DECODE];
    make_tokens(toks, N_PROMPT + N_DECODE);
    attn_mask mk;
    make_mask(&mk);
    static const char *const impls[] = {NULL, "fp32", "wmma"};
    for (size_t k = 0; k < sizeof impls / sizeof *impls; k++) {
        backend *bc, *bg;
        const backend_options oc = {.device = BACKEND_CPU};
        const backend_options og = {.device = BACKEND_CUDA, .cuda_attn = impls[k], .warm_up = 1};
        if (backend_create(&bc, &oc, g_m, err, sizeof err)) fail_msg("%s", err);
        if (backend_create(&bg, &og, g_m, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(bg->device, BACKEND_CUDA);
        assert_int_equal(backend_n_seq(bg), 0); /* the warm-up's batch is gone */
        generate(bc, &mk, toks, cpu);
        generate(bg, &mk, toks, gpu);
        for (size_t i = 0; i < n; i++)
            if (!(fabsf(gpu[i] - cpu[i]) <= GPU_CPU_TOL))
                fail_msg("attention %s, logit %zu: gpu %g, cpu %g", impls[k] ? impls[k] : "default", i,
                         gpu[i], cpu[i]);
        assert_true(backend_peak_bytes(bg) > 0);
        char desc[512];
        backend_describe(bg, 1, desc, sizeof desc);
        assert_non_null(strstr(desc, "cuda: "));
        assert_non_null(strstr(desc, "MiB of bf16 weights"));
        backend_describe(bg, 0, desc, sizeof desc);
        assert_null(strstr(desc, "cuda: "));
        backend_free(bc);
        backend_free(bg);
    }
    mask_free(&mk);
    free(cpu), free(gpu);
}

static void test_cuda_attn_refused(void **state) {
    (void)state;
    if (backend_cuda_count() == 0) skip();
    backend *b = (backend *)1;
    const backend_options o = {.device = BACKEND_CUDA, .cuda_attn = "tiled"};
    assert_int_equal(backend_create(&b, &o, g_m, err, sizeof err), -1);
    assert_null(b);
    assert_non_null(strstr(err, "BOSCH_CUDA_ATTN is 'tiled'; use mma"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_generation_is_forward),
        cmocka_unit_test(test_cpu_refusals),
        cmocka_unit_test(test_device_choice),
        cmocka_unit_test(test_same_calls_cpu_and_cuda),
        cmocka_unit_test(test_cuda_attn_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
