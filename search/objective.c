/* objective.c — the real search objective: engine/eval.h's evaluator with prefix reuse over the
 * calibration split (datasets/probes.h calib_set). Raw score S(z) = mean over samples of the
 * geometric-mean answer-token probability (docs/design.md §6). The evaluator runs on the CPU or on a
 * backend handed in by the caller (engine/backend.h); search/ itself knows nothing of CUDA.
 */
#include <stdio.h>
#include <stdlib.h>

#include "search.h"

typedef struct {
    evaluator *ev;
    eval_sample *samples;    /* [n] views into the calib_set */
    eval_sample_result *per; /* [n] */
    double *nll;             /* [n] */
    int n;
} calib_objective;

static int calib_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    calib_objective *o = ctx;
    eval_result r;
    int rc = make_base ? evaluator_set_base(o->ev, mask, &r, o->per, err, errlen)
                       : evaluator_score(o->ev, mask, &r, o->per, err, errlen);
    if (rc) return rc == EVAL_CANCELLED ? SEARCH_CANCELLED : -1;
    for (int i = 0; i < o->n; i++) o->nll[i] = o->per[i].nll;
    *out = (search_eval){r.score, r.accuracy, r.nll, r.seconds, o->n, o->nll};
    return 0;
}

static void calib_destroy(void *ctx) {
    calib_objective *o = ctx;
    if (!o) return;
    evaluator_free(o->ev);
    free(o->samples);
    free(o->per);
    free(o->nll);
    free(o);
}

void search_objective_set_cancel(search_objective *obj, const atomic_int *cancel) {
    if (obj && obj->score == calib_score && obj->ctx)
        evaluator_set_cancel(((calib_objective *)obj->ctx)->ev, cancel);
}

void search_objective_free(search_objective *obj) {
    if (obj && obj->destroy) obj->destroy(obj->ctx);
    if (obj) obj->ctx = NULL, obj->destroy = NULL, obj->score = NULL;
}

int search_objective_calib(search_objective *obj, const model *m, const calib_set *cs, char *err,
                           size_t errlen) {
    return search_objective_calib_on(obj, m, NULL, cs, err, errlen);
}

int search_objective_calib_on(search_objective *obj, const model *m, const backend *be, const calib_set *cs,
                              char *err, size_t errlen) {
    if (!cs || calib_set_split(cs) != PROBE_SPLIT_CALIBRATION) {
        snprintf(err, errlen, "search objective: only the calibration split may be searched on");
        return -1;
    }
    int n = calib_set_n(cs);
    if (n < 1) {
        snprintf(err, errlen, "search objective: empty calibration set");
        return -1;
    }
    calib_objective *o = calloc(1, sizeof *o);
    if (o) {
        o->n = n;
        o->samples = calloc((size_t)n, sizeof *o->samples);
        o->per = calloc((size_t)n, sizeof *o->per);
        o->nll = calloc((size_t)n, sizeof *o->nll);
    }
    if (!o || !o->samples || !o->per || !o->nll) {
        calib_destroy(o);
        snprintf(err, errlen, "search objective: out of memory");
        return -1;
    }
    calib_set_eval_samples(cs, o->samples);
    if (evaluator_create_on(&o->ev, m, be, o->samples, n, 1, err, errlen)) {
        calib_destroy(o);
        return -1;
    }
    *obj = (search_objective){calib_score, calib_destroy, o, o->samples, n, NULL};
    return 0;
}

int search_calib_generate(calib_set **out, const model *m, const search_config *cfg, char *err,
                          size_t errlen) {
    probe_config pc = probe_config_default();
    if (cfg->calib_samples > 0) pc.n_samples = cfg->calib_samples;
    if (cfg->calib_tokens > 0) pc.length_tokens = cfg->calib_tokens;
    if (!cfg->calib_mix) return probe_calib_generate(out, m->tok, &pc, PROBE_DEFAULT_CALIB_SEED, err, errlen);
    /* the mix: niah_single on noise, niah_multikey on prose, passkey on noise, samples shared out */
    probe_config mix[3] = {pc, pc, pc};
    mix[1].task = PROBE_NIAH_MULTIKEY, mix[1].haystack = HAYSTACK_TEXT;
    mix[2].task = PROBE_PASSKEY, mix[2].haystack = HAYSTACK_NOISE;
    int n = pc.n_samples, k = 0;
    for (int t = 0; t < 3; t++) mix[t].n_samples = n / 3 + (t < n % 3);
    for (int t = 0; t < 3; t++)
        if (mix[t].n_samples > 0) mix[k++] = mix[t];
    return probe_calib_generate_mix(out, m->tok, mix, k, PROBE_DEFAULT_CALIB_SEED, err, errlen);
}
