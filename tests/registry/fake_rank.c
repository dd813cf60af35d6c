/* fake_rank.c — a static head ranking that exists only in the test build test_method_registry_fake
 * (tests/CMakeLists.txt): the "new file" of the registry's recipe (search/search_methods.h). Its
 * importance is the increase of the mean answer NLL when the KV head alone goes SWA. */
#include "search_methods.h"

double test_rank_fake(const search_rank_input *in, const search_eval *e) {
    return e->nll - in->nll_full;
}
