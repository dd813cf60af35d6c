/* compare_cache.c — the comparison's persistent memo (format in compare_cache.h). */
#include "compare_cache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rng.h"
#include "infile.h"

static uint64_t mix(uint64_t x) {
    return rng_splitmix64(&x);
}

uint64_t cache_cell_key(const char *cell, uint64_t mask_hash) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = cell; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = mix(h ^ mix(mask_hash));
    return h ? h : 1;
}

/* ---- the two hash tables (open addressing, key 0 = empty) ---------------------------------- */

static int grow_calib(compare_cache *c) {
    long cap = c->calib_cap ? 2 * c->calib_cap : 1024;
    cache_calib *t = calloc((size_t)cap, sizeof *t);
    if (!t) return -1;
    for (long i = 0; i < c->calib_cap; i++)
        if (c->calib[i].hash) {
            long j = (long)(mix(c->calib[i].hash) & (uint64_t)(cap - 1));
            while (t[j].hash) j = (j + 1) & (cap - 1);
            t[j] = c->calib[i];
        }
    free(c->calib);
    c->calib = t, c->calib_cap = cap;
    return 0;
}

static long calib_slot(const compare_cache *c, uint64_t h) {
    long j = (long)(mix(h) & (uint64_t)(c->calib_cap - 1));
    while (c->calib[j].hash && c->calib[j].hash != h) j = (j + 1) & (c->calib_cap - 1);
    return j;
}

static int grow_cells(compare_cache *c) {
    long cap = c->cells_cap ? 2 * c->cells_cap : 1024;
    cache_cell *t = calloc((size_t)cap, sizeof *t);
    if (!t) return -1;
    for (long i = 0; i < c->cells_cap; i++)
        if (c->cells[i].key) {
            long j = (long)(c->cells[i].key & (uint64_t)(cap - 1));
            while (t[j].key) j = (j + 1) & (cap - 1);
            t[j] = c->cells[i];
        }
    free(c->cells);
    c->cells = t, c->cells_cap = cap;
    return 0;
}

static long cell_slot(const compare_cache *c, uint64_t key) {
    long j = (long)(key & (uint64_t)(c->cells_cap - 1));
    while (c->cells[j].key && c->cells[j].key != key) j = (j + 1) & (c->cells_cap - 1);
    return j;
}

/* Insert without writing to the file. 0 or -1 (OOM). */
static int add_calib(compare_cache *c, uint64_t hash, const search_eval *e) {
    if (2 * (c->calib_n + 1) > c->calib_cap && grow_calib(c)) return -1;
    if (!hash) return 0; /* 0 marks an empty slot: such an entry is not kept (a miss, scored again) */
    long j = calib_slot(c, hash);
    if (c->calib[j].hash) return 0; /* already there */
    cache_calib *x = &c->calib[j];
    x->nll = NULL;
    if (e->n_samples > 0 && e->sample_nll) {
        x->nll = malloc(sizeof(double) * (size_t)e->n_samples);
        if (!x->nll) return -1;
        memcpy(x->nll, e->sample_nll, sizeof(double) * (size_t)e->n_samples);
    }
    x->hash = hash;
    x->e = *e;
    x->e.sample_nll = x->nll;
    x->e.n_samples = x->nll ? e->n_samples : 0;
    c->calib_n++;
    return 0;
}

static int add_cell(compare_cache *c, uint64_t key, int n, const uint8_t *exact, const double *p) {
    if (2 * (c->cells_n + 1) > c->cells_cap && grow_cells(c)) return -1;
    if (!key) return 0; /* 0 marks an empty slot, as in add_calib */
    long j = cell_slot(c, key);
    if (c->cells[j].key) return 0;
    cache_cell *x = &c->cells[j];
    x->exact = malloc((size_t)n);
    x->p = malloc(sizeof(double) * (size_t)n);
    if (!x->exact || !x->p) {
        free(x->exact), free(x->p);
        x->exact = NULL, x->p = NULL;
        return -1;
    }
    memcpy(x->exact, exact, (size_t)n);
    memcpy(x->p, p, sizeof(double) * (size_t)n);
    x->key = key;
    x->n = n;
    c->cells_n++;
    return 0;
}

/* ---- file ------------------------------------------------------------------------------------ */

