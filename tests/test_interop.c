/* test_interop.c — the interop formats of formats/ (duo.h, hf_config.h, trtllm.h, scores.h,
 * jsonio.h) and the servable projection (mask_servable, mask_servable_layers: engine/mask.h) on hand-made
 * masks and files, against hand-computed results: the projection's layers; the number of SWA heads of a
 * DuoAttention sparsity cut from numpy.quantile's linear rule (position s*(N-1); a head is full
 * when its gate >= the quantile); a DuoAttention folder written and read back; every bad file
 * refused with its file, line, column or field and value; the JSON files read back by json-c and
 * compared key by key. Real libraries read the files in tests/test_interop_cli.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "duo.h"
#include "hf_config.h"
#include "jsonio.h"
#include "mask.h"
#include "scores.h"
#include "trtllm.h"

static char dir[256];

static void put(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* 3 layers x 2 KV heads: layer 0 all SWA, layer 1 mixed, layer 2 all full. */
static void hand_mask(attn_mask *m) {
    assert_int_equal(mask_init(m, 3, 2, 64, 4, ATTN_FULL), 0);
    mask_set(m, 0, 0, ATTN_SWA);
    mask_set(m, 0, 1, ATTN_SWA);
    mask_set(m, 1, 1, ATTN_SWA);
}

static void test_servable_projection(void **s) {
    (void)s;
    attn_mask m, p;
    hand_mask(&m);
    uint8_t swa[3];
    assert_int_equal(mask_servable_layers(&m, swa), 1);
    assert_int_equal(mask_servable(&p, &m), 0);
    assert_int_equal(swa[0], 1);
    assert_int_equal(swa[1], 0);
    assert_int_equal(swa[2], 0);
    assert_int_equal(mask_count_swa(&p), 2); /* layer 0's two heads */
    assert_int_equal(mask_get(&p, 1, 1), ATTN_FULL);
    assert_int_equal(p.window, 64);
    assert_int_equal(p.sinks, 4);
    assert_int_equal(mask_servable_layers(NULL, swa), -1);
    mask_free(&p);
    mask_free(&m);
}

static void test_sparsity_count(void **s) {
    (void)s;
    /* numpy.quantile(g, s) sits at position s*(N-1) of the sorted gates; with distinct gates the
     * heads below it are ceil(s*(N-1)) */
    assert_int_equal(duo_sparsity_count(90, 0.5), 45); /* 44.5 -> 45 */
    assert_int_equal(duo_sparsity_count(3, 0.5), 1);   /* 1.0 exactly */
    assert_int_equal(duo_sparsity_count(4, 0.5), 2);   /* 1.5 -> 2 */
    assert_int_equal(duo_sparsity_count(10, 0.25), 3); /* 2.25 -> 3 */
    assert_int_equal(duo_sparsity_count(10, 0.0), 0);
    assert_int_equal(duo_sparsity_count(10, 1.0), 10);
}

static void test_duo_round_trip_and_cut(void **s) {
    (void)s;
    attn_mask m, back;
    char err[512];
    hand_mask(&m);
    assert_int_equal(duo_save(dir, &m, err, sizeof err), 0);
    duo_pattern p;
    model_hparams hp = {.n_layer = 3, .n_head_kv = 2, .n_ctx_train = 1024};
    assert_int_equal(duo_load(dir, &hp, &p, err, sizeof err), 0);
    assert_int_equal(p.sink_size, 4);
    assert_int_equal(p.recent_size, 64);
    assert_true(duo_is_binary(&p));
    assert_int_equal(duo_to_mask(&p, DUO_CUT_THRESHOLD, 0.5, &back), 0);
    assert_int_equal(memcmp(back.z, m.z, 6), 0);
    assert_int_equal(back.window, 64);
    mask_free(&back);
    duo_pattern_free(&p);
    /* gates: a sparsity 0.5 cut of 6 heads makes ceil(2.5) = 3 SWA: the three smallest; the tie at
     * 0.2 goes to the lower index first */
    put(DUO_TSV, "0.9\t0.2\n0.2\t0.7\n# comment\n\n0.1\t0.95\n");
    assert_int_equal(duo_load(dir, &hp, &p, err, sizeof err), 0);
    assert_false(duo_is_binary(&p));
    assert_int_equal(duo_to_mask(&p, DUO_CUT_SPARSITY, 0.5, &back), 0);
    const uint8_t want[6] = {1, 0, 0, 1, 0, 1};
    assert_memory_equal(back.z, want, 6);
    mask_free(&back);
    assert_int_equal(duo_to_mask(&p, DUO_CUT_SPARSITY, 0.3, &back), 0); /* ceil(1.5) = 2: 0.1, first 0.2 */
    const uint8_t want2[6] = {1, 0, 1, 1, 0, 1};
    assert_memory_equal(back.z, want2, 6);
    mask_free(&back);
    assert_int_equal(duo_to_mask(&p, DUO_CUT_THRESHOLD, 0.7, &back), 0); /* >= 0.7 full */
    const uint8_t want3[6] = {1, 0, 0, 1, 0, 1};
    assert_memory_equal(back.z, want3, 6);
    mask_free(&back);
    duo_pattern_free(&p);
    mask_free(&m);
}

