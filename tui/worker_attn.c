/* worker_attn.c — the explorer's attention view on the worker thread (ex_state.h ex_attn): one
 * probe sample of the calibration or held-out split, the attention of the query heads of one KV
 * head at the answer position over the prompt (engine forward_attn_probs_mask), under full
 * attention and as an SWA head, the answer probability of the sample under the working mask (the
 * evaluator's p_answer), and the head's score and rank in each static head ranking of the
 * method registry (search_methods.h: ablation, fisher, locality, echo, then any row added; run as
 * `bosch search --method M` runs them, through search_create and search_step). The rankings cost
 * evaluations (ablation and fisher one per KV head), so they are computed once per session and
 * configuration, one step at a time between the worker's other work (worker.c's loop), cheapest
 * first. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_view.h"
#include "clock.h"
#include "forward.h"
#include "search_options.h"
#include "scores.h"
#include "search_scores.h"
#include "worker_internal.h"

/* The rankings in the order they are computed (cheap first) and shown: ex_rank_name. */
#define rank_method(k) ex_rank_name(k)

/* ---- the static rankings ------------------------------------------------------------------- */

static void rank_reset(worker *w) {
    search_free(w->rk_st);
    w->rk_st = NULL;
    if (w->rk_have_obj) search_objective_free(&w->rk_obj);
    w->rk_have_obj = 0;
    calib_set_free(w->rk_cs);
    w->rk_cs = NULL;
    for (int k = 0; k < ex_n_ranks(); k++) {
        free(w->rk_imp[k]);
        w->rk_imp[k] = NULL;
        w->rk_state[k] = EX_RANK_PENDING;
    }
    w->rk_next = 0;
    w->rk_have_cfg = 0;
}

void worker_attn_free(worker *w) {
    rank_reset(w);
}

int worker_attn_rank_pending(const worker *w) {
    return w->rk_have_cfg && w->rk_next < ex_n_ranks();
}

int worker_attn_scores_write(worker *w, const char *dir, char *msg, size_t msglen, char *err, size_t errlen) {
    int ready = 0;
    for (int k = 0; k < ex_n_ranks(); k++) ready += w->rk_imp[k] != NULL;
    if (ready == 0) {
        snprintf(err, errlen,
                 "%s: no static ranking is computed yet: the attention view (A) computes them (or use bosch "
                 "export --format scores)",
                 dir);
        return -1;
    }
    const double *score[SEARCH_METHODS_MAX]; /* in the export's column order (search_scores.h) */
    const char *name[SEARCH_METHODS_MAX];
    const int n = search_scores_n();
    for (int i = 0; i < n; i++) {
        name[i] = search_scores_name(i);
        score[i] = NULL;
        for (int k = 0; k < ex_n_ranks(); k++)
            if (!strcmp(ex_rank_name(k), name[i])) score[i] = w->rk_imp[k];
    }
    const model_hparams *hp = &w->m->hp;
    if (scores_write_folder(dir, hp->n_layer, hp->n_head_kv, n, name, score, err, errlen)) return -1;
    snprintf(msg, msglen, "%d of %d rankings' scores (%d x %d-token calibration, window %d) in %.50s", ready,
             ex_n_ranks(), w->rk_cfg.calib_samples, w->rk_cfg.calib_tokens, w->rk_cfg.window, dir);
    return 0;
}

int worker_calib_config(worker *w, const ex_mask *m, search_config *cfg, char *err, size_t errlen) {
    if (w->search) {
        *cfg = w->cfg;
    } else {
        search_opts o = {0};
        if (search_opts_set(&o, SOPT_PRESET, "tiny", err, errlen) ||
            search_opts_config(&o, w->m->hp.n_ctx_train, cfg, err, errlen))
            return -1;
    }
    cfg->window = m->window;
    cfg->sinks = m->sinks;
    return 0;
}

int worker_same_calib(const search_config *a, const search_config *b) {
    return a->window == b->window && a->sinks == b->sinks && a->seed == b->seed &&
           a->calib_samples == b->calib_samples && a->calib_tokens == b->calib_tokens &&
           a->calib_mix == b->calib_mix && a->calib_tokens2 == b->calib_tokens2;
}

/* The score and rank of the view's head in every ranking ready (mu held). */
static void rank_publish_locked(worker *w, ex_attn *a) {
    const int n = w->m->hp.n_layer * w->m->hp.n_head_kv, u = a->layer * w->m->hp.n_head_kv + a->kv_head;
    a->rank_n = n;
    for (int k = 0; k < ex_n_ranks(); k++) {
        a->rank_state[k] = w->rk_state[k];
        a->rank_score[k] = w->rk_imp[k] ? w->rk_imp[k][u] : NAN;
        a->rank[k] = w->rk_imp[k] ? attn_rank(w->rk_imp[k], n, u) : 0;
    }
    a->rank_evals = w->rk_st ? search_n_evals(w->rk_st) : 0;
    a->rank_budget = w->rk_st ? search_eval_budget(w->rk_st) : 0;
    worker_heat_publish_locked(w); /* the heat map shows them too */
}

