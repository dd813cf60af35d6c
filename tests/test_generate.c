/* test_generate.c — the engine's generation and attention-statistics entry points against
 * references the test computes itself, on two tiny models: tests/fixtures/tiny_qwen3.gguf (qwen3:
 * q/k RMSNorm, NEOX RoPE, head_dim != n_embd/n_head) and the llama file `bosch mkmodel --shape
 * tiny` writes (adjacent-pair RoPE, GQA groups of 2).
 *  - generate_greedy (engine/generate.h) gives the tokens of a hand loop of forward_prefill,
 *    argmax and forward_decode, with all heads full and with SWA heads; on scripted steps it stops
 *    at an end-of-generation token, decodes every token but the max_new-th, takes the first of
 *    equal maxima, reports cancel and failing steps.
 *  - forward_attn_probs (engine/forward.h) visits layer by layer, head by head, position by
 *    position, and its probabilities equal softmax(q·k / sqrt(head_dim)) computed here in double
 *    from the model's fp32 tensors (RMSNorm, Q/K rows, qwen3 q/k norms, RoPE) on the residual
 *    stream entering each layer, within 1e-5.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "forward.h"
#include "generate.h"
#include "gguf_write.h"
#include "kv_cache.h"

#define N_PROMPT 20
#define MAX_NEW 24
#define T_ATTN 24
#define TOL_ATTN 1e-5

static char llama_path[256];
static char err[1024];

static model *load(const char *path) {
    model *m;
    model_opts mo = {PRECISION_FP32, 0, ATTN_KV_FP32};
    if (model_load_opts(&m, path, &mo, err, sizeof err)) fail_msg("%s: %s", path, err);
    return m;
}

/* The two models (state: model *[2]). */
static int setup(void **state) {
    snprintf(llama_path, sizeof llama_path, "/tmp/test_generate_%d.gguf", (int)getpid());
    mkmodel_shape s;
    if (mkmodel_preset("tiny", &s) || mkmodel_write(llama_path, &s, err, sizeof err)) return -1;
    static model *ms[2];
    ms[0] = load(BOSCH_SOURCE_DIR "/tests/fixtures/tiny_qwen3.gguf");
    ms[1] = load(llama_path);
    *state = ms;
    return 0;
}

static int teardown(void **state) {
    model **ms = *state;
    model_free(ms[0]);
    model_free(ms[1]);
    unlink(llama_path);
    return 0;
}

static void prompt_tokens(const model *m, int32_t *t, int n, unsigned seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        t[i] = (int32_t)((seed >> 8) % (unsigned)m->hp.n_vocab);
    }
}

/* ---- generate_greedy against a hand loop --------------------------------------------------- */

/* forward_prefill + argmax + forward_decode, stopping at end-of-generation: the tokens into out. */
static int hand_loop(const model *m, const attn_mask *mask, const int32_t *prompt, int n_prompt, int max_new,
                     int32_t *out) {
    kv_cache kv;
    attn_mask full;
    assert_int_equal(mask_init(&full, m->hp.n_layer, m->hp.n_head_kv, 1, 0, ATTN_FULL), 0);
    assert_int_equal(kv_cache_init(&kv, &m->hp, mask ? mask : &full, n_prompt + max_new), 0);
    forward_ws *ws = forward_ws_create(&m->hp, n_prompt);
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    assert_non_null(ws);
    assert_non_null(logits);
    int last = n_prompt - 1, n = 0;
    assert_int_equal(forward_prefill(m, mask, prompt, n_prompt, &kv, &last, 1, logits, ws), 0);
    while (n < max_new) {
        int32_t best = 0;
        for (int v = 1; v < m->hp.n_vocab; v++)
            if (logits[v] > logits[best]) best = v;
        if (tokenizer_is_eog(m->tok, best)) break;
        out[n++] = best;
        if (n < max_new) assert_int_equal(forward_decode(m, mask, best, &kv, logits, ws), 0);
    }
    free(logits);
    forward_ws_free(ws);
    kv_cache_free(&kv);
    mask_free(&full);
    return n;
}

