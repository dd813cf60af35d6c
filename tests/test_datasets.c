/* test_datasets.c — probe generators (datasets/): determinism, exact lengths, needles, answers,
 * disjoint calibration / held-out splits, the leak guard, names, and the PRNG against an
 * independent Python reference (tests/fixtures/probe_rng.txt, scripts/fixtures/make_probe_rng.py).
 * Uses the default model's tokenizer (the GGUF's metadata only; no weights are dequantized).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gguf.h"
#include "haystack.h"
#include "probes.h"
#include "search.h"
#include "tokenizer.h"

/* Compile-time leak guard: the search's real objective takes a calibration set, never a probe_set
 * (which is the only form held-out samples take). */
_Static_assert(_Generic(&search_objective_calib,
                        int (*)(search_objective *, const model *, const calib_set *, char *, size_t) : 1,
                        default : 0),
               "search_objective_calib must take a const calib_set *");

typedef struct {
    gguf_file *g;
    tokenizer *tok;
} fixture;

static const char *model_path(void) {
    const char *p = getenv("BOSCH_MODEL");
    return p && *p ? p : BOSCH_DEFAULT_MODEL;
}

static int setup(void **state) {
    static fixture f;
    char err[512];
    if (gguf_open(&f.g, model_path(), err, sizeof err)) {
        fprintf(stderr, "test_datasets: %s\n", err);
        return -1;
    }
    if (tokenizer_load(&f.tok, f.g, err, sizeof err)) {
        fprintf(stderr, "test_datasets: %s\n", err);
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tokenizer_free(f->tok);
    gguf_close(f->g);
    return 0;
}

static void gen(const fixture *f, probe_set *set, probe_task task, haystack_kind hk, int len, int n,
                probe_split split, uint64_t seed) {
    probe_config c = probe_config_default();
    c.task = task;
    c.haystack = hk;
    c.length_tokens = len;
    c.n_samples = n;
    c.n_keys = 4;
    char err[512] = "";
    int rc = probe_set_generate(set, f->tok, &c, split, seed, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(set->n, n);
}

/* Occurrences of needle[0..m) in hay[0..n). */
static int count_sub(const int32_t *hay, int n, const int32_t *needle, int m) {
    int c = 0;
    for (int i = 0; i + m <= n; i++)
        if (!memcmp(hay + i, needle, (size_t)m * sizeof *hay)) c++;
    return c;
}

static int count_str(const char *hay, const char *needle) {
    int c = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) c++;
    return c;
}

static void test_rng_matches_python(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/probe_rng.txt", BOSCH_SOURCE_DIR);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    unsigned long long seed, want[5];
    int lines = 0;
    while (fscanf(fp, "%llu %llu %llu %llu %llu %llu", &seed, &want[0], &want[1], &want[2], &want[3],
                  &want[4]) == 6) {
        uint64_t s = seed;
        for (int i = 0; i < 5; i++) assert_true(probe_rng_next(&s) == (uint64_t)want[i]);
        lines++;
    }
    fclose(fp);
    assert_int_equal(lines, 4);
    /* rejection sampling stays in range and reaches both ends */
    uint64_t s = 7;
    int seen[7] = {0};
    for (int i = 0; i < 700; i++) seen[probe_rng_below(&s, 7)]++;
    for (int i = 0; i < 7; i++) assert_true(seen[i] > 50);
}

static void test_same_seed_same_samples(void **state) {
    const fixture *f = *state;
    for (int task = 0; task < PROBE_TASK_COUNT; task++) {
        probe_set a, b, c, d;
        gen(f, &a, (probe_task)task, HAYSTACK_TEXT, 300, 3, PROBE_SPLIT_HELDOUT, 42);
        gen(f, &b, (probe_task)task, HAYSTACK_TEXT, 300, 3, PROBE_SPLIT_HELDOUT, 42);
        gen(f, &c, (probe_task)task, HAYSTACK_TEXT, 300, 3, PROBE_SPLIT_HELDOUT, 43);
        gen(f, &d, (probe_task)task, HAYSTACK_TEXT, 300, 1, PROBE_SPLIT_HELDOUT, 42);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(a.samples[i].n_tokens, b.samples[i].n_tokens);
            assert_memory_equal(a.samples[i].tokens, b.samples[i].tokens, 300 * sizeof(int32_t));
            assert_string_equal(a.samples[i].value[0], b.samples[i].value[0]);
            assert_memory_not_equal(a.samples[i].tokens, c.samples[i].tokens, 300 * sizeof(int32_t));
        }
        /* sample i does not depend on how many samples are drawn */
        assert_memory_equal(a.samples[0].tokens, d.samples[0].tokens, 300 * sizeof(int32_t));
        probe_set_free(&a);
        probe_set_free(&b);
        probe_set_free(&c);
        probe_set_free(&d);
    }
}

