/* worker_jobs.c — the engine work of the explorer's worker thread: load the model, prepare a
 * search (calibration probes, objective, search state), score a mask on held-out probes, and
 * "ask the model" (greedy generation with a mask on a held-out probe). */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "generate.h"
#include "worker_internal.h"
#include "clock.h"

#define HELDOUT_SAMPLES 8

int worker_job_load(worker *w) {
    char err[512] = "";
    double t0 = base_now_s();
    model_opts mo = {(engine_precision)w->opts.precision, 0, (attn_kv_type)w->opts.kv_type};
    if (model_load_opts(&w->m, w->opts.model_path, &mo, err, sizeof err) != 0) {
        pthread_mutex_lock(&w->mu);
        w->snap.phase = EX_FAILED;
        snprintf(w->snap.status, sizeof w->snap.status, "%s", err);
        worker_log_locked(w, "cannot load the model: %s", err);
        worker_publish_locked(w);
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    const model_hparams *hp = &w->m->hp;
    char dev_msg[640] = "";
    /* one backend (on the GPU: one upload) shared by every evaluator of the worker */
    if (backend_create(&w->dev, &w->opts.backend, w->m, err, sizeof err) != 0) {
        snprintf(dev_msg, sizeof dev_msg, "evaluator on the CPU: %s", err);
        w->dev = NULL;
    } else if (w->opts.backend.device != BACKEND_CPU) {
        char desc[128];
        backend_describe(w->dev, 1, desc, sizeof desc);
        snprintf(dev_msg, sizeof dev_msg, "evaluator on %s", desc);
    }
    if (hp->n_layer > EX_MAX_LAYERS || hp->n_head_kv > EX_MAX_KV) {
        pthread_mutex_lock(&w->mu);
        w->snap.phase = EX_FAILED;
        snprintf(w->snap.status, sizeof w->snap.status,
                 "%s: %d layers x %d KV heads; the explorer shows at most %d x %d", w->opts.model_path,
                 hp->n_layer, hp->n_head_kv, EX_MAX_LAYERS, EX_MAX_KV);
        worker_publish_locked(w);
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    pthread_mutex_lock(&w->mu);
    w->snap.hp = *hp;
    snprintf(w->snap.model_name, sizeof w->snap.model_name, "%s", w->m->name ? w->m->name : "model");
    w->snap.phase = EX_READY;
    snprintf(w->snap.status, sizeof w->snap.status, "model loaded in %.1f s", base_now_s() - t0);
    worker_log_locked(w, "loaded %s: %d layers, %d query heads, %d KV heads (%.1f s)", w->snap.model_name,
                      hp->n_layer, hp->n_head, hp->n_head_kv, base_now_s() - t0);
    if (dev_msg[0]) worker_log_locked(w, "%s", dev_msg);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void worker_job_free_search(worker *w) {
    search_free(w->search);
    w->search = NULL;
    if (w->have_obj) search_objective_free(&w->obj);
    w->have_obj = 0;
    calib_set_free(w->cs);
    w->cs = NULL;
}

int worker_search_setup(worker *w, const search_config *cfg_in, const char *state_path, const char *method) {
    char err[512] = "";
    search_config cfg = *cfg_in;
    worker_job_free_search(w);
    pthread_mutex_lock(&w->mu);
    worker_reset_search_snapshot_locked(w);
    w->snap.phase = EX_PREPARING;
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
    worker_set_busy(w, state_path ? "resuming the search: calibration probes, evaluator, replay"
                                  : "preparing the search: calibration probes and evaluator");
    /* the same calibration split as `bosch search` with this config, so masks match the CLI's */
    int rc = search_calib_generate(&w->cs, w->m, &cfg, err, sizeof err);
    if (rc == 0) {
        rc = search_objective_calib_on(&w->obj, w->m, w->dev, w->cs, err, sizeof err);
        w->have_obj = rc == 0;
        if (rc == 0) search_objective_set_cancel(&w->obj, &w->cancel);
    }
    const int L = w->m->hp.n_layer, H = w->m->hp.n_head_kv;
    if (rc == 0 && state_path) /* replays the log: the events rebuild the snapshot and the trace */
        rc = search_load(&w->search, state_path, L, H, &w->obj, w->m, worker_on_event, w, err, sizeof err);
    else if (rc == 0)
        rc = search_create(&w->search, &cfg, L, H, &w->obj, w->m, worker_on_event, w, err, sizeof err);
    /* the confirmation's objective (search.h confirm_samples) on the same device, stopped by the same flag */
    if (rc == 0) search_set_confirm_env(w->search, w->dev, &w->cancel);
    worker_set_busy(w, NULL);
    pthread_mutex_lock(&w->mu);
    if (rc != 0) {
        worker_log_locked(w, "cannot %s the search: %s", state_path ? "resume" : "start", err);
        w->snap.phase = EX_READY; /* no search: not [preparing] forever (a resume that failed spun on) */
        snprintf(w->snap.status, sizeof w->snap.status, "cannot %s the search (see the log)",
                 state_path ? "resume" : "start");
        worker_publish_locked(w);
        pthread_mutex_unlock(&w->mu);
        worker_job_free_search(w);
        return -1;
    }
    w->cfg = cfg;
    w->snap.have_search = 1;
    w->snap.granularity = cfg.granularity;
    w->snap.target_ratio = cfg.ratio;
    snprintf(w->snap.preset, sizeof w->snap.preset, "%s", cfg.preset);
    snprintf(w->snap.method, sizeof w->snap.method, "%s", method);
    w->snap.window = cfg.window;
    w->snap.sinks = cfg.sinks;
    w->snap.calib_samples = cfg.calib_samples;
    w->snap.calib_tokens = cfg.calib_tokens;
    w->snap.eval_budget = search_eval_budget(w->search);
    worker_log_locked(w, "search: %s%s, ratio %.3f, preset %s, window %d, %d x %d-token calibration probes%s",
                      method, cfg.granularity ? " by layers" : "", cfg.ratio, w->snap.preset, cfg.window,
                      cfg.calib_samples, cfg.calib_tokens, state_path ? " (resumed from its state)" : "");
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int worker_job_prepare_search(worker *w, const worker_search_req *req) {
    char err[512] = "";
    search_config cfg;
    const int has_method = (req->opts.given & SOPT_BIT(SOPT_METHOD)) != 0;
    if (search_opts_config(&req->opts, w->m->hp.n_ctx_train, &cfg, err, sizeof err)) {
        worker_log(w, "cannot start the search: %s", err);
        return -1;
    }
    return worker_search_setup(w, &cfg, NULL, has_method ? req->opts.name[SOPT_METHOD] : "bosch");
}

/* Held-out split, made once per length (the current search's calibration length, else tiny's). */
int worker_ensure_heldout(worker *w, char *err, size_t errlen) {
    int len = w->search ? w->cfg.calib_tokens : 0;
    if (len <= 0) {
        search_config c;
        search_config_default(&c);
        if (search_preset_apply(&c, "tiny", w->m->hp.n_ctx_train, err, errlen) != 0) return -1;
        len = c.calib_tokens;
    }
    if (w->heldout.n > 0 && w->heldout_len == len) return 0;
    evaluator_free(w->heldout_ev);
    w->heldout_ev = NULL;
    probe_set_free(&w->heldout);
    probe_config pc = probe_config_default();
    pc.length_tokens = len;
    pc.n_samples = HELDOUT_SAMPLES;
    if (probe_set_generate(&w->heldout, w->m->tok, &pc, PROBE_SPLIT_HELDOUT, PROBE_DEFAULT_HELDOUT_SEED, err,
                           errlen))
        return -1;
    w->heldout_len = len;
    return 0;
}

int worker_heldout_score(worker *w, const attn_mask *mask, eval_result *r, eval_sample_result *per_sample,
                         char *err, size_t errlen) {
    int rc = worker_ensure_heldout(w, err, errlen);
    if (rc == 0 && !w->heldout_ev) {
        eval_sample *es = calloc((size_t)w->heldout.n, sizeof *es);
        if (!es) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        probe_set_eval_samples(&w->heldout, es);
        rc = evaluator_create_on(&w->heldout_ev, w->m, w->dev, es, w->heldout.n, 0, err, errlen);
        if (rc == 0) evaluator_set_cancel(w->heldout_ev, &w->cancel);
        free(es);
    }
    return rc == 0 ? evaluator_score(w->heldout_ev, mask, r, per_sample, err, errlen) : rc;
}

void worker_job_heldout(worker *w, const wcmd *c) {
    const ex_mask *em = &c->mask;
    const int servable = c->servable;
    char err[512] = "";
    worker_set_busy(w, servable ? "evaluating the servable projection on held-out probes"
                                : "evaluating the mask on held-out probes");
    ex_mask local = *em;
    attn_mask am, proj = {0};
    ex_mask_view(&local, &am);
    int rc = 0;
    if (servable) { /* score the projection in the mask's place */
        rc = mask_servable(&proj, &am);
        if (rc == 0)
            memcpy(local.z, proj.z, (size_t)am.n_layer * am.n_head_kv);
        else
            snprintf(err, sizeof err, "out of memory");
        mask_free(&proj);
    }
    eval_result r = {0};
    if (rc == 0) rc = worker_heldout_score(w, &am, &r, NULL, err, sizeof err);
    worker_set_busy(w, NULL);
    if (rc == EVAL_CANCELLED) return; /* quitting: no result, nothing to show */
    pthread_mutex_lock(&w->mu);
    if (rc != 0) {
        worker_log_locked(w, "held-out evaluation failed: %s", err);
    } else {
        ex_heldout *h = servable ? &w->snap.heldout_servable : &w->snap.heldout;
        h->seq++;
        h->mask_hash = mask_hash(&am);
        h->score = r.score;
        h->accuracy = r.accuracy;
        h->seconds = r.seconds;
        h->n_samples = w->heldout.n;
        h->length_tokens = w->heldout_len;
        worker_log_locked(
            w, "held-out%s: accuracy %.2f, score %.3f on %d x %d-token probes, ratio %.3f (%.1f s)",
            servable ? " (servable)" : "", r.accuracy, r.score, w->heldout.n, w->heldout_len, mask_ratio(&am),
            r.seconds);
    }
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

/* Decode tokens to one line: special tokens dropped, whitespace runs folded to one space. */
void worker_decode_line(const tokenizer *tok, const int32_t *ids, int n, char *out, size_t cap) {
    out[0] = '\0';
    if (n <= 0) return;
    char *s = tokenizer_decode(tok, ids, (size_t)n, 1);
    if (!s) return;
    /* chat markup: keep who speaks, drop the markers ("<|im_start|>assistant" -> "assistant:") */
    static const char *const from[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
    static const char *const to[] = {" \x01", " ", " "};
    for (int k = 0; k < 3; k++) {
        char *p;
        size_t fl = strlen(from[k]), tl = strlen(to[k]);
        while ((p = strstr(s, from[k]))) {
            memcpy(p, to[k], tl);
            memmove(p + tl, p + fl, strlen(p + fl) + 1);
        }
    }
    /* "\x01role" -> "role:" */
    for (char *p = strchr(s, 1); p; p = strchr(p, 1)) {
        char *e = p + 1;
        while (*e && !isspace((unsigned char)*e)) e++;
        memmove(p, p + 1, (size_t)(e - p - 1));
        e[-1] = ':';
    }
    size_t o = 0;
    int space = 0;
    for (const char *p = s; *p && o + 1 < cap; p++) {
        if (isspace((unsigned char)*p)) {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < cap) out[o++] = ' ';
        space = 0;
        out[o++] = *p;
    }
    out[o] = '\0';
    free(s);
}

/* Greedy generation (generate_greedy on the CPU) of up to max_new tokens after the prompt into
 * out. 0, -1 (message), or FORWARD_CANCELLED when *cancel became non-zero. */
static int generate(const model *m, const attn_mask *mask, const int32_t *prompt, int n_prompt, int max_new,
                    const atomic_int *cancel, int32_t *out, int *n_out, char *err, size_t errlen) {
    char why[256] = "";
    generate_opts go = {mask, max_new, cancel, NULL, NULL, NULL, NULL};
    generate_result r;
    int rc = generate_greedy(m, prompt, n_prompt, &go, out, &r, why, sizeof why);
    *n_out = r.n_gen;
    if (rc == -1 && r.stage == GENERATE_SETUP)
        snprintf(err, errlen, "out of memory for %d prompt tokens", n_prompt);
    else if (rc == -1 && r.stage == GENERATE_PREFILL)
        snprintf(err, errlen, "prefill of %d tokens failed: %s", n_prompt, why);
    else if (rc == -1)
        snprintf(err, errlen, "decode step %d failed", r.n_gen - 1);
    return rc;
}

void worker_job_ask(worker *w, const wcmd *c) {
    const ex_mask *em = &c->mask;
    const int sample = c->sample;
    char err[512] = "";
    worker_set_busy(w, "asking the model (greedy generation with the current mask)");
    double t0 = base_now_s();
    int rc = worker_ensure_heldout(w, err, sizeof err);
    ex_mask local = *em;
    attn_mask am;
    ex_mask_view(&local, &am);
    ex_ask a;
    memset(&a, 0, sizeof a);
    if (rc == 0) {
        const probe_sample *ps = &w->heldout.samples[((sample % w->heldout.n) + w->heldout.n) % w->heldout.n];
        a.sample = (int)(ps - w->heldout.samples);
        a.n_tokens = ps->answer_start;
        int q0 = ps->haystack_start + ps->haystack_len;
        worker_decode_line(w->m->tok, ps->tokens + q0, ps->answer_start - q0, a.question, sizeof a.question);
        snprintf(a.needle, sizeof a.needle, "%s", ps->value[ps->query]);
        int max_new = ps->n_answer + 8;
        int32_t *gen = malloc((size_t)max_new * sizeof *gen);
        int n_gen = 0;
        rc = gen ? generate(w->m, &am, ps->tokens, ps->answer_start, max_new, &w->cancel, gen, &n_gen, err,
                            sizeof err)
                 : -1;
        if (rc == 0) {
            worker_decode_line(w->m->tok, gen, n_gen, a.answer, sizeof a.answer);
            a.correct = strncmp(a.answer, a.needle, strlen(a.needle)) == 0;
        }
        free(gen);
    }
    a.seconds = base_now_s() - t0;
    worker_set_busy(w, NULL);
    if (rc == FORWARD_CANCELLED) return; /* quitting */
    pthread_mutex_lock(&w->mu);
    if (rc != 0) {
        worker_log_locked(w, "ask failed: %s", err);
    } else {
        a.seq = w->snap.ask.seq + 1;
        w->snap.ask = a;
        worker_log_locked(w, "asked held-out sample %d of %d: answer \"%.40s\", needle %s: %s (%.1f s)",
                          a.sample + 1, w->heldout.n, a.answer, a.needle, a.correct ? "correct" : "wrong",
                          a.seconds);
    }
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}
