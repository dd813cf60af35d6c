/* search_rows.h — a search's events and state as the rows of its files (formats/trace.h,
 * formats/layers.h). `bosch search` and the explorer both build their rows here, so the two write
 * identical files for the same search. */
#ifndef BOSCH_SEARCH_ROWS_H
#define BOSCH_SEARCH_ROWS_H

#include "events.h"
#include "layers.h"
#include "search.h"
#include "trace.h"

/* Append the trace row of ev to t when ev is an evaluation (SEARCH_EV_EVAL, replayed or not):
 * eval, stage, group and layer as the event gives them, score, accuracy, seconds, and the ratio,
 * hash and string of its mask (ratio NAN, hash 0 and no string without one). Other events are
 * ignored. 0, or -1 when out of memory (the row is lost). */
int search_trace_add(trace_rows *t, const search_event *ev);

/* The per-layer rows of st into rows[0..n_layer) (layers.h): stage 2's delta, weight and bucket
 * where known (before stage 2, delta = S_full - s_best for a layer stage 1 has probed); ratio and
 * n_swa of the final mask once the search is done, before that stage 2's assignment.
 * st NULL: every row unknown. */
void search_layers_rows(const search_state *st, layers_row *rows, int n_layer);
/* search_layers_rows, then layers_write to path. 0, or -1 with a message naming the file. */
int search_layers_write(const char *path, const search_state *st, int n_layer, char *err, size_t errlen);

#endif