/* Every task x haystack x length: exact length, needles once at their recorded positions, the
 * answer decodes to the queried value and closes the sample, the value text appears once in the
 * prompt, the queried key is in the question, depths are near their targets. */
static void test_samples_well_formed(void **state) {
    const fixture *f = *state;
    static const int lengths[] = {200, 777, 1024, 2048};
    for (int task = 0; task < PROBE_TASK_COUNT; task++)
        for (int hk = 0; hk < HAYSTACK_KIND_COUNT; hk++)
            for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
                probe_set s;
                gen(f, &s, (probe_task)task, (haystack_kind)hk, lengths[li], 4, PROBE_SPLIT_CALIBRATION, 7);
                for (int i = 0; i < s.n; i++) {
                    const probe_sample *p = &s.samples[i];
                    assert_int_equal(p->n_tokens, lengths[li]);
                    assert_int_equal(p->answer_start + p->n_answer, p->n_tokens);
                    assert_int_equal(p->n_needles, task == PROBE_NIAH_MULTIKEY ? 4 : 1);
                    assert_true(p->query >= 0 && p->query < p->n_needles);
                    char *ans = tokenizer_decode(f->tok, p->tokens + p->answer_start, (size_t)p->n_answer, 0);
                    assert_string_equal(ans, p->value[p->query]);
                    assert_int_equal((int)strlen(ans), task == PROBE_PASSKEY ? 5 : 7);
                    assert_int_equal(p->n_answer, (int)strlen(ans)); /* one token per digit */
                    free(ans);
                    char *prompt = tokenizer_decode(f->tok, p->tokens, (size_t)p->answer_start, 1);
                    for (int j = 0; j < p->n_needles; j++) {
                        const int32_t *nt = p->tokens + p->needle_pos[j];
                        assert_true(p->needle_pos[j] >= p->haystack_start);
                        assert_true(p->needle_pos[j] + p->needle_len[j] <=
                                    p->haystack_start + p->haystack_len);
                        assert_int_equal(count_sub(p->tokens, p->n_tokens, nt, p->needle_len[j]), 1);
                        char *ntext = tokenizer_decode(f->tok, nt, (size_t)p->needle_len[j], 0);
                        assert_non_null(strstr(ntext, p->value[j]));
                        if (task != PROBE_PASSKEY) assert_non_null(strstr(ntext, p->key[j]));
                        free(ntext);
                        assert_int_equal(count_str(prompt, p->value[j]), 1);
                        double d = (double)(p->needle_pos[j] - p->haystack_start) / p->haystack_len;
                        assert_true(d == p->depth[j]);
                        for (int k = 0; k < j; k++) {
                            assert_string_not_equal(p->value[k], p->value[j]);
                            if (task != PROBE_PASSKEY) assert_string_not_equal(p->key[k], p->key[j]);
                        }
                    }
                    /* the question (after the haystack) names the queried key */
                    if (task != PROBE_PASSKEY) {
                        char *tail = tokenizer_decode(
                            f->tok, p->tokens + p->haystack_start + p->haystack_len,
                            (size_t)(p->answer_start - p->haystack_start - p->haystack_len), 1);
                        assert_non_null(strstr(tail, p->key[p->query]));
                        free(tail);
                    }
                    /* depth within a sentence (noise) or a sentence-ish unit (text) of the target */
                    double tol = hk == HAYSTACK_NOISE ? 24.0 / p->haystack_len + 1e-9 : 0.2;
                    if (lengths[li] >= 1024)
                        assert_true(p->depth[p->query] >= p->depth_target - tol &&
                                    p->depth[p->query] <= p->depth_target + tol);
                    /* the chat template wraps the prompt: it starts with <|im_start|> */
                    assert_int_equal(p->tokens[0], tokenizer_find(f->tok, "<|im_start|>"));
                    free(prompt);
                }
                probe_set_free(&s);
            }
}

