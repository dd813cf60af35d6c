/* fuzz_compare.c — libFuzzer target for the files a resumed `bosch compare` and the explorer's
 * comparison view read back: DIR/cache.tsv (compare/compare_cache.c, cache_load_stream) and
 * DIR/results.csv (compare/compare_folder.c, compare_folder_rows_memory, through formats/csvio.c).
 *
 * Every input is given to both readers (the seeds hold one of each). The cache is read with the
 * fingerprint of the seed tests/fixtures/compare_cache.tsv; what it accepts is looked up again so
 * that a table corrupted by a bad record shows up. Build and run: see tests/fuzz/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/compare.h"
#include "compare/compare_cache.h"

#define SEED_FINGERPRINT 0x0123456789abcdefull

static volatile double sink;

static void fuzz_cache(const uint8_t *data, size_t size) {
    if (size == 0) return; /* fmemopen refuses a zero-sized buffer */
    FILE *r = fmemopen((void *)data, size, "r");
    if (!r) return;
    compare_cache c;
    memset(&c, 0, sizeof c);
    snprintf(c.path, sizeof c.path, "fuzz/cache.tsv");
    char err[512];
    long whole = -1;
    if (cache_load_stream(&c, r, SEED_FINGERPRINT, &whole, err, sizeof err) == 0) {
        if (whole < 0 || (size_t)whole > size) abort();
        for (long i = 0; i < c.calib_cap; i++) {
            const cache_calib *x = &c.calib[i];
            if (!x->hash) continue;
            if (cache_get_calib(&c, x->hash) != x) abort();
            for (int k = 0; k < x->e.n_samples; k++) sink += x->e.sample_nll[k];
        }
        for (long i = 0; i < c.cells_cap; i++) {
            const cache_cell *x = &c.cells[i];
            if (!x->key) continue;
            if (x->n < 1) abort();
            for (int k = 0; k < x->n; k++) {
                if (x->exact[k] > 1) abort();
                sink += x->p[k];
            }
        }
    }
    fclose(r);
    cache_close(&c);
}

static void fuzz_results(const uint8_t *data, size_t size) {
    compare_row rows[COMPARE_MAX_METHODS];
    int n = 0;
    double used = 0;
    char err[512];
    if (compare_folder_rows_memory("fuzz", (const char *)data, size, 0.5, rows, COMPARE_MAX_METHODS, &n,
                                   &used, err, sizeof err) == 0) {
        if (n < 1 || n > COMPARE_MAX_METHODS) abort();
        for (int i = 0; i < n; i++) {
            if (!memchr(rows[i].method, '\0', sizeof rows[i].method)) abort();
            if (!memchr(rows[i].mask_path, '\0', sizeof rows[i].mask_path)) abort();
            sink += rows[i].accuracy + rows[i].score + (double)rows[i].n;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_cache(data, size);
    fuzz_results(data, size);
    return 0;
}
