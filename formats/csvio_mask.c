/* csvio_mask.c — the mask CSV file (docs/design.md §8): save, load and check against a model's shape.
 * One row per (layer, kv_head); the metadata columns (model, n_layer, n_head_kv, window, sinks,
 * ratio) repeat on every row so the file stands alone and stays one plain table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csvio.h"
#include "infile.h"

enum {
    MC_MODEL,
    MC_NLAYER,
    MC_NHEADKV,
    MC_WINDOW,
    MC_SINKS,
    MC_RATIO,
    MC_LAYER,
    MC_KVHEAD,
    MC_QHEADS,
    MC_ATTN,
    MC_N
};
static const char *const mask_cols[MC_N] = {"model", "n_layer", "n_head_kv", "window",  "sinks",
                                            "ratio", "layer",   "kv_head",   "q_heads", "attention"};

/* Upper bounds that keep a hostile file from asking for absurd allocations. */
#define MASK_MAX_LAYERS 4096
#define MASK_MAX_KV_HEADS 1024
/* The model field keeps at most this many bytes of the model's name (cut at a UTF-8 boundary), so
 * that every line the writer makes is within the reader's bound. */
#define MASK_MAX_NAME 1024

/* Bytes of name the model field keeps. */
static size_t model_name_len(const char *name) {
    size_t n = strlen(name);
    if (n <= MASK_MAX_NAME) return n;
    n = MASK_MAX_NAME;
    while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80) n--; /* not inside a UTF-8 sequence */
    return n;
}

int csv_mask_save(const char *path, const attn_mask *m, const char *model_name, int n_head, char *err,
                  size_t errlen) {
    if (!m || !m->z || m->n_layer <= 0 || m->n_head_kv <= 0) {
        snprintf(err, errlen, "%s: cannot save an empty mask", path);
        return -1;
    }
    if (n_head <= 0 || n_head % m->n_head_kv != 0) {
        snprintf(err, errlen, "%s: n_head %d is not a multiple of n_head_kv %d", path, n_head, m->n_head_kv);
        return -1;
    }
    char *name = strndup(model_name ? model_name : "", model_name ? model_name_len(model_name) : 0);
    if (!name) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    csv_out *w = csv_out_open(path, mask_cols, MC_N, err, errlen);
    if (!w) {
        free(name);
        return -1;
    }
    int group = n_head / m->n_head_kv;
    double ratio = mask_ratio(m);
    char nl[16], nh[16], win[16], sk[16], rt[32], ly[16], kh[16];
    char *qh = malloc((size_t)group * 12 + 1);
    if (!qh) {
        free(name);
        csv_out_abort(w);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(nl, sizeof nl, "%d", m->n_layer);
    snprintf(nh, sizeof nh, "%d", m->n_head_kv);
    snprintf(win, sizeof win, "%d", m->window);
    snprintf(sk, sizeof sk, "%d", m->sinks);
    snprintf(rt, sizeof rt, "%.6f", ratio);
    int rc = 0;
    for (int l = 0; l < m->n_layer && rc == 0; l++) {
        for (int h = 0; h < m->n_head_kv && rc == 0; h++) {
            size_t off = 0;
            qh[0] = '\0';
            for (int q = 0; q < group; q++) off += (size_t)sprintf(qh + off, q ? ";%d" : "%d", h * group + q);
            snprintf(ly, sizeof ly, "%d", l);
            snprintf(kh, sizeof kh, "%d", h);
            const char *row[MC_N] = {name, nl, nh, win, sk,
                                     rt,   ly, kh, qh,  mask_get(m, l, h) == ATTN_FULL ? "full" : "swa"};
            rc = csv_out_row(w, row);
        }
    }
    free(qh);
    free(name);
    if (rc) {
        csv_out_abort(w);
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        return -1;
    }
    return csv_out_commit(w, err, errlen);
}

/* Strict integer: the whole cell (after libcsv trimmed blanks) must be a decimal int. */
static int parse_int(const char *s, int *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < INT_MIN || v > INT_MAX) return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* q_heads must list kv_head*group .. kv_head*group+group-1 separated by ';'. Returns the count
 * of listed heads, or -1 when the text is not such a list. */
static int parse_q_heads(const char *s, int first, int *count) {
    int k = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v != first + k) return -1;
        k++;
        p = end;
        while (*p == ' ') p++;
        if (*p == ';') {
            p++;
            while (*p == ' ') p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    if (k == 0) return -1;
    *count = k;
    return 0;
}

typedef struct {
    char *model;
    int n_layer, n_head_kv, window, sinks, group;
    double ratio;
} mask_meta;

/* Check the shape read from the file against the model; list every difference. */
static int check_shape(const char *path, const mask_meta *mm, const model_hparams *hp, char *err,
                       size_t errlen) {
    char buf[512];
    size_t off = 0;
    int n_diff = 0;
    if (mm->n_layer != hp->n_layer) {
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%sn_layer is %d, model has %d",
                                n_diff++ ? "; " : "", mm->n_layer, hp->n_layer);
    }
    if (off < sizeof buf && mm->n_head_kv != hp->n_head_kv) {
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%sn_head_kv is %d, model has %d",
                                n_diff++ ? "; " : "", mm->n_head_kv, hp->n_head_kv);
    }
    if (n_diff) {
        snprintf(err, errlen, "%s: mask does not fit the model: %s", path, buf);
        return -1;
    }
    return 0;
}

