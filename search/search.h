/* search.h — the BOSCH head-mask search and its baselines, run step by step (docs/design.md §6, §7).
 *
 * A search is a state machine driven by its caller: search_step() performs exactly ONE evaluation
 * of the objective (or one bookkeeping step that needs none, e.g. stage 2) and emits its events
 * (search/events.h) to the listener, synchronously, on the caller's thread. Pausing is simply not
 * calling search_step(); single-stepping is calling it once. search_run() loops until done or until
 * *stop becomes non-zero. A state is used by one thread at a time.
 *
 * Objective: the search maximizes the normalized score
 *     Ŝ(z) = (S(z) − S_allSWA) / (S_full − S_allSWA)
 * where S is the raw score returned by the objective (for the real one: mean over calibration
 * samples of the geometric-mean answer-token probability, engine/eval.h). The first two evaluations
 * of every search are the all-full and all-SWA masks, which fix the normalization.
 * When S_full == S_allSWA the normalization is undefined; the search then uses Ŝ = S − S_allSWA.
 *
 * Determinism: given the config (incl. seed) and an objective that returns the same scores for the
 * same masks, the sequence of evaluated masks and the final mask are identical from run to run.
 * The search's PRNG is its own (xoshiro256**, seeded through splitmix64); rand() is never used.
 *
 * Save/resume: search_save() writes the config and the log of evaluations done so far; search_load()
 * rebuilds the state by replaying that log through the same deterministic algorithm (no objective
 * calls; each replayed mask's hash is checked against the log), then continues live. A resumed
 * search therefore reaches the same final mask as an uninterrupted one with the same seed.
 * Replayed evaluations are re-emitted as events with ev->replayed = 1 so a listener can redraw.
 * After the replay, search_load scores the last prefix-reuse base mask once (not logged) to restore
 * the evaluator's base, and refuses the state when that score differs from the logged one (the
 * objective changed: another program version, model or calibration split).
 */
#ifndef BOSCH_SEARCH_H
#define BOSCH_SEARCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "eval.h"
#include "events.h"
#include "mask.h"
#include "model.h"
#include "probes.h"

/* ---- methods ------------------------------------------------------------------------------ */

/* A method the search runs: the row of the method registry (search_methods.h) of BOSCH or of a
 * baseline (a layer heuristic or a static head ranking). BOSCH's variants (bosch_paper, ...) are
 * rows of their own that run SEARCH_METHOD_BOSCH with other options (search_variant_apply). The
 * constants name the built-in rows; a row added to the table has no constant (search_method_find). */
typedef int search_method;
enum {
    SEARCH_METHOD_BOSCH = 0, /* the three-stage search (docs/design.md §6) */
    /* layer-level baselines: whole layers go SWA (every KV head of the layer) */
    SEARCH_METHOD_RAND = 9,  /* random layers (seeded) */
    SEARCH_METHOD_BME = 10,  /* begin-middle-end pattern */
    SEARCH_METHOD_INTR = 11, /* interleaved layers */
    SEARCH_METHOD_NLL = 12,  /* layers ranked by answer-NLL increase when that layer alone is SWA */
    /* static head-level rankings, computed once and cut at the ratio */
    SEARCH_METHOD_ABLATION = 13, /* score drop when that KV head alone goes SWA */
    SEARCH_METHOD_FISHER = 14,   /* |d loss / d gate| by finite differences */
    SEARCH_METHOD_LOCALITY = 15, /* share of attention mass inside the window */
    SEARCH_METHOD_ECHO = 16,     /* RazorAttention-style echo/induction score on repeated random tokens */
};

/* Short lower-case name of a method ("bosch", "rand", "bme", "intr", "nll", "ablation", "fisher",
 * "locality", "echo", or a row added to the registry); "?" for a value that is no method. */
const char *search_method_name(search_method m);
/* 1 when m is a method (BOSCH or a baseline row of the registry). */
int search_method_valid(search_method m);
/* Parse a method name as above (case-insensitive; not a BOSCH variant's). 0, or -1 with a message
 * listing the valid names (from the registry). */
int search_method_parse(const char *name, search_method *out, char *err, size_t errlen);
/* 1 when the method needs the model's weights directly (its registry row computes a ranking from
 * them: locality, echo), not only the objective. */
int search_method_needs_model(search_method m);

/* ---- configuration ------------------------------------------------------------------------ */

/* What BOSCH chooses (search_config.granularity): single KV heads (the paper), or whole layers,
 * every KV head of a layer SWA or none, the masks a per-layer serving engine can run (llama.cpp,
 * vLLM, SGLang, TensorRT-LLM take one window per layer; mask.h's mask_servable). The stages at
 * layer granularity: docs/search.md "Layer granularity". */
typedef enum {
    SEARCH_GRANULARITY_HEAD = 0,
    SEARCH_GRANULARITY_LAYER = 1,
} search_granularity;

/* "head" or "layer". */
const char *search_granularity_name(search_granularity g);
/* Parse "head" or "layer" (case-insensitive). 0, or -1 with a message naming the value. */
int search_granularity_parse(const char *name, search_granularity *out, char *err, size_t errlen);

/* A KV head the user pins (search_config.pins; docs/search.md "Pinned heads"): forced full (swa 0)
 * or forced SWA (swa 1), whatever the method. */
