/* search_confirm_obj.c — the confirmation phase's objective and its log key (search_confirm.c
 * runs the phase; search_eval.c scores a finalist through search_confirm_objective): the one
 * search_set_confirm gave, or the one the search builds from the model over the split
 * search_confirm_generate makes. */
#include <stdlib.h>

#include "search_internal.h"

uint64_t search_confirm_hash(uint64_t h) {
    return h ^ 0x636f6e6669726d21ull; /* "confirm!" */
}

void search_set_confirm(search_state *st, const search_objective *obj) {
    st->confirm_ext = obj;
}

void search_set_confirm_env(search_state *st, const backend *be, const atomic_int *cancel) {
    st->confirm_be = be;
    st->confirm_cancel = cancel;
    if (st->have_confirm_own) search_objective_set_cancel(&st->confirm_own, cancel);
}

const search_objective *search_confirm_objective(search_state *st, int *failed, char *err, size_t errlen) {
    *failed = 0;
    if (st->confirm_ext) return st->confirm_ext;
    if (st->have_confirm_own) return &st->confirm_own;
    if (!st->mdl) return NULL;
    if (search_confirm_generate(&st->confirm_cs, st->mdl, &st->cfg, err, errlen) ||
        search_objective_calib_on(&st->confirm_own, st->mdl, st->confirm_be, st->confirm_cs, err, errlen)) {
        calib_set_free(st->confirm_cs);
        st->confirm_cs = NULL;
        *failed = 1;
        return NULL;
    }
    st->have_confirm_own = 1;
    if (st->confirm_cancel) search_objective_set_cancel(&st->confirm_own, st->confirm_cancel);
    return &st->confirm_own;
}

void search_confirm_free(search_state *st) {
    if (st->have_confirm_own) search_objective_free(&st->confirm_own);
    calib_set_free(st->confirm_cs);
    for (int i = 0; i < SEARCH_FINALISTS_MAX; i++) free(st->fin_p[i]);
    free(st->fin);
}