/* Query heads per KV head of the model, or 0 when hp gives no usable GQA group. */
static int model_group(const model_hparams *hp) {
    if (!hp || hp->n_head_kv <= 0 || hp->n_head <= 0 || hp->n_head % hp->n_head_kv) return 0;
    return hp->n_head / hp->n_head_kv;
}

int csv_mask_load(const char *path, attn_mask *out, const model_hparams *hp, char *err, size_t errlen) {
    return csv_mask_load_for(path, out, hp, NULL, NULL, 0, err, errlen);
}

/* The longest line a mask file can need: the model name (up to MASK_MAX_NAME bytes, quoted and
 * doubled quotes at worst), the numbers, and q_heads (up to 11 bytes per query head). */
static size_t mask_max_line(int group) {
    return 2 * MASK_MAX_NAME + 256 + 12 * (size_t)(group > 0 ? group : 256);
}

/* The limits of a mask for hp's shape (NULL: the largest shape this reader takes). */
static void mask_limits(const model_hparams *hp, csv_limits *lim, char *why, size_t whylen) {
    int group = model_group(hp);
    long rows = hp && group ? (long)hp->n_layer * hp->n_head_kv : (long)MASK_MAX_LAYERS * MASK_MAX_KV_HEADS;
    if (rows < 1) rows = 1;
    lim->max_line = mask_max_line(group);
    lim->max_rows = (int)rows + 1;
    unsigned long long bytes = (unsigned long long)(rows + 1) * (lim->max_line + 1);
    lim->max_bytes = bytes > (1ull << 30) ? (size_t)1 << 30 : (size_t)bytes;
    if (hp && group)
        snprintf(why, whylen,
                 "a mask for %d layers x %d KV heads has a header and %ld rows of at most %zu bytes",
                 hp->n_layer, hp->n_head_kv, rows, lim->max_line);
    else
        snprintf(why, whylen, "a mask has at most %d x %d rows of at most %zu bytes", MASK_MAX_LAYERS,
                 MASK_MAX_KV_HEADS, lim->max_line);
    lim->why = why;
}

static int mask_from_table(const char *path, csv_table *tp, attn_mask *out, const model_hparams *hp,
                           const char *model_name, char *warn, size_t warnlen, char *err, size_t errlen);

/* A file over the limits may just be a mask of a larger model: when its first rows say so, that is
 * the better message. Reads at most 64 KiB of the head. */