static void test_plain_prompt(void **state) {
    const fixture *f = *state;
    probe_config c = probe_config_default();
    c.use_chat = 0;
    c.length_tokens = 256;
    c.n_samples = 2;
    probe_set s;
    char err[256];
    assert_int_equal(probe_set_generate(&s, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), 0);
    assert_int_equal(s.samples[0].n_tokens, 256);
    assert_int_not_equal(s.samples[0].tokens[0], tokenizer_find(f->tok, "<|im_start|>"));
    eval_sample es[2];
    probe_set_eval_samples(&s, es);
    assert_ptr_equal(es[1].tokens, s.samples[1].tokens);
    assert_int_equal(es[1].answer_start, s.samples[1].answer_start);
    assert_int_equal(es[1].n_answer, 7);
    assert_int_equal(es[1].n_tokens, 256);
    probe_set_free(&s);
}

/* Calibration, validation and held-out: pairwise disjoint depth grids, no shared needle, no
 * shared sample. */
static void check_disjoint(const probe_set *x, const probe_set *y, int task) {
    for (int i = 0; i < x->n; i++) {
        const probe_sample *a = &x->samples[i];
        for (int j = 0; j < y->n; j++) {
            const probe_sample *b = &y->samples[j];
            assert_true(a->depth_target != b->depth_target);
            assert_memory_not_equal(a->tokens, b->tokens, 256 * sizeof(int32_t));
            /* 7-digit needles never repeat across splits here (5-digit pass keys could by chance,
             * harmlessly: their samples still differ) */
            for (int u = 0; task != PROBE_PASSKEY && u < a->n_needles; u++)
                for (int v = 0; v < b->n_needles; v++) assert_string_not_equal(a->value[u], b->value[v]);
        }
    }
}

static void test_splits_disjoint(void **state) {
    const fixture *f = *state;
    for (int i = 0; i < probe_n_calib_depths; i++)
        for (int j = 0; j < probe_n_heldout_depths; j++)
            assert_true(probe_calib_depths[i] != probe_heldout_depths[j]);
    for (int i = 0; i < probe_n_valid_depths; i++) {
        for (int j = 0; j < probe_n_heldout_depths; j++)
            assert_true(probe_valid_depths[i] != probe_heldout_depths[j]);
        for (int j = 0; j < probe_n_calib_depths; j++)
            assert_true(probe_valid_depths[i] != probe_calib_depths[j]);
    }
    for (int task = 0; task < PROBE_TASK_COUNT; task++) {
        probe_set cal, held, val;
        /* same caller seed on purpose: the split itself must separate them */
        gen(f, &cal, (probe_task)task, HAYSTACK_NOISE, 256, 16, PROBE_SPLIT_CALIBRATION, 99);
        gen(f, &held, (probe_task)task, HAYSTACK_NOISE, 256, 16, PROBE_SPLIT_HELDOUT, 99);
        gen(f, &val, (probe_task)task, HAYSTACK_NOISE, 256, 16, PROBE_SPLIT_VALIDATION, 99);
        for (int i = 0; i < cal.n; i++)
            assert_true(cal.samples[i].depth_target == probe_calib_depths[i % probe_n_calib_depths]);
        for (int i = 0; i < val.n; i++)
            assert_true(val.samples[i].depth_target == probe_valid_depths[i % probe_n_valid_depths]);
        check_disjoint(&cal, &held, task);
        check_disjoint(&cal, &val, task);
        check_disjoint(&val, &held, task);
        probe_set_free(&cal);
        probe_set_free(&held);
        probe_set_free(&val);
    }
}

