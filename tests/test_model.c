/* test_model.c — model_load: hyper-parameters, dequantized weights, tied/untied output, errors.
 *
 * Reference values were read from the same files with the Python `gguf` package
 * (GGUFReader + gguf.quants.dequantize), independent of our GGUF reader and dequantizers:
 *   python3 -c "import gguf; r = gguf.GGUFReader(PATH); ..."  (tensor element [row][col], row sums,
 *   sum of tensor byte sizes). tiny_qwen3.gguf is made by scripts/fixtures/make_tiny_qwen3.py.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define TINY BOSCH_SOURCE_DIR "/tests/fixtures/tiny_qwen3.gguf"

static const char *default_model(void) {
    const char *e = getenv("BOSCH_MODEL");
    return e && *e ? e : BOSCH_DEFAULT_MODEL;
}

static double row_sum(const float *w, int row, int cols) {
    double s = 0;
    for (int i = 0; i < cols; i++) s += w[(size_t)row * cols + i];
    return s;
}

static void test_smollm2(void **state) {
    (void)state;
    model *m = NULL;
    char err[512] = "";
    if (model_load(&m, default_model(), err, sizeof err) != 0) fail_msg("%s", err);
    const model_hparams *hp = &m->hp;
    assert_string_equal(hp->arch->name, "llama");
    assert_int_equal(hp->n_layer, 30);
    assert_int_equal(hp->n_head, 9);
    assert_int_equal(hp->n_head_kv, 3);
    assert_int_equal(hp->head_dim, 64);
    assert_int_equal(hp->n_embd, 576);
    assert_int_equal(hp->n_ff, 1536);
    assert_int_equal(hp->n_ctx_train, 8192);
    assert_int_equal(hp->n_vocab, 49152);
    assert_int_equal(hp->rope_dim, 64);
    assert_int_equal(hp->rope_neox, 0);
    assert_true(hp->rope_base == 100000.0f);
    assert_true(fabsf(hp->rms_eps - 1e-5f) < 1e-9f);
    /* tied embedding: the LM head is token_embd */
    assert_ptr_equal(m->output, m->tok_embd);
    assert_null(m->layers[0].q_norm);
    assert_null(m->layers[29].k_norm);
    assert_true(m->load_s > 0.0);
    assert_int_equal(model_file_bytes(m), 96576768ull);
    /* dequantized values (Q8_0, Q4_1, F32) against gguf.quants.dequantize */
    assert_true(m->tok_embd[(size_t)49151 * 576 + 575] == -0.0417022705078125f);
    assert_true(m->tok_embd[(size_t)1 * 576 + 0] == -0.0238037109375f);
    assert_true(fabs(row_sum(m->tok_embd, 49151, 576) - -0.4662208557128906) < 1e-4);
    assert_true(m->layers[0].wq[5 * 576 + 17] == 0.076171875f);
    assert_true(fabs(row_sum(m->layers[0].wq, 5, 576) - -3.731201171875) < 1e-4);
    assert_true(m->layers[29].w_down[575 * 1536 + 1535] == 0.056640625f);
    assert_true(fabs(row_sum(m->layers[29].w_down, 575, 1536) - -5.229949951171875) < 1e-4);
    assert_true(m->layers[13].wk[100 * 576 + 300] == -0.072021484375f);
    assert_true(fabs(row_sum(m->layers[13].wk, 100, 576) - 4.481201171875) < 1e-4);
    assert_true(m->output_norm[7] == 1.75f);
    assert_non_null(m->tok);
    model_free(m);
}

