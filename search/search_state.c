/* search_state.c — parse a search state file (format: search_io.c) into its config and evaluation
 * log, without a model or an objective: what search_load replays and what tests/fuzz/fuzz_state.c
 * feeds with arbitrary bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Bounds of a state file: a line of an evaluation holds at most this many per-sample NLLs, a file
 * at most this many evaluations (a search makes a few thousand). */
#define STATE_MAX_SAMPLES (1 << 20)
#define STATE_MAX_EVALS 100000000L
#define STATE_MAX_LINE ((size_t)32 << 20)

static int parse_long(const char *v, long min, long max, long *out) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < min || x > max) return -1;
    *out = x;
    return 0;
}

/* The integer keys of the header: range and where the value goes (an int or a long field of the
 * search_config; n_layer and n_head_kv, the shape, go to the caller's L and H). */
typedef struct {
    const char *key;
    long min, max;
    size_t off; /* offset in search_config; SIZE_MAX: n_layer, SIZE_MAX - 1: n_head_kv */
    int is_long;
} header_int;

#define CFG_INT(key, field, min, max)                                                                        \
    { key, min, max, offsetof(search_config, field), 0 }
#define CFG_LONG(key, field, max)                                                                            \
    { key, 0, max, offsetof(search_config, field), 1 }
static const header_int header_ints[] = {
    CFG_INT("window", window, 1, INT_MAX),
    CFG_INT("sinks", sinks, 0, INT_MAX),
    CFG_LONG("stage1_budget", stage1_budget_per_layer, LONG_MAX),
    CFG_LONG("stage3_budget", stage3_budget_per_group, LONG_MAX),
    CFG_INT("restarts", restarts, 0, INT_MAX),
    CFG_INT("n_buckets", n_buckets, 0, INT_MAX),
    CFG_INT("delta_marginal", delta_marginal, 0, 1),
    CFG_INT("stage1_k_spec", stage1_k_spec, 0, 1),
    CFG_INT("stage2_ranks", stage2_ranks, 0, 1),
    CFG_INT("stage1_independent", stage1_independent, 0, 1),
    CFG_INT("stage1_singles", stage1_singles, 0, 1),
    CFG_INT("stage3_scope", stage3_scope, 0, 1),
    CFG_LONG("refine_budget", refine_budget, LONG_MAX),
    CFG_INT("calib_samples", calib_samples, 0, INT_MAX),
    CFG_INT("calib_tokens", calib_tokens, 0, INT_MAX),
    CFG_INT("calib_mix", calib_mix, 0, 1),
    CFG_INT("calib_tokens2", calib_tokens2, 0, INT_MAX),
    CFG_INT("race", race, 0, 2),
    CFG_INT("confirm_samples", confirm_samples, 0, INT_MAX),
    CFG_INT("confirm_tokens2", confirm_tokens2, 0, INT_MAX),
    {"n_layer", 1, 4096, SIZE_MAX, 0},
    {"n_head_kv", 1, 4096, SIZE_MAX - 1, 0},
};
#undef CFG_INT
#undef CFG_LONG

