/* trace.c — the search trace file (trace.h). */
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "csvio.h"

static const char *const trace_header[] = {"eval",     "stage", "group",   "layer",     "score",
                                           "accuracy", "ratio", "seconds", "mask_hash", "mask",
                                           "samples",  "gain",  "gain_se"};
enum { TRACE_COLS = sizeof trace_header / sizeof trace_header[0] };

int trace_rows_push(trace_rows *t, const trace_row *r) {
    if (t->n == t->cap) {
        long cap = t->cap ? 2 * t->cap : 256;
        trace_row *p = realloc(t->rows, sizeof *p * (size_t)cap);
        if (!p) {
            free(r->mask);
            return -1;
        }
        t->rows = p, t->cap = cap;
    }
    t->rows[t->n++] = *r;
    return 0;
}

void trace_rows_clear(trace_rows *t) {
    for (long i = 0; i < t->n; i++) free(t->rows[i].mask);
    t->n = 0;
}

void trace_rows_free(trace_rows *t) {
    trace_rows_clear(t);
    free(t->rows);
    *t = (trace_rows){0};
}

int trace_write(const char *path, const trace_row *rows, long n, char *err, size_t errlen) {
    csv_out *w = csv_out_open(path, trace_header, TRACE_COLS, err, errlen);
    if (!w) return -1;
    for (long i = 0; i < n; i++) {
        const trace_row *r = &rows[i];
        char ev[24], st[16], gr[16], ly[16], sc[40], ac[40], ra[40], se[40], hash[20], ns[16], ga[40], gs[40];
        snprintf(ev, sizeof ev, "%ld", r->eval);
        snprintf(st, sizeof st, "%d", r->stage);
        snprintf(gr, sizeof gr, "%d", r->group);
        snprintf(ly, sizeof ly, "%d", r->layer);
        snprintf(hash, sizeof hash, "%016" PRIx64, r->mask_hash);
        snprintf(ns, sizeof ns, "%d", r->samples);
        const char *f[TRACE_COLS] = {ev,
                                     st,
                                     gr,
                                     ly,
                                     csv_cell_real(sc, sizeof sc, r->score, 6),
                                     csv_cell_real(ac, sizeof ac, r->accuracy, 6),
                                     csv_cell_real(ra, sizeof ra, r->ratio, 6),
                                     csv_cell_real(se, sizeof se, r->seconds, 3),
                                     hash,
                                     r->mask ? r->mask : "",
                                     ns,
                                     csv_cell_real(ga, sizeof ga, r->gain, 6),
                                     csv_cell_real(gs, sizeof gs, r->gain_se, 6)};
        if (csv_out_row(w, f)) break; /* the error is reported by the commit */
    }
    return csv_out_commit(w, err, errlen);
}