/* Parse one record line; 0 ok, 1 malformed (ignored: a truncated last line), -1 OOM. */
static int parse_line(compare_cache *c, char *line) {
    char *s = line, *e;
    if (line[0] == 'C' && line[1] == ' ') {
        s += 2;
        uint64_t h = strtoull(s, &e, 16);
        if (e == s) return 1;
        search_eval ev = {0};
        ev.score = strtod(s = e, &e);
        ev.accuracy = strtod(s = e, &e);
        ev.nll = strtod(s = e, &e);
        long n = strtol(s = e, &e, 10);
        if (e == s || n < 0 || n > CACHE_MAX_SAMPLES) return 1;
        double *nll = n ? malloc(sizeof(double) * (size_t)n) : NULL;
        if (n && !nll) return -1;
        for (long i = 0; i < n; i++) {
            nll[i] = strtod(s = e, &e);
            if (e == s) {
                free(nll);
                return 1;
            }
        }
        if (*e != '\n') { /* a record is whole only with its newline (a killed run cuts the last one) */
            free(nll);
            return 1;
        }
        ev.n_samples = (int)n, ev.sample_nll = nll;
        int rc = add_calib(c, h, &ev);
        free(nll);
        return rc;
    }
    if (line[0] == 'E' && line[1] == ' ') {
        s += 2;
        char cell[256];
        int used = 0;
        if (sscanf(s, "%255s%n", cell, &used) != 1) return 1;
        s += used;
        uint64_t h = strtoull(s, &e, 16);
        if (e == s) return 1;
        long n = strtol(s = e, &e, 10);
        if (e == s || n < 1 || n > CACHE_MAX_SAMPLES) return 1;
        while (*e == ' ') e++;
        uint8_t *bits = malloc((size_t)n);
        double *p = malloc(sizeof(double) * (size_t)n);
        int ok = bits && p;
        for (long i = 0; ok && i < n; i++) {
            if (e[i] != '0' && e[i] != '1')
                ok = 0;
            else
                bits[i] = (uint8_t)(e[i] == '1');
        }
        if (ok) e += n;
        for (long i = 0; ok && i < n; i++) {
            p[i] = strtod(s = e, &e);
            if (e == s) ok = 0;
        }
        if (ok && *e != '\n') ok = 0;
        int rc = ok ? add_cell(c, cache_cell_key(cell, h), (int)n, bits, p) : (bits && p ? 1 : -1);
        free(bits), free(p);
        return rc;
    }
    return 1;
}

/* Read one line of at most max bytes (newline included) into *line. Returns its length, 0 at the
 * end of the file, or -1 when the line is longer than max (nothing past max is kept in memory). */
static long read_line_bounded(FILE *r, char **line, size_t *cap, size_t max) {
    size_t n = 0;
    for (;;) {
        if (n + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 4096;
            if (nc > max + 2) nc = max + 2;
            char *b = realloc(*line, nc);
            if (!b) return -2;
            *line = b, *cap = nc;
        }
        int ch = getc(r);
        if (ch == EOF) break;
        if (n == max) return -1;
        (*line)[n++] = (char)ch;
        if (ch == '\n') break;
    }
    if (*line) (*line)[n] = '\0';
    return (long)n;
}