typedef struct {
    int prefilled, n_tok;
    int32_t tok[MAX_NEW];
} seen;

static void on_prefilled(void *user) {
    seen *s = user;
    assert_int_equal(s->n_tok, 0);
    s->prefilled++;
}

static void on_token(void *user, int32_t token) {
    seen *s = user;
    assert_int_equal(s->prefilled, 1);
    assert_true(s->n_tok < MAX_NEW);
    s->tok[s->n_tok++] = token;
}

static void check_greedy(const model *m, const attn_mask *mask) {
    int32_t prompt[N_PROMPT], want[MAX_NEW], got[MAX_NEW];
    prompt_tokens(m, prompt, N_PROMPT, 7);
    int n_want = hand_loop(m, mask, prompt, N_PROMPT, MAX_NEW, want);
    seen s = {0};
    generate_opts o = {mask, MAX_NEW, NULL, NULL, on_prefilled, on_token, &s};
    generate_result r;
    assert_int_equal(generate_greedy(m, prompt, N_PROMPT, &o, got, &r, err, sizeof err), 0);
    assert_int_equal(r.stage, GENERATE_DONE);
    assert_int_equal(r.n_gen, n_want);
    assert_int_equal(s.n_tok, n_want);
    assert_int_equal(s.prefilled, 1);
    assert_true(n_want > 0);
    assert_memory_equal(got, want, sizeof(int32_t) * (size_t)n_want);
    assert_memory_equal(s.tok, want, sizeof(int32_t) * (size_t)n_want);
    /* the same through the CPU steps made by hand */
    generate_cpu *cpu;
    assert_int_equal(generate_cpu_create(&cpu, m, mask, N_PROMPT, N_PROMPT + MAX_NEW, NULL, err, sizeof err),
                     0);
    generate_steps steps = generate_cpu_steps(cpu);
    o = (generate_opts){mask, MAX_NEW, NULL, &steps, NULL, NULL, NULL};
    memset(got, 0, sizeof got);
    assert_int_equal(generate_greedy(m, prompt, N_PROMPT, &o, got, &r, err, sizeof err), 0);
    assert_int_equal(r.n_gen, n_want);
    assert_memory_equal(got, want, sizeof(int32_t) * (size_t)n_want);
    generate_cpu_free(cpu);
}

static void test_greedy_equals_hand_loop(void **state) {
    model **ms = *state;
    for (int k = 0; k < 2; k++) {
        const model *m = ms[k];
        check_greedy(m, NULL);
        attn_mask mask;
        assert_int_equal(mask_init(&mask, m->hp.n_layer, m->hp.n_head_kv, 4, 1, ATTN_SWA), 0);
        mask_set(&mask, 0, 0, ATTN_FULL);
        check_greedy(m, &mask);
        mask_free(&mask);
    }
}

/* ---- generate_greedy on scripted steps ------------------------------------------------------- */

typedef struct {
    const model *m;
    float *logits;
    const int32_t *script; /* argmax of the logits after step i (prefill = step 0) */
    int n_script, step;
    int fail_prefill, fail_decode_at; /* fail_decode_at: the decode step (1-based) that fails, 0 none */
    int32_t tie;                      /* >= 0: this token equals the maximum too */
    atomic_int *cancel_at_step;       /* set to 1 by the decode that reaches step 2 */
    int32_t decoded[16];
    int n_decoded;
} script;

static script script_of(const model *m, float *logits, const int32_t *tokens, int n) {
    return (script){m, logits, tokens, n, 0, 0, 0, -1, NULL, {0}, 0};
}

static void script_logits(script *s) {
    for (int v = 0; v < s->m->hp.n_vocab; v++) s->logits[v] = -1.0f;
    s->logits[s->script[s->step < s->n_script ? s->step : s->n_script - 1]] = 2.0f;
    if (s->tie >= 0) s->logits[s->tie] = 2.0f;
}

