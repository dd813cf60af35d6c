/* eval.c — the mask evaluator with prefix reuse (see eval.h).
 *
 * A sample runs only the tokens that matter: the answer token at position p is predicted by the
 * logits at p - 1, so the last answer token is never fed and a sample runs
 * answer_start + n_answer - 1 tokens. The residual stream entering layer l (1 <= l < n_layer) of
 * every sample is kept for the base mask; the stream entering layer 0 is the embedding, recomputed.
 * A mask is computed from its first layer whose computation differs from the base's: the row
 * differs, or the row has an SWA head and window/sinks differ. The same code path with the same
 * shapes runs in both cases (forward_layer on one whole sample, fixed-order attention), which is
 * what makes reuse bitwise identical to a from-scratch evaluation.
 *
 * The per-sample forward is the backend's run() (backend.h; the CPU one when none is given): the
 * evaluator hands it the tokens or the saved stream entering layer `first`, the host pointers where
 * the streams entering later layers go (prefix reuse), and the answer rows; the metrics, the base
 * bookkeeping and the streams stay here, identical for every backend.
 */
#include "eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

struct evaluator {
    const model *m;
    const backend *be; /* where run() goes */
    backend *own;      /* evaluator_create's CPU backend (NULL when be is borrowed) */
    void *ws;          /* be's scratch for this evaluator (backend_ops.eval_open; be->ctx without it) */
    float **x_save;    /* [n_layer] backend's save pointers */
    int n_samples;
    eval_sample *samples; /* [n_samples], tokens point into tok_store */
    int32_t *tok_store;
    int *n_run; /* [n_samples] tokens run: answer_start + n_answer - 1 */
    int max_run, max_answer;
    int reuse;
    const atomic_int *cancel; /* evaluator_set_cancel (NULL: never) */
    float *logits;            /* [max_answer][n_vocab] */
    int *rows;                /* [max_answer] */
    /* prefix reuse */
    int have_base;
    attn_mask base;
    float **streams;              /* [n_samples] -> [n_layer-1][n_run][n_embd], entering layers 1.. */
    eval_sample_result *base_res; /* [n_samples] results of the base mask */
    eval_result base_out;
};

void evaluator_free(evaluator *ev) {
    if (!ev) return;
    if (ev->streams)
        for (int s = 0; s < ev->n_samples; s++) free(ev->streams[s]);
    free(ev->streams);
    free(ev->base_res);
    mask_free(&ev->base); /* zeroed or a copy: safe either way */
    if (ev->ws && ev->be->ops->eval_open && ev->be->ops->eval_close)
        ev->be->ops->eval_close(ev->be->ctx, ev->ws);
    backend_free(ev->own);
    free(ev->x_save);
    free(ev->logits);
    free(ev->rows);
    free(ev->samples);
    free(ev->tok_store);
    free(ev->n_run);
    free(ev);
}

int evaluator_n_samples(const evaluator *ev) {
    return ev->n_samples;
}

const backend *evaluator_backend(const evaluator *ev) {
    return ev->be;
}

void evaluator_set_cancel(evaluator *ev, const atomic_int *cancel) {
    ev->cancel = cancel;
}

static int cancelled(const evaluator *ev, char *err, size_t errlen) {
    if (!ev->cancel || !atomic_load_explicit(ev->cancel, memory_order_relaxed)) return 0;
    snprintf(err, errlen, "cancelled");
    return 1;
}

int evaluator_create(evaluator **out, const model *m, const eval_sample *samples, int n_samples, int reuse,
                     char *err, size_t errlen) {
    return evaluator_create_on(out, m, NULL, samples, n_samples, reuse, err, errlen);
}

