/* worker.h — the explorer's worker thread: model, probes, evaluator and search run here, never on
 * the UI thread (docs/design.md §9). The UI submits jobs (the table of requests.h UI_JOBS; non-blocking:
 * they are queued under a mutex and the worker is signalled) and reads snapshots (a copy under the
 * same mutex). After each change the worker writes one byte to a pipe whose read end the UI
 * poll()s; the worker never touches ncurses. Jobs run between search steps, so a pause takes
 * effect after the evaluation in progress (at most one evaluation later).
 */
#ifndef BOSCH_WORKER_H
#define BOSCH_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "ex_state.h"
#include "explorer.h"
#include "ui_cmd.h"

typedef struct worker worker;

/* Start the worker thread; it begins loading opts->model_path at once (phase EX_LOADING, then
 * EX_READY or EX_FAILED with the message in status). 0, or -1 with a message (pipe/thread). */
int worker_start(worker **out, const explorer_opts *opts, char *err, size_t errlen);
/* Stop the thread and free everything. The job in progress is cancelled cooperatively (the
 * engine reads the worker's cancel flag between layers and returns EVAL_CANCELLED, which is not
 * recorded as a score), then the thread is joined: no timed give-up, so nothing runs once this
 * returns (a model load or a file job in progress is finished first; exports still queued are
 * written, queued loads and engine jobs dropped). NULL is a no-op. */
void worker_stop(worker *w);

/* Read end of the wake-up pipe (non-blocking); poll it for POLLIN, then call worker_drain. */
int worker_wake_fd(const worker *w);
void worker_drain(worker *w);
/* Copy the latest snapshot into *dst (under the mutex; a struct copy). */
void worker_snapshot(worker *w, ex_snapshot *dst);
/* seq of the latest snapshot (cheap check whether a copy is needed). */
long worker_seq(worker *w);

/* Queue job c->kind (UI_CMD_START_SEARCH .. the last job of requests.h) with its arguments, copied
 * (c->mask, c->path; a workspace save also stages the UI's undo ring and cursor). 0, or -1 when
 * the queue is full or c is no job (the worker logs why). What each job does: its function in
 * tui/worker_*.c (worker_internal.h). */
int worker_submit(worker *w, const ui_cmd *c);

/* Copy the rows of the latest successful compare-folder read (UI_CMD_COMPARE_OPEN) into
 * dst[0..cap); returns how many. */
int worker_compare_rows(worker *w, compare_row *dst, int cap);
/* After a workspace was opened (io EX_IO_WORKSPACE_OPEN): copy its undo masks (oldest first) into
 * dst[0..cap); returns how many. */
int worker_workspace_undo(worker *w, ex_mask *dst, int cap);

#endif
