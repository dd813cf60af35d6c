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

void search_config_set_granularity(search_config *cfg, search_granularity g) {
    cfg->granularity = g;
    if (g != SEARCH_GRANULARITY_LAYER) return;
    cfg->stage1_independent = 1;
    cfg->stage1_singles = 0;
    cfg->stage3_scope = 0;
    cfg->stage3_budget_per_group += cfg->refine_budget; /* the refinement's share back */
    cfg->refine_budget = 0;
}

int search_method_needs_model(search_method m) {
    return m == SEARCH_METHOD_LOCALITY || m == SEARCH_METHOD_ECHO;
}

/* The project's default BOSCH options (docs/search.md: chosen on the validation split). */
static void default_options(search_config *cfg) {
    search_config_paper_options(cfg);
    cfg->stage1_independent = 1;
    cfg->stage1_singles = 1;
    cfg->stage3_scope = 1;
    search_config_refine_share(cfg);
}

void search_config_default(search_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->method = SEARCH_METHOD_BOSCH;
    cfg->ratio = 0.5;
    cfg->sinks = PROBE_DEFAULT_SINKS;
    cfg->seed = 1;
    cfg->n_buckets = 4;
    search_preset_apply(cfg, "default", 0, NULL, 0);
    default_options(cfg);
}

void search_config_refine_share(search_config *cfg) {
    const long b3 = cfg->stage3_budget_per_group;
    if (b3 < 2) return; /* nothing to share: no refinement */
    cfg->stage3_budget_per_group = b3 - b3 / 2;
    cfg->refine_budget = b3 / 2;
}

static const struct {
    const char *name, *what;
} variants[] = {
    {"bosch", "the project's default options (docs/search.md)"},
    {"bosch_paper", "the paper's structure (DESIGN.md section 6)"},
    {"bosch_indep", "paper + independent stage-1 probes"},
    {"bosch_marginal", "paper + marginal stage-2 drop"},
    {"bosch_ranks", "paper + rank-ladder stage 2"},
    {"bosch_heads", "paper + stage-1 head scores guiding stage 3"},
    {"bosch_bucket", "paper + head scores + stage 3 per bucket"},
    {"bosch_plus", "paper + head scores + final refinement (same total budget)"},
    {"bosch_layer", "the default options at layer granularity: whole layers go SWA"},
};

int search_variant_apply(search_config *cfg, const char *name, char *err, size_t errlen) {
    if (name && strncasecmp(name, "bosch", 5) == 0) {
        int k = -1;
        for (int i = 0; i < (int)(sizeof variants / sizeof variants[0]); i++)
            if (!strcasecmp(name, variants[i].name)) k = i;
        if (k < 0) {
            snprintf(err, errlen,
                     "unknown BOSCH variant '%s' (valid: bosch, bosch_paper, bosch_indep, bosch_marginal, "
                     "bosch_ranks, bosch_heads, bosch_bucket, bosch_plus, bosch_layer)",
                     name);
            return -1;
        }
        cfg->method = SEARCH_METHOD_BOSCH;
        cfg->granularity = SEARCH_GRANULARITY_HEAD;
        if (k == 0 || k == 8) {
            default_options(cfg);
            if (k == 8) search_config_set_granularity(cfg, SEARCH_GRANULARITY_LAYER);
            return 0;
        }
        search_config_paper_options(cfg);
        switch (k) {
        case 2:
            cfg->stage1_independent = 1;
            break;
        case 3:
            cfg->delta_marginal = 1;
            break;
        case 4:
            cfg->stage2_ranks = 1;
            break;
        case 5:
            cfg->stage1_singles = 1;
            break;
        case 6:
            cfg->stage1_singles = 1, cfg->stage3_scope = 1;
            break;
        case 7:
            cfg->stage1_singles = 1, search_config_refine_share(cfg);
            break;
        }
        return 0;
    }
    if (search_method_parse(name, &cfg->method, NULL, 0) == 0) return 0;
    snprintf(err, errlen,
             "unknown method '%s' (valid: bosch, bosch_paper, bosch_indep, bosch_marginal, bosch_ranks, "
             "bosch_heads, bosch_bucket, bosch_plus, bosch_layer, rand, bme, intr, nll, locality, echo, "
             "ablation, fisher)",
             name ? name : "");
    return -1;
}

const char *search_variant_name(int i) {
    const int n_var = (int)(sizeof variants / sizeof variants[0]);
    if (i < 0) return NULL;
    if (i < n_var) return variants[i].name;
    int m = i - n_var + 1; /* the baselines, SEARCH_METHOD_BOSCH + 1 .. */
    return m < SEARCH_METHOD_COUNT ? search_method_name((search_method)m) : NULL;
}

void search_config_paper_options(search_config *cfg) {
    cfg->stage1_independent = 0;
    cfg->delta_marginal = 0;
    cfg->stage2_ranks = 0;
    cfg->stage1_singles = 0;
    if (cfg->refine_budget > 0) cfg->stage3_budget_per_group += cfg->refine_budget; /* its share back */
    cfg->stage3_scope = 0;
    cfg->refine_budget = 0;
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
    if ((unsigned)cfg->method >= SEARCH_METHOD_COUNT)
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
    if (!what) return 0;
    snprintf(err, errlen,
             "search config: bad %s (ratio %g, window %d, sinks %d, budgets %ld/%ld, "
             "restarts %d, buckets %d)",
             what, cfg->ratio, cfg->window, cfg->sinks, cfg->stage1_budget_per_layer,
             cfg->stage3_budget_per_group, cfg->restarts, cfg->n_buckets);
    return -1;
}