/* A calibration mix: each task's calibration samples, in order, as the single-task sets make them. */
static void test_calib_mix(void **state) {
    const fixture *f = *state;
    probe_config c[3] = {probe_config_default(), probe_config_default(), probe_config_default()};
    c[1].task = PROBE_NIAH_MULTIKEY, c[1].haystack = HAYSTACK_TEXT;
    c[2].task = PROBE_PASSKEY;
    const int n[3] = {2, 2, 1};
    for (int t = 0; t < 3; t++) c[t].length_tokens = 256, c[t].n_samples = n[t];
    char err[512] = "";
    calib_set *cs = NULL;
    assert_int_equal(probe_calib_generate_mix(&cs, f->tok, c, 3, PROBE_DEFAULT_CALIB_SEED, err, sizeof err),
                     0);
    assert_int_equal(calib_set_split(cs), PROBE_SPLIT_CALIBRATION);
    assert_int_equal(calib_set_n(cs), 5);
    int k = 0;
    for (int t = 0; t < 3; t++) {
        probe_set one;
        assert_int_equal(probe_set_generate(&one, f->tok, &c[t], PROBE_SPLIT_CALIBRATION,
                                            PROBE_DEFAULT_CALIB_SEED, err, sizeof err),
                         0);
        for (int i = 0; i < one.n; i++, k++) {
            assert_int_equal(calib_set_sample(cs, k)->n_tokens, 256);
            assert_memory_equal(calib_set_sample(cs, k)->tokens, one.samples[i].tokens,
                                256 * sizeof(int32_t));
        }
        probe_set_free(&one);
    }
    calib_set_free(cs);
    c[1].depths = probe_calib_depths, c[1].n_depths = 1;
    assert_int_equal(probe_calib_generate_mix(&cs, f->tok, c, 3, PROBE_DEFAULT_CALIB_SEED, err, sizeof err),
                     -1);
    assert_null(cs);
}

/* The search's only input type: made only from the calibration split. */
static void test_calib_set_guard(void **state) {
    const fixture *f = *state;
    probe_config c = probe_config_default();
    c.length_tokens = 256;
    c.n_samples = 3;
    char err[512] = "";
    calib_set *cs = NULL;
    assert_int_equal(probe_calib_generate(&cs, f->tok, &c, PROBE_DEFAULT_CALIB_SEED, err, sizeof err), 0);
    assert_int_equal(calib_set_split(cs), PROBE_SPLIT_CALIBRATION);
    assert_int_equal(calib_set_n(cs), 3);
    assert_int_equal(calib_set_config(cs)->length_tokens, 256);
    /* identical to a calibration probe_set with the same seed, different from the held-out one */
    probe_set cal, held;
    assert_int_equal(probe_set_generate(&cal, f->tok, &c, PROBE_SPLIT_CALIBRATION, PROBE_DEFAULT_CALIB_SEED,
                                        err, sizeof err),
                     0);
    assert_int_equal(
        probe_set_generate(&held, f->tok, &c, PROBE_SPLIT_HELDOUT, PROBE_DEFAULT_CALIB_SEED, err, sizeof err),
        0);
    eval_sample es[3];
    calib_set_eval_samples(cs, es);
    for (int i = 0; i < 3; i++) {
        assert_ptr_equal(es[i].tokens, calib_set_sample(cs, i)->tokens);
        assert_memory_equal(es[i].tokens, cal.samples[i].tokens, 256 * sizeof(int32_t));
        assert_memory_not_equal(es[i].tokens, held.samples[i].tokens, 256 * sizeof(int32_t));
    }
    probe_set_free(&cal);
    probe_set_free(&held);
    calib_set_free(cs);

    /* a forged calib_set (not from probe_calib_generate) is not reported as calibration */
    static uint64_t junk[64];
    assert_int_equal(calib_set_split((const calib_set *)junk), PROBE_SPLIT_HELDOUT);
    assert_int_equal(calib_set_split(NULL), PROBE_SPLIT_HELDOUT);
    /* and the search refuses it before touching the model */
    search_objective obj;
    memset(&obj, 0, sizeof obj);
    assert_int_equal(search_objective_calib(&obj, NULL, (const calib_set *)junk, err, sizeof err), -1);

    /* depth overrides: never on the calibration split, never a calibration depth */
    double own[] = {0.33}, stolen[] = {probe_calib_depths[2]};
    c.depths = own;
    c.n_depths = 1;
    cs = NULL;
    assert_int_equal(probe_calib_generate(&cs, f->tok, &c, 1, err, sizeof err), -1);
    assert_null(cs);
    assert_int_equal(probe_set_generate(&cal, f->tok, &c, PROBE_SPLIT_CALIBRATION, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "held-out"));
    assert_int_equal(probe_set_generate(&held, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), 0);
    assert_true(held.samples[0].depth_target == 0.33);
    assert_null(held.cfg.depths);
    probe_set_free(&held);
    c.depths = stolen;
    assert_int_equal(probe_set_generate(&held, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "calibration depth"));
}

