/* search_options.c — the table of search-shaping options (search_options.h). */
#include "search_options.h"

#include <limits.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "parse.h"
#include "probes.h"

#define MAX_TOKENS SEARCH_OPTS_MAX_TOKENS

typedef enum { K_REAL, K_INT, K_TOKENS, K_SEED, K_CHOICE, K_NAME, K_PINS, K_MASK } opt_kind;

typedef struct {
    const char *name, *arg;
    opt_kind kind;
    long min, max;
    const char *choices[3]; /* K_CHOICE: the values accepted, in index order */
    const char *help;
} opt_spec;

static const opt_spec specs[SOPT_COUNT] = {
    [SOPT_RATIO] = {"--ratio", "R", K_REAL, 0, 1, {0}, "target ratio rho of SWA KV heads, in [0, 1]"},
    [SOPT_PRESET] = {"--preset", "P", K_NAME, 0, 0, {0}, NULL /* the preset table's names (preset_help) */},
    [SOPT_METHOD] =
        {"--method", "M", K_NAME, 0, 0, {0}, NULL /* the method registry's names (method_help) */},
    [SOPT_WINDOW] =
        {"--window", "W", K_INT, 1, MAX_TOKENS, {0}, "SWA window, tokens (default: the preset's)"},
    [SOPT_SINKS] = {"--sinks", "S", K_INT, 0, MAX_TOKENS, {0}, "sink tokens every SWA head sees (default 0)"},
    [SOPT_SEED] = {"--seed", "N", K_SEED, 0, 0, {0}, "the search's PRNG seed (default 1)"},
    [SOPT_BUDGET1] = {"--budget1", "B", K_INT, 1, INT_MAX, {0}, "stage-1 evaluations per layer at most"},
    [SOPT_BUDGET3] = {"--budget3", "B", K_INT, 1, INT_MAX, {0}, "stage-3 evaluations per group at most"},
    [SOPT_RESTARTS] = {"--restarts", "K", K_INT, 0, INT_MAX, {0}, "random restarts per local search"},
    [SOPT_BUCKETS] = {"--buckets", "N", K_INT, 2, INT_MAX, {0}, "stage-2 ratio buckets"},
    [SOPT_SAMPLES] = {"--samples", "N", K_INT, 1, INT_MAX, {0}, "calibration samples"},
    [SOPT_LENGTH] = {"--length",
                     "T",
                     K_TOKENS,
                     PROBE_MIN_LENGTH,
                     MAX_TOKENS,
                     {0},
                     "calibration prompt length, tokens (e.g. 512 or 1k)"},
    [SOPT_CALIB] = {"--calib",
                    "C",
                    K_CHOICE,
                    0,
                    0,
                    {"single", "mix"},
                    "calibration tasks: niah_single only, or niah_single, niah_multikey and passkey"},
    [SOPT_DELTA] = {"--delta", "D", K_CHOICE, 0, 0, {"cumulative", "marginal"}, "stage-2 layer drop"},
    [SOPT_STAGE1_K] = {"--stage1-k",
                       "K",
                       K_CHOICE,
                       0,
                       0,
                       {"capped", "spec"},
                       "stage-1 SWA heads per probed layer: capped below H, or the spec's ceil(rho H)"},
    [SOPT_STAGE2] = {"--stage2", "R", K_CHOICE, 0, 0, {"proportional", "ranks"}, "stage-2 ratio rule"},
    [SOPT_STAGE1] = {"--stage1", "O", K_CHOICE, 0, 0, {"cascade", "independent"}, "stage-1 probe order"},
    [SOPT_GRANULARITY] = {"--granularity",
                          "G",
                          K_CHOICE,
                          0,
                          0,
                          {"head", "layer"},
                          "what BOSCH chooses: single KV heads (head, default) or whole layers (layer:\n"
                          "round(ratio x layers) layers SWA, the masks a per-layer engine runs)"},
    [SOPT_RACE] = {"--race",
                   "R",
                   K_CHOICE,
                   0,
                   0,
                   {"off", "on", "check"},
                   "race swap candidates on the calibration samples in rounds (on, default), or not;\n"
                   "check: race, and score the dropped ones whole to count wrong drops"},
    [SOPT_LENGTH2] = {"--length2",
                      "T",
                      K_TOKENS,
                      0,
                      MAX_TOKENS,
                      {0},
                      "a second calibration length, tokens: half the samples at each (0: one length)"},
    [SOPT_FORCE_FULL] = {"--force-full",
                         "L.H",
                         K_PINS,
                         0,
                         0,
                         {0},
                         "pin these KV heads full (layer.kv_head, e.g. 3.1,12.0): every method keeps them"},
    [SOPT_FORCE_SWA] =
        {"--force-swa",
         "L.H",
         K_PINS,
         0,
         0,
         {0},
         "pin these KV heads SWA; they count towards the ratio (docs/search.md \"Pinned heads\")"},
    [SOPT_PINS] = {"--pins",
                   "FILE",
                   K_PINS,
                   0,
                   0,
                   {0},
                   "pins from a file: lines 'full L.H,...' and 'swa L.H,...' ('#' comments)"},
    [SOPT_START] = {"--start",
                    "FILE",
                    K_MASK,
                    0,
                    0,
                    {0},
                    "start from this mask CSV: BOSCH seeds stage 3 and its refinement with it (not the\n"
                    "baselines; docs/search.md \"Starting from a mask\")"},
    [SOPT_ACCEPT_K] = {"--accept-k",
                       "K",
                       K_REAL,
                       0,
                       100,
                       {0},
                       "take a move only when its paired gain exceeds K standard errors (0: any gain)"},
    [SOPT_CONFIRM] =
        {"--confirm",
         "N",
         K_INT,
         0,
         100000,
         {0},
         "score the refinement's finalists on N new samples; the best there replaces the\n"
         "refined mask when it beats it by over 2 standard errors (0: none; bosch_confirm\n"
         "and compare's bench preset: 4 x --samples; docs/search.md \"Confirming the finalists\")"},
    [SOPT_CONFIRM_LENGTH] = {"--confirm-length",
                             "T",
                             K_TOKENS,
                             0,
                             MAX_TOKENS,
                             {0},
                             "the confirmation split's second length, tokens: half its samples (0: --length\n"
                             "only; bosch_confirm and compare's bench preset: 4 x --length)"},
};

