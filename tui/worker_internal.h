/* worker_internal.h — the worker's state and what its files share. Not for the UI.
 *
 * The hub worker.c (thread, queue, dispatch by job kind) calls the job files; they call
 * worker_publish.c (snapshot, log, results), worker_events.c (search events -> snapshot) and
 * worker_jobs.c (model, search set-up, held-out split), never back into worker.c. The jobs'
 * prototypes are generated from the table (requests.h UI_JOBS), so a new job needs no edit here. */
#ifndef BOSCH_WORKER_INTERNAL_H
#define BOSCH_WORKER_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "backend.h"
#include "eval.h"
#include "probes.h"
#include "search.h"
#include "search_rows.h"
#include "worker.h"
#include "workspace.h"

/* A queued job: ui_cmd's arguments by value (worker_submit copies them). */
typedef struct {
    ui_cmd_kind kind;
    worker_search_req req; /* UI_CMD_START_SEARCH */
    ex_mask mask;          /* the ui_cmd's mask (n_layer 0 when it had none) */
    int sample;            /* UI_CMD_ASK, UI_CMD_ATTN */
    int servable;          /* UI_CMD_HELDOUT: score the mask's servable projection */
    ex_io_kind io;         /* UI_CMD_IO, UI_CMD_COMPARE_*, UI_CMD_WORKSPACE */
    char path[256];        /* UI_CMD_IO, UI_CMD_COMPARE_OPEN (the folder), UI_CMD_WORKSPACE */
    double ratio;          /* UI_CMD_COMPARE_OPEN: the ratio wanted */
    int row;               /* UI_CMD_COMPARE_MASK: the row whose mask to read */
    int layer, kv_head;    /* UI_CMD_ATTN and the jobs of ui_act_job: the head */
    int split;             /* UI_CMD_ATTN: 0 calibration, 1 held-out */
    int pin_method;        /* UI_CMD_PIN: as ui_cmd's */
    ex_mask pinned;        /* UI_CMD_PIN: the pinned mask (n_layer 0 when none was given) */
} wcmd;

#define WORKER_QUEUE 8

struct worker {
    pthread_t thread;
    int thread_started;
    int pipe_r, pipe_w;

    /* ---- shared with the UI thread: guarded by mu ---- */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ex_snapshot snap;
    wcmd queue[WORKER_QUEUE];
    int q_head, q_n;
    int quit;
    int done_flag;         /* thread has returned */
    atomic_int cancel;     /* set by worker_stop: the engine stops the job in progress between layers */
    trace_rows trace;      /* one row per evaluation (search_rows.h), written by the worker thread */
    compare_row *cmp_rows; /* [COMPARE_MAX_METHODS] rows of the latest compare folder read */
    int cmp_n;
    wcmd cmd_scratch; /* UI thread only: the command being queued (too large for every stack) */

    /* ---- worker thread only ---- */
    ex_io io_result; /* worker_job_io's result being built (it holds a mask: too large for the stack) */
    explorer_opts opts;
    model *m;
    backend *dev; /* the evaluators' backend (opts.backend; the CPU after a failed GPU start) */
    search_state *search;
    search_objective obj;
    int have_obj;
    calib_set *cs;
    search_config cfg;
    int stepping; /* 1: search runs freely; 0: paused */
    int search_done;
    probe_set heldout; /* held-out split for eval and ask (n == 0: not made yet) */
    evaluator *heldout_ev;
    int heldout_len;
    ex_io io_res; /* the comparison read's result being built (holds a mask: too large for the stack) */

    /* the attention view's static rankings (worker_attn.c), cached per session */
    ex_attn attn_res;     /* the view being built (too large for the stack) */
    search_config rk_cfg; /* the configuration they are computed with (method set per ranking) */
    int rk_have_cfg;
    calib_set *rk_cs; /* their calibration split and objective (their own: a new search frees
                         the search's while they run) */
    search_objective rk_obj;
    int rk_have_obj;
    search_state *rk_st;      /* the ranking being computed (a baseline search), NULL between */
    int rk_next;              /* index of the ranking being or next to be computed; EX_RANKS: all */
    double *rk_imp[EX_RANKS]; /* [n_layer * n_head_kv] importances once computed */
    int rk_state[EX_RANKS];   /* ex_rank_state */
    int rk_turn;              /* alternates the background ranking steps with the search's */

