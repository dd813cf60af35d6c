/* search_options.h — the options that shape a search, defined once: their names, value ranges, help
 * lines and how they apply to a search_config. `bosch search`, `bosch compare` (a subset: a
 * comparison chooses methods, ratios and its preset itself) and the explorer's start form parse and
 * apply them through this table, so an option is spelled, bounded and applied the same everywhere.
 *
 * Order of application (search_options_config): defaults (search_config_default, the paper's
 * structure), the preset (--preset, default "default"), --ratio, the size and budget options, the
 * method or BOSCH variant (--method, default "bosch"; after the budgets, because a refinement takes
 * its share of them), --granularity (search_config_set_granularity; layer is for BOSCH only), then
 * the four structure options (--delta, --stage1-k, --stage2, --stage1) and the confirmation's
 * (--confirm, --confirm-length), which override the variant's and the granularity's. A comparison
 * takes the confirmation from each method's variant.
 */
#ifndef BOSCH_SEARCH_OPTIONS_H
#define BOSCH_SEARCH_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "search.h"

typedef enum {
    SOPT_RATIO,
    SOPT_PRESET,
    SOPT_METHOD,
    SOPT_WINDOW,
    SOPT_SINKS,
    SOPT_SEED,
    SOPT_BUDGET1,
    SOPT_BUDGET3,
    SOPT_RESTARTS,
    SOPT_BUCKETS,
    SOPT_SAMPLES,
    SOPT_LENGTH,
    SOPT_CALIB,
    SOPT_DELTA,
    SOPT_STAGE1_K,
    SOPT_STAGE2,
    SOPT_STAGE1,
    SOPT_GRANULARITY,
    SOPT_RACE,
    SOPT_ACCEPT_K,
    SOPT_LENGTH2,
    SOPT_FORCE_FULL,
    SOPT_FORCE_SWA,
    SOPT_PINS,
    SOPT_START,
    SOPT_CONFIRM,
    SOPT_CONFIRM_LENGTH,
    SOPT_COUNT
} search_opt_id;

/* Longest --window, --sinks and --length, tokens. */
#define SEARCH_OPTS_MAX_TOKENS (1L << 24)

/* Bit of an option in a set (search_opts.given, the `which` arguments). */
#define SOPT_BIT(id) (1u << (id))
/* Every option, and the subset a comparison takes (its plan sets ratio, preset and method). */
#define SOPT_ALL ((1u << SOPT_COUNT) - 1)
#define SOPT_COMPARE                                                                                         \
    (SOPT_BIT(SOPT_WINDOW) | SOPT_BIT(SOPT_SINKS) | SOPT_BIT(SOPT_SEED) | SOPT_BIT(SOPT_BUDGET1) |           \
     SOPT_BIT(SOPT_BUDGET3) | SOPT_BIT(SOPT_SAMPLES) | SOPT_BIT(SOPT_LENGTH) | SOPT_BIT(SOPT_CALIB) |        \
     SOPT_BIT(SOPT_RACE) | SOPT_BIT(SOPT_ACCEPT_K) | SOPT_BIT(SOPT_LENGTH2) | SOPT_BIT(SOPT_CONFIRM) |       \
     SOPT_BIT(SOPT_CONFIRM_LENGTH))

/* Values of the options given (bit SOPT_BIT(id) of given set); the others keep their defaults. */
typedef struct {
    unsigned given;
    double ratio;              /* SOPT_RATIO */
    double accept_k;           /* SOPT_ACCEPT_K */
    long num[SOPT_COUNT];      /* integers and token counts; choices: the index of the value */
    unsigned long long seed;   /* SOPT_SEED */
    char name[SOPT_COUNT][32]; /* SOPT_PRESET, SOPT_METHOD */
    int n_pins;                /* SOPT_FORCE_FULL, SOPT_FORCE_SWA, SOPT_PINS: the pinned heads, in order */
    search_pin pins[SEARCH_PINS_MAX];
    int start_layers, start_heads; /* SOPT_START: the start mask (search.h search_config.start_*) */
    uint8_t start_swa[SEARCH_START_MAX / 8];
} search_opts;

/* The options that pin heads (search.h search_config.pins). */
#define SOPT_PIN_BITS (SOPT_BIT(SOPT_FORCE_FULL) | SOPT_BIT(SOPT_FORCE_SWA) | SOPT_BIT(SOPT_PINS))

/* The id of option `name` ("--window") if it is in the set `which`, else -1. */
int search_opts_lookup(const char *name, unsigned which);

/* The option's name with its dashes ("--window"). */
const char *search_opts_name(search_opt_id id);

/* Parse value v of option id into o (and mark it given). Ranges: --ratio [0, 1]; --window [1, 2^24];
 * --sinks [0, 2^24]; --seed any 64-bit unsigned; --budget1, --budget3, --samples >= 1; --restarts >= 0;
 * --buckets >= 2; --length a token count in [PROBE_MIN_LENGTH, 2^24]; --preset a search_preset_name
 * (tiny, demo, default or paper); --method a search_variant_apply name; --calib single|mix; --delta
 * cumulative|marginal; --stage1-k capped|spec; --stage2 proportional|ranks; --stage1 cascade|independent;
 * --granularity head|layer; --race off|on|check; --accept-k a real in [0, 100]; --length2 0 or a
 * token count in [PROBE_MIN_LENGTH, 2^24]; --force-full and --force-swa a list of heads L.H,L.H
 * (added to the pins; repeated options add up); --pins a pin file (search_pins_read); --start a mask
 * CSV file (formats/csvio.h, its own shape: the search checks it against the model's). 0, or -1 with
 * "bad value 'V' (need ...)" in err (the caller prefixes the option's name). */
int search_opts_set(search_opts *o, search_opt_id id, const char *v, char *err, size_t errlen);

/* A whole search configuration from the options given (the order in the file comment). n_ctx_train:
 * the model's training context, for the paper preset (0 = unknown). Checks that --window and --sinks
 * are shorter than the calibration length and the result with search_config_check. 0, or -1 with a
 * message naming the option and its value. */
int search_opts_config(const search_opts *o, int n_ctx_train, search_config *cfg, char *err, size_t errlen);

/* Apply only the size and budget options given (window, sinks, seed, budgets, restarts, buckets,
 * samples, length, calib, race, accept-k, length2, confirm, confirm-length) to cfg: what a
 * comparison's plan takes (a method whose variant sets its own confirmation, bosch_confirm, keeps
 * that). Then the --window / --sinks check against cfg's calibration length. 0, or -1 with a message. */
int search_opts_apply_sizes(const search_opts *o, search_config *cfg, char *err, size_t errlen);

/* The help lines of the options in `which`, two columns, for a usage text. */
void search_opts_usage(FILE *f, unsigned which);

#endif
