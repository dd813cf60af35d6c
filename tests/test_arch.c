/* test_arch.c — the architecture registry (engine/arch.h).
 * References: names and shapes worked by hand from llama.cpp's conventions (gguf-py constants.py);
 * tests/fixtures/tiny_qwen3.gguf, written by the gguf-py writer (scripts/fixtures/make_tiny_qwen3.py),
 * whose keys and tensors the qwen3 row must name; the default model (SmolLM2, converted by
 * llama.cpp) for the llama row when it is present; and the files `bosch mkmodel --arch` writes
 * from the registry, loaded back by model_load. Runs in about a second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arch.h"
#include "forward.h"
#include "gguf.h"
#include "gguf_write.h"
#include "model.h"

static char err[1024];

/* Names and options worked by hand. */
static void test_rows(void **state) {
    (void)state;
    const model_arch *l = arch_find("llama"), *q = arch_find("qwen3");
    char buf[128];
    assert_non_null(l);
    assert_non_null(q);
    assert_null(arch_find("gemma"));
    assert_null(arch_find(NULL));
    /* the list starts with the two architectures of the fixtures; a row added later joins it */
    int n;
    const model_arch *rows = arch_list(&n);
    assert_true(n >= 2);
    assert_ptr_equal(&rows[0], l);
    assert_ptr_equal(&rows[1], q);
    assert_int_equal(strncmp(arch_names(buf, sizeof buf), "llama, qwen3", 12), 0);
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(arch_find(rows[i].name), &rows[i]); /* names are unique */
        for (int k = 0; k < ARCH_KEY_COUNT; k++) assert_non_null(rows[i].keys[k]);
        for (int t = 0; t < ARCH_T_COUNT; t++) assert_non_null(rows[i].tensors[t]);
    }
    assert_string_equal(arch_key_name(q, ARCH_KEY_HEAD_COUNT_KV, buf, sizeof buf),
                        "qwen3.attention.head_count_kv");
    assert_string_equal(arch_key_name(l, ARCH_KEY_RMS_EPS, buf, sizeof buf),
                        "llama.attention.layer_norm_rms_epsilon");
    assert_string_equal(arch_key_name(l, ARCH_KEY_ROPE_SCALING_TYPE, buf, sizeof buf),
                        "llama.rope.scaling.type");
    assert_string_equal(arch_tensor_name(l, ARCH_T_ATTN_Q, 7, buf, sizeof buf), "blk.7.attn_q.weight");
    assert_string_equal(arch_tensor_name(q, ARCH_T_ATTN_K_NORM, 12, buf, sizeof buf),
                        "blk.12.attn_k_norm.weight");
    assert_string_equal(arch_tensor_name(l, ARCH_T_TOKEN_EMBD, 3, buf, sizeof buf), "token_embd.weight");
    assert_string_equal(arch_tensor_name(l, ARCH_T_ROPE_FREQS, 0, buf, sizeof buf), "rope_freqs.weight");
    /* options: qwen3 norms q and k per head and rotates halves; both may tie the LM head */
    assert_int_equal(l->qk_norm, 0);
    assert_int_equal(q->qk_norm, 1);
    assert_int_equal(l->rope, ARCH_ROPE_ADJACENT);
    assert_int_equal(q->rope, ARCH_ROPE_NEOX);
    assert_int_equal(arch_tensor_use(l, ARCH_T_ATTN_Q_NORM), ARCH_USE_NONE);
    assert_int_equal(arch_tensor_use(q, ARCH_T_ATTN_Q_NORM), ARCH_USE_REQUIRED);
    assert_int_equal(arch_tensor_use(q, ARCH_T_OUTPUT), ARCH_USE_OPTIONAL);
    assert_int_equal(arch_tensor_use(l, ARCH_T_ROPE_FREQS), ARCH_USE_REFUSED);
    assert_int_equal(arch_tensor_use(l, ARCH_T_FFN_DOWN), ARCH_USE_REQUIRED);
    assert_string_equal(l->hf_model_type, "llama");
    assert_string_equal(q->hf_model_type, "qwen3");
}

/* GGUF shapes (ne[0] = input features first) at SmolLM2-135M's dimensions, by hand. */
static void test_shapes(void **state) {
    (void)state;
    arch_dims d = {576, 1536, 49152, 9, 3, 64};
    struct {
        arch_tensor t;
        uint64_t ne0, ne1;
    } want[] = {
        {ARCH_T_TOKEN_EMBD, 576, 49152}, {ARCH_T_OUTPUT_NORM, 576, 1}, {ARCH_T_ATTN_Q, 576, 576},
        {ARCH_T_ATTN_K, 576, 192},       {ARCH_T_ATTN_V, 576, 192},    {ARCH_T_ATTN_OUT, 576, 576},
        {ARCH_T_ATTN_Q_NORM, 64, 1},     {ARCH_T_FFN_GATE, 576, 1536}, {ARCH_T_FFN_DOWN, 1536, 576},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t ne[2];
        arch_tensor_shape(&d, want[i].t, ne);
        assert_int_equal(ne[0], want[i].ne0);
        assert_int_equal(ne[1], want[i].ne1);
    }
}

/* Every tensor the row requires is in `path` under the row's name with the row's shape, the row's
 * hyper-parameter keys are there, and nothing the row refuses is. Returns the tensors it checked. */
