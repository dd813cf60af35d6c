/* worker_compare.c — the comparison view's reads on the worker thread (worker.h
 * worker_compare_open, worker_compare_mask): a finished `bosch compare` folder's held-out rows
 * (results.csv, capped by compare_folder_rows) and a method's mask file. The rows stay in the
 * worker (w->cmp_rows, under mu) and the UI copies them when the result arrives in snap.io. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "worker_internal.h"

static int compare_open(worker *w, const wcmd *c, ex_io *res, char *err, size_t errlen) {
    compare_row *rows = calloc(COMPARE_MAX_METHODS, sizeof *rows);
    if (!rows) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int n = 0;
    double got = 0;
    if (compare_folder_rows(c->path, c->ratio, rows, COMPARE_MAX_METHODS, &n, &got, err, errlen)) {
        free(rows);
        return -1;
    }
    pthread_mutex_lock(&w->mu);
    free(w->cmp_rows);
    w->cmp_rows = rows;
    w->cmp_n = n;
    pthread_mutex_unlock(&w->mu);
    res->n_rows = n;
    res->ratio = got;
    return 0;
}

/* Row c->row's mask for the model into res->mask. The rows are written by this thread only, so
 * they are read here without the mutex. */
static int compare_mask(worker *w, const wcmd *c, ex_io *res, char *err, size_t errlen) {
    if (c->row < 0 || c->row >= w->cmp_n) {
        snprintf(err, errlen, "no comparison row %d", c->row);
        return -1;
    }
    const char *path = w->cmp_rows[c->row].mask_path;
    attn_mask loaded;
    char warn[512];
    if (csv_mask_load_for(path, &loaded, &w->snap.hp, w->snap.model_name, warn, sizeof warn, err, errlen))
        return -1;
    int rc = ex_mask_from(&res->mask, &loaded);
    mask_free(&loaded);
    if (rc) snprintf(err, errlen, "%.400s: the mask does not fit the explorer", path);
    return rc;
}

void worker_job_compare(worker *w, const wcmd *c) {
    ex_io *res = &w->io_res;
    memset(res, 0, sizeof *res);
    const int open = c->kind == UI_CMD_COMPARE_OPEN; /* else UI_CMD_COMPARE_MASK */
    res->kind = open ? EX_IO_COMPARE_OPEN : EX_IO_COMPARE_MASK;
    res->row = c->row;
    snprintf(res->path, sizeof res->path, "%s", c->path);
    char err[512] = "";
    int rc = open ? compare_open(w, c, res, err, sizeof err) : compare_mask(w, c, res, err, sizeof err);
    res->ok = rc == 0;
    if (rc != 0) snprintf(res->msg, sizeof res->msg, "%s", err);
    worker_io_publish(w, res, NULL);
}