    /* workspaces (worker_workspace.c) */
    workspace_info ws_ui;    /* guarded by mu: what the UI staged for the next save */
    ex_mask ws_ui_mask;      /* guarded by mu: its working mask */
    workspace_info ws_info;  /* guarded by mu: the workspace.txt of the last open (undo for the UI) */
    workspace_info ws_save;  /* worker thread: the save in progress */
    ex_mask ws_mask;         /* worker thread: its working mask */
    struct outlock *ws_lock; /* worker thread: the lock of the folder saved to (formats/outlock.h),
                                held until the explorer ends (worker_stop) */
    char ws_lock_dir[512];   /* that folder */

    /* pinned vs working (worker_pin.c; worker thread only) */
    struct worker_pin *pin; /* NULL before the first :pin */
    int pin_turn;           /* alternates its steps with the search's */
};

/* ---- worker_publish.c (worker thread) ---- */
/* Publish: bump seq and write a wake byte. Call with mu held. */
void worker_publish_locked(worker *w);
/* Append a log line (mu held). */
void worker_log_locked(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Convenience: lock, log, publish, unlock. */
void worker_log(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The busy line of the snapshot: what (NULL: not busy). mu NOT held. */
void worker_set_busy(worker *w, const char *what);
/* The snapshot's phase, published. mu NOT held. */
void worker_set_phase(worker *w, ex_phase ph);
/* Hand a file job's result to the UI: snap.io = *res with the next seq; logs `log` when not NULL
 * (mu NOT held on entry). */
void worker_io_publish(worker *w, ex_io *res, const char *log);
/* Hand job `kind`'s reply to the UI: snap.reply[kind] = *r with the next seq; logs `log` when not
 * NULL (mu NOT held on entry). */
void worker_reply_publish(worker *w, ui_cmd_kind kind, ex_reply *r, const char *log);

/* The heat map's scores (ex_snapshot.heat) from the search's own (search_head_ranking), else from
 * the attention view's rankings (rk_imp) (mu held). */
void worker_heat_publish_locked(worker *w);

/* ---- worker_events.c (inside search_step, worker thread) ---- */
/* search_listener for the worker's search. user = worker. */
void worker_on_event(const search_event *ev, void *user);
/* The snapshot's per-layer statistics and counters from the search's queries (mu held). */
void worker_refresh_search_locked(worker *w);
/* Reset the search part of the snapshot (mu held). */
void worker_reset_search_snapshot_locked(worker *w);

/* ---- worker_jobs.c: the model, the search's set-up, the held-out split (mu NOT held) ---- */
int worker_job_load(worker *w);
int worker_job_prepare_search(worker *w, const worker_search_req *req);
/* Make the search of cfg (state_path NULL) or load the one saved in state_path (search_load: its
 * log is replayed through the listener, so the snapshot and the trace are rebuilt), with the
 * calibration split and objective of its config; the snapshot names `method`. 0, or -1 (logged). */
int worker_search_setup(worker *w, const search_config *cfg, const char *state_path, const char *method);
void worker_job_free_search(worker *w);
/* The held-out split of the explorer (made once per length: the search's calibration length,
 * else the tiny preset's). 0, or -1 with a message. */
int worker_ensure_heldout(worker *w, char *err, size_t errlen);
/* Score mask on the held-out split (`v`'s: worker_ensure_heldout, its evaluator made on first use)
 * into *r, and per sample into per_sample[w->heldout.n] (NULL: not wanted). 0, -1 with a message,
 * or EVAL_CANCELLED. */
int worker_heldout_score(worker *w, const attn_mask *mask, eval_result *r, eval_sample_result *per_sample,
                         char *err, size_t errlen);

/* ---- worker_attn.c: the attention view's static rankings ---- */
/* The calibration configuration of the explorer's own evaluations (the attention view's rankings,
 * the pinned-vs-working panel): the search's (its calibration split), else the tiny preset's as
 * `bosch search --preset tiny` builds it; the window and sinks of mask m. 0, or -1 with a message. */
int worker_calib_config(worker *w, const ex_mask *m, search_config *cfg, char *err, size_t errlen);
/* 1 when two such configurations give the same scores (window, sinks, seed, calibration split). */
int worker_same_calib(const search_config *a, const search_config *b);
/* 1 while a static ranking remains to be computed (worker thread; the loop's wait predicate). */
int worker_attn_rank_pending(const worker *w);
/* tokens ids[n] decoded as one line of text into out[cap]: chat markers dropped ("assistant:"),
 * runs of blanks and newlines made one space (worker_jobs.c). */
void worker_decode_line(const tokenizer *tok, const int32_t *ids, int n, char *out, size_t cap);
/* One step of the background rankings (one evaluation, or one attention-statistics pass). */
void worker_attn_rank_step(worker *w);
/* Write the static rankings the attention view computed so far (cached per session; A starts them)
 * as a scores folder (formats/scores.h: DIR/scores.csv, DIR/<ranking>.json; the rankings not yet
 * computed are left empty), with a one-line summary in msg. -1 with a message when none is. */
int worker_attn_scores_write(worker *w, const char *dir, char *msg, size_t msglen, char *err, size_t errlen);
/* Free the rankings and their objective. */
void worker_attn_free(worker *w);

/* ---- worker_pin.c: the pinned-vs-working comparison (ex_pin), computed in the background ---- */
/* 1 while a baseline's mask or an evaluation of the comparison remains (the loop's wait predicate). */
int worker_pin_pending(const worker *w);
/* One step: one evaluation of the baseline's search or of the comparison, then publish. */
void worker_pin_step(worker *w);
/* Free its state (the cache, the baseline's search and objective). */
void worker_pin_free(worker *w);

/* ---- worker_workspace.c ---- */
/* UI thread, from worker_submit: stage what only the UI has for a workspace save (c->mask and
 * c->ws: the undo ring, the cursor, follow / edited); the save job takes it over. 0, or -1 when
 * out of memory. */
int worker_workspace_stage(worker *w, const ui_cmd *c);

/* ---- the jobs (requests.h UI_JOBS), worker thread, mu NOT held on entry ----
 *   worker_job_start / pause / resume / step (worker_control.c): the search control;
 *   worker_job_heldout (worker_jobs.c): score c->mask (or its servable projection) on the held-out
 *     probes: snap.heldout or snap.heldout_servable;
 *   worker_job_ask (worker_jobs.c): greedy answer to held-out sample c->sample: snap.ask;
 *   worker_job_io (worker_io.c): the file jobs of ex_io_kind; the path is checked first (an export:
 *     not a directory, its folder exists and is writable; a load: a readable regular file) and
 *     refused with a message naming it before anything is read or written; the trace and the
 *     per-layer table go through bosch search's writers: snap.io;
 *   worker_job_compare (worker_compare.c): read a compare folder's held-out rows at the ratio
 *     nearest c->ratio (EX_IO_COMPARE_OPEN; the rows stay with the worker, worker_compare_rows),
 *     or the mask of row c->row (EX_IO_COMPARE_MASK): snap.io;
 *   worker_job_attn (worker_attn.c): the attention view of (c->layer, c->kv_head) on sample
 *     c->sample (modulo the split's size) of split c->split with the working mask: snap.attn; the
 *     static rankings follow in the background;
 *   worker_job_workspace (worker_workspace.c): save the staged UI state and the search to folder
 *     c->path, or open one (EX_IO_WORKSPACE_OPEN): snap.io;
 *   worker_job_pin (worker_pin.c): compare c->pinned (or the baseline c->path cut at c->ratio,
 *     made first) with the working mask c->mask, in the background: snap.pin. */
#define WORKER_JOB_PROTO(id, job, on_queued) void job(worker *w, const wcmd *c);
UI_JOBS(WORKER_JOB_PROTO)
#undef WORKER_JOB_PROTO

#endif
