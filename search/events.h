/* events.h — the BOSCH search's event stream (docs/design.md §6 "Events").
 * The search emits plain structs through a callback and knows nothing of who listens; the
 * headless CLI and the ncurses explorer are two listeners. Each event carries enough to redraw.
 * Pointers inside an event are valid only during the callback: copy what you keep.
 *
 * search/search.h drives the stream. Listeners (app/cmd_search.c, tui/) rely on this layout;
 * fields are only ever appended. Order guarantees of one search:
 *   SEARCH_START, then for BOSCH: EVAL (all-full), EVAL (all-SWA),
 *   STAGE_START(1) { LAYER_START(l) EVAL+ [INCUMBENT after an EVAL that improves] LAYER_END(l) }
 *   for l = L-1 .. 0, STAGE_END(1), STAGE_START(2) LAYER_STATS x L STAGE_END(2),
 *   STAGE_START(3) { GROUP_START(g) (EVAL INCUMBENT?)* GROUP_END(g) } STAGE_END(3),
 *   [EVAL of the final mask when no group scored it], DONE.
 *   Baselines: SEARCH_START, EVAL (full), EVAL (all-SWA), STAGE_START(0) EVAL* STAGE_END(0),
 *   EVAL (final mask), DONE. When round(ratio*L*H) is 0 or L*H nothing is searched: the two
 *   normalizers are followed directly by DONE.
 * GROUP_START/GROUP_END carry group = the bucket index (0 = highest ratio) and its layers.
 *   PAUSED/RESUMED may come between any two steps; ERROR replaces the events of a failed step.
 * `score` is the normalized objective (S - S_allSWA) / (S_full - S_allSWA) once both normalizers
 * are known (events of the two normalizing evaluations carry score = 1 and 0).
 * A search resumed from a saved state re-emits its history with replayed = 1 (no objective calls).
 * `stage` is the paper's stage number as above and nothing else; which phase of the plan an event
 * belongs to (e.g. the head-score pass inside stage 1, the refinement inside stage 3, with
 * group = -1) is `phase` (search_plan.h): every event carries the phase, its unit and the plan.
 */
#ifndef BOSCH_EVENTS_H
#define BOSCH_EVENTS_H

#include <stdint.h>

#include "mask.h"
#include "search_plan.h"

typedef enum {
    SEARCH_EV_SEARCH_START = 0, /* method, ratio, budgets known; mask = starting mask */
    SEARCH_EV_STAGE_START,      /* stage = 1, 2, 3 (0 for a baseline) */
    SEARCH_EV_STAGE_END,
    SEARCH_EV_LAYER_START, /* stage 1: layer being probed */
    SEARCH_EV_LAYER_END,   /* stage 1: layer, score = s_best[layer] */
    SEARCH_EV_EVAL,        /* one evaluation: mask, score, accuracy, seconds */
    SEARCH_EV_INCUMBENT,   /* new best mask of the current sub-search */
    SEARCH_EV_LAYER_STATS, /* stage 2: layer, delta, weight, ratio, bucket, n_swa */
    SEARCH_EV_GROUP_START, /* stage 3: group (bucket) and its layers */
    SEARCH_EV_GROUP_END,
    SEARCH_EV_PAUSED,
    SEARCH_EV_RESUMED,
    SEARCH_EV_DONE,  /* mask = final mask, score = its calibration score */
    SEARCH_EV_ERROR, /* message */
} search_event_kind;

typedef struct {
    search_event_kind kind;
    int stage; /* 0 baseline, 1..3 BOSCH stages */
    int layer; /* -1 when not about one layer */
    int group; /* stage-3 group / bucket index, -1 otherwise */
    int n_layers_in_group;
    const int *group_layers; /* [n_layers_in_group] */
    long eval_index;         /* evaluations so far (1-based for SEARCH_EV_EVAL) */
    long eval_budget;        /* total planned evaluations of the current stage, 0 = unknown */
    const attn_mask *mask;
    double score;                /* normalized or raw objective, see `normalized` */
    double raw_score;            /* S(z): mean answer-token probability */
    double accuracy;             /* exact-match fraction */
    double seconds;              /* wall time of the evaluation */
    double delta, weight, ratio; /* SEARCH_EV_LAYER_STATS */
    int bucket, n_swa;           /* SEARCH_EV_LAYER_STATS */
    const char *message;         /* human-readable line for the event log */
    int replayed;                /* 1 while search_load replays a saved log */
    double best_score;           /* best normalized score of the current sub-search so far (EVAL: this
                                    evaluation included); NAN when it has none yet */
    /* The plan (search_plan.h), on every event. A front end's counters, titles and explanations
     * come from these; none of them is ever -1, NAN or infinite except `unit` (-1: the event is
     * about no single unit, e.g. a phase's first or last event, or SEARCH_START). */
    int phase;               /* index of the event's phase in plan->phase; -1 for SEARCH_START */
    int unit;                /* 0-based unit of the phase the event is about (< n_units), or -1 */
    int n_units;             /* the phase's planned units now (0 for SEARCH_START) */
    long evals_planned;      /* the whole search's planned evaluations now (only shrinks) */
    const search_plan *plan; /* the plan now; valid during the callback only */
    /* EVAL of a swap-search candidate compared with its incumbent (racing, noise-aware acceptance;
     * search_config.race, accept_k): the calibration samples it was scored on (0 = unknown; fewer
     * than the split when the race dropped it, and then score and accuracy are NAN), and its paired
     * gain over the incumbent on those samples with the gain's standard error (stats_paired_diff of
     * the per-sample answer probabilities, divided by S_full - S_allSWA like `score`); NAN when
     * there is no incumbent. */
    int samples;
    double gain, gain_se;
    /* SEARCH_EV_EVAL: the per-sample answer NLL of the calibration samples (search_eval.sample_nll;
     * stats_sample_score turns one into that sample's score), for the noise of a score or a drop
     * (stats_paired_diff against another mask's on the same samples); n_samples 0 when unknown (entries of
     * sample_nll; `samples` above is how many the race scored). */
    int n_samples;
    const double *sample_nll; /* [n_samples]; valid during the callback only */
    /* SEARCH_EV_EVAL of the confirmation phase (search_config.confirm_samples): 1, and raw_score is
     * the mask's score on the confirmation split (score, accuracy NAN, no samples: not the
     * calibration split's); 0 otherwise. */
    int confirm;
} search_event;

typedef void (*search_listener)(const search_event *ev, void *user);

#endif
