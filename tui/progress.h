/* progress.h — where a search is, as the explorer shows it: the plan the search published
 * (search/search_plan.h) as of its latest event, the unit it is on, the layers to mark in the grid
 * and the measured seconds per evaluation; and the words and numbers the screen makes of them.
 *
 * Every label, counter, mark, progress fraction, ETA and explanation the explorer shows of a search
 * comes from these functions, and they read only the plan and the events: no method's stages are
 * written out here, so a method (BOSCH, a variant, a baseline) is shown as the phases it runs.
 * Pure (no curses, no threads): the worker feeds the events (progress_on_event) into the snapshot,
 * the UI thread formats its copy. tests/test_progress.c runs every method on a synthetic objective
 * and checks every string against the event stream.
 *
 * Guarantees of the strings (given the plan's, search_plan.h): a counter "k/n" never has k > n; no
 * string shows -1, nan or inf; the title names the phase of the latest event.
 */
#ifndef BOSCH_PROGRESS_H
#define BOSCH_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "search_plan.h"

#define PROGRESS_MAX_LAYERS 128  /* = EX_MAX_LAYERS (ex_state.h) */
#define PROGRESS_MAX_SAMPLES 256 /* calibration samples kept for the noise (more: no noise shown) */

typedef struct {
    int active;       /* a SEARCH_START was seen */
    int done;         /* the search sent DONE */
    search_plan plan; /* as of the latest event */
    int phase;        /* the latest event's phase (-1 before the first phase) */
    int unit;         /* the latest event's unit in that phase (-1: none) */
    int layer, head;  /* the layer (and KV head, -1) the phase's current unit is about; -1 none */
    int group;        /* the stage-3 group (bucket) being searched, -1 none */
    uint8_t in_group[PROGRESS_MAX_LAYERS]; /* its layers */
    long n_evals;                          /* evaluations made (the latest EVAL's index) */
    long evals_start;                      /* the plan's evaluations at SEARCH_START */
    double live_s;                         /* seconds of the live (not replayed) evaluations */
    long live_n;                           /* how many */
    double best_target;    /* best normalized score of a mask at the target (plan.target_swa SWA KV
                              heads); NAN before one is evaluated */
    long best_target_eval; /* its evaluation index (0: none) */
    double final_score;    /* DONE's score of the final mask (normalized); NAN before */
    /* The noise (stats.h stats_paired_diff over the calibration samples, per-sample score
     * exp(-NLL)): each evaluation's drop S_full - S against the all-full mask's on the same samples. */
    int n_full;                               /* samples of the all-full evaluation kept (0: none) */
    double full_sample[PROGRESS_MAX_SAMPLES]; /* its per-sample scores */
    double full_raw, swa_raw;                 /* S of the normalizers (NAN before) */
    double last_drop, last_se;                /* the latest evaluation's raw drop and its standard error */
    double layer_drop[PROGRESS_MAX_LAYERS];   /* the drop of layer l's best stage-1 probe (δ) */
    double layer_se[PROGRESS_MAX_LAYERS];     /* its standard error (NAN unknown) */
} ex_progress;

/* Grid marks (draw_grid.c): the layer the phase is working on now ('▶'), the layers of the group
 * searched together ('•'). */
typedef enum { PROGRESS_MARK_NONE = 0, PROGRESS_MARK_UNIT, PROGRESS_MARK_GROUP } progress_mark;

/* Before any search: inactive, no phase, no marks. */
void progress_reset(ex_progress *p);
/* Take one event of the search (search/events.h): the plan, the phase and unit, the marks, the
 * evaluation count and its seconds (replayed evaluations are not timed). SEARCH_START resets. */
void progress_on_event(ex_progress *p, const search_event *ev);

/* The phase shown: index into plan.phase, or -1 (no search, or before the first phase). */
int progress_phase(const ex_progress *p);
/* Title of the progress panel: "phase 3/7: stage 1: head scores", "done: 7 phases, 214
 * evaluations", "" when inactive. Returns the length written. */
int progress_title(const ex_progress *p, char *buf, size_t cap);
/* The phase's counter: "head 12/90: L3 kv1", "layer 5/30: L25", "group 2/4: L3 L7", "swap
 * 7/41", "candidate 1/2: all full"; "" when no phase runs. k <= n always. */
int progress_counter(const ex_progress *p, char *buf, size_t cap);
/* Share of the planned evaluations made, in [0, 1]; 1 once done. */
double progress_fraction(const ex_progress *p);
/* Planned evaluations of the whole search now (only shrinks; = made once done), >= n_evals. */
long progress_evals_planned(const ex_progress *p);
/* Mean seconds of the live evaluations, NAN before the first. */
double progress_sec_per_eval(const ex_progress *p);
/* Seconds left: (planned - made) x the mean seconds per evaluation; NAN when not measured yet,
 * 0 when done. */
double progress_eta_s(const ex_progress *p);
/* "35 s", "4 min 05 s", "1 h 02 min"; "?" for NAN or negative. */
int progress_fmt_duration(double s, char *buf, size_t cap);
/* The mark of layer l in the grid now. */
progress_mark progress_layer_mark(const ex_progress *p, int l);
/* The explanation of the phase shown (its plan text), NULL when no phase runs. */
const char *progress_text(const ex_progress *p);
/* The standard error of the latest evaluation's normalized score (its drop's paired standard
 * error over the calibration samples divided by S_full - S_allSWA); NAN when unknown. */
double progress_score_se(const ex_progress *p);
/* 1 when a drop d with standard error se is within the noise: |d| < 2 se (about 95 % of the
 * drops of a mask no different from all full); 0 when outside it or se unknown. */
int progress_within_noise(double d, double se);

#endif