static void better_limit_message(const char *path, const char *buf, size_t n, const model_hparams *hp,
                                 char *err, size_t errlen) {
    if (!hp) return;
    size_t head = n < (1u << 16) ? n : (1u << 16);
    while (head > 0 && buf[head - 1] != '\n') head--;
    csv_table t;
    char e2[512];
    if (head == 0 || csv_parse_memory(path, buf, head, NULL, &t, e2, sizeof e2)) return;
    attn_mask m;
    if (mask_from_table(path, &t, &m, hp, NULL, NULL, 0, e2, sizeof e2) == -2)
        snprintf(err, errlen, "%s", e2);
    if (m.z) mask_free(&m);
}

int csv_mask_parse(const char *path, const char *buf, size_t n, attn_mask *out, const model_hparams *hp,
                   const char *model_name, char *warn, size_t warnlen, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (warn && warnlen) warn[0] = '\0';
    csv_limits lim;
    char why[160];
    mask_limits(hp, &lim, why, sizeof why);
    csv_table t;
    if (csv_parse_memory(path, buf, n, &lim, &t, err, errlen)) {
        better_limit_message(path, buf, n, hp, err, errlen);
        return -1;
    }
    return mask_from_table(path, &t, out, hp, model_name, warn, warnlen, err, errlen) ? -1 : 0;
}

int csv_mask_load_for(const char *path, attn_mask *out, const model_hparams *hp, const char *model_name,
                      char *warn, size_t warnlen, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (warn && warnlen) warn[0] = '\0';
    csv_limits lim;
    char why[160];
    mask_limits(hp, &lim, why, sizeof why);
    csv_table t;
    if (csv_read_limited(path, &lim, &t, err, errlen)) {
        if (hp) { /* over the limits: the head may show a mask of another shape */
            FILE *f = infile_fopen(path, NULL, 0); /* a FIFO: refused above, not waited on here */
            if (f) {
                char *head = malloc(1u << 16);
                size_t got = head ? fread(head, 1, 1u << 16, f) : 0;
                fclose(f);
                if (head) better_limit_message(path, head, got, hp, err, errlen);
                free(head);
            }
        }
        return -1;
    }
    return mask_from_table(path, &t, out, hp, model_name, warn, warnlen, err, errlen) ? -1 : 0;
}

/* A mask table being read: the file, its columns, the first row's metadata, the rows seen. */
typedef struct {
    const char *path;
    const csv_table *t;
    const model_hparams *hp;
    int col[MC_N];
    mask_meta mm;
    int *seen; /* [n_layer][n_head_kv] line of the row that set it, 0 = not yet */
    attn_mask *out;
    int n_swa;
    char *err;
    size_t errlen;
} mask_reader;

/* Set the reader's message and return -1. */
#define RFAIL(...)                                                                                           \
    do {                                                                                                     \
        snprintf(rd->err, rd->errlen, __VA_ARGS__);                                                          \
        return -1;                                                                                           \
    } while (0)

/* Every column of mask_cols, once, in the header row. 0 or -1. */
static int read_header(mask_reader *rd) {
    const csv_table *t = rd->t;
    for (int c = 0; c < MC_N; c++) {
        rd->col[c] = csv_table_column(t, mask_cols[c]);
        if (rd->col[c] < 0)
            RFAIL("%s: line %d: header has no '%s' column (a mask file has columns "
                  "model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention)",
                  rd->path, t->line[0], mask_cols[c]);
        for (int d = rd->col[c] + 1; d < t->n_cols[0]; d++)
            if (!strcmp(t->cells[0][d], mask_cols[c]))
                RFAIL("%s: line %d: header names column '%s' twice", rd->path, t->line[0], mask_cols[c]);
    }
    if (t->n_rows < 2) RFAIL("%s: no mask rows after the header", rd->path);
    return 0;
}

