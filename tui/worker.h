/* worker.h — the explorer's worker thread: model, probes, evaluator and search run here, never on
 * the UI thread (DESIGN.md §9). The UI sends commands (non-blocking: they are queued under a mutex
 * and the worker is signalled) and reads snapshots (a copy under the same mutex). After each change
 * the worker writes one byte to a pipe whose read end the UI poll()s; the worker never touches
 * ncurses. Commands run between search steps, so a pause takes effect after the evaluation in
 * progress (at most one evaluation later).
 */
#ifndef BOSCH_WORKER_H
#define BOSCH_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "explorer.h"

typedef struct worker worker;

typedef struct {
    double ratio;    /* target ratio of SWA KV heads in [0,1] */
    char preset[16]; /* "tiny", "default", "paper" (search/search.h) */
    int window;      /* SWA window, tokens; 0 = the preset's */
    int sinks;       /* tokens */
    uint64_t seed;
} worker_search_req;

/* Start the worker thread; it begins loading opts->model_path at once (phase EX_LOADING, then
 * EX_READY or EX_FAILED with the message in status). 0, or -1 with a message (pipe/thread). */
int worker_start(worker **out, const explorer_opts *opts, char *err, size_t errlen);
/* Ask the thread to finish, wait up to wait_ms for it (it finishes the evaluation in progress),
 * and free everything. When the thread does not finish in time its memory is left to the process
 * exit (the caller is about to exit). */
void worker_stop(worker *w, int wait_ms);

/* Read end of the wake-up pipe (non-blocking); poll it for POLLIN, then call worker_drain. */
int worker_wake_fd(const worker *w);
void worker_drain(worker *w);
/* Copy the latest snapshot into *dst (under the mutex; a struct copy). */
void worker_snapshot(worker *w, ex_snapshot *dst);
/* seq of the latest snapshot (cheap check whether a copy is needed). */
long worker_seq(worker *w);

/* Commands (queued; return 0, or -1 when the queue is full or the command makes no sense now,
 * e.g. no model yet; the worker logs why). */
int worker_start_search(worker *w, const worker_search_req *req); /* replaces any previous search */
int worker_pause(worker *w);
int worker_resume(worker *w);
int worker_step(worker *w);                              /* one evaluation, then paused */
int worker_heldout(worker *w, const ex_mask *m);         /* score m on the held-out probes */
int worker_ask(worker *w, const ex_mask *m, int sample); /* generate the answer to held-out sample */

/* Write the trace CSV (DESIGN.md §8: eval,stage,group,layer,score,accuracy,ratio,seconds,
 * mask_hash,mask) of the current search. Safe from the UI thread (copies under the mutex). 0/-1. */
int worker_export_trace(worker *w, const char *path, char *err, size_t errlen);

#endif
