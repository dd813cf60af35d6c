/* probe_masks.c — the masks of a baseline's one-unit probes (search_internal.h), for the baseline
 * itself (search_baseline.c) and the batch's look-ahead (search_batch.c). */
#include <string.h>

#include "search_internal.h"

void search_baseline_probe_mask(const search_state *st, long i, uint8_t *z) {
    memset(z, ATTN_FULL, (size_t)st->L * st->H);
    if (search_method_row(st->cfg.method)->probes == SEARCH_PROBES_EACH_LAYER)
        memset(z + (size_t)i * st->H, ATTN_SWA, (size_t)st->H);
    else
        z[i] = ATTN_SWA;
}