/* One "key value" header line into c / L / H. 0, or -1 naming the line. */
static int header_kv(const char *k, const char *v, search_config *c, int *L, int *H, const char *path,
                     int line, char *err, size_t errlen) {
    if (!strcmp(k, "method")) {
        char why[256];
        if (search_method_parse(v, &c->method, why, sizeof why) == 0) return 0;
        snprintf(err, errlen, "%s: line %d: %s", path, line, why);
        return -1;
    }
    if (!strcmp(k, "ratio")) {
        char *end = NULL;
        c->ratio = strtod(v, &end);
        if (end == v || *end || !(c->ratio >= 0 && c->ratio <= 1)) {
            snprintf(err, errlen, "%s: line %d: ratio '%s' is not a number in [0, 1]", path, line, v);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "accept_k")) {
        char *end = NULL;
        c->accept_k = strtod(v, &end);
        if (end == v || *end || !(c->accept_k >= 0 && c->accept_k <= 100)) {
            snprintf(err, errlen, "%s: line %d: accept_k '%s' is not a number in [0, 100]", path, line, v);
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "granularity")) {
        char why[256];
        if (search_granularity_parse(v, &c->granularity, why, sizeof why) == 0) return 0;
        snprintf(err, errlen, "%s: line %d: %s", path, line, why);
        return -1;
    }
    if (!strcmp(k, "start")) { /* LAYERSxHEADS:DIGITS, a digit per KV head, 1 full, 0 SWA (search_io.c) */
        int sl = 0, sh = 0, at = 0;
        if (sscanf(v, "%dx%d:%n", &sl, &sh, &at) == 2 && sl > 0 && sh > 0 &&
            (long)sl * sh <= SEARCH_START_MAX && strlen(v + at) == (size_t)sl * sh &&
            strspn(v + at, "01") == (size_t)sl * sh) {
            memset(c->start_swa, 0, sizeof c->start_swa);
            c->start_layers = sl, c->start_heads = sh;
            for (long u = 0; u < (long)sl * sh; u++)
                if (v[at + u] == '0') c->start_swa[u / 8] |= (uint8_t)(1u << (u % 8));
            return 0;
        }
        snprintf(err, errlen, "%s: line %d: start: need LAYERSxHEADS: and a 1 (full) or 0 (SWA) per KV head",
                 path, line);
        return -1;
    }
    if (!strcmp(k, "pin_full") || !strcmp(k, "pin_swa")) {
        char why[256];
        if (search_pins_add_list(c->pins, &c->n_pins, v, k[4] == 's', why, sizeof why) == 0) return 0;
        snprintf(err, errlen, "%s: line %d: %s: %s", path, line, k, why);
        return -1;
    }
    if (!strcmp(k, "preset")) {
        snprintf(c->preset, sizeof c->preset, "%.15s", v);
        return 0;
    }
    if (!strcmp(k, "seed")) {
        char *end = NULL;
        errno = 0;
        c->seed = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-') {
            snprintf(err, errlen, "%s: line %d: seed '%s' is not an unsigned integer", path, line, v);
            return -1;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof header_ints / sizeof header_ints[0]; i++) {
        const header_int *h = &header_ints[i];
        if (strcmp(k, h->key)) continue;
        long x;
        if (parse_long(v, h->min, h->max, &x)) {
            snprintf(err, errlen, "%s: line %d: %s '%s' is not an integer in [%ld, %ld]", path, line, k, v,
                     h->min, h->max);
            return -1;
        }
        if (h->off == SIZE_MAX)
            *L = (int)x;
        else if (h->off == SIZE_MAX - 1)
            *H = (int)x;
        else if (h->is_long)
            *(long *)((char *)c + h->off) = x;
        else
            *(int *)((char *)c + h->off) = (int)x;
        return 0;
    }
    snprintf(err, errlen, "%s: line %d: unknown key '%s'", path, line, k);
    return -1;
}

/* One "eval HASH SCORE ACCURACY NLL SECONDS N NLL_1 .. NLL_N" line (s without its newline) into e.
 * 0, or -1 naming the line and the field. */
