/* probe_score.c — masks on a probe cell's samples (probe_score.h). */
#include "probe_score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct probe_scorer {
    const model *m;
    const backend *be;
    probe_cell cell;
    int reuse;
    probe_set set;
    eval_sample *es; /* [set.n], into set */
    evaluator *ev;   /* reuse: over every sample */
};

probe_cell probe_cell_make(const probe_config *cfg, probe_split split, uint64_t seed) {
    return (probe_cell){
        cfg->task, cfg->haystack, cfg->length_tokens, cfg->n_samples, cfg->n_keys, cfg->use_chat, split,
        0,         seed};
}

int probe_cell_equal(const probe_cell *a, const probe_cell *b) {
    return a->task == b->task && a->haystack == b->haystack && a->length == b->length &&
           a->n_samples == b->n_samples && a->n_keys == b->n_keys && a->use_chat == b->use_chat &&
           a->split == b->split && a->seed == b->seed;
}

/* The probe_config of a cell (from another process: the enums checked). 0 or -1 with a message. */
static int cell_config(const probe_cell *c, probe_config *pc, char *err, size_t errlen) {
    if (c->task < 0 || c->task >= PROBE_TASK_COUNT || c->haystack < 0 || c->haystack >= HAYSTACK_KIND_COUNT ||
        c->split < PROBE_SPLIT_CALIBRATION || c->split > PROBE_SPLIT_VALIDATION) {
        snprintf(err, errlen, "probe cell: task %d, haystack %d or split %d out of range (another build?)",
                 (int)c->task, (int)c->haystack, (int)c->split);
        return -1;
    }
    *pc = probe_config_default();
    pc->task = (probe_task)c->task;
    pc->haystack = (haystack_kind)c->haystack;
    pc->length_tokens = c->length;
    pc->n_samples = c->n_samples;
    pc->n_keys = c->n_keys;
    pc->use_chat = c->use_chat;
    return 0;
}

int probe_scorer_open(probe_scorer **out, const model *m, const backend *be, const probe_cell *cell,
                      int reuse, char *err, size_t errlen) {
    *out = NULL;
    probe_config pc;
    if (cell_config(cell, &pc, err, errlen)) return -1;
    probe_scorer *s = calloc(1, sizeof *s);
    if (!s) return snprintf(err, errlen, "probe cell: out of memory"), -1;
    s->m = m, s->be = be, s->cell = *cell, s->reuse = reuse != 0;
    if (probe_set_generate(&s->set, m->tok, &pc, (probe_split)cell->split, cell->seed, err, errlen)) {
        probe_scorer_free(s);
        return -1;
    }
    if (!(s->es = calloc((size_t)s->set.n, sizeof *s->es))) {
        probe_scorer_free(s);
        return snprintf(err, errlen, "probe cell: out of memory"), -1;
    }
    probe_set_eval_samples(&s->set, s->es);
    if (s->reuse && evaluator_create_on(&s->ev, m, be, s->es, s->set.n, 1, err, errlen)) {
        probe_scorer_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void probe_scorer_free(probe_scorer *s) {
    if (!s) return;
    evaluator_free(s->ev);
    free(s->es);
    probe_set_free(&s->set);
    free(s);
}

const probe_cell *probe_scorer_cell(const probe_scorer *s) {
    return &s->cell;
}
int probe_scorer_reuse(const probe_scorer *s) {
    return s->reuse;
}
int probe_scorer_n(const probe_scorer *s) {
    return s->set.n;
}
const eval_sample *probe_scorer_samples(const probe_scorer *s) {
    return s->es;
}

int probe_scorer_score(probe_scorer *s, const attn_mask *mask, int first, int count, eval_sample_result *res,
                       char *err, size_t errlen) {
    if (first < 0 || count < 1 || first > s->set.n - count || (s->reuse && count != s->set.n)) {
        snprintf(err, errlen, "probe cell: samples [%d, %d) of a set of %d%s", first, first + count, s->set.n,
                 s->reuse ? " (a reuse scorer scores them all)" : "");
        return -1;
    }
    eval_result r;
    if (s->reuse) return evaluator_set_base(s->ev, mask, &r, res, err, errlen);
    for (int i = first; i < first + count; i++) {
        evaluator *ev = NULL;
        int rc = evaluator_create_on(&ev, s->m, s->be, &s->es[i], 1, 0, err, errlen) ||
                 evaluator_score(ev, mask, &r, &res[i - first], err, errlen);
        evaluator_free(ev);
        if (rc) return -1;
    }
    return 0;
}

int probe_score_cached(probe_score_cache *c, const probe_cell *cell, int reuse, const attn_mask *mask,
                       int first, int count, eval_sample_result *res, char *err, size_t errlen) {
    if (c->s && (!probe_cell_equal(&c->s->cell, cell) || c->s->reuse != (reuse != 0))) {
        probe_scorer_free(c->s);
        c->s = NULL;
    }
    if (!c->s && probe_scorer_open(&c->s, c->m, c->be, cell, reuse, err, errlen)) return -1;
    return probe_scorer_score(c->s, mask, first, count, res, err, errlen);
}

void probe_score_cache_free(probe_score_cache *c) {
    probe_scorer_free(c->s);
    c->s = NULL;
}