static void rank_fail(worker *w, const char *what, const char *err) {
    pthread_mutex_lock(&w->mu);
    worker_log_locked(w, "attention view: %s: %s", what, err);
    for (int k = w->rk_next; k < ex_n_ranks(); k++) w->rk_state[k] = EX_RANK_FAILED;
    w->rk_next = ex_n_ranks();
    rank_publish_locked(w, &w->snap.attn);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

/* The rankings' own calibration split and objective, as the search's are made. 0 or -1. */
static int rank_objective(worker *w, char *err, size_t errlen) {
    if (w->rk_have_obj) return 0;
    if (search_calib_generate(&w->rk_cs, w->m, &w->rk_cfg, err, errlen)) return -1;
    if (search_objective_calib_on(&w->rk_obj, w->m, w->dev, w->rk_cs, err, errlen)) return -1;
    w->rk_have_obj = 1;
    search_objective_set_cancel(&w->rk_obj, &w->cancel);
    return 0;
}

/* Ranking k done: keep its importances, free its search. 0 or -1 (out of memory). */
static int rank_finish(worker *w, int k) {
    const int n = w->m->hp.n_layer * w->m->hp.n_head_kv;
    const double *imp = search_head_importance(w->rk_st);
    w->rk_imp[k] = imp ? malloc(sizeof(double) * (size_t)n) : NULL;
    if (w->rk_imp[k]) memcpy(w->rk_imp[k], imp, sizeof(double) * (size_t)n);
    search_free(w->rk_st);
    w->rk_st = NULL;
    return w->rk_imp[k] ? 0 : -1;
}

/* Ranking k without an evaluation when the search has it already (search_head_ranking: BOSCH's
 * head scores are ablation's and fisher's scores on the same single-head masks, search/rank_probes.c;
 * its refinement computed locality and echo; a baseline search has its own): taken when the
 * rankings' calibration split is the search's (worker_same_calib) and every head was scored.
 * 1 when taken. */
static int rank_from_search(worker *w, int k) {
    if (!w->search) return 0;
    search_config sc = w->cfg;
    if (!worker_same_calib(&sc, &w->rk_cfg)) return 0;
    const double *v = search_head_ranking(w->search, search_method_find(rank_method(k)));
    const int n = w->m->hp.n_layer * w->m->hp.n_head_kv;
    for (int u = 0; v && u < n; u++)
        if (!isfinite(v[u])) return 0;
    if (!v || !(w->rk_imp[k] = malloc(sizeof(double) * (size_t)n))) return 0;
    memcpy(w->rk_imp[k], v, sizeof(double) * (size_t)n);
    pthread_mutex_lock(&w->mu);
    w->rk_state[k] = EX_RANK_READY;
    w->rk_next++;
    worker_log_locked(w, "attention view: the %s ranking is the search's (no evaluation)", rank_method(k));
    rank_publish_locked(w, &w->snap.attn);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
    return 1;
}

void worker_attn_rank_step(worker *w) {
    char err[512] = "";
    const int k = w->rk_next;
    if (!w->rk_st && rank_from_search(w, k)) return;
    if (rank_objective(w, err, sizeof err)) {
        rank_fail(w, "the rankings' calibration objective", err);
        return;
    }
    if (!w->rk_st) {
        search_config c = w->rk_cfg;
        if (search_variant_apply(&c, rank_method(k), err, sizeof err) ||
            search_create(&w->rk_st, &c, w->m->hp.n_layer, w->m->hp.n_head_kv, &w->rk_obj, w->m, NULL, NULL,
                          err, sizeof err)) {
            rank_fail(w, rank_method(k), err);
            return;
        }
        w->rk_state[k] = EX_RANK_RUNNING;
    }
    int rc = search_step(w->rk_st, err, sizeof err);
    if (rc == SEARCH_CANCELLED) return; /* quitting */
    if (rc < 0 || (rc == 1 && rank_finish(w, k))) {
        rank_fail(w, rank_method(k), rc < 0 ? err : "out of memory");
        return;
    }
    pthread_mutex_lock(&w->mu);
    if (rc == 1) {
        w->rk_state[k] = EX_RANK_READY;
        w->rk_next++;
        worker_log_locked(w, "attention view: the %s ranking is ready", rank_method(k));
    }
    rank_publish_locked(w, &w->snap.attn);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

/* The rankings for the working mask m (the search's calibration split, m's window and sinks):
 * the cached ones when they were computed so, else they start over (worker.c's loop computes them
 * in the background). 0, or -1 with a message. */
static int rank_want(worker *w, const ex_mask *m, char *err, size_t errlen) {
    search_config rc_cfg;
    if (worker_calib_config(w, m, &rc_cfg, err, errlen)) return -1;
    if (!(w->rk_have_cfg && worker_same_calib(&w->rk_cfg, &rc_cfg))) {
        rank_reset(w); /* another configuration: the cached rankings do not apply */
        w->rk_cfg = rc_cfg;
        w->rk_have_cfg = 1;
    }
    return 0;
}

/* UI_CMD_HEAT: the heat map asks for a score nothing has measured yet: the rankings for the
 * working mask start (cheapest first; those the search has are taken from it, rank_from_search). */
void worker_job_heat(worker *w, const wcmd *c) {
    char err[512] = "";
    if (rank_want(w, &c->mask, err, sizeof err)) {
        worker_log(w, "heat map: %s", err);
        return;
    }
    pthread_mutex_lock(&w->mu);
    rank_publish_locked(w, &w->snap.attn);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

/* ---- the view ------------------------------------------------------------------------------- */

/* forward_attn_probs visitor: keep the probabilities of the group's query heads at one layer. */
typedef struct {
    int layer, q0, n_q, n;
    float *p; /* [n_q][n] */
} attn_grab;

static void grab_probs(void *user, int layer, int h, int pos, const float *p) {
    attn_grab *g = user;
    if (layer == g->layer && h >= g->q0 && h < g->q0 + g->n_q)
        memcpy(g->p + (size_t)(h - g->q0) * g->n, p, sizeof(float) * (size_t)(pos + 1));
}

/* The sample the view asks for: split 0 the calibration split (the search's, else the rankings'),
 * 1 the held-out one. NULL with a message when it cannot be made. */
static const probe_sample *view_sample(worker *w, int split, int sample, int *n_samples, char *err,
                                       size_t errlen) {
    if (split == 1) {
        if (worker_ensure_heldout(w, err, errlen)) return NULL;
        *n_samples = w->heldout.n;
        return &w->heldout.samples[((sample % w->heldout.n) + w->heldout.n) % w->heldout.n];
    }
    const calib_set *cs = w->cs ? w->cs : w->rk_cs;
    if (!cs && rank_objective(w, err, errlen)) return NULL;
    cs = w->cs ? w->cs : w->rk_cs;
    *n_samples = calib_set_n(cs);
    return calib_set_sample(cs, ((sample % *n_samples) + *n_samples) % *n_samples);
}

/* The sample's p_answer under mask m (the evaluator on this one sample). 0 or -1 / EVAL_CANCELLED. */
static int sample_p_answer(worker *w, const probe_sample *ps, const attn_mask *m, eval_sample_result *r,
                           char *err, size_t errlen) {
    eval_sample es = {ps->tokens, ps->n_tokens, ps->answer_start, ps->n_answer};
    evaluator *ev = NULL;
    eval_result out;
    int rc = evaluator_create_on(&ev, w->m, w->dev, &es, 1, 0, err, errlen);
    if (rc == 0) {
        evaluator_set_cancel(ev, &w->cancel);
        rc = evaluator_score(ev, m, &out, r, err, errlen);
    }
    evaluator_free(ev);
    return rc;
}

/* The strips and shares of query head q from its full probabilities pf and those with the working
 * mask upstream, ps (both [n], changed). */
static void view_head(ex_attn *a, int q, float *pf, float *ps) {
    const int n = a->n_keys, i = n - 1;
    double *d = malloc(sizeof(double) * (size_t)n), out[EX_ATTN_BUCKETS];
    a->in_full[q] = attn_window_mass(pf, i, a->window, a->sinks);
    a->needle_full[q] = attn_span_mass(pf, i, a->needle_pos, a->needle_len);
    a->in_swa[q] = attn_restrict_window(ps, i, a->window, a->sinks);
    a->needle_swa[q] = attn_span_mass(ps, i, a->needle_pos, a->needle_len);
    for (int s = 0; d && s < 2; s++) {
        const float *p = s ? ps : pf;
        for (int j = 0; j < n; j++) d[j] = p[j];
        attn_strip_resample(d, n, out, EX_ATTN_BUCKETS);
        for (int b = 0; b < EX_ATTN_BUCKETS; b++) (s ? a->swa : a->full)[q][b] = (float)out[b];
    }
    free(d);
}

/* The two forwards and the answer probabilities into w->attn_res. 0, -1 or a cancel code. */
static int view_compute(worker *w, const wcmd *c, const probe_sample *smp, char *err, size_t errlen) {
    ex_attn *a = &w->attn_res;
    const model_hparams *hp = &w->m->hp;
    const int group = hp->n_head / hp->n_head_kv, n = smp->answer_start;
    a->n_keys = n;
    a->q0 = c->kv_head * group;
    a->n_q = group < EX_ATTN_Q ? group : EX_ATTN_Q;
    a->needle_pos = smp->needle_pos[smp->query];
    a->needle_len = smp->needle_len[smp->query];
    snprintf(a->needle, sizeof a->needle, "%s", smp->value[smp->query]);
    /* the words under the strip: the needle sentence, and a few tokens either side of the edge of
       the window (the first key an SWA head at the answer position sees) */
    const int edge = n - c->mask.window, k = 8;
    worker_decode_line(w->m->tok, smp->tokens + a->needle_pos, a->needle_len, a->text_needle,
                       sizeof a->text_needle);
    a->text_before_edge[0] = a->text_after_edge[0] = '\0';
    if (edge > 0) {
        const int b0 = edge - k > 0 ? edge - k : 0, e1 = edge + k < n ? edge + k : n;
        worker_decode_line(w->m->tok, smp->tokens + b0, edge - b0, a->text_before_edge,
                           sizeof a->text_before_edge);
        worker_decode_line(w->m->tok, smp->tokens + edge, e1 - edge, a->text_after_edge,
                           sizeof a->text_after_edge);
    }
    attn_grab gf = {c->layer, a->q0, a->n_q, n, calloc((size_t)a->n_q * n, sizeof(float))};
    attn_grab gs = gf;
    gs.p = calloc((size_t)a->n_q * n, sizeof(float));
    ex_mask local = c->mask;
    attn_mask am, full = {0};
    ex_mask_view(&local, &am);
    int rc = gf.p && gs.p ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory (%d tokens)", n);
    if (rc == 0) rc = forward_attn_probs(w->m, smp->tokens, n, n - 1, n, grab_probs, &gf, err, errlen);
    mask_set(&am, c->layer, c->kv_head, ATTN_SWA); /* as an SWA head, the working mask upstream */
    if (rc == 0)
        rc = forward_attn_probs_mask(w->m, &am, smp->tokens, n, n - 1, n, grab_probs, &gs, err, errlen);
    for (int q = 0; rc == 0 && q < a->n_q; q++) view_head(a, q, gf.p + (size_t)q * n, gs.p + (size_t)q * n);
    free(gf.p), free(gs.p);
    local = c->mask; /* the working mask itself, for p_answer */
    eval_sample_result r = {0}, rf = {0};
    if (rc == 0) rc = sample_p_answer(w, smp, &am, &r, err, errlen);
    if (rc == 0 && mask_init(&full, hp->n_layer, hp->n_head_kv, am.window, am.sinks, ATTN_FULL)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc == 0) rc = sample_p_answer(w, smp, &full, &rf, err, errlen);
    mask_free(&full);
    a->p_answer = r.p_answer, a->p_answer_full = rf.p_answer, a->exact = r.exact;
    return rc;
}

void worker_job_attn(worker *w, const wcmd *c) {
    char err[512] = "";
    double t0 = base_now_s();
    worker_set_busy(w, "attention view: two forwards and the answer probability");
    ex_attn *a = &w->attn_res;
    memset(a, 0, sizeof *a);
    a->layer = c->layer, a->kv_head = c->kv_head, a->split = c->split, a->sample_asked = c->sample;
    ex_mask hm = c->mask;
    attn_mask hv;
    ex_mask_view(&hm, &hv);
    a->mask_hash = mask_hash(&hv);
    a->window = c->mask.window, a->sinks = c->mask.sinks;
    int rc = rank_want(w, &c->mask, err, sizeof err);
    const probe_sample *smp =
        rc == 0 ? view_sample(w, c->split, c->sample, &a->n_samples, err, sizeof err) : NULL;
    if (smp)
        a->sample = (int)(c->split ? smp - w->heldout.samples
                                   : ((c->sample % a->n_samples) + a->n_samples) % a->n_samples);
    rc = smp ? view_compute(w, c, smp, err, sizeof err) : -1;
    a->seconds = base_now_s() - t0;
    worker_set_busy(w, NULL);
    if (rc == EVAL_CANCELLED || rc == FORWARD_CANCELLED) return; /* quitting */
    a->ok = rc == 0;
    if (rc) snprintf(a->msg, sizeof a->msg, "attention view failed: %s", err);
    pthread_mutex_lock(&w->mu);
    a->seq = w->snap.attn.seq + 1;
    rank_publish_locked(w, a);
    w->snap.attn = *a;
    if (rc)
        worker_log_locked(w, "%s", a->msg);
    else
        worker_log_locked(w, "attention: sample %d of %d (%s) L%d kv%d, p(answer) %.3f (%d tokens, %.1f s)",
                          a->sample + 1, a->n_samples, a->split ? "held-out" : "calibration", a->layer,
                          a->kv_head, a->p_answer, a->n_keys, a->seconds);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}
