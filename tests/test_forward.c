/* test_forward.c — logits of our CPU forward pass against llama.cpp.
 *
 * Fixtures (made by scripts/fixtures/make_logit_fixtures.py, see its header): llama.cpp evaluated
 * each prompt in fp32 on an all-F32 copy of the same GGUF (same dequantized weights) and stored
 * the top-8 token ids and logits at ~16 positions per prompt.
 *   tests/fixtures/logits_smollm2.txt     the default model (llama arch, adjacent-pair RoPE, tied
 *                                         embedding), 6 prompts up to ~1,600 tokens
 *   tests/fixtures/logits_tiny_qwen3.txt  tests/fixtures/tiny_qwen3.gguf (qwen3 arch: Q/K RMSNorm,
 *                                         NEOX RoPE, head_dim != n_embd/n_head, untied output),
 *                                         6 prompts up to ~8,300 tokens
 * Checks: at every stored position our argmax equals llama.cpp's top-1 and every stored logit is
 * within 1e-2. Prefill (no cache), prefill into the KV cache + decode, and the layer-level entry
 * points are all checked against the same numbers.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "forward.h"
#include "kv_cache.h"
#include "ops.h"

#define TOL 1e-2
#define TOPK 8

typedef struct {
    int pos;
    int id[TOPK];
    float logit[TOPK];
} ref_pos;

typedef struct {
    int n_tokens;
    int32_t *tokens;
    int n_pos;
    ref_pos *pos;
} ref_prompt;

typedef struct {
    int n;
    ref_prompt p[16];
} ref_set;

static int parse_fixture(const char *path, ref_set *rs) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(rs, 0, sizeof *rs);
    char *line = NULL;
    size_t cap = 0;
    ref_prompt *cur = NULL;
    int ok = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#') continue;
        if (!strncmp(line, "prompt ", 7)) {
            if (rs->n >= 16) break;
            cur = &rs->p[rs->n++];
            cur->n_tokens = atoi(line + 7);
            cur->tokens = calloc((size_t)cur->n_tokens, sizeof(int32_t));
            cur->pos = calloc(64, sizeof(ref_pos));
        } else if (cur && !strncmp(line, "tokens ", 7)) {
            char *s = line + 7, *e;
            for (int i = 0; i < cur->n_tokens; i++, s = e) cur->tokens[i] = (int32_t)strtol(s, &e, 10);
        } else if (cur && !strncmp(line, "pos ", 4) && cur->n_pos < 64) {
            ref_pos *rp = &cur->pos[cur->n_pos++];
            char *s = line + 4, *e;
            rp->pos = (int)strtol(s, &e, 10);
            for (int k = 0; k < TOPK; k++) {
                s = e;
                rp->id[k] = (int)strtol(s, &e, 10);
                if (*e != ':') return fclose(f), free(line), -1;
                rp->logit[k] = strtof(e + 1, &e);
            }
        } else if (!strncmp(line, "end", 3)) {
            ok = 1;
        }
    }
    free(line);
    fclose(f);
    return ok && rs->n > 0 ? 0 : -1;
}

static void free_fixture(ref_set *rs) {
    for (int i = 0; i < rs->n; i++) {
        free(rs->p[i].tokens);
        free(rs->p[i].pos);
    }
}

/* Compare one row of our logits with a reference position; returns max |Δ| and counts top-1. */
static double check_row(const float *logits, int n_vocab, const ref_pos *rp, const char *what) {
    double md = 0;
    for (int k = 0; k < TOPK; k++) {
        double d = fabs((double)logits[rp->id[k]] - rp->logit[k]);
        if (d > md) md = d;
    }
    int top = ops_argmax(logits, n_vocab);
    if (top != rp->id[0] || md > TOL)
        fprintf(stderr, "%s: pos %d: ours top-1 %d (%.5f), llama.cpp %d (%.5f); max |dlogit| %.3g\n",
                what, rp->pos, top, logits[top], rp->id[0], rp->logit[0], md);
    assert_int_equal(top, rp->id[0]);
    assert_true(md <= TOL);
    return md;
}

typedef struct {
    model *m;
    ref_set rs;
    int max_tokens;
} fx;

