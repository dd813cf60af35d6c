/* layers.c — the per-layer table of a search (layers.h). */
#include "layers.h"

#include <math.h>
#include <stdio.h>

#include "csvio.h"

static const char *const layers_header[] = {"layer", "delta", "weight", "ratio", "bucket", "n_swa"};
enum { LAYERS_COLS = sizeof layers_header / sizeof layers_header[0] };

layers_row layers_row_unknown(int layer) {
    return (layers_row){layer, NAN, NAN, NAN, -1, -1};
}

int layers_write(const char *path, const layers_row *rows, int n, char *err, size_t errlen) {
    csv_out *w = csv_out_open(path, layers_header, LAYERS_COLS, err, errlen);
    if (!w) return -1;
    for (int i = 0; i < n; i++) {
        const layers_row *r = &rows[i];
        char ly[16], de[40], we[40], ra[40], bu[16], ns[16];
        snprintf(ly, sizeof ly, "%d", r->layer);
        const char *f[LAYERS_COLS] = {ly,
                                      csv_cell_real(de, sizeof de, r->delta, 6),
                                      csv_cell_real(we, sizeof we, r->weight, 6),
                                      csv_cell_real(ra, sizeof ra, r->ratio, 6),
                                      csv_cell_count(bu, sizeof bu, r->bucket),
                                      csv_cell_count(ns, sizeof ns, r->n_swa)};
        if (csv_out_row(w, f)) break; /* the error is reported by the commit */
    }
    return csv_out_commit(w, err, errlen);
}
