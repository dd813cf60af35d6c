/* search_start.c — the mask a search starts from (search.h: search_config.start_*; docs/search.md
 * "Starting from a mask"): setting and reading it, the checks, and what BOSCH's stage 3 and
 * refinement take from it (search_internal.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

int search_start_set(search_config *cfg, const attn_mask *m, char *err, size_t errlen) {
    memset(cfg->start_swa, 0, sizeof cfg->start_swa);
    cfg->start_layers = cfg->start_heads = 0;
    if (!m) return 0;
    const long n = (long)m->n_layer * m->n_head_kv;
    if (m->n_layer < 1 || m->n_head_kv < 1 || n > SEARCH_START_MAX) {
        snprintf(err, errlen, "a start mask of %d layers x %d KV heads (at most %d KV heads)", m->n_layer,
                 m->n_head_kv, SEARCH_START_MAX);
        return -1;
    }
    cfg->start_layers = m->n_layer, cfg->start_heads = m->n_head_kv;
    for (long u = 0; u < n; u++)
        if (m->z[u] == ATTN_SWA) cfg->start_swa[u / 8] |= (uint8_t)(1u << (u % 8));
    return 0;
}

int search_start_swa(const search_config *cfg, int layer, int kv_head) {
    if (cfg->start_layers <= 0 || layer < 0 || layer >= cfg->start_layers || kv_head < 0 ||
        kv_head >= cfg->start_heads)
        return 0;
    const long u = (long)layer * cfg->start_heads + kv_head;
    return cfg->start_swa[u / 8] >> (u % 8) & 1;
}

int search_start_usable(const search_config *cfg) {
    return cfg->method == SEARCH_METHOD_BOSCH;
}

int search_start_check(const search_config *cfg, int L, int H, char *err, size_t errlen) {
    if (cfg->start_layers == 0) return 0;
    if (!search_start_usable(cfg)) {
        snprintf(err, errlen,
                 "search: %s cannot start from a mask: a %s's mask comes from its %s alone (BOSCH and its "
                 "variants can)",
                 search_method_name(cfg->method),
                 search_method_row(cfg->method)->kind == SEARCH_KIND_LAYER_HEURISTIC ? "layer heuristic"
                                                                                     : "static ranking",
                 search_method_row(cfg->method)->kind == SEARCH_KIND_LAYER_HEURISTIC ? "pattern" : "ranking");
        return -1;
    }
    if (cfg->start_layers != L || cfg->start_heads != H) {
        snprintf(err, errlen, "search: the start mask has %d layers x %d KV heads, the model %d x %d",
                 cfg->start_layers, cfg->start_heads, L, H);
        return -1;
    }
    return 0;
}

/* ---- what the stages take (search_internal.h) ------------------------------------------------- */

int search_start_build(search_state *st) {
    if (st->cfg.start_layers == 0) return 0;
    const int n = st->L * st->H;
    if (!(st->start = malloc((size_t)n))) return -1;
    for (int u = 0; u < n; u++)
        st->start[u] = search_start_swa(&st->cfg, u / st->H, u % st->H) ? ATTN_SWA : ATTN_FULL;
    search_pins_apply(st, st->start); /* the pins win */
    return 0;
}

uint64_t search_start_layer_bits(const search_state *st, int l, int k, uint64_t fallback) {
    uint64_t b = 0;
    int n = 0;
    for (int h = 0; h < st->H && n < k; h++) /* the start's SWA heads first, lower index first */
        if (st->start[l * st->H + h] == ATTN_SWA) b |= 1ull << h, n++;
    for (int h = 0; h < st->H && n < k; h++) /* then the fallback's (stage 1's choice) */
        if (!(b >> h & 1) && (fallback >> h & 1)) b |= 1ull << h, n++;
    for (int h = 0; h < st->H && n < k; h++)
        if (!(b >> h & 1)) b |= 1ull << h, n++;
    return b;
}

int search_start_cut(search_state *st, uint8_t *z) {
    const int n = st->L * st->H;
    double *imp = malloc(sizeof(double) * (size_t)n);
    if (!imp) return -1;
    /* the start's SWA heads first, then the least important by the head scores; among the start's
       SWA heads, when there are more than the target, the most important stay full */
    for (int u = 0; u < n; u++) {
        const double d = st->head_drop && isfinite(st->head_drop[u]) ? st->head_drop[u] : 0.0;
        imp[u] = (st->start[u] == ATTN_SWA ? -1e6 : 1e6) + d;
    }
    attn_mask m = {st->L, st->H, st->cfg.window, st->cfg.sinks, z};
    const int rc = search_cut_heads_pinned(&st->cfg, imp, &m);
    free(imp);
    return rc;
}
