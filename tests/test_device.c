/* test_device.c — the --device choice (tui/device.h): parsing, the default, and the messages when
 * CUDA is asked for but missing. On a machine with a GPU and a CUDA build, also runs one prompt
 * through the GPU path and checks its greedy next token against the CPU forward's, on a tiny
 * random model written by mkmodel (so it needs no model file). */
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

#include "device.h"
#include "forward.h"
#include "mkmodel.h"
#include "model.h"

static char err[512];

static void test_parse(void **state) {
    (void)state;
    bosch_device d = DEVICE_CUDA;
    assert_int_equal(device_parse("cpu", &d, err, sizeof err), 0);
    assert_int_equal(d, DEVICE_CPU);
    assert_int_equal(device_parse("auto", &d, err, sizeof err), 0);
    assert_int_equal(d, device_cuda_count() > 0 ? DEVICE_CUDA : DEVICE_CPU);
    assert_int_equal(device_default(), d);
    assert_int_equal(device_parse("gpu", &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "'gpu'"));
    assert_string_equal(device_name(DEVICE_CPU), "cpu");
    assert_string_equal(device_name(DEVICE_CUDA), "cuda");
}

/* Without a GPU (or without CUDA in the build) "cuda" is refused and the message says why. */
static void test_cuda_missing(void **state) {
    (void)state;
    if (device_cuda_count() > 0) skip();
    bosch_device d = DEVICE_CPU;
    assert_int_equal(device_parse("cuda", &d, err, sizeof err), -1);
#ifdef BOSCH_HAVE_CUDA
    assert_non_null(strstr(err, "no CUDA GPU is visible"));
#else
    assert_non_null(strstr(err, "no CUDA backend"));
#endif
    device_gpu *g = (device_gpu *)1;
    assert_int_equal(device_gpu_create(&g, NULL, err, sizeof err), -1);
    assert_null(g);
}

/* With a GPU: prefill + 3 decode steps on a tiny random model, logits close to the CPU's. */
static void test_gpu_matches_cpu(void **state) {
    (void)state;
    if (device_cuda_count() == 0) skip();
    char path[128];
    snprintf(path, sizeof path, "/tmp/bosch_test_device_%d.gguf", (int)getpid());
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    if (mkmodel_write(path, &s, err, sizeof err)) fail_msg("%s", err);
    model *m;
    if (model_load(&m, path, err, sizeof err)) fail_msg("%s", err);
    remove(path);
    attn_mask mk;
    assert_int_equal(mask_init(&mk, m->hp.n_layer, m->hp.n_head_kv, 4, 1, ATTN_FULL), 0);
    mk.z[0] = ATTN_SWA;
    const int T = 20, V = m->hp.n_vocab;
    int32_t toks[24];
    for (int i = 0; i < 24; i++) toks[i] = (int32_t)((i * 37 + 5) % V);
    device_gpu *g;
    if (device_gpu_create(&g, m, err, sizeof err)) fail_msg("%s", err);
    kv_cache kv;
    assert_int_equal(kv_cache_init(&kv, &m->hp, &mk, 24), 0);
    forward_ws *ws = forward_ws_create(&m->hp, T);
    float *cpu = malloc(sizeof(float) * V), *gpu = malloc(sizeof(float) * V);
    int last = T - 1;
    if (device_gpu_start(g, &mk, 24, err, sizeof err) || device_gpu_prefill(g, toks, T, gpu, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(forward_prefill(m, &mk, toks, T, &kv, &last, 1, cpu, ws), 0);
    for (int step = 0; step <= 3; step++) {
        for (int i = 0; i < V; i++)
            if (fabsf(gpu[i] - cpu[i]) > 0.05f)
                fail_msg("step %d token %d: gpu %g cpu %g", step, i, gpu[i], cpu[i]);
        if (step == 3) break;
        if (device_gpu_decode(g, toks[T + step], gpu, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(forward_decode(m, &mk, toks[T + step], &kv, cpu, ws), 0);
    }
    assert_int_equal(device_gpu_kv_bytes(g), kv_cache_bytes(&m->hp, &mk, 24, 4));
    assert_true(device_gpu_peak_bytes() > 0);
    device_gpu_free(g);
    kv_cache_free(&kv);
    forward_ws_free(ws);
    free(cpu), free(gpu);
    mask_free(&mk);
    model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_cuda_missing),
        cmocka_unit_test(test_gpu_matches_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
