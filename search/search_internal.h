/* search_internal.h — the search state shared by search.c (the state machine), search_io.c
 * (save/load) and search_baseline.c. Not a public API: front ends use search.h only.
 */
#ifndef BOSCH_SEARCH_INTERNAL_H
#define BOSCH_SEARCH_INTERNAL_H

#include "optimizer.h"
#include "search.h"
#include "search_methods.h"
#include "swap_search.h"

typedef enum {
    PH_START = 0,
    PH_NORM_FULL,
    PH_NORM_SWA,
    PH_S1_BEGIN,
    PH_S1_LAYER_BEGIN,
    PH_S1_LAYER,
    PH_S2,
    PH_S3_BEGIN,
    PH_S3_GROUP_BEGIN,
    PH_S3_GROUP,
    PH_S1_SINGLES,
    PH_REFINE_BEGIN,
    PH_REFINE,
    PH_BL_BEGIN,
    PH_BL_EVAL,
    PH_BL_END,
    PH_CONFIRM,
    PH_FINAL,
    PH_DONE
} search_phase;

/* One logged evaluation (what save/load replays). */
typedef struct {
    uint64_t hash; /* mask_hash of the evaluated mask */
    double score, accuracy, nll, seconds;
    int n_samples;
    double *sample_nll; /* [n_samples] or NULL */
} search_log_entry;

/* A parsed state file (format: search_io.c). */
typedef struct {
    search_config cfg;
    int version; /* 1 or 2 */
    int n_layer, n_head_kv;
    search_log_entry *log; /* [n_log], malloc'd */
    long n_log;
    long dropped_line; /* version 2: the line number of an incomplete last line (a write cut by a
                          kill), which is left out; 0: none */
} search_state_file;

/* Parse a state file from f (path only names it in messages): header, then the evaluation log.
 * Needs no model. 0, or -1 with a message naming the file, the line and the field; out is then
 * empty. Free with search_state_file_free. */
int search_state_parse(FILE *f, const char *path, search_state_file *out, char *err, size_t errlen);
void search_state_file_free(search_state_file *s);

struct search_state {
    search_config cfg;
    int L, H;
    long target_swa; /* round(ratio * L * H) */
    const search_objective *obj;
    const model *mdl;
    search_listener listener;
    void *user;
    search_phase phase;

    double s_full, s_swa, acc_full, acc_swa, nll_full;
    double *sample_nll_full; /* [n_sample_nll] */
    int n_sample_nll;

    attn_mask result; /* committed mask */
    attn_mask cand;   /* scratch: candidate being evaluated */
    attn_mask last;   /* last evaluated */
    int have_last;
    attn_mask base; /* last mask passed with make_base */
    int have_base;

    /* current sub-search */
    optimizer *opt;
    int opt_m;
    int *opt_layers;   /* [L] layers of the current sub-search */
    uint64_t *opt_sol; /* [L] */
    double best_norm;  /* best normalized score of the current sub-search */

    /* stage 1 / 2 per layer */
    int cur_layer, k1;
    uint8_t *probed;                 /* [L] */
    uint64_t *stage1_bits;           /* [L] best SWA set of stage 1 */
    double *s_best, *delta, *weight; /* [L] */
    int *n_swa, *bucket;             /* [L] */
    int stage2_done;

    /* stage 3 groups: group g = layers group_layers[group_start[g] .. group_start[g+1]) */
    int n_groups, cur_group;
    int *group_start;  /* [L+1] */
    int *group_layers; /* [L] */
    int *group_bucket; /* [L] */

    /* head scores (stage1_singles) */
    double *head_drop;   /* [L*H] S_full - S(only this head SWA); NAN = not measured */
    double *head_fisher; /* [L*H] mean_s (NLL_s(single) - NLL_s(full))^2; NAN = not measured */
    int single_pos;      /* next unit of the singles pass (counts down from L*H-1) */
    /* the registry's head rankings computed from the model along the way (the refinement's locality
     * and echo starts), by registry row, [L*H] each, NULL: not computed (search_head_ranking) */
    double *head_rank[SEARCH_METHODS_MAX];

    /* pinned heads (search_pins.c; NULL / unused without pins): pin[L*H] SEARCH_PIN_*, and per
     * layer the heads forced SWA (pin_fs) and forced full (pin_ff) */
    uint8_t *pin;
    int *pin_fs, *pin_ff;