typedef struct {
    int16_t layer, kv_head;
    uint8_t swa;
} search_pin;
/* The most pins a configuration holds. */
#define SEARCH_PINS_MAX 512
/* The most KV heads (n_layer * n_head_kv) of a start mask a configuration holds. */
#define SEARCH_START_MAX 8192

typedef struct {
    search_method method;
    double ratio;                 /* target ratio rho of SWA KV heads, in [0,1] */
    char preset[16];              /* a search_preset_name (informational once applied) */
    int window;                   /* SWA window, tokens (>= 1) */
    int sinks;                    /* SWA sinks, tokens (>= 0) */
    uint64_t seed;                /* PRNG seed of the search (the calibration split has its own seed,
                                     PROBE_DEFAULT_CALIB_SEED, so seeds compare on the same data) */
    long stage1_budget_per_layer; /* max evaluations per stage-1 layer probe (exhaustive if enough) */
    long stage3_budget_per_group; /* max evaluations per stage-3 group */
    int restarts;                 /* max random restarts of the local search per sub-search (0 = none) */
    int n_buckets;                /* stage-2 ratio levels in use (default 4; capped at n_head_kv + 1) */
    int stage1_k_spec;            /* stage-1 SWA heads per probed layer: 0 (default) k = min(ceil(rho*H),
                                     H-1) for rho < 1, so a probed layer keeps one full head (project
                                     choice: with H_kv = 3 the spec's ceil(rho*H) = H for rho > 2/3
                                     turns whole layers SWA and the cascade erases the signal of the
                                     layers below); 1: k = ceil(rho*H) exactly as the spec */
    int stage1_independent;       /* 0 (default): stage-1 cascade as the paper (layers above l at their
                                     best); 1: every probe of layer l has all other layers full, so
                                     delta_l is layer l's own sensitivity (project option) */
    int stage2_ranks;             /* stage-2 rule: 0 (default) proportional water-filling
                                     (search_stage2_assign), 1 rank ladder (search_stage2_assign_ranks) */
    int delta_marginal;           /* stage-2 drop: 0 (default) delta_l = S_full - s_best[l] as specified
                                     (cumulative: layers above l are SWA too in the cascade); 1: marginal
                                     delta_l = s_best[l+1] - s_best[l] with s_best[L] = S_full */
    int stage1_singles;           /* 1: stage 1 also scores every KV head alone SWA (all else full), the
                                     head scores h[l][g] = S_full - S(only (l,g) SWA); stage 3 and the
                                     refinement then start from them and try swaps in their order
                                     (swap_search.h). Free when the stage-1 probes are single heads
                                     (independent probes with k = 1) */
    int stage3_scope;             /* 0: each layer keeps its stage-2 SWA count (the paper); 1: each
                                     stage-2 bucket keeps its total, heads move between its layers
                                     (needs stage1_singles) */
    long refine_budget;           /* > 0: after stage 3, a refinement over all layers at the fixed total
                                     ratio (swaps of any SWA head with any full head, in head-score order)
                                     for this many evaluations per stage-3 group that ran (at least
                                     once this many when none ran), starting from the best of the stage-3
                                     mask and the cuts at the ratio of the static head rankings: the
                                     head scores' drop and Fisher forms and, when the model is given,
                                     locality and echo (needs stage1_singles). 0: none (the paper) */
    /* BOSCH only: what it chooses, heads (default) or whole layers. With layers, stage 1 probes each
     * layer whole (k = n_head_kv), stage 2 keeps round(ratio * n_layer) layers SWA
     * (search_stage2_assign with one unit per layer) and stage 3 is one swap search over the layers
     * at that count, with min(n_buckets, n_head_kv + 1) x stage3_budget_per_group evaluations (what
     * stage 3 plans at head granularity); stage1_singles, stage3_scope and refine_budget do not
     * apply (search_config_set_granularity clears them). */
    search_granularity granularity;
    /* Calibration split the caller should build for this preset (the search itself only sees the
     * objective): number of samples and prompt length in tokens, and the tasks: calib_mix 0 =
     * niah_single on noise only; 1 = the samples shared out between niah_single (noise),
     * niah_multikey (prose) and passkey (noise), the tasks the held-out split reports on. */
    int calib_samples;
    int calib_tokens;
    int calib_mix;
    /* A second calibration length, tokens (0: one length): the samples are shared out between
     * calib_tokens and calib_tokens2 (the first gets the remainder), and within each length between
     * the tasks as calib_mix says: a calibration split at the lengths a mask is deployed for
     * (docs/search.md "A calibration split that matches deployment"). */
    int calib_tokens2;
    /* Racing (race.h, docs/search.md): the swap searches (stage 3 with head scores, the refinement)
     * score each candidate in rounds of the calibration samples and drop it once it is behind the
     * incumbent by more than the bound. 0 off; 1 on (the default); 2 check: the race decides as with
     * 1, but a candidate it drops is scored on every sample too, to count the wrong drops
     * (search_race_stats). The decisions are the race's rules on the per-sample values, however
     * they were obtained; the samples are saved only with an objective that scores rounds
     * (score_part) and batch 1, otherwise every candidate is scored whole. */
    int race;
    /* Noise-aware acceptance (race_accept): a move of a swap search, and a refinement start that
     * replaces the current one, is taken only when its paired gain exceeds accept_k standard
     * errors; 0 = any strict improvement (the search before this option). */
    double accept_k;
    /* The confirmation (docs/search.md "Confirming the finalists"; search_confirm.c): 0 none (the
     * paper, and `bosch` before it); N > 0, with a refinement: its finalists (the refined mask, the
     * stage-3 mask and every start cut it scored) are scored again on N samples of a confirmation
     * split, made like the calibration split (its tasks, calib_mix) but from its own seed
     * (SEARCH_CONFIRM_SEED) and shared out between calib_tokens and confirm_tokens2 (the first gets
     * the remainder), and the best of them there can replace the refined mask: the finalists were all chosen
     * on the calibration samples, so the one that fits those samples best is biased upwards (a winner's
     * curse); an independent split scores each of them without that bias. A finalist replaces the
     * refined mask only when its paired gain there exceeds SEARCH_CONFIRM_K standard errors. The search
     * builds that objective from the model (search_set_confirm_env); without a model and without
     * search_set_confirm the phase is skipped. Saved in the state when N > 0. */
    int confirm_samples;
    int confirm_tokens2; /* the confirmation split's second length, tokens (0: calib_tokens only) */
    /* Pinned KV heads (docs/search.md "Pinned heads"): pins[0 .. n_pins), each head at most once.
     * Every method keeps them in its final mask and in every candidate it chooses among (stage 3,
     * the refinement and its starts, a ranking's cut, a heuristic's layers); the measurements
     * (normalizers, stage-1 probes, head scores, a ranking's probes) are made as without pins. The
     * target round(ratio * L * H) counts the forced SWA heads: a head-level method's final mask has
     * exactly that many SWA KV heads (search_create refuses a ratio that cannot: fewer than the
     * forced SWA heads, more than the heads not forced full); a layer heuristic the nearest count
     * its whole layers allow (it says so when that is not the target); bosch_layer refuses pins.
     * Saved in the state (search_io.c), so a resumed search keeps them. */
    int n_pins;
    search_pin pins[SEARCH_PINS_MAX];
    /* The mask the search starts from (docs/search.md "Starting from a mask"; the explorer's "start
     * from: working mask", `bosch search --start FILE`): a start_layers x start_heads mask, bit u of
     * start_swa set when KV head u (layer * start_heads + kv_head) is SWA; start_layers 0: none. BOSCH
     * (every variant) seeds stage 3 with it (each layer's SWA heads taken from it first, as many as
     * the layer's count allows; bosch_layer its whole SWA layers) and, with a refinement, tries it cut
     * to the target as one more start; stages 1 and 2 measure and allocate as without it. The
     * baselines cannot use one (search_create refuses it: search_start_usable). The pins win over
     * it. Saved in the state. */
    int start_layers, start_heads;
    uint8_t start_swa[SEARCH_START_MAX / 8];
} search_config;