int search_opts_lookup(const char *name, unsigned which) {
    for (int i = 0; name && i < SOPT_COUNT; i++)
        if ((which & SOPT_BIT(i)) && !strcmp(name, specs[i].name)) return i;
    return -1;
}

const char *search_opts_name(search_opt_id id) {
    return id >= 0 && id < SOPT_COUNT ? specs[id].name : "?";
}

static int n_choices(const opt_spec *s) {
    int n = 0;
    while (n < 3 && s->choices[n]) n++;
    return n;
}

int search_opts_set(search_opts *o, search_opt_id id, const char *v, char *err, size_t errlen) {
    if (id < 0 || id >= SOPT_COUNT) {
        base_seterr(err, errlen, "unknown search option %d", (int)id);
        return -1;
    }
    const opt_spec *s = &specs[id];
    int rc = 0, idx = 0;
    switch (s->kind) {
    case K_REAL:
        rc = base_parse_real(v, (double)s->min, (double)s->max,
                             id == SOPT_ACCEPT_K ? &o->accept_k : &o->ratio, err, errlen);
        break;
    case K_INT:
        rc = base_parse_long(v, s->min, s->max, &o->num[id], err, errlen);
        break;
    case K_TOKENS:
        rc = base_parse_tokens(v, s->min, s->max, &o->num[id], err, errlen);
        break;
    case K_SEED:
        rc = base_parse_u64(v, &o->seed, err, errlen);
        break;
    case K_CHOICE:
        rc = base_parse_choice(v, s->choices, n_choices(s), &idx, err, errlen);
        o->num[id] = idx;
        break;
    case K_MASK: {
        attn_mask m = {0};
        search_config c;
        rc = csv_mask_load(v ? v : "", &m, NULL, err, errlen);
        if (rc == 0) rc = search_start_set(&c, &m, err, errlen);
        mask_free(&m);
        if (rc == 0) {
            o->start_layers = c.start_layers, o->start_heads = c.start_heads;
            memcpy(o->start_swa, c.start_swa, sizeof o->start_swa);
        }
        break;
    }
    case K_PINS:
        rc = id == SOPT_PINS
                 ? search_pins_read(o->pins, &o->n_pins, v ? v : "", err, errlen)
                 : search_pins_add_list(o->pins, &o->n_pins, v, id == SOPT_FORCE_SWA, err, errlen);
        break;
    case K_NAME: {
        search_config c;
        search_config_default(&c);
        char why[512];
        if (id == SOPT_PRESET) { /* the preset table's names (search_preset_name) */
            const char *names[16];
            int n = 0;
            while (n < 16 && search_preset_name(n)) names[n] = search_preset_name(n), n++;
            rc = base_parse_choice(v, names, n, &idx, err, errlen);
        } else if (!v || strlen(v) >= sizeof o->name[id] || search_variant_apply(&c, v, why, sizeof why)) {
            base_seterr(err, errlen, "bad value '%s' (%s)", v ? v : "", v ? why : "need a method name");
            rc = -1;
        }
        if (rc == 0) snprintf(o->name[id], sizeof o->name[id], "%s", v);
        break;
    }
    }
    if (rc == 0) o->given |= SOPT_BIT(id);
    return rc;
}

