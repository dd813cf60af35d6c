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
#include "interop.h"
#include "worker_internal.h"

/* 0 when `path` can be written by a rename into its folder; -1 with a message naming it. The
 * explorer's default export folder `mine` (explorer_opts export_dir, NULL: none) is made when
 * missing. */
static int check_export_path(const char *path, const char *mine, char *err, size_t errlen) {
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
    /* the explorer's default export folder ($HOME/bosch-exports, ui_file_prompt) is made on its
       first use; any other missing folder is refused, naming it */
    if (mine && mine[0] == '/' && !strcmp(dir, mine) && stat(dir, &st) != 0 && errno == ENOENT)
        (void)mkdir(dir, 0777);
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

/* A DuoAttention pattern to load: path is a folder holding full_attention_heads.tsv or a .tsv file,
 * optionally followed by "@R" (cut the gates at ratio R, as `bosch import --ratio R`). Fills
 * dir[cap] with the path without the suffix and *ratio (-1 when none). 1 when it is one, else 0. */
static int duo_load_path(const char *path, char *dir, size_t cap, double *ratio) {
    snprintf(dir, cap, "%s", path);
    *ratio = -1;
    char *at = strrchr(dir, '@'), *end = NULL;
    if (at) {
        double r = strtod(at + 1, &end);
        if (end != at + 1 && !*end && r >= 0 && r <= 1) {
            *at = '\0';
            *ratio = r;
        }
    }
    struct stat st;
    char tsv[512];
    snprintf(tsv, sizeof tsv, "%s/" DUO_TSV, dir);
    size_t n = strlen(dir);
    return (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && stat(tsv, &st) == 0) ||
           (n > 4 && !strcmp(dir + n - 4, ".tsv"));
}

/* Load a DuoAttention pattern into res->mask. 0, or -1 with a message. */
static int load_duo(worker *w, const char *dir, double ratio, ex_io *res, char *err, size_t errlen) {
    attn_mask loaded;
    char note[256];
    if (interop_import_duo(dir, w->m, ratio >= 0, DUO_CUT_SPARSITY, ratio, &loaded, note, sizeof note, err,
                           errlen))
        return -1;
    int rc = ex_mask_from(&res->mask, &loaded);
    if (rc)
        snprintf(err, errlen, "%s: the mask does not fit the explorer", dir);
    else
        snprintf(res->msg, sizeof res->msg, "loaded DuoAttention %.50s: %.60s (u undoes)", dir, note);
    mask_free(&loaded);
    return rc;
}

/* Export the working mask m in an interop format (formats/interop.h). 0, or -1 with a message. */
static int export_interop(worker *w, ex_io_kind kind, const char *path, const ex_mask *m, ex_io *res,
                          char *err, size_t errlen) {
    ex_mask local = *m;
    attn_mask am;
    ex_mask_view(&local, &am);
    interop_format f = kind == EX_IO_EXPORT_DUO  ? INTEROP_DUO
                       : kind == EX_IO_EXPORT_HF ? INTEROP_HF
                                                 : INTEROP_TRTLLM;
    char note[256];
    if (interop_export_mask(f, path, &am, w->m, note, sizeof note, err, errlen)) return -1;
    snprintf(res->msg, sizeof res->msg, "%s written to %.50s: %.80s", interop_format_name(f), path, note);
    return 0;
}

static void run_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m) {
    ex_io *res = &w->io_result;
    memset(res, 0, sizeof *res);
    res->kind = kind;
    snprintf(res->path, sizeof res->path, "%s", path);
    char err[512] = "";
    int load = kind == EX_IO_LOAD_MASK || kind == EX_IO_PIN_MASK;
    char duo_dir[256];
    double duo_ratio;
    int duo = load && duo_load_path(path, duo_dir, sizeof duo_dir, &duo_ratio);
    int rc = duo || kind == EX_IO_EXPORT_DUO || kind == EX_IO_EXPORT_SCORES
                 ? 0 /* folders: interop.h and scores.h name what is wrong */
             : load ? check_load_path(path, err, sizeof err)
                    : check_export_path(path, w->opts.export_dir, err, sizeof err);
    res->path_refused = rc != 0;
    if (rc == 0 && duo) {
        rc = load_duo(w, duo_dir, duo_ratio, res, err, sizeof err);
    } else if (rc == 0) {
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
        case EX_IO_LOAD_MASK:
        case EX_IO_PIN_MASK: {
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
        case EX_IO_EXPORT_DUO:
        case EX_IO_EXPORT_HF:
        case EX_IO_EXPORT_TRTLLM:
            rc = export_interop(w, kind, path, m, res, err, sizeof err);
            break;
        case EX_IO_EXPORT_SCORES:
            rc = worker_attn_scores_write(w, path, res->msg, sizeof res->msg, err, sizeof err);
            break;
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

void worker_job_io(worker *w, const wcmd *c) {
    run_io(w, c->io, c->path, &c->mask);
}