    /* the start mask (search_start.c; NULL without one): its body [L*H] (ATTN_*), the pins applied */
    uint8_t *start;

    /* guided swap sub-search (stage 3 with head scores, refinement) */
    swap_search *sw;
    int sw_n;         /* units of the sub-search */
    int sw_span;      /* heads per unit: 1 (a KV head), or H (a whole layer: layer granularity) */
    int *sw_units;    /* [L*H] first head l*H + h of each sub-search unit (its sw_span heads follow) */
    uint8_t *sw_sol;  /* [L*H] */
    int refine_inits; /* refinement: start candidates still to score (0..2) */

    /* baselines */
    double *importance; /* [L*H] head-level, or [L] layer-level (NLL) */
    int importance_ready;
    long bl_index, bl_total;

    /* final */
    int final_known;
    double final_raw, final_acc;
    long stage_evals; /* evaluations in the current stage */

    /* what an option adds to every evaluation (search_eval_cand calls it after logging; NULL:
     * nothing): the head scores' bookkeeping of stage1_singles (search_heads_note) */
    void (*eval_observer)(search_state *st, const search_eval *e);

    /* the plan (search_plan.h; search_plan.c walks it) and the unit the search is on (-1: none) */
    search_plan plan;
    int plan_unit;

    /* log + replay */
    search_log_entry *log;
    long n_log, cap_log;
    search_log_entry *replay;
    long n_replay, replay_pos;
    int replaying;
    int cancelled; /* the objective's last call returned SEARCH_CANCELLED (search_step reports it) */

    /* racing and the noise-aware acceptance (search_race.c): the incumbent of the candidate being
     * scored, set by the swap step around its evaluation (NULL: none, the candidate is scored whole) */
    const double *race_inc; /* [race_n] the incumbent's per-sample p (sample order) */
    double *race_inc_buf;   /* [race_n] storage of race_inc */
    double *race_nll;       /* [race_n] the candidate's per-sample NLL being raced (NAN: unscored) */
    uint8_t *race_scratch;  /* [L*H] a mask body */
    int race_n;             /* samples of a whole evaluation (0: not known yet) */
    int *race_order;        /* [race_n] race_order(race_n, RACE_ORDER_SEED) */
    int race_end[4];        /* race_parts(race_n): cumulative samples after each round */
    int race_parts;
    search_race_stats race_stats;
    double race_gain, race_gain_se; /* the last raced evaluation's paired gain (raw p units) and se */
    int race_samples;               /* and the samples it was scored on */

    /* the confirmation (search_confirm.c; search_config.confirm_samples): the finalists' bodies
     * fin[SEARCH_FINALISTS_MAX][L*H] (ATTN_*), what each is, their confirmation scores and per-sample
     * answer probabilities (for the gains), the next one to score, and the objective: confirm_ext
     * (search_set_confirm) or the one built from the model (confirm_own over confirm_cs) */
    uint8_t *fin;
    const char *fin_what[SEARCH_FINALISTS_MAX];
    double fin_score[SEARCH_FINALISTS_MAX];
    double *fin_p[SEARCH_FINALISTS_MAX];
    int fin_n_p[SEARCH_FINALISTS_MAX];
    int n_fin, fin_pos, fin_kept;
    const search_objective *confirm_ext;
    const backend *confirm_be;        /* search_set_confirm_env */
    const atomic_int *confirm_cancel; /* search_set_confirm_env */
    search_objective confirm_own;
    int have_confirm_own;
    calib_set *confirm_cs;

    /* batched evaluation (search_batch.c): the answers of the last batch, by mask hash */
    int batch;                     /* look-ahead size (1: none) */
    int n_batch;                   /* answers held */
    uint64_t *batch_hash;          /* [batch] */
    search_eval *batch_eval;       /* [batch]; sample_nll points into batch_nll */
    double *batch_nll;             /* [batch][batch_nll_n] */
    int batch_nll_n;               /* samples per answer the buffer holds */
    uint8_t *batch_bodies;         /* [batch][L*H] scratch: the candidates' mask bodies */
    long batch_scored, batch_used; /* answers received / taken by the search */
};

/* The objective's answer for st->cand (search_batch.c): from the last batch when it holds it, else
 * the batch of st->cand and its look-ahead (score_batch), else score(). Same contract as score(). */
