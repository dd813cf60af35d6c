/* dist.h — candidate evaluation over MPI (issue 16; docs/distributed.md). Built only when CMake
 * finds MPI (BOSCH_MPI); the `bosch` program reaches it through app/cli_dist.h.
 *
 * Roles: rank 0 runs the command and writes every file; ranks 1..N-1 are workers: each holds a
 * model replica and an objective (search/search.h) and scores the masks rank 0 sends until told to
 * stop. Rank 0 scores a share of each batch itself (it holds a replica anyway), so N = 1 under
 * mpirun is the plain run.
 *
 * Messages (MPI_BYTE on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so a failed rank is an
 * error code, not an abort):
 *   setup  0 -> w  the command's setup blob (for search: its search_config), any length
 *   ready  w -> 0  dist_ready: status, host name, device, error text
 *   job    0 -> w  dist_job_head (24 B) + the mask body, n_layer x n_head_kv bytes (z, 1 = full)
 *   result w -> 0  dist_result_head (48 B) + n_samples doubles (per-sample NLL), or an error text
 *   samples 0 -> w dist_samples_head (40 B) + the cell (opaque here; a probe_cell, 40 B) + the mask
 *   sresult w -> 0 dist_sresult_head (16 B) + count eval_sample_result (24 B each), or an error text
 *   stop   0 -> w  empty
 * Rank 0 never blocks without a deadline: it polls (MPI_Iprobe, MPI_Test) and gives a worker
 * `timeout_s` seconds for each answer, counted from when rank 0 could first listen; a worker that
 * fails, dies or stays silent makes the call fail with a message naming its rank and host.
 */
#ifndef BOSCH_DIST_H
#define BOSCH_DIST_H

#include <signal.h>
#include <stddef.h>

#include "eval.h"
#include "search.h"

/* MPI_Init and the error-returning communicator. 0, or -1 with a message. */
int dist_init(int *argc, char ***argv, char *err, size_t errlen);
/* This process's rank in MPI_COMM_WORLD (0 = the one that runs the command and writes the files), and
 * the number of ranks; valid after dist_init. */
int dist_rank(void);
int dist_size(void);
/* This rank's index among the ranks on its host (MPI_COMM_TYPE_SHARED): the GPU it should use. */
int dist_local_rank(void);
/* MPI_Get_processor_name of this rank. */
const char *dist_host(void);
/* MPI_Finalize (after a normal end on every rank). */
void dist_finalize(void);
/* MPI_Abort(code): ends every rank (after a worker fault, hung workers must not keep the job). */
void dist_abort(int code);

/* Rank 0: tell worker `rank` to stop (an empty stop message; for workers still waiting for a
 * setup, when rank 0 ends before starting a pool). 0 or -1. */
int dist_send_stop(int rank);

/* ---- rank 0 ------------------------------------------------------------------------------------ */

typedef struct dist_pool dist_pool;

/* Send `setup` (n bytes) to every worker and wait until each is ready (timeout_s > 0 seconds
 * each, counted from this call). local (borrowed) is rank 0's own objective; NULL for a pool of
 * sample jobs only (its objective must not be used). stop (may be NULL):
 * a signal flag; set while waiting, the wait ends with an error. 0, or -1 with a message naming
 * the rank and host of a worker that failed, died or did not answer. */
int dist_pool_start(dist_pool **out, const search_objective *local, const void *setup, size_t n,
                    double timeout_s, volatile sig_atomic_t *stop, char *err, size_t errlen);
/* The pool as an objective: score() is the local objective's; score_batch() spreads a batch over
 * rank 0 and the workers (candidates with the same first differing layer kept together, for
 * prefix reuse). The pool must outlive obj; obj has no destroy. */
void dist_pool_objective(dist_pool *p, search_objective *obj);
/* ---- sample jobs: a mask scored on a range of a probe cell's samples (compare's splits, eval) ---- */

/* Score `mask` on samples [first, first + count) of the set `spec` (spec_n bytes; the caller's
 * description of it, e.g. a probe_cell) into out[0..count); reuse as probe_scorer_open's. The same
 * function runs rank 0's share and, through dist_handlers, every worker's. 0, or -1 with a message. */
typedef int (*dist_samples_fn)(void *ctx, const void *spec, size_t spec_n, const attn_mask *mask, int reuse,
                               int first, int count, eval_sample_result *out, char *err, size_t errlen);

typedef struct {
    int rank; /* who scores it: 0 = rank 0 (through local), 1..workers */
    const attn_mask *mask;
    int reuse; /* 1: the worker's scorer keeps a prefix-reuse base (one per cell) */
    int first, count;
    eval_sample_result *out; /* [count], filled */
} dist_samples_job;

/* Score jobs[0..n) of one set `spec`: every worker's jobs are sent first, in order (a worker
 * scores its jobs in the order sent, so a sorted share keeps its prefix reuse), then rank 0's run
 * through local(local_ctx, ...), then the answers are collected (the pool's timeout per answer).
 * 0, or -1 with a message naming the rank and host of a worker that failed or did not answer (the
 * pool then refuses every call). */
int dist_pool_samples(dist_pool *p, const void *spec, size_t spec_n, dist_samples_job *jobs, int n,
                      dist_samples_fn local, void *local_ctx, char *err, size_t errlen);

/* Worker ranks of the pool (dist_size() - 1). */
int dist_pool_workers(const dist_pool *p);
/* 1 once a worker has failed (the pool then refuses every call). */
int dist_pool_failed(const dist_pool *p);
/* Bytes and jobs sent to / received from the workers so far. */
void dist_pool_stats(const dist_pool *p, long *jobs, long *bytes_sent, long *bytes_received);
/* Tell the workers to stop (unless one failed) and free the pool. NULL is ignored. */
void dist_pool_stop(dist_pool *p);

/* ---- workers ----------------------------------------------------------------------------------- */

/* Wait for rank 0's setup blob (malloc'd into *blob, *n bytes). 0, 1 (told to stop before any
 * setup), or -1 with a message. */
int dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen);
/* Tell rank 0 this worker is ready (rc 0; desc: its device) or failed (rc -1; msg: why). */
int dist_worker_ready(int rc, const char *desc, const char *msg);

/* Fault injection for the tests (the program reads it from BOSCH_DIST_FAULT): after `after`
 * answered jobs, kind 1 stops answering (sleeps), kind 2 exits at once (status 3). */
typedef struct {
    long after;
    int kind; /* 0 none */
} dist_fault;

/* What a worker serves: calibration masks (job messages) with obj, and sample jobs with samples.
 * A job of a kind whose handler is NULL is answered with an error naming it. */
typedef struct {
    const search_objective *obj;
    dist_samples_fn samples;
    void *samples_ctx;
} dist_handlers;

/* Score every job until told to stop. 0 (stopped), or -1 with a message (a lost rank 0). */
int dist_worker_serve(const dist_handlers *h, const dist_fault *fault, char *err, size_t errlen);

#endif