/* Defaults = preset "default", with the project's default BOSCH options (docs/search.md says which
 * and why, chosen on the validation split). */
void search_config_default(search_config *cfg);
/* The project's default BOSCH options (those of search_config_default and of `bosch`): the paper's
 * (search_config_paper_options) plus independent stage-1 probes, head scores, stage 3 per bucket
 * and the refinement's share of the stage-3 budget. Changes only those options of cfg. */
void search_config_project_options(search_config *cfg);
/* The paper's structure as docs/design.md §6 describes it (the method `bosch_paper` of `bosch compare`):
 * cascaded stage 1, cumulative drop, proportional stage 2, per-layer stage 3, no head scores, no
 * refinement (and so no confirmation, whatever confirm_samples says). Changes only those options of cfg. */
void search_config_paper_options(search_config *cfg);
/* The confirmation of `bosch_confirm` (search_config.confirm_samples): 4 x calib_samples samples
 * (32 when 0), half at calib_tokens and half at 4 x calib_tokens (one length when calib_tokens is 0,
 * the model's context). Set after the calibration size; `--confirm` and `--confirm-length` override
 * it afterwards. Changes only those two fields. */
void search_config_confirm_options(search_config *cfg);
/* Split the stage-3 budget: half of each group's budget goes to the refinement (refine_budget is
 * per group), so stage 3 plus the refinement plan as many evaluations as stage 3 alone did. */
void search_config_refine_share(search_config *cfg);
/* A method or BOSCH variant by name (a row of the method registry, search_methods.h):
 * a baseline name sets cfg->method; "bosch" the default options; "bosch_paper" the paper's;
 * bosch_indep / _marginal / _ranks / _heads / _bucket / _plus the paper's plus one option each
 * (docs/search.md); "bosch_layer" the default options at layer granularity
 * (search_config_set_granularity). Every BOSCH variant but bosch_layer sets head granularity.
 * Budgets must be set first (the refinement takes its share of them). 0, or -1 with a message
 * listing the names. */
int search_variant_apply(search_config *cfg, const char *name, char *err, size_t errlen);
/* Set cfg->granularity. SEARCH_GRANULARITY_LAYER also sets what layer granularity needs:
 * independent stage-1 probes (a cascade would probe each layer with every layer above it SWA),
 * no head scores, bucket scope or refinement, whose share of the stage-3 budget goes back to stage
 * 3 (as search_config_paper_options does). Call after search_variant_apply and before options the
 * user gave explicitly (--stage1). HEAD changes nothing else. */