/* The samples' shapes and ids; their total tokens, longest run and longest answer. */
static int check_samples(const model *m, const eval_sample *samples, int n_samples, size_t *total_out,
                         int *max_run_out, int *max_answer_out, char *err, size_t errlen) {
    const model_hparams *hp = &m->hp;
    if (n_samples < 1) {
        snprintf(err, errlen, "eval: n_samples is %d, need at least 1", n_samples);
        return -1;
    }
    size_t total = 0;
    int max_run = 1, max_answer = 1;
    for (int s = 0; s < n_samples; s++) {
        const eval_sample *x = &samples[s];
        if (x->answer_start < 1 || x->n_answer < 1 || x->n_tokens < 2 ||
            x->answer_start > x->n_tokens - x->n_answer) {
            snprintf(err, errlen,
                     "eval: sample %d: answer_start %d, n_answer %d do not fit in n_tokens %d "
                     "(need 1 <= answer_start, 1 <= n_answer, answer_start + n_answer <= n_tokens)",
                     s, x->answer_start, x->n_answer, x->n_tokens);
            return -1;
        }
        for (int i = 0; i < x->n_tokens; i++)
            if (x->tokens[i] < 0 || x->tokens[i] >= hp->n_vocab) {
                snprintf(err, errlen, "eval: sample %d: token %d is %d, outside the vocabulary [0, %d)", s, i,
                         (int)x->tokens[i], hp->n_vocab);
                return -1;
            }
        int run = x->answer_start + x->n_answer - 1;
        if (run > max_run) max_run = run;
        if (x->n_answer > max_answer) max_answer = x->n_answer;
        total += (size_t)x->n_tokens;
    }
    *total_out = total;
    *max_run_out = max_run;
    *max_answer_out = max_answer;
    return 0;
}

int evaluator_create_on(evaluator **out, const model *m, const backend *be, const eval_sample *samples,
                        int n_samples, int reuse, char *err, size_t errlen) {
    *out = NULL;
    if (be && !be->ops->run) {
        snprintf(err, errlen, "eval: backend '%s' has no run function", be->ops->name ? be->ops->name : "?");
        return -1;
    }
    const model_hparams *hp = &m->hp;
    size_t total = 0;
    int max_run = 1, max_answer = 1;
    if (check_samples(m, samples, n_samples, &total, &max_run, &max_answer, err, errlen)) return -1;
    evaluator *ev = calloc(1, sizeof *ev);
    if (!ev) goto oom;
    ev->m = m;
    if (!be && backend_cpu_create(&ev->own, m, err, errlen)) {
        evaluator_free(ev);
        return -1;
    }
    ev->be = be ? be : ev->own;
    ev->n_samples = n_samples;
    ev->reuse = reuse != 0;
    ev->max_run = max_run;
    ev->max_answer = max_answer;
    ev->samples = malloc(sizeof *ev->samples * (size_t)n_samples);
    ev->tok_store = malloc(sizeof(int32_t) * total);
    ev->n_run = malloc(sizeof(int) * (size_t)n_samples);
    ev->x_save = calloc((size_t)hp->n_layer, sizeof(float *));
    ev->logits = malloc(sizeof(float) * (size_t)max_answer * hp->n_vocab);
    ev->rows = malloc(sizeof(int) * (size_t)max_answer);
    if (!ev->samples || !ev->tok_store || !ev->n_run || !ev->x_save || !ev->logits || !ev->rows) goto oom;
    const backend_ops *ops = ev->be->ops;
    char msg[256];
    if (!ops->eval_open)
        ev->ws = ev->be->ctx;
    else if (ops->eval_open(ev->be->ctx, max_run, &ev->ws, msg, sizeof msg))
        goto oom;
    size_t off = 0;
    for (int s = 0; s < n_samples; s++) {
        ev->samples[s] = samples[s];
        memcpy(ev->tok_store + off, samples[s].tokens, sizeof(int32_t) * (size_t)samples[s].n_tokens);
        ev->samples[s].tokens = ev->tok_store + off;
        off += (size_t)samples[s].n_tokens;
        ev->n_run[s] = samples[s].answer_start + samples[s].n_answer - 1;
    }
    if (ev->reuse) {
        ev->streams = calloc((size_t)n_samples, sizeof(float *));
        ev->base_res = malloc(sizeof(eval_sample_result) * (size_t)n_samples);
        if (!ev->streams || !ev->base_res) goto oom;
        size_t layers = hp->n_layer > 1 ? (size_t)hp->n_layer - 1 : 1;
        for (int s = 0; s < n_samples; s++) {
            ev->streams[s] = malloc(sizeof(float) * layers * (size_t)ev->n_run[s] * hp->n_embd);
            if (!ev->streams[s]) {
                double gib = 4.0 * (double)layers * (double)total * hp->n_embd / (1 << 30);
                snprintf(err, errlen, "eval: out of memory for prefix reuse (%d samples need about %.1f GiB)",
                         n_samples, gib);
                evaluator_free(ev);
                return -1;
            }
        }
    }
    *out = ev;
    return 0;
oom:
    snprintf(err, errlen, "eval: out of memory creating the evaluator (%d samples, longest %d tokens)",
             n_samples, max_run);
    evaluator_free(ev);
    return -1;
}

