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

#include "compare.h"
#include "ex_state.h"
#include "explorer.h"
#include "search_options.h"

typedef struct worker worker;

/* A search to start: the options as `bosch search` takes them (search/search_options.h), so the
 * explorer runs exactly the search the command line would with the same options. */
typedef struct {
    search_opts opts;
} worker_search_req;

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

/* Commands (queued; return 0, or -1 when the queue is full or the command makes no sense now,
 * e.g. no model yet; the worker logs why). */
int worker_start_search(worker *w, const worker_search_req *req); /* replaces any previous search */
int worker_pause(worker *w);
int worker_resume(worker *w);
int worker_step(worker *w);                      /* one evaluation, then paused */
int worker_heldout(worker *w, const ex_mask *m); /* score m on the held-out probes */
/* score m's servable projection (a layer SWA only if all its KV heads are) on the same probes:
 * snap.heldout_servable */
int worker_heldout_servable(worker *w, const ex_mask *m);
int worker_ask(worker *w, const ex_mask *m, int sample); /* generate the answer to held-out sample */
/* The attention view of KV head (layer, kv_head) on sample `sample` (taken modulo the split's size)
 * of split 0 (calibration: the search's, else the tiny preset's) or 1 (held-out), the working mask
 * m: the result arrives in snap.attn (ex_attn); the static rankings follow in the background
 * (snap.attn's rank_*). 0 when queued, -1 when the queue is full. */
int worker_attn(worker *w, const ex_mask *m, int layer, int kv_head, int split, int sample);

/* File jobs, run on the worker thread (the UI never blocks on a file). The path is checked first
 * (an export: not a directory, its folder exists and is writable; a load: a readable regular
 * file) and refused with a message naming it before anything is read or written; then
 *   EX_IO_EXPORT_MASK    writes m (csvio.h mask CSV),
 *   EX_IO_EXPORT_TRACE   the trace CSV (DESIGN.md §8: eval,stage,group,layer,score,accuracy,ratio,
 *                        seconds,mask_hash,mask) of the current search,
 *   EX_IO_EXPORT_LAYERS  the per-layer table (layer,delta,weight,ratio,bucket,n_swa),
 *   EX_IO_LOAD_MASK      reads a mask CSV for the model (m unused; may be NULL).
 * The result arrives in the snapshot's io (ex_io). 0 when queued, -1 when the queue is full. */
int worker_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m);

/* The comparison view's reads, on the worker thread too. worker_compare_open reads the held-out
 * rows of compare folder `dir` (results.csv, compare_folder_rows) at the folder's ratio nearest
 * `ratio`; the result arrives in io (EX_IO_COMPARE_OPEN: n_rows, ratio, or msg saying why not) and
 * the rows stay with the worker until the next open. worker_compare_mask reads the mask file of
 * row `row` of those rows for the model (EX_IO_COMPARE_MASK: mask, or msg). 0 when queued, -1 when
 * the queue is full. */
int worker_compare_open(worker *w, const char *dir, double ratio);
int worker_compare_mask(worker *w, int row);
/* Workspaces (worker_workspace.c; the folder's files there). worker_workspace_save stages what
 * only the UI has (the working mask, the undo history oldest first, the cursor, follow / edited)
 * and queues the save of folder `dir` (made if missing): the search state, mask.csv, trace.csv,
 * workspace.txt, each atomically; the result arrives in io (EX_IO_WORKSPACE_SAVE, n_evals: the
 * evaluations saved). worker_workspace_open queues the opening of a workspace or of a `bosch
 * search --out` folder: its search replayed from DIR/state and paused (or finished), its mask, and
 * (a workspace) the UI state in io.ws (EX_IO_WORKSPACE_OPEN); worker_workspace_undo then copies
 * its undo masks (oldest first) into dst[0..cap) and returns how many. 0 when queued, -1 when the
 * queue is full or out of memory. */
typedef struct {
    const ex_mask *mask;
    const ex_mask *const *undo; /* [n_undo], oldest first */
    int n_undo;
    int cur_layer, cur_head, follow, edited;
} worker_ws_ui;
int worker_workspace_save(worker *w, const char *dir, const worker_ws_ui *ui);
int worker_workspace_open(worker *w, const char *dir);
int worker_workspace_undo(worker *w, ex_mask *dst, int cap);

/* Copy the rows of the latest successful worker_compare_open into dst[0..cap); returns how many. */
int worker_compare_rows(worker *w, compare_row *dst, int cap);

#endif