void search_config_set_granularity(search_config *cfg, search_granularity g);
/* Name i of every method search_variant_apply takes (what `bosch compare` can run), for pickers
 * such as the explorer's start form, in the registry's picker order (search_method_pick): the BOSCH
 * variants (bosch, bosch_paper, bosch_indep, bosch_marginal, bosch_ranks, bosch_heads,
 * bosch_bucket, bosch_plus, bosch_layer), the layer heuristics (rand, bme, intr, nll), then the
 * static head rankings, those without evaluations first (locality, echo, ablation, fisher); NULL
 * for i < 0 or past the last. */
const char *search_variant_name(int i);
/* Apply a preset's window, budgets and calibration split (ratio, method, seed, sinks untouched):
 *   tiny:    4 samples x 512 tokens, niah_single, window 64, stage-1 budget 3/layer, stage-3 budget
 *            16/group, 1 restart (the CI's smallest search).
 *   demo:    12 samples x 256 tokens, the three tasks mixed (calib_mix 1), window 32, 3/layer,
 *            16/group, 1 restart: the explorer's default, chosen on the validation split so that a
 *            rho = 0.5 search on SmolLM2-135M shows stage-1 drops above their paired noise in about
 *            10 min on 2 CPU cores (docs/search.md "The demo preset").
 *   default: 8 samples x 1024 tokens, niah_single, window 128, 3/layer, 60/group, 2 restarts.
 *   paper:   64 samples x n_ctx_train tokens, niah_single, window = n_ctx/32, 6/layer, 200/group,
 *            4 restarts.
 * Every preset sets calib_mix and calib_tokens2 (0: one length). n_ctx_train is the model's training
 * context (0 = unknown: 8192 is used). 0, or -1 with a message naming the unknown preset and listing
 * the valid ones (err may be NULL). */
int search_preset_apply(search_config *cfg, const char *preset, int n_ctx_train, char *err, size_t errlen);
/* Name i of the presets, smallest first (tiny, demo, default, paper); NULL for i < 0 or past the
 * last. Every list of presets (option help, messages, the explorer's form) reads this table. */
const char *search_preset_name(int i);
/* Index of preset `name` (case-sensitive), or -1. */
int search_preset_find(const char *name);
/* The preset names into buf, separated by ", " and by `last` before the last one (" or ", ", "):
 * "tiny, demo, default or paper". Returns buf (truncated to len). */
const char *search_preset_names(char *buf, size_t len, const char *last);
/* One line for preset i, from its values (the explorer's start form): "demo: 12 probes x 256 tokens,
 * 3 tasks, W 32; NOTE" (n_ctx_train as search_preset_apply). Returns buf ("" for no preset i). */
const char *search_preset_describe(int i, int n_ctx_train, char *buf, size_t len);
/* Check ranges (ratio in [0,1], window >= 1, sinks >= 0, budgets >= 1, n_buckets >= 2). */
int search_config_check(const search_config *cfg, char *err, size_t errlen);

/* ---- the start mask (search_start.c) --------------------------------------------------------- */

/* cfg starts from mask m (its shape and SWA heads; NULL: from nothing). 0, or -1 when m has more
 * than SEARCH_START_MAX KV heads (message). */
int search_start_set(search_config *cfg, const attn_mask *m, char *err, size_t errlen);
/* 1 when KV head (layer, kv_head) is SWA in cfg's start mask (0 without one or out of its shape). */
int search_start_swa(const search_config *cfg, int layer, int kv_head);
/* 1 when cfg's method can start from a mask (BOSCH and its variants), 0 for a baseline (a layer
 * heuristic or a static ranking: its mask comes from its pattern or ranking alone). */
int search_start_usable(const search_config *cfg);
/* The start mask of cfg checked against a shape and the method: the same shape, a method that can
 * use it. 0 (also without a start mask), or -1 with a message saying why. */
int search_start_check(const search_config *cfg, int n_layer, int n_head_kv, char *err, size_t errlen);

/* ---- pinned heads (search_pins.c) ---------------------------------------------------------- */

/* Parse a list of heads "L.H[,L.H...]" (layer and KV head, 0-based; spaces allowed around items)
 * and add them to pins[*n_pins] (room for SEARCH_PINS_MAX) as forced SWA (swa 1) or forced full
 * (swa 0). A head already pinned the same way is kept once; pinned the other way, or more than
 * SEARCH_PINS_MAX pins, is an error. 0, or -1 with "bad value 'V' (...)" naming the item. */
int search_pins_add_list(search_pin *pins, int *n_pins, const char *list, int swa, char *err, size_t errlen);
/* Read a pin file (docs/search.md "Pinned heads": lines "full L.H,L.H..." or "swa L.H,...", '#'
 * comments and blank lines ignored) into pins[*n_pins] as above. 0, or -1 with a message naming the
 * file, the line and the item. */
int search_pins_read(search_pin *pins, int *n_pins, const char *path, char *err, size_t errlen);
/* The heads pinned full (swa 0) or SWA (swa 1) as "L.H,L.H" in the order given ("" when none).
 * Returns buf. */
char *search_pins_format(const search_config *cfg, int swa, char *buf, size_t cap);
/* 1 when a and b pin the same heads the same way (in any order). */
int search_pins_equal(const search_config *a, const search_config *b);
/* Check cfg's pins against a mask shape and its target: every head inside the shape, a method
 * that can keep them (not bosch_layer), and a head-level target round(ratio * L * H) between the
 * forced SWA heads and the heads not forced full. 0, or -1 with a message saying which and why. */