int search_batch_score(search_state *st, int make_base, search_eval *out, char *err, size_t errlen);
void search_batch_free(search_state *st);

/* Append to the log (copies sample_nll). 0 or -1 (OOM). */
int search_log_append(search_state *st, const search_eval *e, uint64_t hash);
void search_log_free(search_log_entry *log, long n);

/* Baseline phases (search_baseline.c): called by search_step with phase PH_BL_*. Same return
 * convention as search_step. */
int search_baseline_step(search_state *st, char *err, size_t errlen);
/* The probe mask body [L*H] of unit i of a baseline with probes (that layer or KV head alone SWA;
 * probe_masks.c, shared with the batch's look-ahead). */
void search_baseline_probe_mask(const search_state *st, long i, uint8_t *z);
/* What the registry's ranking functions see of this search (the all-full normalizer once known). */
search_rank_input search_rank_input_of(const search_state *st);

/* Evaluate st->cand (search_eval.c): logs, emits SEARCH_EV_EVAL, fills *out. make_base is 0 or 1,
 * or'ed with SEARCH_EVAL_DEDUP to answer a mask this search already scored from its log (logged
 * again; no objective call). Then calls st->eval_observer, if any. 0 or -1. */
#define SEARCH_EVAL_DEDUP 2
/* Or'ed into make_base: score st->cand on the confirmation objective (search_confirm_objective),
 * never as a base nor from the log's calibration entries, logged under search_confirm_hash. */
#define SEARCH_EVAL_CONFIRM 4

/* search_confirm.c (the confirmation phase, search_config.confirm_samples). */
/* Add st->cand (what: "stage3", "drop", ...) to the finalists when the confirmation is on and it is
 * not one already. 0, or -1 (OOM). */
int search_confirm_add(search_state *st, const uint8_t *body, const char *what);
/* One step of PH_CONFIRM: 0 an evaluation was made, 1 done (st->result is the kept finalist, its
 * calibration score in final_raw), -1 error. */
int search_confirm_step(search_state *st, char *err, size_t errlen);
/* The confirmation objective: search_set_confirm's, else the one built from the model (built on
 * the first call); NULL with no model (the phase is skipped) or -1 on error via *failed. */
const search_objective *search_confirm_objective(search_state *st, int *failed, char *err, size_t errlen);
/* The log key of a confirmation evaluation of the mask with hash h (never a calibration key). */
uint64_t search_confirm_hash(uint64_t h);
void search_confirm_free(search_state *st);
int search_eval_cand(search_state *st, int make_base, int stage, int group, int layer, search_eval *out,
                     char *err, size_t errlen);

/* search_race.c (racing and the noise-aware acceptance, race.h). */
/* 1 when the objective scores the race's rounds: race on, score_part with the search's order and
 * rounds, batch 1 (else the race decides on whole evaluations, search_race.c). */
int search_race_active(const search_state *st);
/* Set st->race_inc to the per-sample p of the logged whole evaluation of the mask body z (the
 * incumbent), or NULL when the log has none. 0, or -1 (OOM). */
int search_race_set_incumbent(search_state *st, const uint8_t *z);
/* The objective's answer for st->cand scored in the race's rounds against st->race_inc (same
 * contract as score(); a dropped candidate gets score, accuracy and nll NAN and NAN sample NLLs
 * where unscored). */
int search_race_score(search_state *st, int make_base, search_eval *out, char *err, size_t errlen);
/* After the evaluation e of st->cand against st->race_inc: the paired gain and its standard error
 * over the samples scored (raw p units) and how many (into st->race_gain, race_gain_se,
 * race_samples). */
void search_race_note(search_state *st, const search_eval *e);
/* Whether the move to st->cand (evaluation e, incumbent st->race_inc with raw score inc_score) is
 * taken: not when the race dropped it (partial values, or whole values the race would have
 * dropped: check mode, a memo), else race_accept with cfg.accept_k (accept_k 0: e->score >
 * inc_score, the search before these options, bit for bit). Counts search_race_stats. */
int search_race_decide(search_state *st, const search_eval *e, double inc_score);
/* The logged whole evaluation of body z: its log index, or -1. */
long search_log_find_whole(const search_state *st, const uint8_t *z);

/* search_heads.c (the head-score options of search.h); return conventions in that file.
 * search_heads_note is the eval_observer of a search with stage1_singles. */
