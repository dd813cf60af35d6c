/* worker_io.c — the explorer's file jobs on the worker thread (worker.h worker_io): export the
 * mask, the trace or the per-layer table, load a mask. The path is checked before anything is
 * read or written, so a directory or an unwritable folder is named at once and the user can give
 * another path (nothing computed is lost). The trace and the per-layer table go through the same
 * writers and rows as `bosch search` (formats/trace.h, formats/layers.h, search/search_rows.h), so
 * the files are identical; all writes are atomic (csvio.h). The worker thread is the only writer
 * of snap, trace and search, so it reads them here without the mutex. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csvio.h"
#include "worker_internal.h"

/* 0 when `path` can be written by a rename into its folder; -1 with a message naming it. */
static int check_export_path(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!path[0]) {
        snprintf(err, errlen, "no file name given");
        return -1;
    }
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s is a directory: give a file name (e.g. %s/bosch-mask.csv)", path, path);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "%s is not a regular file: give another name", path);
            return -1;
        }
    }
    char copy[256];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: %s is not a folder", path, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "cannot write in folder %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* 0 when `path` is a readable regular file; -1 with a message naming it. */
static int check_load_path(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!path[0]) {
        snprintf(err, errlen, "no file name given");
        return -1;
    }
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is a directory: give a mask CSV file", path);
        return -1;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void worker_job_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m) {
    ex_io *res = &w->io_result;
    memset(res, 0, sizeof *res);
    res->kind = kind;
    snprintf(res->path, sizeof res->path, "%s", path);
    char err[512] = "";
    int load = kind == EX_IO_LOAD_MASK;
    int rc = load ? check_load_path(path, err, sizeof err) : check_export_path(path, err, sizeof err);
    res->path_refused = rc != 0;
    if (rc == 0) {
        switch (kind) {
        case EX_IO_EXPORT_MASK: {
            ex_mask local = *m;
            attn_mask am;
            ex_mask_view(&local, &am);
            rc = csv_mask_save(path, &am, w->snap.model_name, w->snap.hp.n_head, err, sizeof err);
            if (rc == 0)
                snprintf(res->msg, sizeof res->msg, "mask written to %s (ratio %.3f)", path, mask_ratio(&am));
            break;
        }
        case EX_IO_EXPORT_TRACE:
            rc = trace_write(path, w->trace.rows, w->trace.n, err, sizeof err);
            res->n_evals = w->trace.n;
            if (rc == 0)
                snprintf(res->msg, sizeof res->msg, "trace of %ld evaluations written to %s", w->trace.n,
                         path);
            break;
        case EX_IO_EXPORT_LAYERS:
            rc = search_layers_write(path, w->search, w->snap.hp.n_layer, err, sizeof err);
            if (rc == 0) snprintf(res->msg, sizeof res->msg, "per-layer table written to %s", path);
            break;
        case EX_IO_LOAD_MASK: {
            attn_mask loaded;
            char warn[512] = "";
            rc = csv_mask_load_for(path, &loaded, &w->snap.hp, w->snap.model_name, warn, sizeof warn, err,
                                   sizeof err);
            if (rc == 0) {
                if (ex_mask_from(&res->mask, &loaded) != 0) {
                    snprintf(err, sizeof err, "%s: the mask does not fit the explorer", path);
                    rc = -1;
                } else if (warn[0]) { /* another model's mask of the same shape: say so instead */
                    snprintf(res->msg, sizeof res->msg, "warning: %s", warn);
                } else {
                    snprintf(res->msg, sizeof res->msg, "loaded %s: ratio %.3f, window %d (u undoes)", path,
                             mask_ratio(&loaded), loaded.window);
                }
                mask_free(&loaded);
            }
            break;
        }
        case EX_IO_COMPARE_OPEN:
        case EX_IO_COMPARE_MASK:   /* worker_job_compare's */
        case EX_IO_WORKSPACE_SAVE: /* worker_job_workspace's */
        case EX_IO_WORKSPACE_OPEN:
            snprintf(err, sizeof err, "%s: not a file job", path);
            rc = -1;
            break;
        }
    }
    res->ok = rc == 0;
    if (rc != 0) snprintf(res->msg, sizeof res->msg, "%s", err);
    worker_io_publish(w, res, rc != 0 ? err : NULL);
}

void worker_io_publish(worker *w, ex_io *res, const char *log) {
    pthread_mutex_lock(&w->mu);
    res->seq = w->snap.io.seq + 1;
    w->snap.io = *res;
    if (log) worker_log_locked(w, "%s", log);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}