static void test_tiny_qwen3(void **state) {
    (void)state;
    model *m = NULL;
    char err[512] = "";
    if (model_load(&m, TINY, err, sizeof err) != 0) fail_msg("%s", err);
    const model_hparams *hp = &m->hp;
    assert_string_equal(hp->arch->name, "qwen3");
    assert_int_equal(hp->rope_neox, 1);
    assert_int_equal(hp->n_layer, 2);
    assert_int_equal(hp->n_embd, 64);
    assert_int_equal(hp->n_head, 4);
    assert_int_equal(hp->n_head_kv, 2);
    assert_int_equal(hp->head_dim, 32); /* key_length, not n_embd / n_head = 16 */
    assert_int_equal(hp->rope_dim, 32);
    assert_int_equal(hp->n_ff, 96);
    assert_int_equal(hp->n_vocab, 300);
    assert_true(hp->rope_base == 1.0e6f);
    assert_true(m->output != m->tok_embd);
    assert_non_null(m->layers[1].q_norm);
    assert_non_null(m->layers[1].k_norm);
    assert_int_equal(model_file_bytes(m), 499456ull);
    assert_true(m->layers[1].k_norm[31] == 1.230682373046875f);
    assert_true(m->output[299 * 64 + 63] == -0.21006111800670624f);
    assert_true(m->tok_embd[7 * 64 + 3] == 0.6032105684280396f);
    model_free(m);
}

static void test_missing_file(void **state) {
    (void)state;
    model *m = (model *)1;
    char err[512] = "";
    assert_int_equal(model_load(&m, "/nonexistent/dir/model.gguf", err, sizeof err), -1);
    assert_null(m);
    assert_non_null(strstr(err, "/nonexistent/dir/model.gguf"));
    assert_non_null(strstr(err, "scripts/setup"));
}

/* Read the tiny model into memory, let `patch` change it, write it to a temp file, load it. */
static int load_patched(void (*patch)(unsigned char *, size_t), char *err, size_t errlen) {
    FILE *f = fopen(TINY, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n);
    assert_int_equal(fread(buf, 1, n, f), n);
    fclose(f);
    patch(buf, n);
    char path[] = "/tmp/bosch_test_model_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *o = fdopen(fd, "wb");
    assert_int_equal(fwrite(buf, 1, n, o), n);
    fclose(o);
    free(buf);
    model *m = NULL;
    int rc = model_load(&m, path, err, errlen);
    model_free(m);
    remove(path);
    return rc;
}

static void replace_all(unsigned char *b, size_t n, const char *from, const char *to) {
    size_t k = strlen(from);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(b + i, from, k)) memcpy(b + i, to, k);
}

static void patch_arch(unsigned char *b, size_t n) {
    replace_all(b, n, "qwen3", "gemma");
}

/* qwen3.embedding_length: key bytes, then the u32 type tag, then the u32 value -> 65 */
static void patch_embd(unsigned char *b, size_t n) {
    const char *key = "qwen3.embedding_length";
    size_t k = strlen(key);
    for (size_t i = 0; i + k + 8 <= n; i++)
        if (!memcmp(b + i, key, k)) {
            unsigned char *v = b + i + k + 4;
            v[0] = 65, v[1] = v[2] = v[3] = 0;
            return;
        }
    fail_msg("key not found");
}

static void test_bad_arch_and_shape(void **state) {
    (void)state;
    char err[512] = "";
    assert_int_equal(load_patched(patch_arch, err, sizeof err), -1);
    assert_non_null(strstr(err, "unsupported architecture 'gemma'"));
    err[0] = 0;
    assert_int_equal(load_patched(patch_embd, err, sizeof err), -1);
    assert_non_null(strstr(err, "token_embd.weight"));
    assert_non_null(strstr(err, "[65, 300]"));
    assert_non_null(strstr(err, "[64, 300]"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_qwen3),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_bad_arch_and_shape),
    };
    int rc = cmocka_run_group_tests_name("model", tests, NULL, NULL);
    FILE *probe = fopen(default_model(), "rb");
    if (!probe) {
        fprintf(stderr, "skip: %s missing (run scripts/setup)\n", default_model());
        return rc ? 1 : 77;
    }
    fclose(probe);
    const struct CMUnitTest real[] = {cmocka_unit_test(test_smollm2)};
    rc |= cmocka_run_group_tests_name("smollm2", real, NULL, NULL);
    return rc ? 1 : 0;
}