void search_heads_note(search_state *st, const search_eval *e);
int search_heads_singles_step(search_state *st, char *err, size_t errlen);
int search_heads_group_begin(search_state *st, int g, char *err, size_t errlen);
int search_heads_swap_step(search_state *st, int stage, int group, char *err, size_t errlen);
double search_heads_swap_commit(search_state *st);
int search_heads_refine_begin(search_state *st, char *err, size_t errlen);

/* search_pins.c (pinned heads, search.h search_config.pins). */
enum { SEARCH_PIN_FREE = 0, SEARCH_PIN_FULL = 1, SEARCH_PIN_SWA = 2 };
/* st->pin, pin_fs, pin_ff from the config's pins (nothing without pins). 0, or -1 (OOM). */
int search_pins_build(search_state *st);
/* The pinned heads of a mask body z[L*H] set as pinned (nothing without pins). */
void search_pins_apply(const search_state *st, uint8_t *z);
/* Stage 2 with pins: each layer's n_swa within [forced SWA, H - forced full], the total back to
 * target_swa (a head more to the most tolerant layer with room, a head less from the least
 * tolerant), the buckets again from the levels. Nothing without pins. */
void search_pins_bound_alloc(search_state *st);
/* A layer heuristic's mask with pins, into st->result: its pattern over the layers without a head
 * pinned full (importance [L]: its probes' scores, or NULL), as many whole layers as bring the
 * SWA heads (the forced ones counted) nearest round(ratio * L) * H (ties: fewer layers), then the
 * pins. 0, or -1 with a message. */
int search_pins_layer_pattern(search_state *st, const search_method_info *m, const double *importance,
                              char *err, size_t errlen);

/* search_start.c (the start mask, search.h search_config.start_*). */
/* st->start from the config (nothing without a start mask). 0, or -1 (OOM). */
int search_start_build(search_state *st);
/* Stage 3's start bits of layer l with k SWA heads from the start mask: its SWA heads of the layer
 * first (lower index first), then those of `fallback` (stage 1's choice), then the lowest-index
 * others. Needs st->start. */
uint64_t search_start_layer_bits(const search_state *st, int l, int k, uint64_t fallback);
/* The start mask at the target, into z[L*H]: its SWA heads first, then the least important by the
 * head scores (more than the target: the most important of them stay full), the pins kept
 * (search_cut_heads_pinned). 0, or -1 (OOM). */
int search_start_cut(search_state *st, uint8_t *z);

/* search_layers.c (layer granularity, search.h): stage 3's evaluations, and its swap search over
 * the layers (units of sw_span = H heads) from stage 2's choice, driven by search_heads_swap_step.
 * 0, or -1 with a message. */
long search_layers_stage3_budget(const search_state *st);
int search_layers_group_begin(search_state *st, char *err, size_t errlen);
/* The plan (search_plan.c). k of the stage-1 probes and the target number of SWA KV heads of a
 * config (what search_create uses). */
int search_stage1_k(const search_config *cfg, int H);
long search_target_swa(const search_config *cfg, int L, int H);
/* Index of the first phase of `kind` at or after the current one, or -1. */
int search_plan_index(const search_state *st, search_phase_kind kind);
/* Enter the phase of `kind` (the phases before it close: done, or skipped with 0 units); no-op
 * when the plan has none or it is the current one. */
void search_plan_enter(search_state *st, search_phase_kind kind);
/* The unit the next events are about (-1: none), and the end of the current unit. */
void search_plan_unit(search_state *st, int unit);
void search_plan_unit_done(search_state *st);
/* Shrink phase i: at most n_units units (< 0: unchanged) and at most evals_left more evaluations
 * than it made (< 0: unchanged). Never grows a phase. */
void search_plan_cap(search_state *st, int i, int n_units, long evals_left);
/* One evaluation made in the current phase (search_eval_cand). */
void search_plan_eval(search_state *st);
/* The search is done: every phase closes. */
void search_plan_finish(search_state *st);
/* Normalized score of a raw score. */
double search_normalize(const search_state *st, double raw);
void search_emit(search_state *st, search_event *ev);
/* An event of `kind` with every optional field marked unknown (-1 / NAN). */
search_event search_event_new(search_state *st, search_event_kind kind, int stage);

#endif