static void test_bad_configs(void **state) {
    const fixture *f = *state;
    probe_config c = probe_config_default();
    probe_set s;
    char err[512];
    c.length_tokens = 100;
    assert_int_equal(probe_set_generate(&s, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "length_tokens 100"));
    c = probe_config_default();
    c.task = PROBE_NIAH_MULTIKEY;
    c.n_keys = 8;
    c.length_tokens = 160; /* 8 needles and the template do not fit */
    assert_int_equal(probe_set_generate(&s, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "too short"));
    c.n_keys = 1;
    assert_int_equal(probe_set_generate(&s, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_keys 1"));
    c = probe_config_default();
    c.n_samples = 0;
    assert_int_equal(probe_set_generate(&s, f->tok, &c, PROBE_SPLIT_HELDOUT, 1, err, sizeof err), -1);
    probe_set_free(&s); /* safe on the zeroed set a failure leaves */
}

static void test_names(void **state) {
    (void)state;
    for (int t = 0; t < PROBE_TASK_COUNT; t++) {
        probe_task back;
        assert_int_equal(probe_task_parse(probe_task_name((probe_task)t), &back), 0);
        assert_int_equal((int)back, t);
    }
    for (int h = 0; h < HAYSTACK_KIND_COUNT; h++) {
        haystack_kind back;
        assert_int_equal(haystack_kind_parse(haystack_kind_name((haystack_kind)h), &back), 0);
        assert_int_equal((int)back, h);
    }
    probe_task t;
    assert_int_equal(probe_task_parse("mk", &t), 0);
    assert_int_equal(t, PROBE_NIAH_MULTIKEY);
    assert_int_equal(probe_task_parse("needle", &t), -1);
    assert_string_equal(probe_split_name(PROBE_SPLIT_HELDOUT), "heldout");
    assert_int_equal(probe_parse_length("1k"), 1024);
    assert_int_equal(probe_parse_length("8K"), 8192);
    assert_int_equal(probe_parse_length("512"), 512);
    assert_int_equal(probe_parse_length("k"), -1);
    assert_int_equal(probe_parse_length("1kb"), -1);
    assert_int_equal(probe_parse_length("-3"), -1);
    assert_int_equal(probe_parse_length("16384k"), 16777216); /* the largest: 2^24 */
    assert_int_equal(probe_parse_length("16385k"), -1);
    assert_int_equal(probe_parse_length("99999999999999999999k"), -1); /* strtol saturates: no overflow */
    char buf[16];
    probe_length_label(4096, buf, sizeof buf);
    assert_string_equal(buf, "4k");
    probe_length_label(1500, buf, sizeof buf);
    assert_string_equal(buf, "1500");
}

int main(void) {
    FILE *fp = fopen(model_path(), "rb");
    if (!fp) {
        fprintf(stderr, "test_datasets: model %s missing, skipping\n", model_path());
        return 77;
    }
    fclose(fp);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_matches_python),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_same_seed_same_samples),
        cmocka_unit_test(test_samples_well_formed),
        cmocka_unit_test(test_plain_prompt),
        cmocka_unit_test(test_splits_disjoint),
        cmocka_unit_test(test_calib_set_guard),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_calib_mix),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
