/* duo.c — DuoAttention's full_attention_heads.tsv and config.json (see duo.h). */
#include "duo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csvio.h"
#include "jsonio.h"
#include "infile.h"

int duo_save(const char *dir, const attn_mask *m, char *err, size_t errlen) {
    char path[4096];
    size_t cap = (size_t)m->n_layer * ((size_t)m->n_head_kv * 2 + 1) + 1;
    char *text = malloc(cap), *p = text;
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", dir);
        return -1;
    }
    for (int l = 0; l < m->n_layer; l++)
        for (int h = 0; h < m->n_head_kv; h++) {
            *p++ = mask_get(m, l, h) == ATTN_FULL ? '1' : '0';
            *p++ = h + 1 < m->n_head_kv ? '\t' : '\n';
        }
    *p = '\0';
    snprintf(path, sizeof path, "%s/%s", dir, DUO_TSV);
    int rc = csv_write_text(path, text, err, errlen);
    free(text);
    if (rc) return -1;
    struct json_object *o = json_object_new_object();
    int built = o && !json_object_object_add(o, "sink_size", json_object_new_int(m->sinks)) &&
                !json_object_object_add(o, "recent_size", json_object_new_int(m->window));
    snprintf(path, sizeof path, "%s/%s", dir, DUO_CONFIG);
    return json_write_put(path, o, built, err, errlen);
}

void duo_pattern_free(duo_pattern *p) {
    if (!p) return;
    free(p->gate);
    p->gate = NULL;
}

/* Append the cells of one TSV line (NUL-terminated, no newline) to p->gate. 0 or -1. */
static int parse_line(const char *tsv, int line, char *s, duo_pattern *p, size_t *cap, char *err,
                      size_t errlen) {
    int col = 0;
    for (char *cell = s;; col++) {
        char *tab = strchr(cell, '\t');
        if (tab) *tab = '\0';
        char *end = NULL;
        errno = 0;
        double v = strtod(cell, &end);
        /* decimal only: strtod also reads hexadecimal ("0x1"), which numpy's savetxt never writes */
        if (end == cell || *end || errno || !isfinite(v) || v < 0 || v > 1 || strpbrk(cell, "xX")) {
            snprintf(err, errlen, "%s: line %d, column %d: bad value '%.40s' (need a number in [0, 1])", tsv,
                     line, col + 1, cell);
            return -1;
        }
        size_t n = (size_t)p->n_layer * (size_t)(p->n_head_kv > 0 ? p->n_head_kv : 0) + (size_t)col;
        if (n >= *cap) {
            double *g = realloc(p->gate, (*cap = *cap * 2 + 64) * sizeof *g);
            if (!g) {
                snprintf(err, errlen, "%s: out of memory", tsv);
                return -1;
            }
            p->gate = g;
        }
        p->gate[n] = v;
        if (!tab) break;
        cell = tab + 1;
    }
    if (p->n_head_kv == 0) p->n_head_kv = col + 1;
    if (col + 1 != p->n_head_kv) {
        snprintf(err, errlen, "%s: line %d: %d columns, line 1 has %d", tsv, line, col + 1, p->n_head_kv);
        return -1;
    }
    p->n_layer++;
    return 0;
}

/* The TSV text in buf (modified) into p's gates. 0 or -1. */
static int parse_tsv(const char *tsv, char *buf, duo_pattern *p, char *err, size_t errlen) {
    size_t cap = 0;
    int line = 0;
    for (char *s = buf; s && *s;) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        line++;
        size_t n = strlen(s);
        if (n && s[n - 1] == '\r') s[--n] = '\0';
        if (n && s[0] != '#' && parse_line(tsv, line, s, p, &cap, err, errlen)) return -1;
        s = nl ? nl + 1 : NULL;
    }
    if (p->n_layer == 0) {
        snprintf(err, errlen, "%s: no rows (need one line per layer)", tsv);
        return -1;
    }
    return 0;
}

/* Read the TSV file whole (at most 64 MiB). NULL with a message. */
static char *read_tsv(const char *tsv, char *err, size_t errlen) {
    FILE *f = infile_fopen(tsv, err, errlen); /* a FIFO is refused, not waited on (infile.h) */
    if (!f) return NULL;
    struct stat sb;
    const long long max = 64ll << 20;
    if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size > max) {
        snprintf(err, errlen, "%s: not a regular file of at most %lld bytes", tsv, max);
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)sb.st_size, f) : 0;
    fclose(f);
    if (!buf || n != (size_t)sb.st_size || memchr(buf, '\0', n)) {
        snprintf(err, errlen, "%s: cannot read it whole (or it holds a NUL byte)", tsv);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Split path into the TSV and config paths. */
static void pattern_paths(const char *path, char *tsv, char *cfg, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(tsv, cap, "%s/%s", path, DUO_TSV);
        snprintf(cfg, cap, "%s/%s", path, DUO_CONFIG);
        return;
    }
    snprintf(tsv, cap, "%s", path);
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 0;
    snprintf(cfg, cap, "%.*s%s%s", dir_len, path, slash ? "/" : "", DUO_CONFIG);
}

