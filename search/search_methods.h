/* search_methods.h — the method registry: one row per method that `bosch search --method`,
 * `bosch compare --methods`, the explorer's start form, its attention view's rankings and the
 * scores export (`bosch export --format scores`) know, in one table (search/method_table.c).
 * Every list of methods, every "valid:" message and every help line is read from it.
 *
 * A row is one of three kinds:
 *  - a search (BOSCH and its variants): `configure` sets the options of search_config that make
 *    the variant (search_variant_apply); the algorithm is BOSCH's (search.c), its evaluations
 *    come from its options (search_plan);
 *  - a layer heuristic: whole layers go SWA; `pattern` picks round(ratio * n_layer) of them, from
 *    `probe` scores of each layer alone SWA when the row has probes (nll), else from the layer
 *    count, ratio and seed alone (rand, bme, intr);
 *  - a static head ranking: an importance per KV head (higher = keep full), cut at the ratio
 *    (search_cut_heads); either from `probe`, the score of the mask with that KV head alone SWA
 *    (ablation, fisher), or computed at once by `rank` from the model's weights and the
 *    calibration tokens, without evaluations (locality, echo).
 *
 * Adding a static head ranking: a file search/rank_NAME.c defining its `probe` or `rank` function,
 * and one row in method_table.c (with the function's declaration there). Nothing else: the lists
 * above, the scores export's columns, the form and the help texts pick it up
 * (tests/test_method_registry.c builds one).
 *
 * Order: the table's order is the order of `bosch compare`'s default method list (the rows with
 * in_compare) and of the scores export's columns (the head rankings). Pickers (the start form,
 * the attention view's rankings: search_method_pick) group the rows by kind (searches, layer
 * heuristics, head rankings) and put the head rankings that cost no evaluation first, since they
 * are ready at once.
 */
#ifndef BOSCH_SEARCH_METHODS_H
#define BOSCH_SEARCH_METHODS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "search.h"

/* The kinds, in the order pickers group them. */
typedef enum {
    SEARCH_KIND_SEARCH = 0,          /* BOSCH or a variant of it */
    SEARCH_KIND_LAYER_HEURISTIC = 1, /* whole layers SWA by a pattern or a per-layer score */
    SEARCH_KIND_HEAD_RANKING = 2,    /* a static per-KV-head importance cut at the ratio */
} search_kind;

/* What the method chooses: single KV heads, or whole layers (every KV head of a layer). */
typedef enum { SEARCH_LEVEL_HEAD = 0, SEARCH_LEVEL_LAYER = 1 } search_level;

/* The evaluations a method plans besides the two normalizers and the final mask: none, one per
 * KV head (that head alone SWA), one per layer (that layer alone SWA), or the search's own
 * (search_plan derives them from the options). */
typedef enum {
    SEARCH_PROBES_NONE = 0,
    SEARCH_PROBES_EACH_HEAD,
    SEARCH_PROBES_EACH_LAYER,
    SEARCH_PROBES_SEARCH,
} search_probes;

/* What a ranking's or heuristic's function sees. The normalizer fields are those of the all-full
 * mask (search_eval), measured before any probe. */
typedef struct {
    const search_config *cfg; /* window, sinks, seed, ratio */
    int n_layer, n_head_kv;
    const model *model;         /* NULL when the caller gave none */
    const eval_sample *samples; /* the calibration token sequences (NULL / 0 when unknown) */
    int n_samples;
    double s_full;                 /* raw score of the all-full mask */
    double nll_full;               /* its mean answer NLL, nats */
    const double *sample_nll_full; /* [n_sample_nll] its per-sample answer NLL (may be NULL) */
    int n_sample_nll;
} search_rank_input;

typedef struct {
    const char *name; /* lower case, as every command and the explorer spell it */
    search_kind kind;
    search_level level;
    search_probes probes;
    int in_compare;   /* 1: in `bosch compare`'s default method list (presets bench, quick) */
    const char *help; /* one line, no trailing period */
    /* SEARCH_KIND_SEARCH: set the options that make this variant (budgets already set: a
     * refinement takes its share of them). */
    void (*configure)(search_config *cfg);
    /* probes EACH_HEAD / EACH_LAYER: the importance of one unit (higher = keep full) from the
     * evaluation e of the mask with that KV head (layer) alone SWA, all else full. */
    double (*probe)(const search_rank_input *in, const search_eval *e);
    /* SEARCH_KIND_HEAD_RANKING with probes NONE: every KV head's importance at once into
     * importance[n_layer][n_head_kv], no evaluation. 0, or -1 with a message. */
    int (*rank)(const search_rank_input *in, double *importance, char *err, size_t errlen);
    /* SEARCH_KIND_LAYER_HEURISTIC: swa_layer[n_layer] = 1 for the round(ratio * n_layer) layers
     * that go SWA; importance[n_layer] is the probes' (NULL without probes). 0, or -1. */
    int (*pattern)(int n_layer, double ratio, uint64_t seed, const double *importance, uint8_t *swa_layer);
} search_method_info;

/* The most rows the registry may hold (arrays sized by it in front ends). */
#define SEARCH_METHODS_MAX 32

/* Rows in the table; row i (NULL past the end). The table itself is method_table.c's. */
int search_methods_count(void);
const search_method_info *search_method_row(int i);
/* The row of a name (case-insensitive), or -1. */
int search_method_find(const char *name);
/* Row index of the i-th method in picker order (the start form, the attention view; see the top
 * of this file), or -1 past the last. */
int search_method_pick(int i);
/* The i-th row of kind k in table order (k = HEAD_RANKING: the scores export's column i), or -1. */
int search_method_of_kind(search_kind k, int i);
/* Rows of kind k. */
int search_methods_count_kind(search_kind k);
/* Write the names of the rows for which want(row) is 1 (every row when want is NULL), separated
 * by ", ", into buf (truncated at buflen). Returns buf. */
char *search_methods_list(char *buf, size_t buflen, int (*want)(const search_method_info *m));
/* One "  name  help" line per row, in picker order, each line starting with indent. */
void search_methods_usage(FILE *f, const char *indent);

#endif