static int parse_eval(char *s, search_log_entry *e, const char *path, long line, char *err, size_t errlen) {
    memset(e, 0, sizeof *e);
    char *p = s, *end;
    while (*p == ' ') p++;
    if (strncmp(p, "eval ", 5)) {
        snprintf(err, errlen, "%s: line %ld: expected an 'eval' record", path, line);
        return -1;
    }
    p += 5;
    errno = 0;
    e->hash = strtoull(p, &end, 16);
    if (end == p || *end != ' ' || errno) {
        snprintf(err, errlen, "%s: line %ld: eval record: bad mask hash", path, line);
        return -1;
    }
    p = end;
    double *d[4] = {&e->score, &e->accuracy, &e->nll, &e->seconds};
    static const char *const names[4] = {"score", "accuracy", "nll", "seconds"};
    for (int i = 0; i < 4; i++) {
        *d[i] = strtod(p, &end);
        if (end == p || *end != ' ') {
            snprintf(err, errlen, "%s: line %ld: eval record: bad %s", path, line, names[i]);
            return -1;
        }
        p = end;
    }
    long n = strtol(p, &end, 10);
    if (end == p || (*end && *end != ' ') || n < 0 || n > STATE_MAX_SAMPLES) {
        snprintf(err, errlen, "%s: line %ld: eval record: bad sample count (need 0 to %d)", path, line,
                 STATE_MAX_SAMPLES);
        return -1;
    }
    p = end;
    e->n_samples = (int)n;
    if (n > 0 && !(e->sample_nll = malloc(sizeof(double) * (size_t)n))) {
        snprintf(err, errlen, "%s: line %ld: out of memory", path, line);
        return -1;
    }
    for (long i = 0; i < n; i++) {
        e->sample_nll[i] = strtod(p, &end);
        if (end == p || (*end && *end != ' ')) {
            snprintf(err, errlen, "%s: line %ld: eval record: missing sample NLL %ld of %ld", path, line,
                     i + 1, n);
            free(e->sample_nll);
            e->sample_nll = NULL;
            return -1;
        }
        p = end;
    }
    while (*p == ' ') p++;
    if (*p) {
        snprintf(err, errlen, "%s: line %ld: eval record: unexpected text after %ld sample NLLs", path, line,
                 n);
        free(e->sample_nll);
        e->sample_nll = NULL;
        return -1;
    }
    return 0;
}

/* getline with a length bound: the line's length (with its newline, if any), 0 at EOF, -1 (message)
 * when longer than STATE_MAX_LINE. */
static ssize_t read_line(FILE *f, char **buf, size_t *cap, const char *path, long line, char *err,
                         size_t errlen) {
    ssize_t n = getline(buf, cap, f);
    if (n <= 0) return 0;
    if ((size_t)n > STATE_MAX_LINE) {
        snprintf(err, errlen, "%s: line %ld: longer than %zu bytes", path, line, STATE_MAX_LINE);
        return -1;
    }
    if (memchr(*buf, '\0', (size_t)n)) {
        snprintf(err, errlen, "%s: line %ld: contains a NUL byte", path, line);
        return -1;
    }
    return n;
}

/* The parser's position in the file: the line buffer and the number of the line in it. */
typedef struct {
    FILE *f;
    const char *path;
    char *buf;
    size_t cap;
    long line;
} state_reader;

static ssize_t next_line(state_reader *r, char *err, size_t errlen) {
    r->line++;
    return read_line(r->f, &r->buf, &r->cap, r->path, r->line, err, errlen);
}

/* Line 1: "bosch-search-state 1" or "... 2" into out->version. */
static int parse_magic(state_reader *r, search_state_file *out, char *err, size_t errlen) {
    r->line = 0;
    ssize_t n = next_line(r, err, errlen);
    if (n < 0) return -1;
    if (n > 0 && !strcmp(r->buf, "bosch-search-state 1\n"))
        out->version = 1;
    else if (n > 0 && !strcmp(r->buf, "bosch-search-state 2\n"))
        out->version = 2;
    else {
        snprintf(err, errlen, "%s: line 1: not a search state file (bosch-search-state 1 or 2)", r->path);
        return -1;
    }
    return 0;
}

/* The header: "key value" lines up to n_evals (version 1, *n_evals set) or the line "log"
 * (version 2), every required key present. */
