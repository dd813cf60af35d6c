/* fuzz_state.c — libFuzzer target for the search state reader (search/search_state.c).
 *
 * Feeds each input through fmemopen to search_state_parse, the reader that `bosch search --resume`
 * uses before replaying (the replay needs a model), and on success walks the parsed log so that a
 * validation gap (a sample count that does not match the NLLs read) shows up as an ASan report.
 * Seeds: tests/fixtures/state_v1.txt and state_v2.txt (copied at configure time). Build and run: see
 * tests/fuzz/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>

#include "search/search_internal.h"

static volatile double sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f) return 0;
    char err[512];
    search_state_file sf;
    if (search_state_parse(f, "fuzz.state", &sf, err, sizeof err) == 0) {
        double acc = sf.cfg.ratio + sf.n_layer + sf.n_head_kv;
        for (long i = 0; i < sf.n_log; i++) {
            const search_log_entry *e = &sf.log[i];
            acc += e->score + (double)e->hash;
            for (int s = 0; s < e->n_samples; s++) acc += e->sample_nll[s];
        }
        sink = acc;
        search_state_file_free(&sf);
    }
    fclose(f);
    return 0;
}