static int script_prefill(void *ctx, const int32_t *tokens, int n_tokens, char *e, size_t elen) {
    script *s = ctx;
    (void)tokens, (void)n_tokens;
    if (s->fail_prefill) {
        snprintf(e, elen, "scripted prefill failure");
        return -1;
    }
    s->step = 0;
    script_logits(s);
    return 0;
}

static int script_decode(void *ctx, int32_t token, char *e, size_t elen) {
    script *s = ctx;
    s->decoded[s->n_decoded++] = token;
    if (s->n_decoded == s->fail_decode_at) {
        snprintf(e, elen, "scripted decode failure");
        return -1;
    }
    s->step++;
    if (s->cancel_at_step && s->step == 2) atomic_store(s->cancel_at_step, 1);
    script_logits(s);
    return 0;
}

static generate_result run_script(script *s, int max_new, atomic_int *cancel, int32_t *out, int *rc) {
    generate_steps steps = {s, script_prefill, script_decode, s->logits};
    generate_opts o = {NULL, max_new, cancel, &steps, NULL, NULL, NULL};
    generate_result r;
    int32_t prompt[2] = {1, 2};
    err[0] = 0;
    *rc = generate_greedy(s->m, prompt, 2, &o, out, &r, err, sizeof err);
    return r;
}

static void test_greedy_scripted(void **state) {
    model **ms = *state;
    const model *m = ms[1]; /* mkmodel's tokenizer: eos = 0 */
    int32_t eos = tokenizer_eos(m->tok);
    assert_true(tokenizer_is_eog(m->tok, eos));
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    int32_t out[16];
    int rc;
    /* stops at the end-of-generation token: 3 tokens, each decoded */
    const int32_t stop[] = {5, 6, 7, eos, 9};
    script s = script_of(m, logits, stop, 5);
    generate_result r = run_script(&s, 10, NULL, out, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(r.stage, GENERATE_DONE);
    assert_int_equal(r.n_gen, 3);
    assert_int_equal(s.n_decoded, 3);
    assert_memory_equal(out, stop, 3 * sizeof(int32_t));
    assert_memory_equal(s.decoded, stop, 3 * sizeof(int32_t));
    /* max_new: the last token is not decoded; max_new 0 generates nothing */
    s = script_of(m, logits, stop, 5);
    r = run_script(&s, 2, NULL, out, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n_gen, 2);
    assert_int_equal(s.n_decoded, 1);
    s = script_of(m, logits, stop, 5);
    r = run_script(&s, 0, NULL, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n_gen, 0);
    assert_int_equal(s.n_decoded, 0);
    /* equal maxima: the first wins (3 before 5, 6 and 7) */
    s = script_of(m, logits, stop, 5);
    s.tie = 3;
    r = run_script(&s, 3, NULL, out, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n_gen, 3);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[2], 3);
    /* prefill failure */
    s = script_of(m, logits, stop, 5);
    s.fail_prefill = 1;
    r = run_script(&s, 4, NULL, out, &rc);
    assert_int_equal(rc, -1);
    assert_int_equal(r.stage, GENERATE_PREFILL);
    assert_int_equal(r.n_gen, 0);
    assert_string_equal(err, "scripted prefill failure");
    /* decode failure at the second decode: two tokens reported */
    s = script_of(m, logits, stop, 5);
    s.fail_decode_at = 2;
    r = run_script(&s, 10, NULL, out, &rc);
    assert_int_equal(rc, -1);
    assert_int_equal(r.stage, GENERATE_DECODE);
    assert_int_equal(r.n_gen, 2);
    assert_string_equal(err, "scripted decode failure");
    /* cancel: read before each token */
    atomic_int cancel = 1;
    s = script_of(m, logits, stop, 5);
    r = run_script(&s, 10, &cancel, out, &rc);
    assert_int_equal(rc, FORWARD_CANCELLED);
    assert_int_equal(r.n_gen, 0);
    atomic_store(&cancel, 0);
    s = script_of(m, logits, stop, 5);
    s.cancel_at_step = &cancel;
    r = run_script(&s, 10, &cancel, out, &rc);
    assert_int_equal(rc, FORWARD_CANCELLED);
    assert_int_equal(r.n_gen, 2);
    free(logits);
}

