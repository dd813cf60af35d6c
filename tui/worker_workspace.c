/* worker_workspace.c — workspaces on the worker thread: save the explorer's state to a folder and
 * open one again (`bosch --workspace DIR`, or W in the explorer). A workspace folder holds
 *   state          the search (search_io.c: the format `bosch search --resume DIR` continues),
 *   mask.csv       the working mask (csvio.h),
 *   trace.csv      the evaluations shown (trace.h),
 *   workspace.txt  the cursor, the undo history, the held-out evaluation shown (formats/workspace.h),
 * each written atomically (temporary file, fsync, rename), workspace.txt last. A folder made by
 * `bosch search --out DIR` has the first three without workspace.txt, and opens the same way: its
 * search is replayed from its state (paused, or finished), so it can be watched or continued.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csvio.h"
#include "outlock.h"
#include "workspace.h"
#include "worker_internal.h"

/* DIR/NAME into buf; -1 when it does not fit. */
static int join(char *buf, size_t cap, const char *dir, const char *name) {
    return (size_t)snprintf(buf, cap, "%s/%s", dir, name) < cap ? 0 : -1;
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder exists (made if missing, one level) and is writable. 0, or -1 naming it. */
static int check_save_dir(const char *dir, char *err, size_t errlen) {
    struct stat st;
    if (!dir[0]) {
        snprintf(err, errlen, "no folder given");
        return -1;
    }
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
        snprintf(err, errlen, "cannot make folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a folder: give a folder for the workspace", dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "cannot write in folder %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- save ----------------------------------------------------------------------------------- */

/* The files in order, workspace.txt last. 0, or -1 with a message naming the file. */
static int save_files(worker *w, const char *dir, char *err, size_t errlen) {
    char path[512];
    attn_mask am;
    ex_mask_view(&w->ws_mask, &am);
    if (w->search && (join(path, sizeof path, dir, "state") || search_save(w->search, path, err, errlen)))
        return -1;
    if (join(path, sizeof path, dir, "mask.csv") ||
        csv_mask_save(path, &am, w->snap.model_name, w->m->hp.n_head, err, errlen))
        return -1;
    if (w->trace.n > 0 && (join(path, sizeof path, dir, "trace.csv") ||
                           trace_write(path, w->trace.rows, w->trace.n, err, errlen)))
        return -1;
    workspace_info *ws = &w->ws_save;
    snprintf(ws->model, sizeof ws->model, "%s", w->snap.model_name);
    const ex_heldout *h = &w->snap.heldout;
    ws->have_heldout = h->seq > 0;
    ws->search_done = w->search && w->search_done;
    ws->heldout_hash = h->mask_hash, ws->heldout_score = h->score, ws->heldout_accuracy = h->accuracy;
    ws->heldout_seconds = h->seconds, ws->heldout_samples = h->n_samples,
    ws->heldout_tokens = h->length_tokens;
    return join(path, sizeof path, dir, "workspace.txt") ? -1 : workspace_write(path, ws, err, errlen);
}

static void job_save(worker *w, const char *dir) {
    ex_io *res = &w->io_result;
    char err[512] = "";
    pthread_mutex_lock(&w->mu); /* take over what the UI staged (worker_workspace_stage) */
    workspace_info_free(&w->ws_save);
    w->ws_save = w->ws_ui;
    w->ws_mask = w->ws_ui_mask;
    w->ws_ui.undo = NULL, w->ws_ui.n_undo = 0;
    pthread_mutex_unlock(&w->mu);
    int rc = check_save_dir(dir, err, sizeof err);
    if (rc == 0 && (!w->ws_lock || strcmp(w->ws_lock_dir, dir))) { /* one writer per folder */
        outlock *l = NULL;
        rc = outlock_take(dir, 0, &l, err, sizeof err);
        if (rc == 0) {
            outlock_release(w->ws_lock);
            w->ws_lock = l;
            snprintf(w->ws_lock_dir, sizeof w->ws_lock_dir, "%s", dir);
        }
    }
    res->path_refused = rc != 0;
    if (rc == 0) rc = save_files(w, dir, err, sizeof err);
    res->ok = rc == 0;
    res->n_evals = w->search ? search_n_evals(w->search) : 0;
    if (rc == 0)
        snprintf(res->msg, sizeof res->msg, "workspace saved (%s%s, %d undo steps) to %s",
                 w->search ? "search state, " : "", w->trace.n > 0 ? "mask, trace" : "mask",
                 w->ws_save.n_undo, dir); /* the path last: a narrow footer cuts it, not what was saved */
    else
        snprintf(res->msg, sizeof res->msg, "workspace not saved: %s", err);
    worker_io_publish(w, res, res->msg);
}

/* ---- open ----------------------------------------------------------------------------------- */

/* The bookkeeping steps of a search whose log is complete (they make no evaluation): after them
 * it is done. Stops at the first step that evaluates (the run was not finished after all). */
static void finish_replayed(worker *w) {
    char err[512];
    for (int i = 0; i < 100000 && !search_is_done(w->search); i++) {
        long n0 = search_n_evals(w->search);
        if (search_step(w->search, err, sizeof err) < 0 || search_n_evals(w->search) != n0) break;
    }
}

/* The --method name of a saved configuration: the first row of search_variant_name whose options,
 * as `bosch search --preset P --method NAME` sets them, are cfg's (the state keeps the options,
 * not the name: bosch_paper is "bosch" with the paper's options); search_method_name otherwise. */
static const char *variant_of(const search_config *cfg) {
    for (int i = 0; search_variant_name(i); i++) {
        search_opts o;
        memset(&o, 0, sizeof o);
        search_config c;
        char err[256];
        if (search_opts_set(&o, SOPT_METHOD, search_variant_name(i), err, sizeof err) ||
            search_opts_set(&o, SOPT_PRESET, cfg->preset, err, sizeof err) ||
            search_opts_set(&o, SOPT_RATIO, "0.5", err, sizeof err) ||
            search_opts_config(&o, 0, &c, err, sizeof err))
            continue;
        if (c.method == cfg->method && c.stage1_k_spec == cfg->stage1_k_spec &&
            c.stage1_independent == cfg->stage1_independent && c.stage2_ranks == cfg->stage2_ranks &&
            c.delta_marginal == cfg->delta_marginal && c.stage1_singles == cfg->stage1_singles &&
            c.stage3_scope == cfg->stage3_scope && (c.refine_budget > 0) == (cfg->refine_budget > 0) &&
            c.granularity == cfg->granularity)
            return search_variant_name(i);
    }
    return search_method_name(cfg->method);
}

/* The search saved in DIR/state, replayed, then paused; `finished`: the folder says it had
 * finished (its bookkeeping steps run). 0, 1 (no state), -1 (logged). */
static int open_search(worker *w, const char *dir, int finished, char *err, size_t errlen) {
    char path[512];
    search_config cfg;
    if (join(path, sizeof path, dir, "state") || !is_file(path)) return 1;
    if (search_load_config(path, &cfg, err, errlen)) return -1;
    if (worker_search_setup(w, &cfg, path, variant_of(&cfg))) {
        snprintf(err, errlen, "%.300s: the search could not be resumed (see the log)", path);
        return -1;
    }
    if (finished) finish_replayed(w);
    w->stepping = 0;
    w->search_done = search_is_done(w->search);
    pthread_mutex_lock(&w->mu);
    worker_refresh_search_locked(w); /* the replay ran before w->search was set */
    w->snap.phase = w->search_done ? EX_DONE : EX_PAUSED;
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* DIR/mask.csv into res->mask; else the search's mask, else all full. 0 or -1. */
static int open_mask(worker *w, const char *dir, ex_io *res, char *err, size_t errlen) {
    char path[512], warn[256] = "";
    attn_mask m = {0};
    int rc = 0;
    if (!join(path, sizeof path, dir, "mask.csv") && is_file(path)) {
        rc = csv_mask_load_for(path, &m, &w->m->hp, w->snap.model_name, warn, sizeof warn, err, errlen);
        if (rc == 0 && ex_mask_from(&res->mask, &m))
            rc = -1, snprintf(err, errlen, "%.300s: too large", path);
        mask_free(&m);
        if (warn[0]) worker_log(w, "%s", warn);
        return rc;
    }
    const attn_mask *sm = w->search ? search_result_mask(w->search) : NULL;
    if (sm) return ex_mask_from(&res->mask, sm);
    if (mask_init(&m, w->m->hp.n_layer, w->m->hp.n_head_kv, w->snap.window > 0 ? w->snap.window : 64, 0,
                  ATTN_FULL))
        return -1;
    rc = ex_mask_from(&res->mask, &m);
    mask_free(&m);
    return rc;
}

/* The read workspace.txt `ws` into res->ws and the snapshot's held-out result; w->ws_info keeps
 * it for the UI's undo copy. */
static void apply_ui(worker *w, workspace_info *ws, ex_io *res) {
    res->ws = (ex_workspace){1, ws->cur_layer, ws->cur_head, ws->follow, ws->edited, ws->n_undo, 0, 0};
    if (ws->window > 0) res->mask.window = ws->window, res->mask.sinks = ws->sinks;
    pthread_mutex_lock(&w->mu); /* the UI copies the undo masks from here (worker_workspace_undo) */
    if (ws->have_heldout) {
        ex_heldout *h = &w->snap.heldout;
        h->seq++;
        h->mask_hash = ws->heldout_hash, h->score = ws->heldout_score, h->accuracy = ws->heldout_accuracy;
        h->seconds = ws->heldout_seconds, h->n_samples = ws->heldout_samples;
        h->length_tokens = ws->heldout_tokens;
    }
    workspace_info_free(&w->ws_info);
    w->ws_info = *ws;
    ws->undo = NULL; /* moved */
    pthread_mutex_unlock(&w->mu);
}

/* Open DIR: workspace.txt first (it says whether the search had finished), then the search, the
 * mask, and the UI state. 0 or -1 with a message; *searched 0 when a search was loaded. */
static int open_dir(worker *w, const char *dir, ex_io *res, int *searched, char *err, size_t errlen) {
    char ws_path[512], mask_path[512];
    struct stat st;
    workspace_info ws = {0};
    *searched = 1;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a folder", dir);
        return -1;
    }
    int has_ws = !join(ws_path, sizeof ws_path, dir, "workspace.txt") && is_file(ws_path);
    int has_mask = !join(mask_path, sizeof mask_path, dir, "mask.csv") && is_file(mask_path);
    if (has_ws && workspace_read(ws_path, &ws, w->m->hp.n_layer, w->m->hp.n_head_kv, err, errlen)) return -1;
    /* `bosch search --out` writes mask.csv only once its search is done */
    *searched = open_search(w, dir, has_ws ? ws.search_done : has_mask, err, errlen);
    int rc = *searched < 0 ? -1 : open_mask(w, dir, res, err, errlen);
    res->ws.follow = 1;
    if (rc == 0 && has_ws) apply_ui(w, &ws, res);
    workspace_info_free(&ws);
    return rc;
}

static void job_open(worker *w, const char *dir) {
    ex_io *res = &w->io_result; /* the search's replay publishes snapshots, never an io result */
    char err[512] = "";
    int searched;
    int rc = open_dir(w, dir, res, &searched, err, sizeof err);
    res->ok = rc == 0;
    res->ws.have_search = searched == 0;
    res->ws.search_done = searched == 0 && w->search_done;
    if (rc == 0)
        snprintf(res->msg, sizeof res->msg, "opened %s: %s%s", dir,
                 searched == 0 ? (w->search_done ? "finished search, " : "search paused (p continues), ")
                               : "",
                 res->ws.have_ui ? "workspace" : "mask");
    else
        snprintf(res->msg, sizeof res->msg, "cannot open %s: %s", dir, err);
    worker_io_publish(w, res, res->msg);
}

void worker_job_workspace(worker *w, const wcmd *c) {
    ex_io *res = &w->io_result;
    memset(res, 0, sizeof *res);
    res->kind = c->io;
    snprintf(res->path, sizeof res->path, "%s", c->path);
    if (c->io == EX_IO_WORKSPACE_SAVE)
        job_save(w, c->path);
    else
        job_open(w, c->path);
}

/* ---- the UI's calls ------------------------------------------------------------------------- */

int worker_workspace_stage(worker *w, const ui_cmd *c) {
    const ex_mask *mask = c->mask;
    const ui_cmd_ws *ui = &c->ws;
    if (!mask) return -1;
    const int L = mask->n_layer, H = mask->n_head_kv;
    const int n = ui->n < WORKSPACE_UNDO_MAX ? ui->n : WORKSPACE_UNDO_MAX;
    uint8_t *undo = malloc((size_t)L * H * WORKSPACE_UNDO_MAX);
    if (!undo) return -1;
    for (int i = 0; i < n; i++) /* the ring, oldest first */
        memcpy(undo + (size_t)i * L * H, ui->ring[(ui->head + i) % ui->cap].z, (size_t)L * H);
    pthread_mutex_lock(&w->mu); /* the staging copy the save job takes over (the latest save wins) */
    workspace_info_free(&w->ws_ui);
    w->ws_ui = (workspace_info){.n_layer = L,
                                .n_head_kv = H,
                                .window = mask->window,
                                .sinks = mask->sinks,
                                .cur_layer = ui->cur_layer,
                                .cur_head = ui->cur_head,
                                .follow = ui->follow,
                                .edited = ui->edited,
                                .n_undo = n,
                                .undo = undo};
    w->ws_ui_mask = *mask;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int worker_workspace_undo(worker *w, ex_mask *dst, int cap) {
    pthread_mutex_lock(&w->mu);
    const workspace_info *ws = &w->ws_info;
    const size_t cells = (size_t)ws->n_layer * ws->n_head_kv;
    int n = ws->n_undo < cap ? ws->n_undo : cap;
    for (int i = 0; i < n; i++) {
        memset(&dst[i], 0, sizeof dst[i]);
        dst[i].n_layer = ws->n_layer, dst[i].n_head_kv = ws->n_head_kv;
        dst[i].window = ws->window, dst[i].sinks = ws->sinks;
        memcpy(dst[i].z, ws->undo + i * cells, cells);
    }
    pthread_mutex_unlock(&w->mu);
    return n;
}