/* The metadata fields of row r (model, n_layer, n_head_kv, window, sinks, ratio) into *rm. 0 or -1. */
static int read_row_meta(mask_reader *rd, int r, mask_meta *rm) {
    const csv_table *t = rd->t;
    int line = t->line[r];
    char **cell = t->cells[r];
    if (t->n_cols[r] > t->n_cols[0])
        RFAIL("%s: line %d: row has %d fields, the header has %d", rd->path, line, t->n_cols[r],
              t->n_cols[0]);
    for (int c = 0; c < MC_N; c++)
        if (rd->col[c] >= t->n_cols[r])
            RFAIL("%s: line %d: row has %d fields, field '%s' (column %d) is missing", rd->path, line,
                  t->n_cols[r], mask_cols[c], rd->col[c] + 1);
    memset(rm, 0, sizeof *rm);
    rm->model = cell[rd->col[MC_MODEL]];
    const int ic[] = {MC_NLAYER, MC_NHEADKV, MC_WINDOW, MC_SINKS};
    int *iv[] = {&rm->n_layer, &rm->n_head_kv, &rm->window, &rm->sinks};
    for (int k = 0; k < 4; k++)
        if (parse_int(cell[rd->col[ic[k]]], iv[k]))
            RFAIL("%s: line %d: field '%s': '%s' is not an integer", rd->path, line, mask_cols[ic[k]],
                  cell[rd->col[ic[k]]]);
    if (parse_double(cell[rd->col[MC_RATIO]], &rm->ratio) || rm->ratio < 0 || rm->ratio > 1)
        RFAIL("%s: line %d: field 'ratio': '%s' is not a number in [0,1]", rd->path, line,
              cell[rd->col[MC_RATIO]]);
    return 0;
}

/* The first row's metadata: ranges, the model's shape, then the mask and the seen table allocated.
 * 0, -1, or -2 when the shape does not fit the model. */
static int take_first_meta(mask_reader *rd, const mask_meta *rm) {
    int line = rd->t->line[1];
    const model_hparams *hp = rd->hp;
    if (rm->n_layer < 1 || rm->n_layer > MASK_MAX_LAYERS)
        RFAIL("%s: line %d: field 'n_layer': %d is out of range 1..%d", rd->path, line, rm->n_layer,
              MASK_MAX_LAYERS);
    if (rm->n_head_kv < 1 || rm->n_head_kv > MASK_MAX_KV_HEADS)
        RFAIL("%s: line %d: field 'n_head_kv': %d is out of range 1..%d", rd->path, line, rm->n_head_kv,
              MASK_MAX_KV_HEADS);
    if (rm->window < 1)
        RFAIL("%s: line %d: field 'window': %d must be at least 1 token", rd->path, line, rm->window);
    if (rm->sinks < 0) RFAIL("%s: line %d: field 'sinks': %d must be 0 or more", rd->path, line, rm->sinks);
    rd->mm = *rm;
    if (hp) {
        if (check_shape(rd->path, &rd->mm, hp, rd->err, rd->errlen)) return -2;
        if (hp->n_ctx_train > 0 && rm->sinks > hp->n_ctx_train)
            RFAIL("%s: line %d: field 'sinks': %d is more than the model's context length %d (sink "
                  "tokens are the first positions of the context)",
                  rd->path, line, rm->sinks, hp->n_ctx_train);
        rd->mm.group = model_group(hp); /* the model's GQA group, not one guessed from the file */
    }
    if (mask_init(rd->out, rm->n_layer, rm->n_head_kv, rm->window, rm->sinks, ATTN_FULL))
        RFAIL("%s: out of memory", rd->path);
    rd->seen = calloc((size_t)rm->n_layer * rm->n_head_kv, sizeof *rd->seen);
    if (!rd->seen) RFAIL("%s: out of memory", rd->path);
    return 0;
}