/* ---- forward_attn_probs against softmax(QK^T) ------------------------------------------------- */

typedef struct {
    const model_hparams *hp;
    int lo, hi, n_visits;
    int last_layer, last_head, last_pos;
    float *p; /* [L][n_head][T][T] */
} probs;

static void collect(void *user, int layer, int head, int pos, const float *p) {
    probs *c = user;
    /* the documented order: layers, then heads, then ascending positions in [lo, hi) */
    int key = (layer * c->hp->n_head + head) * T_ATTN + pos;
    int prev = (c->last_layer * c->hp->n_head + c->last_head) * T_ATTN + c->last_pos;
    assert_true(c->n_visits == 0 || key == prev + 1 || (pos == c->lo && c->last_pos == c->hi - 1));
    assert_true(pos >= c->lo && pos < c->hi);
    c->last_layer = layer, c->last_head = head, c->last_pos = pos;
    c->n_visits++;
    memcpy(c->p + ((size_t)(layer * c->hp->n_head + head) * T_ATTN + pos) * T_ATTN, p,
           sizeof(float) * (size_t)(pos + 1));
}

/* y = RMSNorm(x) * w over n values, in double. */
static void rmsnorm_d(double *y, const double *x, const float *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * r * w[i];
}

/* RoPE of one head vector v [head_dim] at position pos, in double. */
static void rope_d(double *v, const model_hparams *hp, int pos) {
    int half = hp->rope_dim / 2;
    for (int i = 0; i < half; i++) {
        double th = pos * pow(hp->rope_base, -2.0 * i / hp->rope_dim), c = cos(th), s = sin(th);
        int a = hp->rope_neox ? i : 2 * i, b = hp->rope_neox ? i + half : 2 * i + 1;
        double x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
    }
}

/* Rows [row0, row0 + n_heads*hd) of W [..][n_embd] times xn, then per-head norm and RoPE. */
static void project_d(const model *m, const float *W, const float *norm, const double *xn, int n_heads,
                      int pos, double *out) {
    const model_hparams *hp = &m->hp;
    int hd = hp->head_dim;
    for (int r = 0; r < n_heads * hd; r++) {
        double s = 0;
        for (int e = 0; e < hp->n_embd; e++) s += (double)W[(size_t)r * hp->n_embd + e] * xn[e];
        out[r] = s;
    }
    for (int h = 0; h < n_heads; h++) {
        if (norm) rmsnorm_d(out + h * hd, out + h * hd, norm, hd, hp->rms_eps);
        rope_d(out + h * hd, hp, pos);
    }
}

