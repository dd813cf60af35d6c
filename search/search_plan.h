/* search_plan.h — the plan a search publishes at its start: the phases it will run, derived from
 * its configuration (method, options, budgets, the mask's shape), each with its kind, a short
 * label, a plain-words explanation, its unit and the units and evaluations planned.
 *
 * Every event of the search names its phase, its unit in that phase and the phase's units
 * (events.h: phase, unit, n_units, evals_planned, plan), so a front end derives every counter,
 * title and explanation from the plan and the events, and none can disagree with the masks the
 * search evaluates:
 *  - the events walk the phases in order (phase indices never decrease); a phase can be skipped
 *    (it then ends with 0 units and 0 evaluations, e.g. the final mask's scoring when a stage-3
 *    group already scored it) and has no event then;
 *  - planned units and evaluations only shrink, when a phase or a sub-search ends early or when a
 *    later phase's size becomes known (stage 2 fixes the stage-3 groups); once a phase is over its
 *    planned evaluations equal those it made, and once the search is done plan->evals_planned
 *    equals search_n_evals();
 *  - an event's unit (0-based) is below its n_units; a phase's evals_done never passes its
 *    evals_planned;
 *  - `keeps` says what every mask a phase evaluates satisfies, and the explanation says the same
 *    (tests/test_search_plan.c checks both against the masks).
 *
 * The phases of each method (docs/search.md "The plan"):
 *   every method          normalize (2 candidates: all full, all SWA)
 *   BOSCH                 probe_layers (stage 1; unit layer), [singles (unit head; stage1_singles)],
 *                         assign (stage 2; unit layer, no evaluation), groups (stage 3; unit group),
 *                         [refine_starts (unit candidate), refine (unit swap); refine_budget > 0],
 *                         [confirm (unit candidate; confirm_samples > 0, with the refinement)],
 *                         [final (unit candidate; without the refinement)]
 *   a baseline            rank (its probes, unit head or layer, or its ranking or pattern, no
 *                         evaluation), final (unit candidate)
 * When round(ratio * units) leaves nothing to choose (0 or all), the plan is the normalizers only.
 */
#ifndef BOSCH_SEARCH_PLAN_H
#define BOSCH_SEARCH_PLAN_H

typedef enum {
    SEARCH_PHASE_NORMALIZE = 0, /* the all-full and all-SWA masks */
    SEARCH_PHASE_PROBE_LAYERS,  /* BOSCH stage 1: how much each layer tolerates SWA */
    SEARCH_PHASE_SINGLES,       /* every KV head alone SWA: the head scores */
    SEARCH_PHASE_ASSIGN,        /* BOSCH stage 2: per-layer SWA counts; no evaluation */
    SEARCH_PHASE_GROUPS,        /* BOSCH stage 3: which heads, one group of layers at a time */
    SEARCH_PHASE_REFINE_STARTS, /* the refinement's start candidates */
    SEARCH_PHASE_REFINE,        /* the refinement's swaps over all layers */
    SEARCH_PHASE_RANK,          /* a baseline's probes, ranking or layer pattern */
    SEARCH_PHASE_FINAL,         /* scoring the final mask */
    SEARCH_PHASE_CONFIRM,       /* the refinement's finalists on the confirmation split */
} search_phase_kind;

/* What one unit of a phase is. */
typedef enum {
    SEARCH_UNIT_CANDIDATE = 0, /* one mask */
    SEARCH_UNIT_LAYER,
    SEARCH_UNIT_HEAD, /* a KV head */
    SEARCH_UNIT_GROUP,
    SEARCH_UNIT_SWAP, /* one move of a swap search (one evaluation) */
} search_unit;

/* search_plan_phase.keeps: what every mask the phase evaluates satisfies. "Committed" is the
 * search's result mask at that moment (search_result_mask). */
enum {
    SEARCH_KEEPS_NORMALIZERS = 1 << 0,  /* unit 0 is all full, unit 1 all SWA */
    SEARCH_KEEPS_ONE_LAYER = 1 << 1,    /* only the unit's layer has SWA heads */
    SEARCH_KEEPS_CASCADE = 1 << 2,      /* layers above the unit's layer as committed, layers below it full */
    SEARCH_KEEPS_ONE_HEAD = 1 << 3,     /* exactly one KV head is SWA */
    SEARCH_KEEPS_LAYER_COUNTS = 1 << 4, /* each layer of the group keeps its stage-2 SWA count; the
                                           layers outside the group as committed */
    SEARCH_KEEPS_BUCKET_TOTAL = 1 << 5, /* the group's layers keep their stage-2 total (a layer's own
                                           count may change); the layers outside it as committed */
    SEARCH_KEEPS_TOTAL = 1 << 6,        /* exactly the target number of SWA KV heads */
    SEARCH_KEEPS_WHOLE_LAYERS = 1 << 7, /* every layer all full or all SWA */
    SEARCH_KEEPS_RESULT = 1 << 8,       /* the mask is the committed one */
};

#define SEARCH_PLAN_MAX 10   /* phases a plan holds at most */
#define SEARCH_PLAN_LABEL 48 /* bytes of a label */
#define SEARCH_PLAN_TEXT 720 /* bytes of an explanation */

typedef enum { SEARCH_PHASE_PENDING = 0, SEARCH_PHASE_RUNNING, SEARCH_PHASE_DONE } search_phase_state;

typedef struct {
    search_phase_kind kind;
    int stage;                     /* the paper's stage it belongs to: 1..3, 0 for none */
    char label[SEARCH_PLAN_LABEL]; /* short, e.g. "stage 1: layer probes" */
    char text[SEARCH_PLAN_TEXT];   /* one paragraph: what it does, in plain words, with the numbers */
    search_unit unit;
    int n_units;        /* units planned (only shrinks; = units_done once done) */
    int units_done;     /* units finished */
    long evals_planned; /* evaluations planned (only shrinks; = evals_done once done) */
    long evals_done;    /* evaluations made */
    unsigned keeps;     /* SEARCH_KEEPS_* */
    search_phase_state state;
} search_plan_phase;

typedef struct {
    int n_phases;
    int cur;            /* the phase running or last run; -1 before the first */
    long target_swa;    /* SWA KV heads of the final mask: round(ratio x KV heads), or round(ratio x
                           layers) x KV heads a layer at layer granularity (the start form shows it) */
    long evals_planned; /* sum of the phases' (only shrinks; = evaluations made once done) */
    search_plan_phase phase[SEARCH_PLAN_MAX];
} search_plan;

/* "normalize", "probe_layers", "singles", "assign", "groups", "refine_starts", "refine", "rank",
 * "final", "confirm"; "?" out of range. */
const char *search_phase_kind_name(search_phase_kind k);
/* "candidate", "layer", "head", "group", "swap" (singular); "?" out of range. */
const char *search_unit_name(search_unit u);

#endif