/* Load dir with `tsv` and `cfg`; the error must contain `want`. */
static void expect_bad(const char *tsv, const char *cfg, const char *want) {
    char err[512] = "";
    duo_pattern p;
    model_hparams hp = {.n_layer = 2, .n_head_kv = 2, .n_ctx_train = 1024};
    put(DUO_TSV, tsv);
    put(DUO_CONFIG, cfg);
    assert_int_equal(duo_load(dir, &hp, &p, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_duo_bad_files(void **s) {
    (void)s;
    const char *ok = "{\"sink_size\": 4, \"recent_size\": 64}";
    expect_bad("1\t0\n1\t1.5\n", ok, "full_attention_heads.tsv: line 2, column 2: bad value '1.5'");
    expect_bad("1\t0\nx\t1\n", ok, "line 2, column 1: bad value 'x' (need a number in [0, 1])");
    expect_bad("1\t0\n-0.1\t1\n", ok, "bad value '-0.1'");
    expect_bad("1\t0\n1\n", ok, "line 2: 1 columns, line 1 has 2");
    expect_bad("1\t0\n1\t0\n1\t0\n", ok, "full_attention_heads.tsv: 3 lines (layers), the model has 2");
    expect_bad("1\t0\t1\n1\t0\t1\n", ok, "line 1: 3 columns (KV heads), the model has 2");
    expect_bad("", ok, "no rows");
    expect_bad("1\t0\n1\t0\n", "{\"recent_size\": 64}", "config.json: field 'sink_size': missing");
    expect_bad("1\t0\n1\t0\n", "{\"sink_size\": 4, \"recent_size\": \"64\"}",
               "field 'recent_size': bad value '\"64\"' (need an integer in [1,");
    expect_bad("1\t0\n1\t0\n", "{\"sink_size\": 4, \"recent_size\": 0}",
               "field 'recent_size': bad value '0'");
    expect_bad("1\t0\n1\t0\n", "{\"sink_size\": 4,\n \"recent_size\": }", "config.json: line 2:");
    expect_bad("1\t0\n1\t0\n", "[1, 2]", "config.json: the top level is not a JSON object");
}

/* The JSON file at path/name, parsed. */
static struct json_object *read_json(const char *name) {
    char p[512], err[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct json_object *o = NULL;
    if (json_read(p, 0, &o, err, sizeof err)) fail_msg("%s", err);
    return o;
}

static struct json_object *field(struct json_object *o, const char *key) {
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v)) fail_msg("no field %s", key);
    return v;
}

static void test_serving_files(void **s) {
    (void)s;
    attn_mask m;
    hand_mask(&m);
    char p[512], err[512];
    int n = -1;
    snprintf(p, sizeof p, "%s/hf.json", dir);
    assert_int_equal(hf_config_save(p, &m, "qwen3", &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    struct json_object *o = read_json("hf.json");
    struct json_object *types = field(o, "layer_types");
    assert_int_equal(json_object_array_length(types), 3);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(types, 0)), "sliding_attention");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(types, 1)), "full_attention");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(types, 2)), "full_attention");
    assert_int_equal(json_object_get_int(field(o, "sliding_window")), 64);
    assert_true(json_object_get_boolean(field(o, "use_sliding_window")));
    assert_string_equal(json_object_get_string(field(o, "model_type")), "qwen3");
    json_object_put(o);
    snprintf(p, sizeof p, "%s/trt.json", dir);
    assert_int_equal(trtllm_save(p, &m, 8192, &n, err, sizeof err), 0);
    o = read_json("trt.json");
    struct json_object *kv = field(o, "kv_cache_config"), *win = field(kv, "max_attention_window");
    assert_int_equal(json_object_array_length(win), 3);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(win, 0)), 64);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(win, 1)), 8192);
    assert_int_equal(json_object_get_int(json_object_array_get_idx(win, 2)), 8192);
    assert_int_equal(json_object_get_int(field(kv, "sink_token_length")), 4);
    json_object_put(o);
    assert_int_equal(trtllm_save(p, &m, 32, &n, err, sizeof err), -1); /* a full window below W */
    mask_free(&m);
}

static void test_scores(void **s) {
    (void)s;
    const double a[4] = {0.5, -1.0, 0.5, 2.0};
    int rank[4];
    scores_rank(a, 4, rank);
    assert_int_equal(rank[0], 2); /* 2.0 first, then the tie 0.5 by index, then -1 */
    assert_int_equal(rank[1], 4);
    assert_int_equal(rank[2], 3);
    assert_int_equal(rank[3], 1);
    char p[512], err[512];
    snprintf(p, sizeof p, "%s/echo.json", dir);
    assert_int_equal(scores_write_json(p, 2, 2, a, err, sizeof err), 0);
    struct json_object *o = read_json("echo.json");
    assert_int_equal(json_object_object_length(o), 4);
    assert_true(json_object_get_double(field(o, "0-1")) == -1.0);
    assert_true(json_object_get_double(field(o, "1-1")) == 2.0);
    json_object_put(o);
    snprintf(p, sizeof p, "%s/scores.csv", dir);
    const double *sc[4] = {a, NULL, a, NULL};
    const char *const names[4] = {"ablation", "fisher", "locality", "echo"};
    assert_int_equal(scores_write_csv(p, 2, 2, 4, names, sc, err, sizeof err), 0);
    FILE *f = fopen(p, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line,
                        "layer,kv_head,ablation,fisher,locality,echo,rank_ablation,rank_fisher,rank_locality,"
                        "rank_echo\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "0,0,0.5,,0.5,,2,,2,\n");
    fclose(f);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_interop.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_servable_projection),    cmocka_unit_test(test_sparsity_count),
        cmocka_unit_test(test_duo_round_trip_and_cut), cmocka_unit_test(test_duo_bad_files),
        cmocka_unit_test(test_serving_files),          cmocka_unit_test(test_scores),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) rc = rc ? rc : 1;
    return rc;
}
