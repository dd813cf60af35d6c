/* test_mkmodel.c — the random-weight GGUF generator (engine/gguf_write.h) against an independent reader:
 * tests/fixtures/mkmodel_tiny.txt was made by scripts/fixtures/make_mkmodel_fixture.py, which reads
 * the file `bosch mkmodel OUT --shape tiny --seed 7` writes with the PyPI gguf package and runs a
 * numpy llama forward on it. Here the same file is written again, loaded by our model_load, and
 * its metadata, tensors, tokens and CPU forward logits are compared with those numbers. Also: the
 * same seed writes the same bytes, bad shapes are refused, and the smollm2 preset has the default
 * model's shape (when that model is present). */
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

#include "forward.h"
#include "gguf_write.h"
#include "model.h"
#include "quant.h"

static char path_a[256], path_b[256];
static char err[1024];

static void write_tiny(const char *path, uint64_t seed) {
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    s.seed = seed;
    if (mkmodel_write(path, &s, err, sizeof err)) fail_msg("%s", err);
}

static FILE *open_fixture(void) {
    FILE *f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/mkmodel_tiny.txt", "r");
    if (!f) fail_msg("missing fixture tests/fixtures/mkmodel_tiny.txt");
    return f;
}

static int hp_value(const model_hparams *hp, const char *key, double *v) {
    if (!strcmp(key, "llama.block_count"))
        *v = hp->n_layer;
    else if (!strcmp(key, "llama.embedding_length"))
        *v = hp->n_embd;
    else if (!strcmp(key, "llama.feed_forward_length"))
        *v = hp->n_ff;
    else if (!strcmp(key, "llama.attention.head_count"))
        *v = hp->n_head;
    else if (!strcmp(key, "llama.attention.head_count_kv"))
        *v = hp->n_head_kv;
    else if (!strcmp(key, "llama.rope.freq_base"))
        *v = hp->rope_base;
    else if (!strcmp(key, "llama.attention.layer_norm_rms_epsilon"))
        *v = hp->rms_eps;
    else if (!strcmp(key, "llama.context_length"))
        *v = hp->n_ctx_train;
    else
        return -1;
    return 0;
}

/* Metadata, every tensor (sum and first values after dequantization) and token texts. */
static void test_file_matches_reader(void **state) {
    (void)state;
    write_tiny(path_a, 7);
    model *m;
    if (model_load(&m, path_a, err, sizeof err)) fail_msg("%s", err);
    FILE *f = open_fixture();
    char line[512];
    int n_kv = 0, n_tensor = 0, n_token = 0;
    while (fgets(line, sizeof line, f)) {
        char key[128], type[16], hex[128];
        double v, sum, first[4];
        unsigned long long ne0, ne1;
        int id;
        if (sscanf(line, "kv %127s %lf", key, &v) == 2) {
            double got;
            if (hp_value(&m->hp, key, &got)) fail_msg("unexpected key %s", key);
            assert_float_equal(got, v, 1e-6 * fabs(v));
            n_kv++;
        } else if (sscanf(line, "tensor %127s %15s %llu %llu %lf %lf %lf %lf %lf", key, type, &ne0, &ne1,
                          &sum, &first[0], &first[1], &first[2], &first[3]) == 9) {
            const gguf_tensor *t = gguf_find_tensor(m->gguf, key);
            assert_non_null(t);
            assert_string_equal(quant_type_name(t->type), type);
            assert_int_equal(t->ne[0], ne0);
            assert_int_equal(t->ne[1], ne1);
            float *w = malloc(sizeof(float) * ne0 * ne1);
            assert_int_equal(quant_dequantize(t->type, t->data, w, ne0 * ne1), 0);
            double s = 0;
            for (size_t i = 0; i < ne0 * ne1; i++) s += w[i];
            if (fabs(s - sum) > 1e-5 * (1 + fabs(sum))) fail_msg("%s: sum %.9g, reference %.9g", key, s, sum);
            for (int i = 0; i < 4; i++) assert_float_equal(w[i], first[i], 1e-7 + 1e-6 * fabs(first[i]));
            free(w);
            n_tensor++;
        } else if (sscanf(line, "token %d %127s", &id, hex) == 2) {
            const char *text = tokenizer_token_text(m->tok, id);
            char got[128] = "";
            for (size_t i = 0; text && text[i] && 2 * i + 2 < sizeof got; i++)
                snprintf(got + 2 * i, 3, "%02x", (unsigned char)text[i]);
            assert_string_equal(got, hex);
            n_token++;
        }
    }
    fclose(f);
    assert_int_equal(n_kv, 8);
    assert_int_equal(n_tensor, 2 + 9 * m->hp.n_layer);
    assert_true(n_token >= 5);
    model_free(m);
}

