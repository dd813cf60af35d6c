/* compare_cache.h — the comparison's persistent memo (compare.h: DIR/cache.tsv), internal to
 * compare/. Text, one record per line, appended and flushed as each evaluation finishes:
 *   bosch-compare-cache 1 FINGERPRINT                        (first line; hex)
 *   C HASH SCORE ACCURACY NLL N NLL_1 .. NLL_N                (a calibration evaluation; a round of a
 *                                                              race under the mask hash mixed with the
 *                                                              round, compare.c part_key)
 *   E CELL HASH N BITS P_1 .. P_N                             (a mask on a validation/held-out cell:
 *                                                              BITS = N characters 0/1, exact match)
 * HASH = mask_hash as 16 hex digits, CELL = the cell's key (compare.c), doubles as %.17g (exact).
 * A truncated last line (a killed run) is ignored.
 */
#ifndef BOSCH_COMPARE_CACHE_H
#define BOSCH_COMPARE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "search.h"

typedef struct {
    uint64_t hash;
    search_eval e; /* e.sample_nll points at nll */
    double *nll;
} cache_calib;

typedef struct {
    uint64_t key; /* hash of (cell key, mask hash) */
    int n;
    uint8_t *exact; /* [n] */
    double *p;      /* [n] answer probability (geometric mean over answer tokens) */
} cache_cell;

typedef struct {
    char path[4096];
    FILE *f; /* append handle */
    cache_calib *calib;
    long calib_cap, calib_n;
    cache_cell *cells;
    long cells_cap, cells_n;
    long calib_hits, calib_misses, cell_hits, cell_misses;
    long part_misses; /* rounds of a race computed (compare.c memo_part: "C" records of a derived key) */
} compare_cache;

/* Open DIR/cache.tsv: load it when it exists (its fingerprint must equal `fingerprint`, else -1
 * naming the file), else create it with the fingerprint line. 0 or -1 with a message. */
int cache_open(compare_cache *c, const char *dir, uint64_t fingerprint, char *err, size_t errlen);
/* Bounds of a cache file: a record holds at most CACHE_MAX_SAMPLES samples, so a line is at most
 * CACHE_MAX_LINE bytes; the file at most CACHE_MAX_BYTES (checked before reading). */
#define CACHE_MAX_SAMPLES 1000000
#define CACHE_MAX_LINE (30L << 20)
#define CACHE_MAX_BYTES (1LL << 30)
/* The reading half of cache_open: parse the file's lines from r into c (c->path names it in
 * messages; c zeroed or as cache_open leaves it; free with cache_close). *whole = bytes up to the last
 * complete line. 0, or -1 with a message (not a cache, other fingerprint, a line over the bound,
 * out of memory). Used by the fuzz target on an in-memory stream. */
int cache_load_stream(compare_cache *c, FILE *r, uint64_t fingerprint, long *whole, char *err, size_t errlen);
/* Close the append handle and free everything (the file stays). */
void cache_close(compare_cache *c);

/* The calibration evaluation of the mask with this hash, or NULL (callers count hits). The
 * pointer lives until the next put or cache_close. */
const cache_calib *cache_get_calib(const compare_cache *c, uint64_t hash);
/* Remember and append a calibration evaluation. 0 or -1 (I/O or OOM, message). */
int cache_put_calib(compare_cache *c, uint64_t hash, const search_eval *e, char *err, size_t errlen);

/* The lookup key of (cell key, mask hash): FNV-1a of the cell key mixed with the mask hash; never 0. */
uint64_t cache_cell_key(const char *cell, uint64_t mask_hash);
/* A mask's per-sample scores on one cell, or NULL (pointer valid as above). */
const cache_cell *cache_get_cell(const compare_cache *c, const char *cell, uint64_t mask_hash);
/* Remember and append a mask's n per-sample results on a cell (exact[n] 0/1, p[n] answer
 * probability). 0 or -1 (I/O or OOM, message naming the file). */
int cache_put_cell(compare_cache *c, const char *cell, uint64_t mask_hash, int n, const uint8_t *exact,
                   const double *p, char *err, size_t errlen);

#endif