/* First layer whose computation differs between masks a and b (n_layer when none does). */
static int first_changed_layer(const attn_mask *a, const attn_mask *b) {
    int same_window = a->window == b->window && a->sinks == b->sinks;
    for (int l = 0; l < a->n_layer; l++) {
        const uint8_t *ra = a->z + (size_t)l * a->n_head_kv, *rb = b->z + (size_t)l * b->n_head_kv;
        if (memcmp(ra, rb, (size_t)a->n_head_kv) != 0) return l;
        if (!same_window)
            for (int g = 0; g < a->n_head_kv; g++)
                if (ra[g] == ATTN_SWA) return l;
    }
    return a->n_layer;
}

/* Teacher-forced metrics of one sample from the logits of its answer positions. */
static void sample_metrics(const evaluator *ev, int s, eval_sample_result *r) {
    const eval_sample *x = &ev->samples[s];
    const int V = ev->m->hp.n_vocab;
    double nll = 0.0;
    int exact = 1;
    for (int a = 0; a < x->n_answer; a++) {
        const float *lg = ev->logits + (size_t)a * V;
        int best = 0;
        for (int i = 1; i < V; i++)
            if (lg[i] > lg[best]) best = i;
        double sum = 0.0;
        for (int i = 0; i < V; i++) sum += exp((double)lg[i] - lg[best]);
        int32_t want = x->tokens[x->answer_start + a];
        nll -= (double)lg[want] - lg[best] - log(sum);
        exact &= best == want;
    }
    r->exact = exact;
    r->nll = nll / x->n_answer;
    r->p_answer = exp(-r->nll);
}

/* One sample on the backend: from the embedding (first 0) or the stored stream entering `first`. */
static int run_sample_backend(evaluator *ev, int s, const attn_mask *mask, int first, int store, char *err,
                              size_t errlen) {
    const eval_sample *x = &ev->samples[s];
    const int L = ev->m->hp.n_layer, n = ev->n_run[s];
    const size_t plane = (size_t)n * ev->m->hp.n_embd;
    for (int l = 0; l < L; l++)
        ev->x_save[l] = store && l > first ? ev->streams[s] + (size_t)(l - 1) * plane : NULL;
    const float *x_in = first > 0 ? ev->streams[s] + (size_t)(first - 1) * plane : NULL;
    char msg[256] = "";
    int rc = ev->be->ops->run(ev->ws, mask, n, x->tokens, x_in, first, ev->x_save, ev->rows, x->n_answer,
                              ev->logits, ev->cancel, msg, sizeof msg);
    if (rc == BACKEND_CANCELLED) {
        snprintf(err, errlen, "cancelled");
        return EVAL_CANCELLED;
    }
    if (rc != 0) {
        snprintf(err, errlen, "eval: sample %d (%d tokens, from layer %d) on %s: %s", s, n, first,
                 ev->be->ops->name ? ev->be->ops->name : "backend", msg);
        return -1;
    }
    return 0;
}

/* Run every sample under `mask` from layer `first`; store streams when `store`. 0, -1 or
 * EVAL_CANCELLED. */
static int run_samples(evaluator *ev, const attn_mask *mask, int first, int store, eval_sample_result *res,
                       char *err, size_t errlen) {
    for (int s = 0; s < ev->n_samples; s++) {
        const eval_sample *x = &ev->samples[s];
        for (int a = 0; a < x->n_answer; a++) ev->rows[a] = x->answer_start - 1 + a;
        if (cancelled(ev, err, errlen)) return EVAL_CANCELLED;
        int rc = run_sample_backend(ev, s, mask, first, store, err, errlen);
        if (rc) return rc;
        sample_metrics(ev, s, &res[s]);
    }
    return 0;
}