/* Our CPU forward on the generated file equals the numpy forward on what gguf-py read. */
static void test_forward_matches_numpy(void **state) {
    (void)state;
    write_tiny(path_a, 7);
    model *m;
    if (model_load(&m, path_a, err, sizeof err)) fail_msg("%s", err);
    FILE *f = open_fixture();
    char line[1024];
    int32_t toks[64];
    int n_tok = 0, n_checked = 0;
    float *logits = NULL;
    forward_ws *ws = NULL;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "tokens ", 7)) {
            char *p = line + 7, *end;
            for (long v = strtol(p, &end, 10); end != p && n_tok < 64; v = strtol(p, &end, 10))
                toks[n_tok++] = (int32_t)v, p = end;
            int rows[64];
            for (int i = 0; i < n_tok; i++) rows[i] = i;
            logits = malloc(sizeof(float) * n_tok * m->hp.n_vocab);
            ws = forward_ws_create(&m->hp, n_tok);
            assert_int_equal(forward_prefill(m, NULL, toks, n_tok, NULL, rows, n_tok, logits, ws), 0);
        } else if (!strncmp(line, "pos ", 4)) {
            assert_non_null(logits);
            char *p = line + 4, *end;
            int pos = (int)strtol(p, &end, 10);
            p = end;
            int id;
            double want;
            int used;
            while (sscanf(p, " %d:%lf%n", &id, &want, &used) == 2) {
                float got = logits[(size_t)pos * m->hp.n_vocab + id];
                if (fabs(got - want) > 1e-3)
                    fail_msg("position %d token %d: logit %g, numpy %g", pos, id, got, want);
                n_checked++;
                p += used;
            }
        }
    }
    fclose(f);
    assert_int_equal(n_checked, 24);
    free(logits);
    forward_ws_free(ws);
    model_free(m);
}

/* The same seed writes the same bytes; another seed other bytes. */
static void test_deterministic(void **state) {
    (void)state;
    write_tiny(path_a, 7);
    write_tiny(path_b, 7);
    FILE *a = fopen(path_a, "rb"), *b = fopen(path_b, "rb");
    assert_non_null(a);
    assert_non_null(b);
    int ca, cb;
    long n = 0;
    do {
        ca = fgetc(a), cb = fgetc(b), n++;
        if (ca != cb) fail_msg("files differ at byte %ld", n - 1);
    } while (ca != EOF);
    fclose(a), fclose(b);
    write_tiny(path_b, 8);
    model *ma, *mb;
    if (model_load(&ma, path_a, err, sizeof err) || model_load(&mb, path_b, err, sizeof err))
        fail_msg("%s", err);
    assert_true(ma->layers[0].wq[0] != mb->layers[0].wq[0] || ma->layers[0].wq[1] != mb->layers[0].wq[1]);
    model_free(ma), model_free(mb);
}

static void test_bad_shapes(void **state) {
    (void)state;
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("nonesuch", &s), -1);
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    s.n_embd = 100;
    assert_int_equal(mkmodel_write(path_b, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_embd"));
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    s.n_head_kv = 3;
    assert_int_equal(mkmodel_write(path_b, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_head"));
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    assert_int_equal(mkmodel_write("/nonexistent-dir/x.gguf", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/x.gguf"));
}

/* The smollm2 preset has the shape of the real default model (read from its file). */
static void test_preset_is_default_shape(void **state) {
    (void)state;
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK) != 0) skip();
    model *m;
    if (model_load(&m, path, err, sizeof err)) fail_msg("%s", err);
    if (m->hp.n_layer != 30) { /* BOSCH_MODEL points at another model */
        model_free(m);
        skip();
    }
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("smollm2", &s), 0);
    assert_int_equal(s.n_layer, m->hp.n_layer);
    assert_int_equal(s.n_embd, m->hp.n_embd);
    assert_int_equal(s.n_head, m->hp.n_head);
    assert_int_equal(s.n_head_kv, m->hp.n_head_kv);
    assert_int_equal(s.n_ff, m->hp.n_ff);
    assert_int_equal(s.n_vocab, m->hp.n_vocab);
    assert_int_equal(s.n_ctx, m->hp.n_ctx_train);
    assert_float_equal(s.rope_base, m->hp.rope_base, 1e-3);
    assert_float_equal(s.rms_eps, m->hp.rms_eps, 1e-9);
    model_free(m);
}

int main(void) {
    snprintf(path_a, sizeof path_a, "/tmp/bosch_test_mkmodel_%d_a.gguf", (int)getpid());
    snprintf(path_b, sizeof path_b, "/tmp/bosch_test_mkmodel_%d_b.gguf", (int)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_matches_reader),     cmocka_unit_test(test_forward_matches_numpy),
        cmocka_unit_test(test_deterministic),           cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_preset_is_default_shape),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    remove(path_a);
    remove(path_b);
    return rc;
}
