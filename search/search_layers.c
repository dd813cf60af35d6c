/* search_layers.c — BOSCH at layer granularity (search.h: search_config.granularity; docs/search.md
 * "Layer granularity"): stage 3 as one guided swap search (swap_search.h) whose units are whole
 * layers, under the global count of SWA layers stage 2 fixed. The state machine is search.c's
 * (stage 1 probes each layer with k = n_head_kv, stage 2 runs search_stage2_assign with one unit per
 * layer); the swap steps and the commit are search_heads.c's, with units of sw_span = H heads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_internal.h"

long search_layers_stage3_budget(const search_state *st) {
    const int levels = st->cfg.n_buckets < st->H + 1 ? st->cfg.n_buckets : st->H + 1;
    return (long)levels * st->cfg.stage3_budget_per_group;
}

int search_layers_group_begin(search_state *st, char *err, size_t errlen) {
    const int L = st->L, H = st->H;
    uint8_t *init = malloc((size_t)L);
    double *prio = malloc(sizeof(double) * (size_t)L);
    if (!init || !prio) {
        free(init), free(prio);
        snprintf(err, errlen, "search: stage 3: out of memory");
        return -1;
    }
    for (int l = 0; l < L; l++) {
        st->sw_units[l] = l * H;
        init[l] = st->n_swa[l] == H;                        /* stage 2's layers start SWA */
        prio[l] = isnan(st->delta[l]) ? 0.0 : st->delta[l]; /* a larger drop: keep it full */
    }
    if (st->start) { /* the start mask's whole SWA layers first (search_config.start_*), as many as
                        stage 2 made SWA; then stage 2's, then the most tolerant (smallest delta) */
        int count = 0;
        for (int l = 0; l < L; l++) count += init[l];
        uint8_t *was = malloc((size_t)L);
        if (!was) {
            free(init), free(prio);
            snprintf(err, errlen, "search: stage 3: out of memory");
            return -1;
        }
        memcpy(was, init, (size_t)L);
        memset(init, 0, (size_t)L);
        for (int c = 0; c < count; c++) {
            int best = -1, best_key = 0;
            for (int l = 0; l < L; l++) {
                if (init[l]) continue;
                int whole = 1;
                for (int h = 0; h < H; h++) whole &= st->start[l * H + h] == ATTN_SWA;
                const int key = 2 * !whole + !was[l]; /* 0: both, 1: the start's, 2: stage 2's, 3: neither */
                if (best < 0 || key < best_key || (key == best_key && prio[l] < prio[best]))
                    best = l, best_key = key;
            }
            init[best] = 1;
        }
        free(was);
    }
    st->sw_n = L;
    st->sw_span = H;
    st->sw =
        swap_create(L, NULL, init, prio, search_layers_stage3_budget(st), rng_derive(st->cfg.seed, 2000));
    free(init), free(prio);
    if (!st->sw) {
        snprintf(err, errlen, "search: stage 3: cannot create the swap search over %d layers", L);
        return -1;
    }
    return 0;
}