static int given(const search_opts *o, search_opt_id id) {
    return (o->given & SOPT_BIT(id)) != 0;
}

/* The sizes and budgets, without the length check. */
static void apply_sizes(const search_opts *o, search_config *cfg) {
    if (given(o, SOPT_WINDOW)) cfg->window = (int)o->num[SOPT_WINDOW];
    if (given(o, SOPT_SINKS)) cfg->sinks = (int)o->num[SOPT_SINKS];
    if (given(o, SOPT_SEED)) cfg->seed = o->seed;
    if (given(o, SOPT_BUDGET1)) cfg->stage1_budget_per_layer = o->num[SOPT_BUDGET1];
    if (given(o, SOPT_BUDGET3)) cfg->stage3_budget_per_group = o->num[SOPT_BUDGET3];
    if (given(o, SOPT_RESTARTS)) cfg->restarts = (int)o->num[SOPT_RESTARTS];
    if (given(o, SOPT_BUCKETS)) cfg->n_buckets = (int)o->num[SOPT_BUCKETS];
    if (given(o, SOPT_SAMPLES)) cfg->calib_samples = (int)o->num[SOPT_SAMPLES];
    if (given(o, SOPT_LENGTH)) cfg->calib_tokens = (int)o->num[SOPT_LENGTH];
    if (given(o, SOPT_CALIB)) cfg->calib_mix = (int)o->num[SOPT_CALIB];
    if (given(o, SOPT_RACE)) cfg->race = (int)o->num[SOPT_RACE];
    if (given(o, SOPT_ACCEPT_K)) cfg->accept_k = o->accept_k;
    if (given(o, SOPT_LENGTH2)) cfg->calib_tokens2 = (int)o->num[SOPT_LENGTH2];
    /* a comparison's confirmation (bosch search applies these again after its variant) */
    if (given(o, SOPT_CONFIRM)) cfg->confirm_samples = (int)o->num[SOPT_CONFIRM];
    if (given(o, SOPT_CONFIRM_LENGTH)) cfg->confirm_tokens2 = (int)o->num[SOPT_CONFIRM_LENGTH];
}

/* --window and --sinks, when given, must be shorter than the calibration prompts (both lengths);
 * --length2 and --confirm-length at least PROBE_MIN_LENGTH when not 0; --confirm-length only with a
 * confirmation (confirm_samples > 0): without one it would change nothing, silently. */
static int check_lengths(const search_opts *o, const search_config *cfg, char *err, size_t errlen) {
    if (cfg->confirm_tokens2 != 0 && cfg->confirm_tokens2 < PROBE_MIN_LENGTH) {
        base_seterr(err, errlen, "--confirm-length %d: bad value (need 0 or at least %d tokens)",
                    cfg->confirm_tokens2, PROBE_MIN_LENGTH);
        return -1;
    }
    if (given(o, SOPT_CONFIRM_LENGTH) && cfg->confirm_tokens2 > 0 && cfg->confirm_samples == 0) {
        base_seterr(err, errlen,
                    "--confirm-length %d: nothing to confirm (the confirmation is off here; give --confirm N "
                    "too)",
                    cfg->confirm_tokens2);
        return -1;
    }
    if (cfg->calib_tokens2 != 0 && cfg->calib_tokens2 < PROBE_MIN_LENGTH) {
        base_seterr(err, errlen, "--length2 %d: bad value (need 0 or at least %d tokens)", cfg->calib_tokens2,
                    PROBE_MIN_LENGTH);
        return -1;
    }
    const int shortest = cfg->calib_tokens2 > 0 && cfg->calib_tokens2 < cfg->calib_tokens ? cfg->calib_tokens2
                                                                                          : cfg->calib_tokens;
    int w = given(o, SOPT_WINDOW) && cfg->window >= shortest;
    int s = given(o, SOPT_SINKS) && cfg->sinks >= shortest;
    if (!w && !s) return 0;
    base_seterr(err, errlen,
                "%s %d: bad value (need fewer tokens than the calibration length, %d (--length), or every "
                "SWA head sees the whole sequence)",
                w ? "--window" : "--sinks", w ? cfg->window : cfg->sinks, shortest);
    return -1;
}

