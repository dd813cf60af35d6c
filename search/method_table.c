/* method_table.c — the method registry's table (search_methods.h: what each field means, the
 * order rules). A new static head ranking: its file (search/rank_NAME.c) and one row here, with
 * the declaration of its function beside the others. */
#include "search_methods.h"

/* ---- the functions the rows name ------------------------------------------------------------ */

/* layer heuristics (search_layer_patterns.c) */
int search_pattern_rand(int n_layer, double ratio, uint64_t seed, const double *importance,
                        uint8_t *swa_layer);
int search_pattern_bme(int n_layer, double ratio, uint64_t seed, const double *importance,
                       uint8_t *swa_layer);
int search_pattern_intr(int n_layer, double ratio, uint64_t seed, const double *importance,
                        uint8_t *swa_layer);
int search_pattern_lowest(int n_layer, double ratio, uint64_t seed, const double *importance,
                          uint8_t *swa_layer);
double search_probe_nll(const search_rank_input *in, const search_eval *e);
/* static head rankings (rank_probes.c, search_attn_stats.c) */
double search_rank_ablation(const search_rank_input *in, const search_eval *e);
double search_rank_fisher(const search_rank_input *in, const search_eval *e);
int search_rank_locality(const search_rank_input *in, double *importance, char *err, size_t errlen);
int search_rank_echo(const search_rank_input *in, double *importance, char *err, size_t errlen);

/* ---- BOSCH's variants ------------------------------------------------------------------------ */

static void bosch_default(search_config *c) {
    search_config_project_options(c);
}
static void bosch_paper(search_config *c) {
    search_config_paper_options(c);
}
static void bosch_indep(search_config *c) {
    search_config_paper_options(c);
    c->stage1_independent = 1;
}
static void bosch_marginal(search_config *c) {
    search_config_paper_options(c);
    c->delta_marginal = 1;
}
static void bosch_ranks(search_config *c) {
    search_config_paper_options(c);
    c->stage2_ranks = 1;
}
static void bosch_heads(search_config *c) {
    search_config_paper_options(c);
    c->stage1_singles = 1;
}
static void bosch_bucket(search_config *c) {
    search_config_paper_options(c);
    c->stage1_singles = 1, c->stage3_scope = 1;
}
static void bosch_plus(search_config *c) {
    search_config_paper_options(c);
    c->stage1_singles = 1;
    search_config_refine_share(c);
}
static void bosch_confirm(search_config *c) {
    search_config_project_options(c);
    search_config_confirm_options(c);
}
static void bosch_layer(search_config *c) {
    search_config_project_options(c);
    search_config_set_granularity(c, SEARCH_GRANULARITY_LAYER);
}

/* ---- the table ------------------------------------------------------------------------------- */

#define SEARCH_ROW(n, lvl, cmp, what, fn)                                                                    \
    {                                                                                                        \
        .name = n, .kind = SEARCH_KIND_SEARCH, .level = lvl, .probes = SEARCH_PROBES_SEARCH,                 \
        .in_compare = cmp, .help = what, .configure = fn                                                     \
    }

/* The rows whose position is a search_method value (search.h) must stay where they are. */
const search_method_info search_method_table[] = {
    SEARCH_ROW("bosch", SEARCH_LEVEL_HEAD, 1, "the project's default options (docs/search.md)",
               bosch_default),
    SEARCH_ROW("bosch_paper", SEARCH_LEVEL_HEAD, 1, "the paper's structure (docs/design.md section 6)",
               bosch_paper),
    SEARCH_ROW("bosch_indep", SEARCH_LEVEL_HEAD, 1, "paper + independent stage-1 probes", bosch_indep),
    SEARCH_ROW("bosch_marginal", SEARCH_LEVEL_HEAD, 0, "paper + marginal stage-2 drop", bosch_marginal),
    SEARCH_ROW("bosch_ranks", SEARCH_LEVEL_HEAD, 0, "paper + rank-ladder stage 2", bosch_ranks),
    SEARCH_ROW("bosch_heads", SEARCH_LEVEL_HEAD, 1, "paper + stage-1 head scores guiding stage 3",
               bosch_heads),
    SEARCH_ROW("bosch_bucket", SEARCH_LEVEL_HEAD, 1, "paper + head scores + stage 3 per bucket",
               bosch_bucket),
    SEARCH_ROW("bosch_plus", SEARCH_LEVEL_HEAD, 1,
               "paper + head scores + final refinement (same total budget)", bosch_plus),
    SEARCH_ROW("bosch_layer", SEARCH_LEVEL_LAYER, 1,
               "the default options at layer granularity: whole layers go SWA", bosch_layer),
    {.name = "rand",
     .kind = SEARCH_KIND_LAYER_HEURISTIC,
     .level = SEARCH_LEVEL_LAYER,
     .probes = SEARCH_PROBES_NONE,
     .in_compare = 1,
     .help = "random layers (seeded)",
     .pattern = search_pattern_rand},
    {.name = "bme",
     .kind = SEARCH_KIND_LAYER_HEURISTIC,
     .level = SEARCH_LEVEL_LAYER,
     .probes = SEARCH_PROBES_NONE,
     .in_compare = 1,
     .help = "full layers at the beginning, the middle and the end",
     .pattern = search_pattern_bme},
    {.name = "intr",
     .kind = SEARCH_KIND_LAYER_HEURISTIC,
     .level = SEARCH_LEVEL_LAYER,
     .probes = SEARCH_PROBES_NONE,
     .in_compare = 1,
     .help = "full layers evenly interleaved",
     .pattern = search_pattern_intr},
    {.name = "nll",
     .kind = SEARCH_KIND_LAYER_HEURISTIC,
     .level = SEARCH_LEVEL_LAYER,
     .probes = SEARCH_PROBES_EACH_LAYER,
     .in_compare = 1,
     .help = "layers by the answer-NLL increase when that layer alone is SWA",
     .probe = search_probe_nll,
     .pattern = search_pattern_lowest},
    {.name = "ablation",
     .kind = SEARCH_KIND_HEAD_RANKING,
     .level = SEARCH_LEVEL_HEAD,
     .probes = SEARCH_PROBES_EACH_HEAD,
     .in_compare = 1,
     .help = "score drop when that KV head alone goes SWA",
     .probe = search_rank_ablation},
    {.name = "fisher",
     .kind = SEARCH_KIND_HEAD_RANKING,
     .level = SEARCH_LEVEL_HEAD,
     .probes = SEARCH_PROBES_EACH_HEAD,
     .in_compare = 1,
     .help = "squared answer-NLL change per sample when that KV head alone goes SWA (Fisher)",
     .probe = search_rank_fisher},
    {.name = "locality",
     .kind = SEARCH_KIND_HEAD_RANKING,
     .level = SEARCH_LEVEL_HEAD,
     .probes = SEARCH_PROBES_NONE,
     .in_compare = 1,
     .help = "share of the attention inside the window (from the model, no evaluation)",
     .rank = search_rank_locality},
    {.name = "echo",
     .kind = SEARCH_KIND_HEAD_RANKING,
     .level = SEARCH_LEVEL_HEAD,
     .probes = SEARCH_PROBES_NONE,
     .in_compare = 1,
     .help = "echo and induction attention on repeated tokens (from the model, no evaluation)",
     .rank = search_rank_echo},
    SEARCH_ROW("bosch_confirm", SEARCH_LEVEL_HEAD, 0,
               "the default options plus the finalists confirmed on new samples at 1x and 4x the length",
               bosch_confirm),
    /* new rows above this line */
};

const int search_method_table_n = (int)(sizeof search_method_table / sizeof search_method_table[0]);