static int check_shape(const char *tsv, const duo_pattern *p, const model_hparams *hp, char *err,
                       size_t errlen) {
    if (p->n_layer != hp->n_layer) {
        snprintf(err, errlen, "%s: %d lines (layers), the model has %d", tsv, p->n_layer, hp->n_layer);
        return -1;
    }
    if (p->n_head_kv != hp->n_head_kv) {
        snprintf(err, errlen, "%s: line 1: %d columns (KV heads), the model has %d", tsv, p->n_head_kv,
                 hp->n_head_kv);
        return -1;
    }
    return 0;
}

int duo_parse_tsv(const char *tsv, const char *buf, size_t n, const model_hparams *hp, duo_pattern *out,
                  char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char *copy = memchr(buf, '\0', n) ? NULL : malloc(n + 1);
    if (!copy) {
        snprintf(err, errlen, "%s: holds a NUL byte, or out of memory", tsv);
        return -1;
    }
    memcpy(copy, buf, n);
    copy[n] = '\0';
    int rc = parse_tsv(tsv, copy, out, err, errlen);
    free(copy);
    if (rc == 0 && hp) rc = check_shape(tsv, out, hp, err, errlen);
    if (rc) duo_pattern_free(out);
    return rc;
}

int duo_load(const char *path, const model_hparams *hp, duo_pattern *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char tsv[4096], cfg[4096];
    pattern_paths(path, tsv, cfg, sizeof tsv);
    char *buf = read_tsv(tsv, err, errlen);
    int rc = buf ? parse_tsv(tsv, buf, out, err, errlen) : -1;
    free(buf);
    if (rc == 0 && hp) rc = check_shape(tsv, out, hp, err, errlen);
    struct json_object *o = NULL;
    if (rc == 0) rc = json_read(cfg, 1 << 20, &o, err, errlen);
    if (rc == 0)
        rc = json_get_int(cfg, o, "sink_size", 0, hp ? hp->n_ctx_train : 1 << 30, &out->sink_size, err,
                          errlen);
    if (rc == 0) rc = json_get_int(cfg, o, "recent_size", 1, 1 << 30, &out->recent_size, err, errlen);
    json_object_put(o);
    if (rc) duo_pattern_free(out);
    return rc;
}

int duo_is_binary(const duo_pattern *p) {
    for (size_t i = 0; i < (size_t)p->n_layer * p->n_head_kv; i++)
        if (p->gate[i] != 0.0 && p->gate[i] != 1.0) return 0;
    return 1;
}

int duo_sparsity_count(int n, double sparsity) {
    if (n <= 0 || sparsity <= 0) return 0;
    if (sparsity >= 1) return n;
    double pos = sparsity * (n - 1); /* numpy.quantile's linear position */
    double r = nearbyint(pos);
    return fabs(pos - r) < 1e-9 ? (int)r : (int)ceil(pos);
}

typedef struct {
    double gate;
    int index;
} gate_at;

static int by_gate_then_index(const void *a, const void *b) {
    const gate_at *x = a, *y = b;
    if (x->gate != y->gate) return x->gate < y->gate ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int duo_to_mask(const duo_pattern *p, duo_cut cut, double value, attn_mask *out) {
    if (!isfinite(value) || mask_init(out, p->n_layer, p->n_head_kv, p->recent_size, p->sink_size, ATTN_FULL))
        return -1;
    int n = p->n_layer * p->n_head_kv;
    if (cut == DUO_CUT_THRESHOLD) {
        for (int i = 0; i < n; i++) out->z[i] = p->gate[i] >= value ? ATTN_FULL : ATTN_SWA;
        return 0;
    }
    gate_at *order = malloc(sizeof *order * (size_t)n);
    if (!order) {
        mask_free(out);
        return -1;
    }
    for (int i = 0; i < n; i++) order[i] = (gate_at){p->gate[i], i};
    qsort(order, (size_t)n, sizeof *order, by_gate_then_index);
    for (int k = 0, n_swa = duo_sparsity_count(n, value); k < n_swa; k++) out->z[order[k].index] = ATTN_SWA;
    free(order);
    return 0;
}
