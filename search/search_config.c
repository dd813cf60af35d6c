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

/* The presets, smallest first (search.h). A preset sets every field it names; the others are the
 * caller's. calib_mix and calib_tokens2 are set by every preset, so applying one after another
 * leaves nothing of the first. */
typedef struct {
    const char *name, *note; /* note: the start form's words after the calibration size */
    int samples, tokens, mix, tokens2, window;
    long budget1, budget3;
    int restarts;
} preset_row;

static const preset_row presets[] = {
    {"tiny", "the smallest, for CI", 4, 512, 0, 0, 64, 3, 16, 1},
    /* docs/search.md "The demo preset": chosen on the validation split */
    {"demo", "drops above noise", 12, 256, 1, 0, 32, 3, 16, 1},
    {"default", "the CPU default", PROBE_DEFAULT_SAMPLES, PROBE_DEFAULT_LENGTH, 0, 0, PROBE_DEFAULT_WINDOW, 3,
     60, 2},
    {"paper", "meant for a GPU", 64, 0 /* n_ctx_train */, 0, 0, 0 /* n_ctx / 32 */, 6, 200, 4},
};
enum { N_PRESETS = sizeof presets / sizeof presets[0] };

const char *search_preset_name(int i) {
    return i >= 0 && i < N_PRESETS ? presets[i].name : NULL;
}

int search_preset_find(const char *name) {
    for (int i = 0; name && i < N_PRESETS; i++)
        if (!strcmp(name, presets[i].name)) return i;
    return -1;
}

const char *search_preset_names(char *buf, size_t len, const char *last) {
    size_t at = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < N_PRESETS; i++) {
        const char *sep = i == 0 ? "" : i == N_PRESETS - 1 ? last : ", ";
        int n = snprintf(buf + at, at < len ? len - at : 0, "%s%s", sep, presets[i].name);
        if (n > 0) at += (size_t)n;
    }
    return buf;
}

const char *search_preset_describe(int i, int n_ctx_train, char *buf, size_t len) {
    search_config c;
    memset(&c, 0, sizeof c);
    if (!search_preset_name(i) || search_preset_apply(&c, presets[i].name, n_ctx_train, NULL, 0)) {
        if (len) buf[0] = '\0';
        return buf;
    }
    char tokens[48];
    if (c.calib_tokens2 > 0)
        snprintf(tokens, sizeof tokens, "%d and %d tokens", c.calib_tokens, c.calib_tokens2);
    else
        snprintf(tokens, sizeof tokens, "%d tokens", c.calib_tokens);
    snprintf(buf, len, "%s: %d probes x %s%s, W %d; %s", presets[i].name, c.calib_samples, tokens,
             c.calib_mix ? ", 3 tasks" : "", c.window, presets[i].note);
    return buf;
}

int search_preset_apply(search_config *cfg, const char *preset, int n_ctx_train, char *err, size_t errlen) {
    const int want_refine = cfg->refine_budget > 0; /* the options keep their refinement share */
    const int i = search_preset_find(preset);
    if (i < 0) {
        char names[128];
        if (err)
            snprintf(err, errlen, "unknown preset '%s' (valid: %s)", preset ? preset : "",
                     search_preset_names(names, sizeof names, ", "));
        return -1;
    }
    const preset_row *p = &presets[i];
    cfg->calib_samples = p->samples;
    cfg->calib_tokens = p->tokens;
    cfg->calib_mix = p->mix;
    cfg->calib_tokens2 = p->tokens2;
    cfg->window = p->window;
    if (!strcmp(p->name, "paper")) { /* the model's training context */
        const int n_ctx = n_ctx_train > 0 ? n_ctx_train : 8192;
        cfg->calib_tokens = n_ctx;
        cfg->window = n_ctx / 32 > 0 ? n_ctx / 32 : 1;
    }
    cfg->stage1_budget_per_layer = p->budget1;
    cfg->stage3_budget_per_group = p->budget3;
    cfg->restarts = p->restarts;
    snprintf(cfg->preset, sizeof cfg->preset, "%s", p->name);
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
    else if (cfg->confirm_samples < 0 || cfg->confirm_tokens2 < 0)
        what = "confirm_samples / confirm_tokens2 (must be >= 0)";
    if (!what) return 0;
    snprintf(err, errlen,
             "search config: bad %s (ratio %g, window %d, sinks %d, budgets %ld/%ld, "
             "restarts %d, buckets %d)",
             what, cfg->ratio, cfg->window, cfg->sinks, cfg->stage1_budget_per_layer,
             cfg->stage3_budget_per_group, cfg->restarts, cfg->n_buckets);
    return -1;
}
