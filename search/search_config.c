/* search_config.c — search methods, configuration defaults and presets (see search.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "probes.h"
#include "search.h"

static const char *const method_names[SEARCH_METHOD_COUNT] = {"bosch",    "rand", "bme",      "intr",  "nll",
                                                              "locality", "echo", "ablation", "fisher"};

const char *search_method_name(search_method m) {
    return (unsigned)m < SEARCH_METHOD_COUNT ? method_names[m] : "?";
}

int search_method_parse(const char *name, search_method *out, char *err, size_t errlen) {
    for (int i = 0; i < SEARCH_METHOD_COUNT; i++)
        if (name && !strcasecmp(name, method_names[i])) {
            *out = (search_method)i;
            return 0;
        }
    snprintf(err, errlen,
             "unknown method '%s' (valid: bosch, rand, bme, intr, nll, locality, echo, ablation, "
             "fisher)",
             name ? name : "");
    return -1;
}

int search_method_needs_model(search_method m) {
    return m == SEARCH_METHOD_LOCALITY || m == SEARCH_METHOD_ECHO;
}

void search_config_default(search_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->method = SEARCH_METHOD_BOSCH;
    cfg->ratio = 0.5;
    cfg->sinks = PROBE_DEFAULT_SINKS;
    cfg->seed = 1;
    cfg->n_buckets = 4;
    search_preset_apply(cfg, "default", 0, NULL, 0);
}

int search_preset_apply(search_config *cfg, const char *preset, int n_ctx_train, char *err, size_t errlen) {
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
    return 0;
}

int search_config_check(const search_config *cfg, char *err, size_t errlen) {
    const char *what = NULL;
    if ((unsigned)cfg->method >= SEARCH_METHOD_COUNT)
        what = "method";
    else if (!(cfg->ratio >= 0 && cfg->ratio <= 1))
        what = "ratio (must be in [0,1])";
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
    if (!what) return 0;
    snprintf(err, errlen,
             "search config: bad %s (ratio %g, window %d, sinks %d, budgets %ld/%ld, "
             "restarts %d, buckets %d)",
             what, cfg->ratio, cfg->window, cfg->sinks, cfg->stage1_budget_per_layer,
             cfg->stage3_budget_per_group, cfg->restarts, cfg->n_buckets);
    return -1;
}
