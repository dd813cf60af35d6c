/* search_rows.c — rows of the trace and layers files from a search (search_rows.h). */
#include "search_rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int search_trace_add(trace_rows *t, const search_event *ev) {
    if (ev->kind != SEARCH_EV_EVAL) return 0;
    const attn_mask *m = ev->mask;
    trace_row r = {ev->eval_index, ev->stage, ev->group, ev->layer,   ev->score, ev->accuracy, NAN,
                   ev->seconds,    0,         NULL,      ev->samples, ev->gain,  ev->gain_se};
    if (m) {
        size_t len = (size_t)m->n_layer * (m->n_head_kv + 1) + 1;
        r.ratio = mask_ratio(m);
        r.mask_hash = mask_hash(m);
        r.mask = malloc(len);
        if (r.mask) mask_to_string(m, r.mask, len);
    }
    return trace_rows_push(t, &r);
}

/* SWA KV heads of layer l in m. */
static int layer_swa(const attn_mask *m, int l) {
    int n = 0;
    for (int h = 0; h < m->n_head_kv; h++) n += mask_get(m, l, h) == ATTN_SWA;
    return n;
}

void search_layers_rows(const search_state *st, layers_row *rows, int n_layer) {
    const double full = st ? search_full_score(st) : NAN;
    const attn_mask *final = st && search_is_done(st) ? search_result_mask(st) : NULL;
    for (int l = 0; l < n_layer; l++) {
        search_layer_info li;
        rows[l] = layers_row_unknown(l);
        if (!st || search_layer_stats(st, l, &li) != 0) continue;
        layers_row *r = &rows[l];
        r->delta = li.delta;
        if (isnan(r->delta) && li.probed && isfinite(li.s_best) && isfinite(full))
            r->delta = full - li.s_best;
        r->weight = li.weight;
        r->ratio = li.ratio;
        r->bucket = li.bucket;
        r->n_swa = li.n_swa;
        if (final && l < final->n_layer) {
            r->n_swa = layer_swa(final, l);
            r->ratio = (double)r->n_swa / final->n_head_kv;
        }
    }
}

int search_layers_write(const char *path, const search_state *st, int n_layer, char *err, size_t errlen) {
    layers_row *rows = malloc(sizeof *rows * (size_t)(n_layer > 0 ? n_layer : 1));
    if (!rows) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    search_layers_rows(st, rows, n_layer);
    int rc = layers_write(path, rows, n_layer, err, errlen);
    free(rows);
    return rc;
}