/* A later row's metadata must equal the first row's. 0 or -1 naming the field and both values. */
static int same_meta(mask_reader *rd, int r, const mask_meta *rm) {
    const mask_meta *mm = &rd->mm;
    const char *what = NULL;
    char a[64], b[64];
    const char *names[] = {"n_layer", "n_head_kv", "window", "sinks"};
    const int av[] = {rm->n_layer, rm->n_head_kv, rm->window, rm->sinks};
    const int bv[] = {mm->n_layer, mm->n_head_kv, mm->window, mm->sinks};
    if (strcmp(rm->model, mm->model)) {
        what = "model";
        snprintf(a, sizeof a, "%.60s", rm->model);
        snprintf(b, sizeof b, "%.60s", mm->model);
    }
    for (int k = 0; k < 4 && !what; k++)
        if (av[k] != bv[k]) {
            what = names[k];
            snprintf(a, sizeof a, "%d", av[k]);
            snprintf(b, sizeof b, "%d", bv[k]);
        }
    if (!what && fabs(rm->ratio - mm->ratio) > 1e-9) {
        what = "ratio";
        snprintf(a, sizeof a, "%s", rd->t->cells[r][rd->col[MC_RATIO]]);
        snprintf(b, sizeof b, "%s", rd->t->cells[1][rd->col[MC_RATIO]]);
    }
    if (what)
        RFAIL(
            "%s: line %d: field '%s': '%s' differs from '%s' on line %d (metadata must be the same on every "
            "row)",
            rd->path, rd->t->line[r], what, a, b, rd->t->line[1]);
    return 0;
}

/* Field q_heads of kv_head kvh: the query heads of its GQA group ("0;1;2"); without a model the
 * group size is fixed by the first row (its q_heads start at kv_head * group). 0 or -1. */
static int check_q_heads(mask_reader *rd, int line, const char *qh, int kvh) {
    mask_meta *mm = &rd->mm;
    int group = 0;
    for (int g = 1; g <= 256 && !mm->group; g++)
        if (parse_q_heads(qh, kvh * g, &group) == 0 && group == g) mm->group = g;
    if (!mm->group)
        RFAIL("%s: line %d: field 'q_heads': '%s' is not the query heads of kv_head %d (e.g. \"0;1;2\")",
              rd->path, line, qh, kvh);
    if (parse_q_heads(qh, kvh * mm->group, &group) == 0 && group == mm->group) return 0;
    char want[128];
    size_t o = 0;
    for (int q = 0; q < mm->group && o < sizeof want - 12; q++)
        o += (size_t)snprintf(want + o, sizeof want - o, q ? ";%d" : "%d", kvh * mm->group + q);
    if (model_group(rd->hp))
        RFAIL("%s: line %d: field 'q_heads': '%s' should be '%s' (the GQA group of kv_head %d: the "
              "model has %d query heads for %d KV heads)",
              rd->path, line, qh, want, kvh, rd->hp->n_head, rd->hp->n_head_kv);
    RFAIL("%s: line %d: field 'q_heads': '%s' should be '%s' (the GQA group of kv_head %d)", rd->path, line,
          qh, want, kvh);
}