static int parse_header(state_reader *r, search_state_file *out, long *n_evals, char *err, size_t errlen) {
    static const char *const required[] = {"method",    "ratio",         "window",        "sinks",
                                           "seed",      "stage1_budget", "stage3_budget", "restarts",
                                           "n_buckets", "n_layer",       "n_head_kv"};
    enum { N_REQ = sizeof required / sizeof required[0] };
    int seen[N_REQ] = {0};
    for (;;) {
        ssize_t n = next_line(r, err, errlen);
        if (n < 0) return -1;
        if (n == 0 || r->buf[n - 1] != '\n') {
            snprintf(err, errlen, "%s: line %ld: missing '%s' (the header ends there)", r->path, r->line,
                     out->version == 1 ? "n_evals" : "log");
            return -1;
        }
        r->buf[n - 1] = '\0';
        if (out->version == 2 && !strcmp(r->buf, "log")) break;
        /* the pins and the start mask are long lists (search_io.c), every other value is short */
        const int long_value = !strncmp(r->buf, "pin_", 4) || !strncmp(r->buf, "start ", 6);
        char v[16384];
        char k[64], extra[2];
        if (n > (long_value ? (ssize_t)sizeof v : 320) ||
            sscanf(r->buf, "%63s %16383s %1s", k, v, extra) != 2) {
            snprintf(err, errlen, "%s: line %ld: expected 'KEY VALUE'", r->path, r->line);
            return -1;
        }
        for (int i = 0; i < N_REQ; i++)
            if (!strcmp(k, required[i])) seen[i] = 1;
        if (out->version == 1 && !strcmp(k, "n_evals")) {
            if (parse_long(v, 0, STATE_MAX_EVALS, n_evals)) {
                snprintf(err, errlen, "%s: line %ld: bad n_evals '%s' (need 0 to %ld)", r->path, r->line, v,
                         STATE_MAX_EVALS);
                return -1;
            }
            break;
        }
        if (header_kv(k, v, &out->cfg, &out->n_layer, &out->n_head_kv, r->path, (int)r->line, err, errlen))
            return -1;
    }
    for (int i = 0; i < N_REQ; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "%s: missing '%s' before line %ld", r->path, required[i], r->line);
            return -1;
        }
    return 0;
}

/* Room for one more entry in out->log (doubling *cap_log). */
static int grow_log(state_reader *r, search_state_file *out, long *cap_log, char *err, size_t errlen) {
    if (out->n_log >= STATE_MAX_EVALS) {
        snprintf(err, errlen, "%s: line %ld: more than %ld evaluations", r->path, r->line, STATE_MAX_EVALS);
        return -1;
    }
    if (out->n_log < *cap_log) return 0;
    long nc = *cap_log ? 2 * *cap_log : 64;
    search_log_entry *p = realloc(out->log, sizeof *p * (size_t)nc);
    if (!p) {
        snprintf(err, errlen, "%s: line %ld: out of memory", r->path, r->line);
        return -1;
    }
    out->log = p, *cap_log = nc;
    return 0;
}

/* The log: n_evals lines (version 1), or every line to the end (version 2, which drops a last line
 * without its newline: an evaluation appended by a process killed while writing it). */
static int parse_log(state_reader *r, search_state_file *out, long n_evals, char *err, size_t errlen) {
    long cap_log = 0;
    for (;;) {
        if (out->version == 1 && out->n_log == n_evals) break;
        ssize_t n = next_line(r, err, errlen);
        if (n < 0) return -1;
        if (n == 0) {
            if (out->version == 1) {
                snprintf(err, errlen, "%s: line %ld: missing eval record %ld of %ld", r->path, r->line,
                         out->n_log + 1, n_evals);
                return -1;
            }
            break;
        }
        if (r->buf[n - 1] != '\n') {
            if (out->version == 2 && fgetc(r->f) == EOF) {
                out->dropped_line = r->line;
                break;
            }
        } else {
            r->buf[--n] = '\0';
        }
        if (grow_log(r, out, &cap_log, err, errlen)) return -1;
        if (parse_eval(r->buf, &out->log[out->n_log], r->path, r->line, err, errlen)) return -1;
        out->n_log++;
    }
    return 0;
}

int search_state_parse(FILE *f, const char *path, search_state_file *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    search_config *c = &out->cfg;
    search_config_default(c);
    /* a key a file does not have means the behaviour before it existed: the paper's options */
    search_config_paper_options(c);
    c->calib_mix = 0;
    c->race = 0, c->accept_k = 0; /* before racing and the noise-aware acceptance */
    state_reader r = {f, path, NULL, 0, 0};
    long n_evals = -1;
    int rc = parse_magic(&r, out, err, errlen);
    if (!rc) rc = parse_header(&r, out, &n_evals, err, errlen);
    if (!rc) rc = parse_log(&r, out, n_evals, err, errlen);
    free(r.buf);
    if (rc) search_state_file_free(out);
    return rc;
}

void search_state_file_free(search_state_file *s) {
    for (long i = 0; s->log && i < s->n_log; i++) free(s->log[i].sample_nll);
    free(s->log);
    s->log = NULL;
    s->n_log = 0;
}