int search_pins_check(const search_config *cfg, int n_layer, int n_head_kv, char *err, size_t errlen);
/* Cut a static head ranking at cfg's ratio keeping cfg's pins: the forced SWA heads SWA, the forced
 * full heads full, then the free heads of lowest importance SWA until round(ratio * L * H) (ties:
 * lower layer, then lower kv_head; NAN importance counts as the largest). Without pins this is
 * search_cut_heads. mask has the shape. 0, or -1 (OOM). */
int search_cut_heads_pinned(const search_config *cfg, const double *importance, attn_mask *mask);

/* ---- objective ---------------------------------------------------------------------------- */

typedef struct {
    double score;    /* raw S(z) (higher is better), e.g. mean answer-token probability */
    double accuracy; /* exact-match fraction, recorded beside the score (not optimized) */
    double nll;      /* mean answer-token NLL, nats (0 if unknown); used by the NLL/Fisher baselines */
    double seconds;  /* wall time of this evaluation */
    int n_samples;   /* entries of sample_nll (0 if unknown) */
    const double *sample_nll; /* [n_samples] per-sample answer NLL, owned by the objective, valid
                                 until its next call (Fisher baseline); may be NULL */
} search_eval;

/* Returned by an objective's score() (and so by search_step / search_run) when the evaluation was
 * cancelled (evaluator_set_cancel): nothing is recorded, no SEARCH_EV_ERROR is emitted, and the
 * state is as before the step, so stepping again redoes the same evaluation. Equals EVAL_CANCELLED. */
#define SEARCH_CANCELLED EVAL_CANCELLED

/* The black box the search maximizes. score() fills *out for `mask` and returns 0,
 * SEARCH_CANCELLED, or -1 with a message. make_base != 0 is a hint that later masks will share this mask's
 * rows (the real objective makes it the evaluator's prefix-reuse base); objectives may ignore it. The search
 * never calls score() concurrently. destroy (may be NULL) frees ctx; search_objective_free calls it. */
typedef struct {
    int (*score)(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err, size_t errlen);
    void (*destroy)(void *ctx);
    void *ctx;
    /* Optional: the calibration token sequences behind the objective (the locality baseline
     * measures attention on them). NULL / 0 when unknown. Owned by ctx. */
    const eval_sample *samples;
    int n_samples;
    /* Optional (NULL: the search calls score() one mask at a time): score masks[0..n) at once, e.g.
     * spread over MPI ranks (mpi/dist.h). make_base[i] is score()'s hint for masks[i]; out[i] as
     * score() fills it, its sample_nll valid until the next call. Every out[i] must equal what
     * score() returns for masks[i] alone (the search's trace must not depend on the batch). 0,
     * SEARCH_CANCELLED, or -1 with a message (no out[i] is then valid). */
    int (*score_batch)(void *ctx, const attn_mask *const *masks, const int *make_base, int n,
                       search_eval *out, char *err, size_t errlen);
    /* Optional, for racing (search_config.race; n_parts 0 = none): the samples in the race's fixed
     * order part_order[n] (sample indexes; n = part_end[n_parts - 1], score()'s n_samples) cut into
     * n_parts rounds, part j = part_order[part_end[j-1] .. part_end[j]) (part_end[-1] = 0; race.h's
     * race_parts). score_part scores mask on part j only: out->sample_nll[count] in part order,
     * out->accuracy over the part, out->score and out->nll over the part, seconds. The per-sample
     * values must be bitwise those score() returns for the same samples. make_base as score(). */
    int n_parts;
    const int *part_order;
    const int *part_end;
    int (*score_part)(void *ctx, const attn_mask *mask, int part, int make_base, search_eval *out, char *err,
                      size_t errlen);
    /* Optional: 1 and *out when the whole evaluation of mask is known without computing it (a memo),
     * else 0. A race then decides on the whole values (race.h's rules, the same decisions). */
    int (*lookup)(void *ctx, const attn_mask *mask, search_eval *out);
} search_objective;

void search_objective_free(search_objective *obj);

/* The real objective: engine/eval.h's evaluator with prefix reuse over the calibration split.
 * Only a calib_set (datasets/probes.h; made only by probe_calib_generate, and checked to be the
 * calibration split) is accepted, so held-out data cannot reach a search. cs and m are borrowed
 * (must outlive obj). Raw score = mean geometric-mean answer-token probability. 0, or -1. */
int search_objective_calib(search_objective *obj, const model *m, const calib_set *cs, char *err,
                           size_t errlen);
/* search_objective_calib with the evaluator's forward on `be` (engine/backend.h, e.g. the GPU from
 * backend_create; NULL = CPU, the same as search_objective_calib). be is borrowed
 * (must outlive obj) and is not part of a saved search state: the device is a property of the run.
 * Scores on another backend differ in the last bits (GPU: bf16 weights), so search_load's check
 * of the restored base refuses a state saved on another device. 0, or -1. */
int search_objective_calib_on(search_objective *obj, const model *m, const backend *be, const calib_set *cs,
                              char *err, size_t errlen);

/* Give the real objective's evaluator (search_objective_calib*) the cancel flag `cancel`
 * (borrowed; NULL = never; evaluator_set_cancel). Other objectives are left as they are. */
