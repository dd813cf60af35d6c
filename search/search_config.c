/* search_config.c — configuration defaults, BOSCH's options and presets (see search.h; the methods
 * and variants are the registry's, search_methods.c). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "probes.h"
#include "search.h"

const char *search_granularity_name(search_granularity g) {
    return g == SEARCH_GRANULARITY_LAYER ? "layer" : g == SEARCH_GRANULARITY_HEAD ? "head" : "?";
}

int search_granularity_parse(const char *name, search_granularity *out, char *err, size_t errlen) {
    if (name && !strcasecmp(name, "head")) {
        *out = SEARCH_GRANULARITY_HEAD;
        return 0;
    }
    if (name && !strcasecmp(name, "layer")) {
        *out = SEARCH_GRANULARITY_LAYER;
        return 0;
    }
    if (err) snprintf(err, errlen, "unknown granularity '%s' (valid: head, layer)", name ? name : "");
    return -1;
}

/* The "default" preset with the project's default BOSCH options (docs/search.md: chosen on the
 * validation split). */
void search_config_default(search_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->method = SEARCH_METHOD_BOSCH;
    cfg->ratio = 0.5;
    cfg->sinks = PROBE_DEFAULT_SINKS;
    cfg->seed = 1;
    cfg->n_buckets = 4;
    search_preset_apply(cfg, "default", 0, NULL, 0);
    search_config_project_options(cfg);
    cfg->race = 1; /* docs/search.md: same masks unless a drop is wrong; rule (a) never is */
    cfg->accept_k = 0;
}

int search_preset_apply(search_config *cfg, const char *preset, int n_ctx_train, char *err, size_t errlen) {
    const int want_refine = cfg->refine_budget > 0; /* the options keep their refinement share */
    if (!strcmp(preset, "tiny")) {
        cfg->calib_samples = 4;
        cfg->calib_tokens = 512;
        cfg->window = 64;
        cfg->stage1_budget_per_layer = 3;
        cfg->stage3_budget_per_group = 16;
        cfg->restarts = 1;
    } else if (!strcmp(preset, "default")) {
        cfg->calib_samples = PROBE_DEFAULT_SAMPLES;
        cfg->calib_tokens = PROBE_DEFAULT_LENGTH;
        cfg->window = PROBE_DEFAULT_WINDOW;
        cfg->stage1_budget_per_layer = 3;
        cfg->stage3_budget_per_group = 60;
        cfg->restarts = 2;
    } else if (!strcmp(preset, "paper")) {
        int n_ctx = n_ctx_train > 0 ? n_ctx_train : 8192;
        cfg->calib_samples = 64;
        cfg->calib_tokens = n_ctx;
        cfg->window = n_ctx / 32 > 0 ? n_ctx / 32 : 1;
        cfg->stage1_budget_per_layer = 6;
        cfg->stage3_budget_per_group = 200;
        cfg->restarts = 4;
    } else {
        if (err) snprintf(err, errlen, "unknown preset '%s' (valid: tiny, default, paper)", preset);
        return -1;
    }
    snprintf(cfg->preset, sizeof cfg->preset, "%s", preset);
    cfg->refine_budget = 0;
    if (want_refine) search_config_refine_share(cfg);
    return 0;
}

int search_config_check(const search_config *cfg, char *err, size_t errlen) {
    const char *what = NULL;
    if (!search_method_valid(cfg->method))
        what = "method";
    else if (cfg->granularity != SEARCH_GRANULARITY_HEAD && cfg->granularity != SEARCH_GRANULARITY_LAYER)
        what = "granularity (must be head or layer)";
    else if (!(cfg->ratio >= 0 && cfg->ratio <= 1))
        what = "ratio (must be in [0,1])";
    else if ((cfg->stage3_scope || cfg->refine_budget > 0) && !cfg->stage1_singles)
        what = "stage3_scope / refine_budget (they need stage1_singles)";
    else if (cfg->refine_budget < 0)
        what = "refine_budget (must be >= 0)";
    else if (cfg->window < 1)
        what = "window (must be >= 1)";
    else if (cfg->sinks < 0)
        what = "sinks (must be >= 0)";
    else if (cfg->stage1_budget_per_layer < 1)
        what = "stage1_budget_per_layer (must be >= 1)";
    else if (cfg->stage3_budget_per_group < 1)
        what = "stage3_budget_per_group (must be >= 1)";
    else if (cfg->restarts < 0)
        what = "restarts (must be >= 0)";
    else if (cfg->n_buckets < 2)
        what = "n_buckets (must be >= 2)";
    else if (cfg->race < 0 || cfg->race > 2)
        what = "race (must be 0 off, 1 on or 2 check)";
    else if (!(cfg->accept_k >= 0 && cfg->accept_k <= 100))
        what = "accept_k (must be in [0, 100])";
    if (!what) return 0;
    snprintf(err, errlen,
             "search config: bad %s (ratio %g, window %d, sinks %d, budgets %ld/%ld, "
             "restarts %d, buckets %d)",
             what, cfg->ratio, cfg->window, cfg->sinks, cfg->stage1_budget_per_layer,
             cfg->stage3_budget_per_group, cfg->restarts, cfg->n_buckets);
    return -1;
}
