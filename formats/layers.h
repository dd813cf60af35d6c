/* layers.h — the per-layer table of a search (docs/design.md §8), written the same by `bosch search`
 * (DIR/layers.csv) and the explorer's export (x l). One row per layer, in layer order.
 *
 * Columns, in this order (an empty cell: not known yet):
 *   layer   0-based layer index
 *   delta   stage 2's drop S_full - s_best[layer] (raw scores); before stage 2, the same
 *           difference for a layer stage 1 has probed; 6 decimals
 *   weight  stage 2's min-max normalized delta in [0, 1] (0 = most tolerant), 6 decimals
 *   ratio   n_swa / KV heads per layer, 6 decimals
 *   bucket  stage 2's ratio-level group (0 = highest ratio)
 *   n_swa   SWA KV heads of the layer: the final mask's once the search is done (a baseline's
 *           too), before that stage 2's assignment
 */
#ifndef BOSCH_LAYERS_H
#define BOSCH_LAYERS_H

#include <stddef.h>

/* One row. NAN (delta, weight, ratio) and -1 (bucket, n_swa) are written as empty cells. */
typedef struct {
    int layer;
    double delta, weight, ratio;
    int bucket, n_swa;
} layers_row;

/* A row of layer `layer` with nothing known yet. */
layers_row layers_row_unknown(int layer);

/* Write rows[0..n) to path (header first; atomic, csvio.h). 0, or -1 with a message naming the
 * file. */
int layers_write(const char *path, const layers_row *rows, int n, char *err, size_t errlen);

#endif
