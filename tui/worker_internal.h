/* worker_internal.h — the worker's state, shared by worker.c (thread, queue, publishing),
 * worker_events.c (search events -> snapshot) and worker_jobs.c (engine jobs). Not for the UI. */
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

typedef enum {
    WCMD_START,
    WCMD_PAUSE,
    WCMD_RESUME,
    WCMD_STEP,
    WCMD_HELDOUT,
    WCMD_ASK,
    WCMD_IO,
    WCMD_COMPARE,
    WCMD_ATTN,
    WCMD_WORKSPACE
} wcmd_kind;

typedef struct {
    wcmd_kind kind;
    worker_search_req req; /* WCMD_START */
    ex_mask mask;          /* WCMD_HELDOUT, WCMD_ASK, WCMD_IO (EX_IO_EXPORT_MASK) */
    int sample;            /* WCMD_ASK */
    int servable;          /* WCMD_HELDOUT: score the mask's servable projection */
    ex_io_kind io;         /* WCMD_IO, WCMD_COMPARE */
    char path[256];        /* WCMD_IO, WCMD_COMPARE (EX_IO_COMPARE_OPEN: the folder) */
    double ratio;          /* WCMD_COMPARE (EX_IO_COMPARE_OPEN): the ratio wanted */
    int row;               /* WCMD_COMPARE (EX_IO_COMPARE_MASK): the row whose mask to read */
    int layer, kv_head;    /* WCMD_ATTN: the head; sample and split */
    int split;             /* WCMD_ATTN: 0 calibration, 1 held-out */
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
    workspace_info ws_ui;   /* guarded by mu: what the UI staged for the next save */
    ex_mask ws_ui_mask;     /* guarded by mu: its working mask */
    workspace_info ws_info; /* guarded by mu: the workspace.txt of the last open (undo for the UI) */
    workspace_info ws_save; /* worker thread: the save in progress */
    ex_mask ws_mask;        /* worker thread: its working mask */
};

/* Publish: bump seq and write a wake byte. Call with mu held (worker thread). */
void worker_publish_locked(worker *w);
/* Append a log line (mu held). */
void worker_log_locked(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Convenience: lock, log, publish, unlock. */
void worker_log(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* search_listener for the worker's search (worker_events.c). user = worker. */
void worker_on_event(const search_event *ev, void *user);
/* The snapshot's per-layer statistics and counters from the search's queries (mu held). */
void worker_refresh_search_locked(worker *w);
/* Reset the search part of the snapshot (mu held). */
void worker_reset_search_snapshot_locked(worker *w);

/* Engine jobs (worker_jobs.c), worker thread, mu NOT held on entry. */
int worker_job_load(worker *w);
int worker_job_prepare_search(worker *w, const worker_search_req *req);
/* Make the search of cfg (state_path NULL) or load the one saved in state_path (search_load: its
 * log is replayed through the listener, so the snapshot and the trace are rebuilt), with the
 * calibration split and objective of its config; the snapshot names `method`. 0, or -1 (logged). */
int worker_search_setup(worker *w, const search_config *cfg, const char *state_path, const char *method);
void worker_job_free_search(worker *w);
/* Score m (servable 0) or its servable projection (1) on the held-out probes: snap.heldout or
 * snap.heldout_servable. */
void worker_job_heldout(worker *w, const ex_mask *m, int servable);
void worker_job_ask(worker *w, const ex_mask *m, int sample);
void worker_job_free_all(worker *w);
/* File jobs (worker_io.c): check the path, then export or load; the result goes to snap.io. */
void worker_job_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m);
/* Hand a file job's result to the UI: snap.io = *res with the next seq; logs `log` when not NULL
 * (worker thread, mu NOT held on entry). */
void worker_io_publish(worker *w, ex_io *res, const char *log);
/* The comparison view's reads (worker_compare.c): EX_IO_COMPARE_OPEN, EX_IO_COMPARE_MASK. */
void worker_job_compare(worker *w, const wcmd *c);
/* The busy line of the snapshot: what (NULL: not busy). mu NOT held. */
void worker_set_busy(worker *w, const char *what);
/* The held-out split of the explorer (made once per length: the search's calibration length,
 * else the tiny preset's). 0, or -1 with a message. */
int worker_ensure_heldout(worker *w, char *err, size_t errlen);
/* The attention view (worker_attn.c): compute it for c (layer, kv_head, split, sample, mask) into
 * snap.attn, and start the static rankings in the background when they are not cached. */
void worker_job_attn(worker *w, const wcmd *c);
/* 1 while a static ranking remains to be computed (worker thread; the loop's wait predicate). */
int worker_attn_rank_pending(const worker *w);
/* Write the static rankings the attention view computed so far (cached per session; A starts them)
 * as a scores folder (formats/scores.h: DIR/scores.csv, DIR/<ranking>.json; the rankings not yet
 * computed are left empty), with a one-line summary in msg. -1 with a message when none is. */
int worker_attn_scores_write(worker *w, const char *dir, char *msg, size_t msglen, char *err, size_t errlen);
/* One step of the background rankings (one evaluation, or one attention-statistics pass). */
void worker_attn_rank_step(worker *w);
/* Workspaces (worker_workspace.c): EX_IO_WORKSPACE_SAVE, EX_IO_WORKSPACE_OPEN; the result goes to
 * snap.io. */
void worker_job_workspace(worker *w, const wcmd *c);
/* Queue c (worker.c). 0, or -1 when the queue is full (logged). UI thread. */
int worker_enqueue(worker *w, const wcmd *c);
/* Free the rankings and their objective. */
void worker_attn_free(worker *w);

#endif