/* The reference probabilities of layer l from the residual stream x [T][n_embd] entering it. */
static void check_layer(const model *m, int l, const float *x, const probs *c) {
    const model_hparams *hp = &m->hp;
    const model_layer *L = &m->layers[l];
    int hd = hp->head_dim, E = hp->n_embd, group = hp->n_head / hp->n_head_kv;
    double *q = malloc(sizeof(double) * T_ATTN * hp->n_head * hd);
    double *k = malloc(sizeof(double) * T_ATTN * hp->n_head_kv * hd);
    double *xd = malloc(sizeof(double) * E), *xn = malloc(sizeof(double) * E), s[T_ATTN];
    for (int t = 0; t < T_ATTN; t++) {
        for (int e = 0; e < E; e++) xd[e] = x[(size_t)t * E + e];
        rmsnorm_d(xn, xd, L->attn_norm, E, hp->rms_eps);
        project_d(m, L->wq, L->q_norm, xn, hp->n_head, t, q + (size_t)t * hp->n_head * hd);
        project_d(m, L->wk, L->k_norm, xn, hp->n_head_kv, t, k + (size_t)t * hp->n_head_kv * hd);
    }
    double worst = 0;
    for (int h = 0; h < hp->n_head; h++)
        for (int i = c->lo; i < c->hi; i++) {
            double mx = -INFINITY, z = 0;
            for (int j = 0; j <= i; j++) {
                double d = 0;
                for (int u = 0; u < hd; u++)
                    d += q[((size_t)i * hp->n_head + h) * hd + u] *
                         k[((size_t)j * hp->n_head_kv + h / group) * hd + u];
                s[j] = d / sqrt((double)hd);
                mx = fmax(mx, s[j]);
            }
            for (int j = 0; j <= i; j++) z += s[j] = exp(s[j] - mx);
            const float *p = c->p + ((size_t)(l * hp->n_head + h) * T_ATTN + i) * T_ATTN;
            for (int j = 0; j <= i; j++) worst = fmax(worst, fabs(p[j] - s[j] / z));
        }
    if (worst > TOL_ATTN) fail_msg("%s layer %d: probabilities differ by %.3g", m->name, l, worst);
    free(q), free(k), free(xd), free(xn);
}

static void test_attn_probs_reference(void **state) {
    model **ms = *state;
    for (int n = 0; n < 2; n++) {
        const model *m = ms[n];
        const model_hparams *hp = &m->hp;
        int32_t tokens[T_ATTN];
        prompt_tokens(m, tokens, T_ATTN, 11);
        probs c = {hp, 3, T_ATTN, 0, 0, 0, 0, NULL};
        c.p = calloc((size_t)hp->n_layer * hp->n_head * T_ATTN * T_ATTN, sizeof(float));
        assert_int_equal(forward_attn_probs(m, tokens, T_ATTN, c.lo, c.hi, collect, &c, err, sizeof err), 0);
        assert_int_equal(c.n_visits, hp->n_layer * hp->n_head * (c.hi - c.lo));
        /* the residual stream entering each layer: embedding, then the engine's layers */
        float *x = malloc(sizeof(float) * T_ATTN * hp->n_embd);
        forward_ws *ws = forward_ws_create(hp, T_ATTN);
        assert_int_equal(forward_embed(m, tokens, T_ATTN, x), 0);
        for (int l = 0; l < hp->n_layer; l++) {
            check_layer(m, l, x, &c);
            assert_int_equal(forward_layer(m, l, NULL, x, T_ATTN, 0, NULL, ws), 0);
        }
        forward_ws_free(ws);
        free(x);
        free(c.p);
    }
}

static void never(void *user, int layer, int head, int pos, const float *p) {
    (void)user, (void)layer, (void)head, (void)pos, (void)p;
    fail_msg("visited");
}

static void test_attn_probs_errors(void **state) {
    model **ms = *state;
    const model *m = ms[0];
    int32_t tokens[4] = {1, 2, m->hp.n_vocab, 3};
    assert_int_equal(forward_attn_probs(m, tokens, 4, 0, 4, never, NULL, err, sizeof err), -1);
    assert_string_equal(err, "token id out of range");
    assert_int_equal(forward_attn_probs(m, tokens, 0, 0, 4, never, NULL, err, sizeof err), -1);
    assert_string_equal(err, "out of memory (0 tokens)");
    tokens[2] = 0; /* an empty range of queries visits nothing */
    assert_int_equal(forward_attn_probs(m, tokens, 4, 4, 9, never, NULL, err, sizeof err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_equals_hand_loop),
        cmocka_unit_test(test_greedy_scripted),
        cmocka_unit_test(test_attn_probs_reference),
        cmocka_unit_test(test_attn_probs_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