static int setup_model(void **state, const char *model_path, const char *fixture) {
    fx *f = calloc(1, sizeof *f);
    char err[512];
    if (model_load(&f->m, model_path, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        free(f);
        return -1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", BOSCH_SOURCE_DIR, fixture);
    if (parse_fixture(path, &f->rs) != 0) {
        fprintf(stderr, "cannot read fixture %s\n", path);
        model_free(f->m);
        free(f);
        return -1;
    }
    for (int i = 0; i < f->rs.n; i++)
        if (f->rs.p[i].n_tokens > f->max_tokens) f->max_tokens = f->rs.p[i].n_tokens;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    if (!f) return 0;
    free_fixture(&f->rs);
    model_free(f->m);
    free(f);
    return 0;
}

static const char *smollm2_path(void) {
    const char *e = getenv("BOSCH_MODEL");
    return e && *e ? e : BOSCH_DEFAULT_MODEL;
}

static int setup_smollm2(void **state) {
    return setup_model(state, smollm2_path(), "logits_smollm2.txt");
}

static int setup_qwen3(void **state) {
    return setup_model(state, BOSCH_SOURCE_DIR "/tests/fixtures/tiny_qwen3.gguf",
                       "logits_tiny_qwen3.txt");
}

/* Prefill without a cache; LM head only at the stored positions. */
static void test_prefill_logits(void **state) {
    fx *f = *state;
    int V = f->m->hp.n_vocab;
    forward_ws *ws = forward_ws_create(&f->m->hp, f->max_tokens);
    assert_non_null(ws);
    double worst = 0;
    for (int i = 0; i < f->rs.n; i++) {
        ref_prompt *p = &f->rs.p[i];
        int *rows = malloc(sizeof(int) * p->n_pos);
        float *logits = malloc(sizeof(float) * (size_t)V * p->n_pos);
        for (int r = 0; r < p->n_pos; r++) rows[r] = p->pos[r].pos;
        assert_int_equal(forward_prefill(f->m, NULL, p->tokens, p->n_tokens, NULL, rows, p->n_pos,
                                         logits, ws), 0);
        double md = 0;
        for (int r = 0; r < p->n_pos; r++) {
            double d = check_row(logits + (size_t)r * V, V, &p->pos[r], "prefill");
            if (d > md) md = d;
        }
        fprintf(stderr, "%s prompt %d (%d tokens, %d positions): max |dlogit| = %.2e\n",
                f->m->name, i, p->n_tokens, p->n_pos, md);
        if (md > worst) worst = md;
        free(rows);
        free(logits);
    }
    fprintf(stderr, "%s: worst max |dlogit| = %.2e over %d prompts\n", f->m->name, worst, f->rs.n);
    forward_ws_free(ws);
}

/* Prefill tokens [0, n_pre) of prompt p into a fresh KV cache, then decode the rest token by
 * token; every stored position reached (the prefill's last row, then each decoded position) is
 * checked. Returns the number of positions checked. */
static int prefill_then_decode(fx *f, ref_prompt *p, int n_pre) {
    int V = f->m->hp.n_vocab, checked = 0, ri = 0;
    attn_mask full;
    assert_int_equal(mask_init(&full, f->m->hp.n_layer, f->m->hp.n_head_kv, 64, 0, ATTN_FULL), 0);
    kv_cache kv;
    assert_int_equal(kv_cache_init(&kv, &f->m->hp, &full, p->n_tokens), 0);
    forward_ws *ws = forward_ws_create(&f->m->hp, n_pre);
    float *logits = malloc(sizeof(float) * V);
    int last = n_pre - 1;
    assert_int_equal(forward_prefill(f->m, &full, p->tokens, n_pre, &kv, &last, 1, logits, ws), 0);
    assert_int_equal(kv.n_past, n_pre);
    while (ri < p->n_pos && p->pos[ri].pos < n_pre - 1) ri++;
    if (ri < p->n_pos && p->pos[ri].pos == n_pre - 1) {
        check_row(logits, V, &p->pos[ri++], "prefill into cache");
        checked++;
    }
    for (int t = n_pre; t < p->n_tokens; t++) {
        assert_int_equal(forward_decode(f->m, &full, p->tokens[t], &kv, logits, ws), 0);
        assert_int_equal(kv.n_past, t + 1);
        if (ri < p->n_pos && p->pos[ri].pos == t) {
            check_row(logits, V, &p->pos[ri++], "decode");
            checked++;
        }
    }
    /* the cache is full: one more position must be refused */
    assert_int_equal(forward_decode(f->m, &full, p->tokens[0], &kv, logits, ws), -1);
    free(logits);
    forward_ws_free(ws);
    kv_cache_free(&kv);
    mask_free(&full);
    return checked;
}

/* Decode through the KV cache against the same reference: (a) a short prompt (32..300 tokens)
 * prefilled for its first third and decoded for the rest; (b) the longest prompt of at most
 * 1,300 tokens prefilled up to its second-to-last stored position and decoded to the end, so
 * decode attends over a cache of more than 1,000 positions (SmolLM2). Decode reads every fp32
 * weight per token, so the steps are kept few. */
static void test_decode_logits(void **state) {
    fx *f = *state;
    ref_prompt *s = NULL, *l = NULL;
    for (int i = 0; i < f->rs.n; i++) {
        ref_prompt *p = &f->rs.p[i];
        if (p->n_tokens >= 32 && p->n_tokens <= 300 && (!s || p->n_tokens < s->n_tokens)) s = p;
        if (p->n_tokens <= 1300 && p->n_pos >= 2 && (!l || p->n_tokens > l->n_tokens)) l = p;
    }
    assert_non_null(s);
    assert_non_null(l);
    int a = prefill_then_decode(f, s, s->n_tokens / 3);
    int b = prefill_then_decode(f, l, l->pos[l->n_pos - 2].pos + 1);
    fprintf(stderr, "%s: decode checked %d positions of a %d-token prompt and %d of a %d-token one\n",
            f->m->name, a, s->n_tokens, b, l->n_tokens);
    assert_true(a >= 5);
    assert_int_equal(b, 2);
}

/* Layer-level entry points (embed, forward_layer, forward_logits) give the same logits, and an
 * all-SWA mask whose window covers the whole prompt equals full attention. */
static void test_layers_and_wide_window(void **state) {
    fx *f = *state;
    const model_hparams *hp = &f->m->hp;
    int V = hp->n_vocab;
    ref_prompt *p = &f->rs.p[f->rs.n > 2 ? 2 : 0];
    attn_mask swa;
    assert_int_equal(mask_init(&swa, hp->n_layer, hp->n_head_kv, p->n_tokens, 0, ATTN_SWA), 0);
    forward_ws *ws = forward_ws_create(hp, p->n_tokens);
    float *x = malloc(sizeof(float) * (size_t)p->n_tokens * hp->n_embd);
    float *logits = malloc(sizeof(float) * (size_t)V * p->n_pos);
    int *rows = malloc(sizeof(int) * p->n_pos);
    for (int r = 0; r < p->n_pos; r++) rows[r] = p->pos[r].pos;
    assert_int_equal(forward_embed(f->m, p->tokens, p->n_tokens, x), 0);
    for (int l = 0; l < hp->n_layer; l++)
        assert_int_equal(forward_layer(f->m, l, &swa, x, p->n_tokens, 0, NULL, ws), 0);
    forward_logits(f->m, x, rows, p->n_pos, logits, ws);
    for (int r = 0; r < p->n_pos; r++) check_row(logits + (size_t)r * V, V, &p->pos[r], "layers");
    /* error paths */
    int32_t bad = hp->n_vocab;
    assert_int_equal(forward_embed(f->m, &bad, 1, x), -1);
    assert_int_equal(forward_layer(f->m, 0, NULL, x, p->n_tokens + 1, 0, NULL, ws), -1);
    free(rows);
    free(logits);
    free(x);
    forward_ws_free(ws);
    mask_free(&swa);
}

int main(void) {
    const struct CMUnitTest qwen3[] = {
        cmocka_unit_test(test_prefill_logits),
        cmocka_unit_test(test_decode_logits),
        cmocka_unit_test(test_layers_and_wide_window),
    };
    const struct CMUnitTest smollm2[] = {
        cmocka_unit_test(test_prefill_logits),
        cmocka_unit_test(test_decode_logits),
        cmocka_unit_test(test_layers_and_wide_window),
    };
    int rc = cmocka_run_group_tests_name("tiny_qwen3", qwen3, setup_qwen3, teardown);
    FILE *probe = fopen(smollm2_path(), "rb");
    if (!probe) {
        fprintf(stderr, "skip: %s missing (run scripts/setup)\n", smollm2_path());
        return rc ? 1 : 77;
    }
    fclose(probe);
    rc |= cmocka_run_group_tests_name("smollm2", smollm2, setup_smollm2, teardown);
    return rc ? 1 : 0;
}