int cache_load_stream(compare_cache *c, FILE *r, uint64_t fingerprint, long *whole_out, char *err,
                      size_t errlen) {
    if ((!c->calib_cap && grow_calib(c)) || (!c->cells_cap && grow_cells(c))) {
        snprintf(err, errlen, "%s: out of memory loading the cache", c->path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long len = read_line_bounded(r, &line, &cap, 256);
    unsigned long long fp = 0;
    if (len == -2) goto oom;
    if (len <= 0 || sscanf(line, "bosch-compare-cache 1 %llx", &fp) != 1) {
        snprintf(err, errlen, "%s: line 1: not a comparison cache (bosch-compare-cache 1)", c->path);
        free(line);
        return -1;
    }
    if (fp != fingerprint) {
        snprintf(err, errlen,
                 "%s: this folder holds a comparison with other settings (plan or model fingerprint "
                 "%016llx, this run %016llx); use another --out folder, or the same settings to resume",
                 c->path, fp, (unsigned long long)fingerprint);
        free(line);
        return -1;
    }
    long whole = (long)len; /* bytes up to the last newline: a cut last record leaves the file */
    long pos = whole, lineno = 1;
    while ((len = read_line_bounded(r, &line, &cap, CACHE_MAX_LINE)) > 0) {
        lineno++;
        pos += len;
        if (line[len - 1] == '\n') whole = pos;
        if (parse_line(c, line) < 0) goto oom;
    }
    if (len == -2) goto oom;
    if (len == -1) {
        snprintf(err, errlen,
                 "%s: line %ld: longer than %ld bytes (a record holds at most %d samples); not a cache this "
                 "program wrote",
                 c->path, lineno + 1, (long)CACHE_MAX_LINE, CACHE_MAX_SAMPLES);
        free(line);
        return -1;
    }
    free(line);
    *whole_out = whole;
    return 0;
oom:
    free(line);
    snprintf(err, errlen, "%s: out of memory loading the cache", c->path);
    return -1;
}

int cache_open(compare_cache *c, const char *dir, uint64_t fingerprint, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s/cache.tsv", dir);
    if (grow_calib(c) || grow_cells(c)) goto oom;
    FILE *r = infile_fopen(c->path, err, errlen); /* a FIFO is refused, not waited on (infile.h) */
    if (!r && errno != ENOENT) {
        if (errno == EISDIR) snprintf(err, errlen, "%s: is a directory, not a comparison cache", c->path);
        cache_close(c);
        return -1;
    }
    struct stat sb;
    if (r && fstat(fileno(r), &sb) == 0 && (S_ISDIR(sb.st_mode) || sb.st_size > CACHE_MAX_BYTES)) {
        if (S_ISDIR(sb.st_mode))
            snprintf(err, errlen, "%s: is a directory, not a comparison cache", c->path);
        else
            snprintf(err, errlen, "%s: %lld bytes, more than the %lld a comparison cache can have", c->path,
                     (long long)sb.st_size, (long long)CACHE_MAX_BYTES);
        fclose(r);
        cache_close(c);
        return -1;
    }
    if (r && fgetc(r) == EOF) { /* empty: killed before its first line was flushed; start again */
        fclose(r);
        r = NULL;
    } else if (r) {
        rewind(r);
    }
    if (r) {
        long whole = 0;
        int rc = cache_load_stream(c, r, fingerprint, &whole, err, errlen);
        fclose(r);
        if (rc) {
            cache_close(c);
            return -1;
        }
        if (truncate(c->path, whole) != 0) {
            snprintf(err, errlen, "%s: cannot cut its incomplete last line: %s", c->path, strerror(errno));
            cache_close(c);
            return -1;
        }
        c->f = fopen(c->path, "a");
    } else {
        c->f = fopen(c->path, "w");
        if (c->f) fprintf(c->f, "bosch-compare-cache 1 %016llx\n", (unsigned long long)fingerprint);
    }
    if (!c->f || fflush(c->f)) {
        snprintf(err, errlen, "%s: cannot write: %s", c->path, strerror(errno));
        cache_close(c);
        return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory loading the cache", c->path);
    cache_close(c);
    return -1;
}

void cache_close(compare_cache *c) {
    if (c->f) fclose(c->f);
    for (long i = 0; i < c->calib_cap; i++) free(c->calib[i].nll);
    for (long i = 0; i < c->cells_cap; i++) free(c->cells[i].exact), free(c->cells[i].p);
    free(c->calib);
    free(c->cells);
    memset(c, 0, sizeof *c);
}

const cache_calib *cache_get_calib(const compare_cache *c, uint64_t hash) {
    long j = calib_slot(c, hash);
    return c->calib[j].hash ? &c->calib[j] : NULL;
}

static int io_fail(compare_cache *c, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: write failed: %s", c->path, strerror(errno));
    return -1;
}

int cache_put_calib(compare_cache *c, uint64_t hash, const search_eval *e, char *err, size_t errlen) {
    if (add_calib(c, hash, e)) {
        snprintf(err, errlen, "compare: out of memory for the cache");
        return -1;
    }
    fprintf(c->f, "C %016" PRIx64 " %.17g %.17g %.17g %d", hash, e->score, e->accuracy, e->nll,
            e->sample_nll ? e->n_samples : 0);
    for (int i = 0; e->sample_nll && i < e->n_samples; i++) fprintf(c->f, " %.17g", e->sample_nll[i]);
    fputc('\n', c->f);
    return fflush(c->f) ? io_fail(c, err, errlen) : 0;
}

const cache_cell *cache_get_cell(const compare_cache *c, const char *cell, uint64_t mask_hash) {
    long j = cell_slot(c, cache_cell_key(cell, mask_hash));
    return c->cells[j].key ? &c->cells[j] : NULL;
}

int cache_put_cell(compare_cache *c, const char *cell, uint64_t mask_hash, int n, const uint8_t *exact,
                   const double *p, char *err, size_t errlen) {
    if (add_cell(c, cache_cell_key(cell, mask_hash), n, exact, p)) {
        snprintf(err, errlen, "compare: out of memory for the cache");
        return -1;
    }
    fprintf(c->f, "E %s %016" PRIx64 " %d ", cell, mask_hash, n);
    for (int i = 0; i < n; i++) fputc(exact[i] ? '1' : '0', c->f);
    for (int i = 0; i < n; i++) fprintf(c->f, " %.17g", p[i]);
    fputc('\n', c->f);
    return fflush(c->f) ? io_fail(c, err, errlen) : 0;
}