void search_objective_set_cancel(search_objective *obj, const atomic_int *cancel);

/* The calibration split a config asks for: probe_config_default() (task, haystack, chat) with
 * cfg->calib_samples samples of cfg->calib_tokens tokens, seed PROBE_DEFAULT_CALIB_SEED, made
 * with m's tokenizer; with calib_mix, those samples shared out between the three tasks (the first
 * tasks get the remainder); with calib_tokens2, first shared out between the two lengths (the
 * first length gets the remainder), the samples of each length in the order above. 0, or -1 with a message.
 * Free with calib_set_free. */
int search_calib_generate(calib_set **out, const model *m, const search_config *cfg, char *err,
                          size_t errlen);

/* The seed of the confirmation split (search_config.confirm_samples): not the calibration's
 * (PROBE_DEFAULT_CALIB_SEED), the validation's or the held-out's, so its samples are none of theirs. */
#define SEARCH_CONFIRM_SEED 4321u
/* A finalist replaces the refined mask only when its paired gain on the confirmation split exceeds
 * this many standard errors (search_confirm.c): with pure noise (a mean difference of 0) a switch
 * then happens with probability ~2.3 % under a normal approximation, against ~50 % for "any higher
 * score" (which lost on the validation split: docs/search.md "Confirming the finalists"). */
#define SEARCH_CONFIRM_K 2.0

/* The confirmation split a config asks for (search_config.confirm_samples > 0): confirm_samples
 * samples from SEARCH_CONFIRM_SEED, shared out between calib_tokens and confirm_tokens2 (when > 0)
 * and within each length between the calibration split's tasks as search_calib_generate does.
 * 0, or -1 with a message (also when confirm_samples < 1). Free with calib_set_free. */
int search_confirm_generate(calib_set **out, const model *m, const search_config *cfg, char *err,
                            size_t errlen);

/* The plan a search with this configuration makes (search_plan.h), before any search exists: for
 * front ends (the explorer's start form) and the registry's planned evaluations. have_model: the
 * search gets the model (the refinement's locality and echo starts need it); have_tokens: its
 * objective has the calibration tokens (locality's). 0, or -1 (no such method, bad shape). */
int search_plan_make(search_plan *out, const search_config *cfg, int n_layer, int n_head_kv, int have_model,
                     int have_tokens);

/* ---- state -------------------------------------------------------------------------------- */

typedef struct search_state search_state;

/* Create a search over masks of shape [n_layer][n_head_kv] (take them from the model's hparams).
 * obj is borrowed (must outlive the state); m (may be NULL) is needed only by methods for which
 * search_method_needs_model() is 1. listener may be NULL. Emits nothing yet (SEARCH_EV_SEARCH_START
 * comes with the first step). 0, or -1 with a message. */
int search_create(search_state **out, const search_config *cfg, int n_layer, int n_head_kv,
                  const search_objective *obj, const model *m, search_listener listener, void *user,
                  char *err, size_t errlen);
void search_free(search_state *st);

/* One step: at most one objective evaluation. Returns 1 when the search is done (further calls
 * return 1 and do nothing), 0 when there is more to do, -1 on error (message; SEARCH_EV_ERROR is
 * emitted; the state stays consistent, so the step can be retried), or SEARCH_CANCELLED (the
 * objective was cancelled: no event, nothing recorded, the step can be retried). */
int search_step(search_state *st, char *err, size_t errlen);
/* Step until done or *stop != 0 (checked before each step; stop may be NULL). 1 done, 0 stopped,
 * -1 error, SEARCH_CANCELLED. */
int search_run(search_state *st, volatile sig_atomic_t *stop, char *err, size_t errlen);
/* Batched evaluation (docs/distributed.md): with batch > 1, an evaluation the search needs is
 * scored (score_batch, else score() one after the other) together with the next batch - 1 candidates its
 * sub-search would ask if none of them improved (opt_peek, swap_peek; the next singles or baseline masks).
 * The search then takes the answers in its usual order: a candidate already scored by the batch is
 * answered from it without an objective call, and the answers after an accepted (improving)
 * candidate are not used unless the new path asks the same mask. So the evaluations, the log, the
 * trace and the final mask are exactly those of batch 1, whatever the batch and however the
 * objective spreads it; only the work done and the wall time change. batch is a property of the
 * run (not saved in the state). 1 (the default) = one mask at a time. 0, or -1 (batch < 1, OOM). */
int search_set_batch(search_state *st, int batch);
/* Evaluations the objective made that the search did not use (the look-ahead past an accepted
 * candidate, or not yet used); with batch 1 always 0. */
long search_batch_wasted(const search_state *st);

/* What racing and the noise-aware acceptance did so far (search_config.race, accept_k), counted the
 * same live and replayed. */
typedef struct {
    int active;        /* the objective scores the race's rounds (race on, score_part, batch 1): the
                          samples below were saved, not only counted */
    int n_calib;       /* calibration samples of a whole evaluation (0: not known yet) */
    long raced;        /* swap-search candidates compared with an incumbent */
    long samples;      /* calibration samples the race scores those candidates on, together (a
                          candidate a memo answered whole counts the samples of its race) */
    long dropped;      /* candidates the race dropped before the last round */
    long dropped_sure; /* of those, by rule (a): they could not win (race.h) */
    long checked;      /* dropped candidates scored whole as well (check mode, race = 2) */
    long wrong;        /* of those, the ones the unraced search would have taken */
    long accepted;     /* moves taken */
    long noise;        /* moves with a positive gain rejected as within the noise (accept_k > 0) */
} search_race_stats;

