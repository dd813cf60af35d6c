/* search_scores.c — every static head ranking's scores on one calibration split (see
 * search_scores.h): each ranking is its baseline run to the end, its importance kept. */
#include "search_scores.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"
#include "search.h"
#include "search_methods.h"

int search_scores_n(void) {
    return search_methods_count_kind(SEARCH_KIND_HEAD_RANKING);
}

const char *search_scores_name(int k) {
    const search_method_info *m = search_method_row(search_method_of_kind(SEARCH_KIND_HEAD_RANKING, k));
    return m ? m->name : NULL;
}

/* Run one baseline to its end and copy its importance into *out. 0, 1 stopped, -1. */
static int one_ranking(const search_config *cfg, const model *m, const search_objective *obj,
                       volatile sig_atomic_t *stop, double **out, char *err, size_t errlen) {
    const int n = m->hp.n_layer * m->hp.n_head_kv;
    search_state *st = NULL;
    if (search_create(&st, cfg, m->hp.n_layer, m->hp.n_head_kv, obj, m, NULL, NULL, err, errlen)) return -1;
    int r = search_run(st, stop, err, errlen);
    const double *imp = r == 1 ? search_head_importance(st) : NULL;
    if (r == 1 && !imp) {
        snprintf(err, errlen, "scores: %s: no ranking at the end", search_method_name(cfg->method));
        r = -1;
    }
    if (imp && (*out = malloc(sizeof **out * (size_t)n))) memcpy(*out, imp, sizeof **out * (size_t)n);
    if (imp && !*out) {
        snprintf(err, errlen, "scores: out of memory");
        r = -1;
    }
    search_free(st);
    return r == 1 ? 0 : r == 0 ? 1 : -1;
}

int search_static_scores(const model *m, const backend *be, const search_scores_opts *o,
                         volatile sig_atomic_t *stop, double *score[SEARCH_METHODS_MAX], char *err,
                         size_t errlen) {
    const int n = search_scores_n();
    for (int k = 0; k < n; k++) score[k] = NULL;
    search_config cfg;
    search_config_default(&cfg);
    cfg.calib_samples = o->samples;
    cfg.calib_tokens = o->tokens;
    cfg.window = o->window;
    cfg.sinks = o->sinks;
    if (search_config_check(&cfg, err, errlen)) return -1;
    calib_set *cs = NULL;
    search_objective obj = {0};
    int rc = 0;
    if (search_calib_generate(&cs, m, &cfg, err, errlen) ||
        search_objective_calib_on(&obj, m, be, cs, err, errlen))
        rc = -1;
    for (int k = 0; k < n && rc == 0; k++) {
        if (o->progress) o->progress(o->user, search_scores_name(k));
        cfg.method = search_method_of_kind(SEARCH_KIND_HEAD_RANKING, k);
        rc = one_ranking(&cfg, m, &obj, stop, &score[k], err, errlen);
    }
    search_objective_free(&obj);
    calib_set_free(cs);
    if (rc)
        for (int k = 0; k < n; k++) {
            free(score[k]);
            score[k] = NULL;
        }
    return rc;
}
