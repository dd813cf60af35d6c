/* bosch_options.c — BOSCH's option sets (search.h): the paper's structure, the project's
 * defaults, the refinement's share of the stage-3 budget and layer granularity. The registry's
 * variants (method_table.c) and search_config_default are made of them. */
#include "search.h"

void search_config_set_granularity(search_config *cfg, search_granularity g) {
    cfg->granularity = g;
    if (g != SEARCH_GRANULARITY_LAYER) return;
    cfg->stage1_independent = 1;
    cfg->stage1_singles = 0;
    cfg->stage3_scope = 0;
    cfg->stage3_budget_per_group += cfg->refine_budget; /* the refinement's share back */
    cfg->refine_budget = 0;
}

/* The project's default BOSCH options (docs/search.md: chosen on the validation split). */
void search_config_project_options(search_config *cfg) {
    search_config_paper_options(cfg);
    cfg->stage1_independent = 1;
    cfg->stage1_singles = 1;
    cfg->stage3_scope = 1;
    search_config_refine_share(cfg);
}

void search_config_refine_share(search_config *cfg) {
    const long b3 = cfg->stage3_budget_per_group;
    if (b3 < 2) return; /* nothing to share: no refinement */
    cfg->stage3_budget_per_group = b3 - b3 / 2;
    cfg->refine_budget = b3 / 2;
}

void search_config_confirm_options(search_config *cfg) {
    cfg->confirm_samples = 4 * (cfg->calib_samples > 0 ? cfg->calib_samples : 8);
    cfg->confirm_tokens2 = cfg->calib_tokens > 0 ? 4 * cfg->calib_tokens : 0;
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