void search_get_race_stats(const search_state *st, search_race_stats *out);

/* The objective of the confirmation phase (search_config.confirm_samples; docs/search.md
 * "Confirming the finalists"), in place of the one the search builds from the model: obj is borrowed
 * (must outlive the state; NULL: back to building it). Set it before the search reaches that phase;
 * a search without a model and without one skips the phase. Used by tests (a synthetic objective)
 * and by callers that memoize. */
void search_set_confirm(search_state *st, const search_objective *obj);
/* Where the confirmation objective the search builds from the model runs (be; NULL: the CPU) and the
 * flag that cancels its evaluation (NULL: never; evaluator_set_cancel), both borrowed: give those of
 * the search's calibration objective (the explorer does, so a stop cancels a finalist's evaluation
 * too; `bosch search` gives its --device). Call before the phase starts. */
void search_set_confirm_env(search_state *st, const backend *be, const atomic_int *cancel);

/* What the confirmation phase did (search_config.confirm_samples): n_finalists scored on the
 * confirmation split (0: none yet, or no phase), the index of the one kept (0 = the refined mask;
 * -1 before the phase ended), what each finalist is ("refined", "stage3", "drop", "fisher",
 * "locality", "echo", "start") and its confirmation score (raw S). */
#define SEARCH_FINALISTS_MAX 8
typedef struct {
    int n_finalists, kept;
    const char *what[SEARCH_FINALISTS_MAX];
    double score[SEARCH_FINALISTS_MAX];
} search_confirm_stats;

void search_get_confirm_stats(const search_state *st, search_confirm_stats *out);

/* Tell listeners the driver paused (1) or resumed (0): emits SEARCH_EV_PAUSED/RESUMED. */
void search_notify_paused(search_state *st, int paused);

/* Save config + evaluation log to path (format: search_io.c, version 2), atomically: written to
 * path.tmp.<pid>.XXXXXX, fsync'ed and renamed (stale temporary files of path are removed first).
 * 0 or -1 with a message. */
int search_save(const search_state *st, const char *path, char *err, size_t errlen);
/* Append the evaluations logged since the last call (*n_written of them are in path already) to a
 * state file written by search_save, one line each, and flush them to the kernel (write(2));
 * *n_written becomes the log's length. Call after every step so that a kill loses only the
 * evaluation in flight. 0, or -1 with a message naming path and the error (ENOSPC, EIO, ...): then
 * the lines written whole are kept, the rest of a line cut by the failure is removed (the file is
 * truncated to its last whole line), and *n_written counts the lines kept. */
int search_append(const search_state *st, const char *path, long *n_written, char *err, size_t errlen);
/* Rebuild a saved search: the config comes from the file; n_layer/n_head_kv must match. Replays the
 * log (events with replayed = 1), makes one unlogged objective call to restore and verify the
 * prefix-reuse base, and returns a state ready to continue. 0, or -1 with a message (file, line,
 * what differs — a replayed mask whose hash differs from the log, or a changed objective). */
int search_load(search_state **out, const char *path, int n_layer, int n_head_kv, const search_objective *obj,
                const model *m, search_listener listener, void *user, char *err, size_t errlen);

/* Read only the config stored in a state file (to rebuild the objective before search_load). */
int search_load_config(const char *path, search_config *cfg, char *err, size_t errlen);

/* ---- queries (valid at any time; pointers valid until the next step) ----------------------- */

const search_config *search_get_config(const search_state *st);
/* The plan (search_plan.h: the phases, their units and evaluations planned and done, what each
 * does in plain words), made from the configuration at search_create and kept true as the search
 * runs; the SEARCH_START event carries it too. The plan's evals_planned is search_eval_budget. */
const search_plan *search_get_plan(const search_state *st);
int search_is_done(const search_state *st);
/* Current stage: 0 normalization/baseline, 1..3 BOSCH stages, 4 done. */
int search_stage(const search_state *st);
long search_n_evals(const search_state *st); /* evaluations so far (incl. the 2 normalizers) */
/* Planned evaluations in total (the plan's evals_planned): an upper bound that only shrinks, equal
 * to search_n_evals once done. */
long search_eval_budget(const search_state *st);
/* Final mask once done; before that, the committed mask so far (stage 1: layers probed so far at
 * their best choice, the rest full; stage 3: committed groups + fixed layers, the rest full). */
const attn_mask *search_result_mask(const search_state *st);
/* The last evaluated mask (NULL before the first evaluation). */
const attn_mask *search_last_mask(const search_state *st);
/* Best normalized score of the current sub-search (or of the final mask once done). */
double search_best_score(const search_state *st);
/* Raw scores of the all-full and all-SWA masks (NAN before they are measured). */
double search_full_score(const search_state *st);
double search_swa_score(const search_state *st);