static int check_file_against_row(const char *path, const model_arch *a) {
    gguf_file *g;
    if (gguf_open(&g, path, err, sizeof err)) fail_msg("%s", err);
    char key[128], name[96];
    uint32_t v[6];
    const arch_key dk[6] = {ARCH_KEY_EMBEDDING_LENGTH, ARCH_KEY_FEED_FORWARD_LENGTH, ARCH_KEY_HEAD_COUNT,
                            ARCH_KEY_HEAD_COUNT_KV,    ARCH_KEY_BLOCK_COUNT,         ARCH_KEY_CONTEXT_LENGTH};
    for (int i = 0; i < 6; i++)
        if (gguf_get_u32(g, arch_key_name(a, dk[i], key, sizeof key), &v[i], err, sizeof err))
            fail_msg("%s", err);
    const gguf_tensor *te = gguf_find_tensor(g, arch_tensor_name(a, ARCH_T_TOKEN_EMBD, 0, name, sizeof name));
    assert_non_null(te);
    uint32_t hd = v[0] / v[2];
    if (gguf_find_kv(g, arch_key_name(a, ARCH_KEY_KEY_LENGTH, key, sizeof key)))
        assert_int_equal(gguf_get_u32(g, key, &hd, err, sizeof err), 0);
    arch_dims d = {(int)v[0], (int)v[1], (int)te->ne[1], (int)v[2], (int)v[3], (int)hd};
    int checked = 0;
    for (int l = -1; l < (int)v[4]; l++)
        for (int t = l < 0 ? 0 : ARCH_T_FIRST_LAYER; t < (l < 0 ? ARCH_T_FIRST_LAYER : ARCH_T_COUNT); t++) {
            arch_use use = arch_tensor_use(a, (arch_tensor)t);
            const gguf_tensor *x =
                gguf_find_tensor(g, arch_tensor_name(a, (arch_tensor)t, l, name, sizeof name));
            if (use == ARCH_USE_REFUSED) assert_null(x);
            if (use != ARCH_USE_REQUIRED) continue;
            if (!x) fail_msg("%s: no tensor '%s'", path, name);
            uint64_t ne[2];
            arch_tensor_shape(&d, (arch_tensor)t, ne);
            assert_int_equal(x->ne[0], ne[0]);
            assert_int_equal(x->ne[1], ne[1]);
            checked++;
        }
    gguf_close(g);
    return checked;
}

/* The rows name what independent writers wrote: gguf-py (the tiny Qwen3) and llama.cpp's
 * converter (the default SmolLM2, when present). */
static void test_rows_match_independent_files(void **state) {
    (void)state;
    /* tiny Qwen3: 2 layers of 11 tensors plus token_embd and output_norm */
    assert_int_equal(
        check_file_against_row(BOSCH_SOURCE_DIR "/tests/fixtures/tiny_qwen3.gguf", arch_find("qwen3")),
        2 + 11 * 2);
    if (access(BOSCH_DEFAULT_MODEL, R_OK) == 0) /* SmolLM2: 30 layers of 9 */
        assert_int_equal(check_file_against_row(BOSCH_DEFAULT_MODEL, arch_find("llama")), 2 + 9 * 30);
}

/* `bosch mkmodel --arch A` writes exactly the row's tensors, and model_load reads them back as A. */
static void test_mkmodel_every_row(void **state) {
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "/tmp/bosch_test_arch_%d.gguf", (int)getpid());
    int n;
    const model_arch *rows = arch_list(&n);
    for (int i = 0; i < n; i++) {
        mkmodel_shape s;
        assert_int_equal(mkmodel_preset("tiny", &s), 0);
        s.arch = rows[i].name;
        if (mkmodel_write(path, &s, err, sizeof err)) fail_msg("%s", err);
        int checked = check_file_against_row(path, &rows[i]);
        model *m;
        if (model_load(&m, path, err, sizeof err)) fail_msg("%s", err);
        assert_ptr_equal(m->hp.arch, &rows[i]);
        assert_int_equal(m->hp.rope_neox, rows[i].rope == ARCH_ROPE_NEOX);
        assert_int_equal(m->gguf->n_tensors, (uint64_t)checked); /* nothing else in the file */
        for (int l = 0; l < m->hp.n_layer; l++) {
            assert_int_equal(m->layers[l].q_norm != NULL, rows[i].qk_norm);
            assert_int_equal(m->layers[l].k_norm != NULL, rows[i].qk_norm);
            for (int t = ARCH_T_FIRST_LAYER; t < ARCH_T_COUNT; t++)
                assert_int_equal(model_layer_weight(&m->layers[l], (arch_tensor)t) != NULL,
                                 arch_tensor_use(&rows[i], (arch_tensor)t) == ARCH_USE_REQUIRED);
        }
        /* the writer ties the LM head wherever the row allows it */
        assert_int_equal(m->output == m->tok_embd, rows[i].tied_output);
        model_free(m);
    }
    unlink(path);
}

/* An architecture the registry does not know is refused by name, with the registered ones. */
static void test_unknown_architecture(void **state) {
    (void)state;
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    s.arch = "gemma"; /* its block (GELU FFN, embedding scale) is not one a row can describe */
    assert_int_equal(mkmodel_write("/tmp/bosch_test_arch_never.gguf", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown architecture 'gemma' (registered: llama, qwen3"));
    assert_int_equal(access("/tmp/bosch_test_arch_never.gguf", F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_rows_match_independent_files),
        cmocka_unit_test(test_mkmodel_every_row),
        cmocka_unit_test(test_unknown_architecture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
