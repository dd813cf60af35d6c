/* objective.c — the real search objective: engine/eval.h's evaluator with prefix reuse over the
 * calibration split (datasets/probes.h calib_set). Raw score S(z) = mean over samples of the
 * geometric-mean answer-token probability (docs/design.md §6). The evaluator runs on the CPU or on a
 * backend handed in by the caller (engine/backend.h); search/ itself knows nothing of CUDA.
 *
 * Racing (search.h score_part, race.h): the samples are held by one evaluator per round of the
 * race (the rounds of race_parts over the order race_order(RACE_ORDER_SEED)), each with its own
 * prefix-reuse base; a whole evaluation runs every part and assembles the per-sample results in
 * sample order, with evaluator.c's formulas (mean of p_answer = exp(-nll), of exact, of nll), so
 * it is bitwise the evaluation of one evaluator over every sample. The streams' memory is that of
 * one evaluator; each part has its own activation scratch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "race.h"
#include "search.h"

typedef struct {
    evaluator *ev[RACE_MAX_PARTS]; /* part j's samples: order[end[j-1] .. end[j]) */
    int n_parts;
    int *ord; /* [n] sample indexes in race order */
    int end[RACE_MAX_PARTS];
    eval_sample *samples;    /* [n] views into the calib_set, sample order */
    eval_sample *psamples;   /* [n] the same in race order (each part a contiguous run) */
    eval_sample_result *per; /* [n] race order */
    eval_sample_result *res; /* [n] sample order (score) */
    double *nll;             /* [n] sample order (score) */
    double *part_nll;        /* [n] part order (score_part) */
    int n;
} calib_objective;

static int part_first(const calib_objective *o, int j) {
    return j > 0 ? o->end[j - 1] : 0;
}

/* Part j of mask into per[first .. end) (race order). 0, or -1 / SEARCH_CANCELLED. */
static int run_part(calib_objective *o, int j, const attn_mask *mask, int make_base, eval_result *r,
                    char *err, size_t errlen) {
    eval_sample_result *per = o->per + part_first(o, j);
    int rc = make_base ? evaluator_set_base(o->ev[j], mask, r, per, err, errlen)
                       : evaluator_score(o->ev[j], mask, r, per, err, errlen);
    if (rc) return rc == EVAL_CANCELLED ? SEARCH_CANCELLED : -1;
    return 0;
}

static int calib_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    calib_objective *o = ctx;
    double seconds = 0.0;
    for (int j = 0; j < o->n_parts; j++) {
        eval_result r;
        int rc = run_part(o, j, mask, make_base, &r, err, errlen);
        if (rc) return rc;
        seconds += r.seconds;
    }
    /* sample order, evaluator.c's summarize: the same sums in the same order */
    double score = 0.0, acc = 0.0, nll = 0.0;
    for (int k = 0; k < o->n; k++) o->res[o->ord[k]] = o->per[k];
    for (int s = 0; s < o->n; s++) {
        score += o->res[s].p_answer;
        acc += o->res[s].exact;
        nll += o->res[s].nll;
        o->nll[s] = o->res[s].nll;
    }
    *out = (search_eval){score / o->n, acc / o->n, nll / o->n, seconds, o->n, o->nll};
    return 0;
}

static int calib_score_part(void *ctx, const attn_mask *mask, int part, int make_base, search_eval *out,
                            char *err, size_t errlen) {
    calib_objective *o = ctx;
    if (part < 0 || part >= o->n_parts) {
        snprintf(err, errlen, "search objective: no part %d (%d parts)", part, o->n_parts);
        return -1;
    }
    eval_result r;
    int rc = run_part(o, part, mask, make_base, &r, err, errlen);
    if (rc) return rc;
    const int first = part_first(o, part), count = o->end[part] - first;
    for (int k = 0; k < count; k++) o->part_nll[k] = o->per[first + k].nll;
    *out = (search_eval){r.score, r.accuracy, r.nll, r.seconds, count, o->part_nll};
    return 0;
}

static void calib_destroy(void *ctx) {
    calib_objective *o = ctx;
    if (!o) return;
    for (int j = 0; j < RACE_MAX_PARTS; j++) evaluator_free(o->ev[j]);
    free(o->ord);
    free(o->samples);
    free(o->psamples);
    free(o->per);
    free(o->res);
    free(o->nll);
    free(o->part_nll);
    free(o);
}

void search_objective_set_cancel(search_objective *obj, const atomic_int *cancel) {
    if (obj && obj->score == calib_score && obj->ctx) {
        calib_objective *o = obj->ctx;
        for (int j = 0; j < o->n_parts; j++) evaluator_set_cancel(o->ev[j], cancel);
    }
}