static void summarize(const evaluator *ev, const eval_sample_result *res, eval_result *out) {
    double score = 0.0, acc = 0.0, nll = 0.0;
    for (int s = 0; s < ev->n_samples; s++) {
        score += res[s].p_answer;
        acc += res[s].exact;
        nll += res[s].nll;
    }
    out->score = score / ev->n_samples;
    out->accuracy = acc / ev->n_samples;
    out->nll = nll / ev->n_samples;
}

static int check_mask(const evaluator *ev, const attn_mask *mask, char *err, size_t errlen) {
    const model_hparams *hp = &ev->m->hp;
    if (mask->n_layer != hp->n_layer || mask->n_head_kv != hp->n_head_kv) {
        snprintf(err, errlen, "eval: mask is %d layers x %d KV heads, model has %d x %d", mask->n_layer,
                 mask->n_head_kv, hp->n_layer, hp->n_head_kv);
        return -1;
    }
    if (mask->window < 1 || mask->sinks < 0) {
        snprintf(err, errlen, "eval: mask window %d / sinks %d invalid (need window >= 1, sinks >= 0)",
                 mask->window, mask->sinks);
        return -1;
    }
    if (hp->n_ctx_train > 0 && mask->sinks > hp->n_ctx_train) {
        snprintf(err, errlen,
                 "eval: sinks %d is more than the model's context length %d (sink tokens are the first "
                 "positions of the context)",
                 mask->sinks, hp->n_ctx_train);
        return -1;
    }
    return 0;
}

/* Shared by score (store = 0) and set_base (store = 1). */
static int evaluate(evaluator *ev, const attn_mask *mask, int store, eval_result *out,
                    eval_sample_result *per_sample, char *err, size_t errlen) {
    if (check_mask(ev, mask, err, errlen)) return -1;
    double t0 = base_now_s();
    const int L = ev->m->hp.n_layer;
    int first = ev->reuse && ev->have_base ? first_changed_layer(mask, &ev->base) : 0;
    if (store && !ev->reuse) {
        snprintf(err, errlen, "eval: set_base needs an evaluator created with reuse");
        return -1;
    }
    eval_sample_result *res = per_sample;
    if (first == L) { /* same computation as the base: its results, bit for bit */
        if (res) memcpy(res, ev->base_res, sizeof *res * (size_t)ev->n_samples);
        eval_result r = ev->base_out;
        r.first_layer = L;
        r.seconds = base_now_s() - t0;
        if (out) *out = r;
        return 0;
    }
    if (!res) res = store ? ev->base_res : malloc(sizeof *res * (size_t)ev->n_samples);
    if (!res) {
        snprintf(err, errlen, "eval: out of memory");
        return -1;
    }
    if (store && ev->have_base) ev->have_base = 0; /* the streams are being overwritten */
    int rc = run_samples(ev, mask, first, store, res, err, errlen);
    eval_result r;
    memset(&r, 0, sizeof r);
    if (rc == 0) {
        summarize(ev, res, &r);
        r.first_layer = first;
        r.seconds = base_now_s() - t0;
        if (store) {
            if (res != ev->base_res) memcpy(ev->base_res, res, sizeof *res * (size_t)ev->n_samples);
            mask_free(&ev->base);
            if (mask_copy(&ev->base, mask) != 0) {
                snprintf(err, errlen, "eval: out of memory");
                rc = -1;
            } else {
                ev->base_out = r;
                ev->have_base = 1;
            }
        }
    }
    if (res != per_sample && res != ev->base_res) free(res);
    if (rc == 0 && out) *out = r;
    return rc;
}

int evaluator_score(evaluator *ev, const attn_mask *mask, eval_result *out, eval_sample_result *per_sample,
                    char *err, size_t errlen) {
    return evaluate(ev, mask, 0, out, per_sample, err, errlen);
}

int evaluator_set_base(evaluator *ev, const attn_mask *mask, eval_result *out, eval_sample_result *per_sample,
                       char *err, size_t errlen) {
    return evaluate(ev, mask, 1, out, per_sample, err, errlen);
}