/* Row r's cell: layer, kv_head (in range, not seen before), q_heads, attention; set in the mask. */
static int read_row_cell(mask_reader *rd, int r) {
    int line = rd->t->line[r];
    char **cell = rd->t->cells[r];
    const mask_meta *mm = &rd->mm;
    int layer, kvh;
    if (parse_int(cell[rd->col[MC_LAYER]], &layer))
        RFAIL("%s: line %d: field 'layer': '%s' is not an integer", rd->path, line, cell[rd->col[MC_LAYER]]);
    if (parse_int(cell[rd->col[MC_KVHEAD]], &kvh))
        RFAIL("%s: line %d: field 'kv_head': '%s' is not an integer", rd->path, line,
              cell[rd->col[MC_KVHEAD]]);
    if (layer < 0 || layer >= mm->n_layer)
        RFAIL("%s: line %d: field 'layer': %d is out of range 0..%d", rd->path, line, layer, mm->n_layer - 1);
    if (kvh < 0 || kvh >= mm->n_head_kv)
        RFAIL("%s: line %d: field 'kv_head': %d is out of range 0..%d", rd->path, line, kvh,
              mm->n_head_kv - 1);
    size_t idx = (size_t)layer * mm->n_head_kv + kvh;
    if (rd->seen[idx])
        RFAIL("%s: line %d: duplicate row for layer %d, kv_head %d (first on line %d)", rd->path, line, layer,
              kvh, rd->seen[idx]);
    rd->seen[idx] = line;
    if (check_q_heads(rd, line, cell[rd->col[MC_QHEADS]], kvh)) return -1;
    const char *at = cell[rd->col[MC_ATTN]];
    uint8_t v;
    if (!strcasecmp(at, "full"))
        v = ATTN_FULL;
    else if (!strcasecmp(at, "swa"))
        v = ATTN_SWA;
    else
        RFAIL("%s: line %d: field 'attention': '%s' is neither 'full' nor 'swa'", rd->path, line, at);
    mask_set(rd->out, layer, kvh, v);
    rd->n_swa += v == ATTN_SWA;
    return 0;
}

/* After the rows: every (layer, kv_head) present, and the ratio column true to the cells. */
static int check_complete(mask_reader *rd) {
    const mask_meta *mm = &rd->mm;
    int n_units = mm->n_layer * mm->n_head_kv, n_rows = rd->t->n_rows - 1;
    if (n_rows != n_units)
        for (int l = 0; l < mm->n_layer; l++)
            for (int h = 0; h < mm->n_head_kv; h++)
                if (!rd->seen[(size_t)l * mm->n_head_kv + h])
                    RFAIL("%s: %d rows for %d layers x %d KV heads; missing the row for layer %d, kv_head %d",
                          rd->path, n_rows, mm->n_layer, mm->n_head_kv, l, h);
    double ratio = (double)rd->n_swa / n_units;
    if (fabs(ratio - mm->ratio) > 0.5e-4) /* the file has 6 decimals; allow hand-typed 4 */
        RFAIL("%s: field 'ratio' says %g but %d of %d KV heads are swa (ratio %.6f); fix the ratio column",
              rd->path, mm->ratio, rd->n_swa, n_units, ratio);
    return 0;
}

/* Check and convert the table (freed here). 0; -1 with a message; -2 when the shape does not fit hp. */
static int mask_from_table(const char *path, csv_table *tp, attn_mask *out, const model_hparams *hp,
                           const char *model_name, char *warn, size_t warnlen, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    mask_reader rd = {.path = path, .t = tp, .hp = hp, .out = out, .err = err, .errlen = errlen};
    int rc = read_header(&rd);
    for (int r = 1; r < tp->n_rows && rc == 0; r++) {
        mask_meta rm;
        rc = read_row_meta(&rd, r, &rm);
        if (rc == 0) rc = r == 1 ? take_first_meta(&rd, &rm) : same_meta(&rd, r, &rm);
        if (rc == 0) rc = read_row_cell(&rd, r);
    }
    if (rc == 0) rc = check_complete(&rd);
    /* The shape fits: a mask moved between quantizations of one model is fine, but say so. */
    const mask_meta *mm = &rd.mm;
    if (rc == 0 && model_name && warn && warnlen && mm->model[0] &&
        (strlen(mm->model) != model_name_len(model_name) ||
         strncmp(mm->model, model_name, strlen(mm->model))))
        snprintf(
            warn, warnlen,
            "%s: field 'model': the mask is for '%.100s', the loaded model is '%.100s' (loaded anyway: %s)",
            path, mm->model, model_name, hp ? "the shape matches" : "no shape given to check");
    free(rd.seen);
    if (rc) {
        mask_free(out);
        memset(out, 0, sizeof *out);
    }
    csv_table_free(tp);
    return rc;
}