typedef struct {
    int probed;    /* stage 1 done for this layer */
    double s_best; /* stage 1: best raw S with ceil(rho*H_kv) SWA heads in this layer */
    double delta;  /* stage 2: S_full - s_best (raw scores; the paper's drop) */
    double weight; /* stage 2: min-max normalized delta in [0,1]; 0 = most tolerant */
    double ratio;  /* stage 2: r = n_swa / n_head_kv */
    int bucket;    /* stage 2: ratio-level group (0 = highest ratio); -1 before stage 2 */
    int n_swa;     /* stage 2: SWA KV heads assigned to this layer (the plan for stage 3) */
    /* The layer in the committed mask (search_result_mask) once stage 2 is done (-1 / NAN before):
     * the final count once the search is done. Stage 3 with stage3_scope, the refinement and
     * layer-granularity swaps move SWA heads between layers, so it can differ from n_swa; during
     * stage 3 the layers of groups still to come are full. */
    int n_swa_final;
    double ratio_final; /* n_swa_final / n_head_kv */
} search_layer_info;

/* Per-layer stats; 0, or -1 when layer is out of range. Fields not yet known are NAN / -1. */
int search_layer_stats(const search_state *st, int layer, search_layer_info *out);

/* BOSCH with stage1_singles: the head scores S_full - S(only this KV head SWA), [n_layer][n_head_kv]
 * (NAN where not measured yet); NULL without stage1_singles. */
const double *search_head_scores(const search_state *st);

/* Static head rankings (the registry's SEARCH_KIND_HEAD_RANKING rows): importance
 * [n_layer][n_head_kv] (higher = keep full), NULL for other methods or before the ranking is
 * complete. Cutting it at any ratio is search_cut_heads(). */
const double *search_head_importance(const search_state *st);
/* The per-KV-head score of the registry's head ranking `row` (search_methods.h: ablation, fisher,
 * locality, echo, ...) as this search has it, [n_layer][n_head_kv] (higher = keep full; NAN where
 * not measured yet), or NULL when it has none: the method's own ranking once complete; BOSCH's head
 * scores (stage1_singles: S_full - S(only this head SWA) is ablation's score, the mean squared
 * per-sample NLL change fisher's, on the same masks); the locality and echo rankings once the
 * refinement computed them for its starts. So a front end shows or reuses them without a second
 * pass. Valid until the next step. */
const double *search_head_ranking(const search_state *st, int row);
/* Any baseline's ranking once complete: head-level ones as above (*n = L*H); NLL: per-layer NLL
 * increase [n_layer] (*n = L; cut with search_layer_pattern). NULL otherwise. */
const double *search_importance(const search_state *st, int *n);

/* ---- pure helpers (also used by tests and `bosch compare`) --------------------------------- */

/* Stage 2 (docs/design.md §6; shift rule in docs/search.md): from per-layer drops delta[n_layer]
 * choose n_swa[n_layer] in 0..n_head_kv with sum exactly round(ratio*n_layer*n_head_kv); also
 * fills weight[] (min-max normalized delta; all 0 when every delta is equal) and bucket[] (0 =
 * highest ratio level in use). Any output pointer may be NULL except n_swa. 0 or -1. */
int search_stage2_assign(const double *delta, int n_layer, int n_head_kv, double ratio, int n_buckets,
                         double *weight, int *n_swa, int *bucket);

/* Stage 2, rank-ladder rule (option search_config.stage2_ranks = 1; closer to the paper's
 * "layers sorted by w ... move between adjacent levels"): weights as above; layers sorted by w
 * (most tolerant first, ties by lower layer); the sorted list is cut into B = min(n_buckets, H+1)
 * chunks of equal size (the first ones larger), chunk j at level round(H*(B-1-j)/(B-1)) SWA heads
 * (H, ..., 0). Then, one head at a time until the sum is exactly round(ratio*L*H): when over, the
 * most populated level > 0 (ties: the higher) moves its least tolerant layer down one head; when
 * under, the most populated level < H (ties: the lower) moves its most tolerant layer up one head.
 * Keeps "more tolerant -> at least as many SWA heads". Same outputs as search_stage2_assign. */
int search_stage2_assign_ranks(const double *delta, int n_layer, int n_head_kv, double ratio, int n_buckets,
                               double *weight, int *n_swa, int *bucket);

/* Stage 2's buckets of an allocation n_swa[n_layer] (each in 0..n_head_kv): the distinct levels in
 * use, highest first, get bucket 0, 1, ...; adjacent levels merge when more than n_buckets are in
 * use (step 5 of stage2.c). */
void search_stage2_buckets(const int *n_swa, int n_layer, int n_head_kv, int n_buckets, int *bucket);

/* Cut a static head ranking at a ratio: the round(ratio*L*H) KV heads of lowest importance go SWA
 * (ties: lower layer index first, then lower kv_head). importance [n_layer][n_head_kv]; mask must
 * be allocated with the shape. 0, or -1 (OOM). */
int search_cut_heads(const double *importance, double ratio, attn_mask *mask);

/* Layer-level baseline patterns (the registry's layer heuristics): swa_layer[n_layer] gets 1 for
 * the round(ratio*n_layer) layers that go SWA (all KV heads), 0 for full layers. Each pattern's
 * definition: search_layer_patterns.c. importance [n_layer] (heuristics with probes, NLL):
 * higher = keep full. 0 or -1 (not a layer heuristic, bad arguments). */
int search_layer_pattern(search_method method, int n_layer, double ratio, uint64_t seed,
                         const double *importance, uint8_t *swa_layer);

#endif
