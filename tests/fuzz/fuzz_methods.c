/* fuzz_methods.c — a stand-in method registry for fuzz_explorer. tui/cmdline.c reads the registry
 * (search_methods.h: `:pin METHOD` takes a baseline's name and names the valid ones), but the real
 * table (search/method_table.c) points at every method's code, and so at the whole engine, which
 * this clang-only target does not build. One row of each kind, with the real names; the table's
 * function pointers are never called by the command line. */
#include "search_methods.h"

const search_method_info search_method_table[] = {
    {.name = "bosch", .kind = SEARCH_KIND_SEARCH, .level = SEARCH_LEVEL_HEAD, .help = "the search"},
    {.name = "bme", .kind = SEARCH_KIND_LAYER_HEURISTIC, .level = SEARCH_LEVEL_LAYER,
     .help = "a layer heuristic"},
    {.name = "fisher", .kind = SEARCH_KIND_HEAD_RANKING, .level = SEARCH_LEVEL_HEAD,
     .probes = SEARCH_PROBES_NONE, .help = "a static head ranking"},
};
const int search_method_table_n = (int)(sizeof search_method_table / sizeof search_method_table[0]);
