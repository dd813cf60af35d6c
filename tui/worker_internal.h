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

typedef enum {
    WCMD_START,
    WCMD_PAUSE,
    WCMD_RESUME,
    WCMD_STEP,
    WCMD_HELDOUT,
    WCMD_ASK,
    WCMD_IO,
    WCMD_COMPARE
} wcmd_kind;

typedef struct {
    wcmd_kind kind;
    worker_search_req req; /* WCMD_START */
    ex_mask mask;          /* WCMD_HELDOUT, WCMD_ASK, WCMD_IO (EX_IO_EXPORT_MASK) */
    int sample;            /* WCMD_ASK */
    ex_io_kind io;         /* WCMD_IO, WCMD_COMPARE */
    char path[256];        /* WCMD_IO, WCMD_COMPARE (EX_IO_COMPARE_OPEN: the folder) */
    double ratio;          /* WCMD_COMPARE (EX_IO_COMPARE_OPEN): the ratio wanted */
    int row;               /* WCMD_COMPARE (EX_IO_COMPARE_MASK): the row whose mask to read */
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
};

/* Publish: bump seq and write a wake byte. Call with mu held (worker thread). */
void worker_publish_locked(worker *w);
/* Append a log line (mu held). */
void worker_log_locked(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Convenience: lock, log, publish, unlock. */
void worker_log(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* search_listener for the worker's search (worker_events.c). user = worker. */
void worker_on_event(const search_event *ev, void *user);
/* Reset the search part of the snapshot (mu held). */
void worker_reset_search_snapshot_locked(worker *w);

/* Engine jobs (worker_jobs.c), worker thread, mu NOT held on entry. */
int worker_job_load(worker *w);
int worker_job_prepare_search(worker *w, const worker_search_req *req);
void worker_job_free_search(worker *w);
void worker_job_heldout(worker *w, const ex_mask *m);
void worker_job_ask(worker *w, const ex_mask *m, int sample);
void worker_job_free_all(worker *w);
/* File jobs (worker_io.c): check the path, then export or load; the result goes to snap.io. */
void worker_job_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m);
/* Hand a file job's result to the UI: snap.io = *res with the next seq; logs `log` when not NULL
 * (worker thread, mu NOT held on entry). */
void worker_io_publish(worker *w, ex_io *res, const char *log);
/* The comparison view's reads (worker_compare.c): EX_IO_COMPARE_OPEN, EX_IO_COMPARE_MASK. */
void worker_job_compare(worker *w, const wcmd *c);

#endif