int search_opts_apply_sizes(const search_opts *o, search_config *cfg, char *err, size_t errlen) {
    apply_sizes(o, cfg);
    return check_lengths(o, cfg, err, errlen);
}

int search_opts_config(const search_opts *o, int n_ctx_train, search_config *cfg, char *err, size_t errlen) {
    search_config_default(cfg);
    search_config_paper_options(cfg); /* budgets are totals until the variant splits them */
    if (search_preset_apply(cfg, given(o, SOPT_PRESET) ? o->name[SOPT_PRESET] : "default", n_ctx_train, err,
                            errlen))
        return -1;
    if (given(o, SOPT_RATIO)) cfg->ratio = o->ratio;
    apply_sizes(o, cfg);
    if (search_variant_apply(cfg, given(o, SOPT_METHOD) ? o->name[SOPT_METHOD] : "bosch", err, errlen))
        return -1;
    if (given(o, SOPT_GRANULARITY) && o->num[SOPT_GRANULARITY] == SEARCH_GRANULARITY_LAYER &&
        cfg->method != SEARCH_METHOD_BOSCH) {
        base_seterr(err, errlen, "--granularity layer is for BOSCH, not the baseline '%s'",
                    search_method_name(cfg->method));
        return -1;
    }
    if (given(o, SOPT_GRANULARITY))
        search_config_set_granularity(cfg, (search_granularity)o->num[SOPT_GRANULARITY]);
    if (given(o, SOPT_DELTA)) cfg->delta_marginal = (int)o->num[SOPT_DELTA];
    if (given(o, SOPT_STAGE1_K)) cfg->stage1_k_spec = (int)o->num[SOPT_STAGE1_K];
    if (given(o, SOPT_STAGE2)) cfg->stage2_ranks = (int)o->num[SOPT_STAGE2];
    if (given(o, SOPT_STAGE1)) cfg->stage1_independent = (int)o->num[SOPT_STAGE1];
    if (given(o, SOPT_CONFIRM)) cfg->confirm_samples = (int)o->num[SOPT_CONFIRM];
    if (given(o, SOPT_CONFIRM_LENGTH)) cfg->confirm_tokens2 = (int)o->num[SOPT_CONFIRM_LENGTH];
    cfg->n_pins = o->n_pins;
    memcpy(cfg->pins, o->pins, sizeof(search_pin) * (size_t)o->n_pins);
    cfg->start_layers = o->start_layers, cfg->start_heads = o->start_heads;
    memcpy(cfg->start_swa, o->start_swa, sizeof cfg->start_swa);
    if (check_lengths(o, cfg, err, errlen)) return -1;
    return search_config_check(cfg, err, errlen);
}

/* --method's help: every name of the method registry (search_methods.h) in picker order, lines
 * broken before 80 columns. */
static const char *method_help(char *buf, size_t len) {
    size_t at = 0, line = 0;
    buf[0] = '\0';
    for (int i = 0; search_variant_name(i); i++) {
        const char *name = search_variant_name(i), *sep = i == 0                       ? ""
                                                          : search_variant_name(i + 1) ? ", "
                                                                                       : " or ";
        char item[64];
        snprintf(item, sizeof item, "%s%s%s", sep, name, i == 0 ? " (default)" : "");
        if (line + strlen(item) > 78 && i > 0) { /* break after the separator's comma */
            snprintf(item, sizeof item, "%s\n%s", sep[0] == ',' ? "," : " or", name);
            line = strlen(name);
        } else {
            line += strlen(item);
        }
        at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s", item);
    }
    return buf;
}

/* --preset's help: the preset table's names (search_preset_names). */
static const char *preset_help(char *buf, size_t len) {
    char names[128];
    snprintf(buf, len, "%s: window, budgets, calibration split (docs/search.md)",
             search_preset_names(names, sizeof names, " or "));
    return buf;
}

void search_opts_usage(FILE *f, unsigned which) {
    char methods[1024];
    for (int i = 0; i < SOPT_COUNT; i++) {
        if (!(which & SOPT_BIT(i))) continue;
        char head[32];
        snprintf(head, sizeof head, "%s %s", specs[i].name, specs[i].arg);
        fprintf(f, "  %-16s ", head);
        const char *help = specs[i].help      ? specs[i].help
                           : i == SOPT_PRESET ? preset_help(methods, sizeof methods)
                                              : method_help(methods, sizeof methods);
        for (const char *p = help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "  %-16s ", "");
        }
        fputc('\n', f);
    }
}
