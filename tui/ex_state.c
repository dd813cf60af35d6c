/* ex_state.c — ex_mask helpers (ex_state.h), shared by the worker and the UI thread. */
#include "ex_state.h"

#include <string.h>

#include "search_methods.h"

int ex_mask_from(ex_mask *dst, const attn_mask *src) {
    if (src->n_layer > EX_MAX_LAYERS || src->n_head_kv > EX_MAX_KV || src->n_layer < 0 || src->n_head_kv < 0)
        return -1;
    dst->n_layer = src->n_layer;
    dst->n_head_kv = src->n_head_kv;
    dst->window = src->window;
    dst->sinks = src->sinks;
    memcpy(dst->z, src->z, (size_t)src->n_layer * src->n_head_kv);
    return 0;
}

void ex_mask_view(ex_mask *m, attn_mask *out) {
    out->n_layer = m->n_layer;
    out->n_head_kv = m->n_head_kv;
    out->window = m->window;
    out->sinks = m->sinks;
    out->z = m->z;
}

int ex_mask_count_swa(const ex_mask *m) {
    int n = 0;
    for (int i = 0; i < m->n_layer * m->n_head_kv; i++) n += m->z[i] == ATTN_SWA;
    return n;
}

/* Row of static ranking k: the k-th head ranking in the registry's picker order, or -1. */
static int rank_row(int k) {
    for (int i = 0, r, n = 0; (r = search_method_pick(i)) >= 0; i++)
        if (search_method_row(r)->kind == SEARCH_KIND_HEAD_RANKING && n++ == k) return r;
    return -1;
}

int ex_n_ranks(void) {
    int n = 0;
    while (n < EX_RANKS && rank_row(n) >= 0) n++;
    return n;
}

const char *ex_rank_name(int k) {
    return k >= 0 && k < ex_n_ranks() ? search_method_row(rank_row(k))->name : "?";
}

int ex_n_heat(void) {
    int n = 0;
    while (n < EX_RANKS && search_method_of_kind(SEARCH_KIND_HEAD_RANKING, n) >= 0) n++;
    return n;
}

const char *ex_heat_name(int k) {
    return k >= 0 && k < ex_n_heat()
               ? search_method_row(search_method_of_kind(SEARCH_KIND_HEAD_RANKING, k))->name
               : "?";
}

int ex_heat_rank(int k) {
    const char *name = ex_heat_name(k);
    for (int j = 0; j < ex_n_ranks(); j++)
        if (!strcmp(ex_rank_name(j), name)) return j;
    return -1;
}