void search_objective_free(search_objective *obj) {
    if (obj && obj->destroy) obj->destroy(obj->ctx);
    if (obj) obj->ctx = NULL, obj->destroy = NULL, obj->score = NULL, obj->score_part = NULL;
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
        o->ord = calloc((size_t)n, sizeof *o->ord);
        o->samples = calloc((size_t)n, sizeof *o->samples);
        o->psamples = calloc((size_t)n, sizeof *o->psamples);
        o->per = calloc((size_t)n, sizeof *o->per);
        o->res = calloc((size_t)n, sizeof *o->res);
        o->nll = calloc((size_t)n, sizeof *o->nll);
        o->part_nll = calloc((size_t)n, sizeof *o->part_nll);
    }
    if (!o || !o->ord || !o->samples || !o->psamples || !o->per || !o->res || !o->nll || !o->part_nll) {
        calib_destroy(o);
        snprintf(err, errlen, "search objective: out of memory");
        return -1;
    }
    calib_set_eval_samples(cs, o->samples);
    o->n_parts = race_parts(n, o->end);
    race_order(n, RACE_ORDER_SEED, o->ord);
    for (int k = 0; k < n; k++) o->psamples[k] = o->samples[o->ord[k]];
    for (int j = 0; j < o->n_parts; j++) {
        const int first = part_first(o, j);
        if (evaluator_create_on(&o->ev[j], m, be, o->psamples + first, o->end[j] - first, 1, err, errlen)) {
            calib_destroy(o);
            return -1;
        }
    }
    *obj = (search_objective){
        .score = calib_score, .destroy = calib_destroy, .ctx = o, .samples = o->samples, .n_samples = n};
    if (o->n_parts >= 2) {
        obj->n_parts = o->n_parts;
        obj->part_order = o->ord;
        obj->part_end = o->end;
        obj->score_part = calib_score_part;
    }
    return 0;
}
/* The probe configs of one length's share of the split into mix (at most 3): niah_single on
 * noise, or with calib_mix niah_single on noise, niah_multikey on prose and passkey on noise with
 * the samples shared out (the first tasks get the remainder). Returns how many. */
static int length_configs(const search_config *cfg, int tokens, int n, probe_config *mix) {
    probe_config pc = probe_config_default();
    pc.n_samples = n;
    if (tokens > 0) pc.length_tokens = tokens;
    if (!cfg->calib_mix) {
        mix[0] = pc;
        return n > 0;
    }
    probe_config all[3] = {pc, pc, pc};
    all[1].task = PROBE_NIAH_MULTIKEY, all[1].haystack = HAYSTACK_TEXT;
    all[2].task = PROBE_PASSKEY, all[2].haystack = HAYSTACK_NOISE;
    int k = 0;
    for (int t = 0; t < 3; t++) {
        all[t].n_samples = n / 3 + (t < n % 3);
        if (all[t].n_samples > 0) mix[k++] = all[t];
    }
    return k;
}

int search_calib_generate(calib_set **out, const model *m, const search_config *cfg, char *err,
                          size_t errlen) {
    const int n = cfg->calib_samples > 0 ? cfg->calib_samples : probe_config_default().n_samples;
    if (!cfg->calib_mix && !cfg->calib_tokens2) {
        probe_config pc = probe_config_default();
        pc.n_samples = n;
        if (cfg->calib_tokens > 0) pc.length_tokens = cfg->calib_tokens;
        return probe_calib_generate(out, m->tok, &pc, PROBE_DEFAULT_CALIB_SEED, err, errlen);
    }
    probe_config mix[6];
    const int n2 = cfg->calib_tokens2 > 0 ? n / 2 : 0;
    int k = length_configs(cfg, cfg->calib_tokens, n - n2, mix);
    if (n2 > 0) k += length_configs(cfg, cfg->calib_tokens2, n2, mix + k);
    return probe_calib_generate_mix(out, m->tok, mix, k, PROBE_DEFAULT_CALIB_SEED, err, errlen);
}

int search_confirm_generate(calib_set **out, const model *m, const search_config *cfg, char *err,
                            size_t errlen) {
    const int n = cfg->confirm_samples;
    if (n < 1) {
        snprintf(err, errlen, "search: confirm_samples %d: no confirmation split to make", n);
        return -1;
    }
    probe_config mix[6]; /* the calibration split's tasks (calib_mix) */
    const int n2 = cfg->confirm_tokens2 > 0 ? n / 2 : 0;
    int k = length_configs(cfg, cfg->calib_tokens, n - n2, mix);
    if (n2 > 0) k += length_configs(cfg, cfg->confirm_tokens2, n2, mix + k);
    return probe_calib_generate_mix(out, m->tok, mix, k, SEARCH_CONFIRM_SEED, err, errlen);
}
