/* csvio.c — CSV reading and writing through libcsv (see csvio.h, docs/design.md §8).
 * Writing: fields are quoted by libcsv's csv_fwrite only when they need it (a comma, a quote, a
 * line break or leading/trailing blanks); separators and newlines are ours. Rows go to a temporary
 * file beside the target, PATH.tmp.<pid>.XXXXXX (tmpfiles.h), which is flushed, fsync'ed and renamed
 * over it on commit; opening removes the temporary files of PATH that a killed writer left behind.
 * A PATH that is a directory is refused at open, before any row is computed.
 * Reading: the file is fed to csv_parse one physical line at a time so every row knows the line it
 * starts on; csv_parse's consumed byte count and csv_fini (strict mode) detect malformed quoting.
 */
#define _GNU_SOURCE
#include "csvio.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"
#include "outpath.h"
#include "tmpfiles.h"

#define CSV_MAX_FILE_BYTES ((size_t)1 << 30) /* refuse to read CSV files over 1 GiB */

struct csv_out {
    FILE *f;      /* the temporary file, or for a stream the memory buffer (buf, n_buf) */
    char *path;   /* the name given */
    char *target; /* the file renamed over: path with symlinks followed (outpath.h); NULL: a stream */
    char *tmp;    /* TARGET.tmp.<pid>.XXXXXX; NULL: a stream */
    char *buf;    /* a stream's rows until the commit writes them to standard output */
    size_t n_buf;
    int n_cols;
    int failed_errno; /* first write error (0: none) */
    long rows;
};

/* ---------------------------------------------------------------- writing */

static int field_needs_quotes(const char *s) {
    size_t n = strlen(s);
    if (n == 0) return 0;
    if (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t') return 1;
    return strpbrk(s, ",\"\r\n") != NULL;
}

static int write_fields(csv_out *w, const char *const *fields) {
    for (int i = 0; i < w->n_cols; i++) {
        const char *s = fields[i] ? fields[i] : "";
        if (i > 0 && fputc(',', w->f) == EOF) return -1;
        if (field_needs_quotes(s)) {
            if (csv_fwrite(w->f, s, strlen(s)) != 0) return -1;
        } else if (fputs(s, w->f) == EOF) {
            return -1;
        }
    }
    if (fputc('\n', w->f) == EOF) return -1;
    return 0;
}

/* Resolve path (outpath.h: a directory, device, FIFO or socket is refused; a symlink is followed;
 * "-" and "/dev/stdout" are a stream) before anything is written, and remove the target's stale
 * temporary files. 0 or -1 with a message. */
static int check_target(const char *path, outpath *o, char *err, size_t errlen) {
    if (outpath_resolve(path, o, err, errlen)) return -1;
    if (!o->stream) tmpfile_remove_stale(o->target);
    return 0;
}

/* The end of a stream: n bytes to standard output, flushed. 0 or -1 with a message. */
static int stream_out(const char *path, const void *data, size_t n, char *err, size_t errlen) {
    if ((n && fwrite(data, 1, n, stdout) != n) || fflush(stdout) != 0) {
        snprintf(err, errlen, "%s: writing to standard output: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void csv_out_free(csv_out *w) {
    free(w->tmp);
    free(w->target);
    free(w->path);
    free(w->buf);
    free(w);
}

csv_out *csv_out_open(const char *path, const char *const *header, int n_cols, char *err, size_t errlen) {
    if (!path || !*path || !header || n_cols <= 0) {
        snprintf(err, errlen, "csv: bad arguments to csv_out_open (path '%s', %d columns)",
                 path ? path : "(null)", n_cols);
        return NULL;
    }
    outpath o;
    if (check_target(path, &o, err, errlen)) return NULL;
    csv_out *w = calloc(1, sizeof *w);
    if (!w) {
        outpath_free(&o);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->n_cols = n_cols;
    w->target = o.target;
    w->path = strdup(path);
    if (!w->path || (w->target && !(w->tmp = tmpfile_template(w->target)))) goto oom;
    if (!w->target) { /* a stream: rows collect in memory, the commit writes them out whole */
        if (!(w->f = open_memstream(&w->buf, &w->n_buf))) goto oom;
    } else {
        int fd = mkstemp(w->tmp);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create temporary file %s: %s", path, w->tmp, strerror(errno));
            csv_out_free(w);
            return NULL;
        }
        /* mkstemp makes the file 0600; give it the mode a plain fopen would (0666 minus the umask). */
        mode_t um = umask(0);
        umask(um);
        (void)fchmod(fd, 0666 & ~um);
        w->f = fdopen(fd, "w");
        if (!w->f) {
            snprintf(err, errlen, "%s: fdopen: %s", w->tmp, strerror(errno));
            close(fd);
            unlink(w->tmp);
            csv_out_free(w);
            return NULL;
        }
    }
    if (write_fields(w, header)) {
        snprintf(err, errlen, "%s: writing the header row: %s", w->tmp ? w->tmp : path, strerror(errno));
        csv_out_abort(w);
        return NULL;
    }
    return w;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    csv_out_free(w);
    return NULL;
}

int csv_out_row(csv_out *w, const char *const *fields) {
    if (!w) return -1;
    if (w->failed_errno) return -1;
    if (write_fields(w, fields)) {
        w->failed_errno = errno ? errno : EIO;
        return -1;
    }
    w->rows++;
    return 0;
}

int csv_out_rowf(csv_out *w, const char *fmt, ...) {
    if (!w) return -1;
    if (w->failed_errno) return -1;
    char *buf = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->failed_errno = ENOMEM;
        return -1;
    }
    const char **fields = calloc((size_t)w->n_cols, sizeof *fields);
    if (!fields) {
        free(buf);
        w->failed_errno = ENOMEM;
        return -1;
    }
    int k = 0;
    char *p = buf;
    for (;;) {
        char *sep = strchr(p, '\x1f');
        if (k < w->n_cols) fields[k] = p;
        k++;
        if (!sep) break;
        *sep = '\0';
        p = sep + 1;
    }
    int rc = -1;
    if (k != w->n_cols) {
        w->failed_errno = EINVAL; /* wrong number of fields: reported at commit */
    } else {
        rc = csv_out_row(w, fields);
    }
    free(fields);
    free(buf);
    return rc;
}

static void fsync_parent_dir(const char *path) {
    char *copy = strdup(path);
    if (!copy) return;
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(copy);
}

int csv_out_commit(csv_out *w, char *err, size_t errlen) {
    if (!w) {
        snprintf(err, errlen, "csv: commit of a file that failed to open");
        return -1;
    }
    if (w->failed_errno) {
        snprintf(err, errlen, "%s: writing row %ld failed: %s%s", w->path, w->rows + 1,
                 strerror(w->failed_errno), w->failed_errno == EINVAL ? " (wrong number of fields)" : "");
        csv_out_abort(w);
        return -1;
    }
    if (!w->target) { /* a stream */
        FILE *f = w->f;
        w->f = NULL;
        int rc = fclose(f) != 0 ? -1 : 0;
        if (rc)
            snprintf(err, errlen, "%s: out of memory", w->path);
        else
            rc = stream_out(w->path, w->buf, w->n_buf, err, errlen);
        csv_out_free(w);
        return rc;
    }
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) {
        snprintf(err, errlen, "%s: flushing %s: %s", w->path, w->tmp, strerror(errno));
        csv_out_abort(w);
        return -1;
    }
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: closing %s: %s", w->path, w->tmp, strerror(errno));
        csv_out_abort(w);
        return -1;
    }
    if (rename(w->tmp, w->target) != 0) {
        snprintf(err, errlen, "%s: rename from %s: %s", w->path, w->tmp, strerror(errno));
        csv_out_abort(w);
        return -1;
    }
    fsync_parent_dir(w->target);
    csv_out_free(w);
    return 0;
}

void csv_out_abort(csv_out *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    if (w->tmp) unlink(w->tmp);
    csv_out_free(w);
}

const char *csv_cell_real(char *buf, size_t cap, double x, int decimals) {
    if (!isfinite(x))
        buf[0] = '\0';
    else
        snprintf(buf, cap, "%.*f", decimals, x);
    return buf;
}

const char *csv_cell_count(char *buf, size_t cap, long k) {
    if (k < 0)
        buf[0] = '\0';
    else
        snprintf(buf, cap, "%ld", k);
    return buf;
}

int csv_write_text(const char *path, const char *text, char *err, size_t errlen) {
    return csv_write_bytes(path, text, strlen(text), err, errlen);
}

int csv_write_bytes(const char *path, const void *data, size_t n, char *err, size_t errlen) {
    const char *bytes = data;
    if (!path || !*path) {
        snprintf(err, errlen, "(null): no path");
        return -1;
    }
    outpath o;
    if (check_target(path, &o, err, errlen)) return -1;
    if (o.stream) return stream_out(path, data, n, err, errlen);
    char *tmp = tmpfile_template(o.target);
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        outpath_free(&o);
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create temporary file %s: %s", path, tmp, strerror(errno));
        free(tmp);
        outpath_free(&o);
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, 0666 & ~um);
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, bytes + done, n - done);
        if (k <= 0) break;
        done += (size_t)k;
    }
    int ok = done == n && fsync(fd) == 0;
    ok &= close(fd) == 0;
    if (!ok || rename(tmp, o.target) != 0) {
        snprintf(err, errlen, "%s: writing %s: %s", path, tmp, strerror(errno));
        unlink(tmp);
        free(tmp);
        outpath_free(&o);
        return -1;
    }
    fsync_parent_dir(o.target);
    free(tmp);
    outpath_free(&o);
    return 0;
}

/* ---------------------------------------------------------------- reading */

typedef struct {
    csv_table *t;
    char **row; /* fields of the row being parsed */
    int n_row, cap_row;
    int cap_rows;
    int line;      /* physical line being fed (1-based) */
    int row_start; /* line the current row started on; 0 = no field yet */
    int oom;
} read_state;

static void on_field(void *data, size_t len, void *st_) {
    read_state *st = st_;
    if (st->oom) return;
    if (st->row_start == 0) st->row_start = st->line;
    if (st->n_row == st->cap_row) {
        int cap = st->cap_row ? st->cap_row * 2 : 16;
        char **r = realloc(st->row, (size_t)cap * sizeof *r);
        if (!r) {
            st->oom = 1;
            return;
        }
        st->row = r;
        st->cap_row = cap;
    }
    char *s = malloc(len + 1);
    if (!s) {
        st->oom = 1;
        return;
    }
    if (len) memcpy(s, data, len);
    s[len] = '\0';
    st->row[st->n_row++] = s;
}

static void on_row(int term, void *st_) {
    (void)term;
    read_state *st = st_;
    if (st->oom) return;
    csv_table *t = st->t;
    if (t->n_rows == st->cap_rows) {
        int cap = st->cap_rows ? st->cap_rows * 2 : 64;
        int *nc = realloc(t->n_cols, (size_t)cap * sizeof *nc);
        if (nc) t->n_cols = nc;
        char ***cells = realloc(t->cells, (size_t)cap * sizeof *cells);
        if (cells) t->cells = cells;
        int *ln = realloc(t->line, (size_t)cap * sizeof *ln);
        if (ln) t->line = ln;
        if (!nc || !cells || !ln) {
            st->oom = 1;
            return;
        }
        st->cap_rows = cap;
    }
    char **cells = malloc((size_t)(st->n_row ? st->n_row : 1) * sizeof *cells);
    if (!cells) {
        st->oom = 1;
        return;
    }
    if (st->n_row) memcpy(cells, st->row, (size_t)st->n_row * sizeof *cells);
    t->cells[t->n_rows] = cells;
    t->n_cols[t->n_rows] = st->n_row;
    t->line[t->n_rows] = st->row_start ? st->row_start : st->line;
    t->n_rows++;
    st->n_row = 0;
    st->row_start = 0;
}

static void free_pending(read_state *st) {
    for (int i = 0; i < st->n_row; i++) free(st->row[i]);
    free(st->row);
    st->row = NULL;
    st->n_row = 0;
}

/* Read the whole file, refusing one over max_bytes before reading it all (a regular file's size
 * is known up front; a pipe is read up to max_bytes + 1). */
static int read_whole_file(const char *path, size_t max_bytes, const char *why, char **out, size_t *n_out,
                           char *err, size_t errlen) {
    FILE *f = infile_fopen(path, err, errlen); /* a FIFO is refused, not waited on (infile.h) */
    if (!f) {
        if (errno == EISDIR) snprintf(err, errlen, "%s: is a directory, not a CSV file", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a CSV file", path);
        fclose(f);
        return -1;
    }
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max_bytes) {
        snprintf(err, errlen, "%s: %lld bytes, more than the %zu a CSV file of this kind can have (%s)", path,
                 (long long)sb.st_size, max_bytes, why);
        fclose(f);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (n > max_bytes) {
                snprintf(err, errlen, "%s: more than the %zu bytes a CSV file of this kind can have (%s)",
                         path, max_bytes, why);
                free(buf);
                fclose(f);
                return -1;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) break;
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(f);
        return -1;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    if (n > max_bytes) {
        snprintf(err, errlen, "%s: more than the %zu bytes a CSV file of this kind can have (%s)", path,
                 max_bytes, why);
        free(buf);
        return -1;
    }
    *out = buf;
    *n_out = n;
    return 0;
}

static const char *limits_why(const csv_limits *lim) {
    return lim && lim->why ? lim->why : "not a CSV file this program wrote";
}

int csv_parse_memory(const char *path, const char *buf, size_t n, const csv_limits *lim, csv_table *t,
                     char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : CSV_MAX_FILE_BYTES;
    if (n > max_bytes) {
        snprintf(err, errlen, "%s: %zu bytes, more than the %zu a CSV file of this kind can have (%s)", path,
                 n, max_bytes, limits_why(lim));
        return -1;
    }
    size_t pos = 0;
    if (n >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        pos = 3; /* UTF-8 byte-order mark */
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        snprintf(err, errlen, "%s: csv_init failed", path);
        return -1;
    }
    read_state st = {.t = t, .line = 1};
    int rc = 0;
    while (pos < n) {
        const char *nl = memchr(buf + pos, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - (buf + pos)) + 1 : n - pos;
        if (lim && lim->max_line && len - (nl != NULL) > lim->max_line) {
            snprintf(err, errlen, "%s: line %d: longer than %zu bytes (%s)", path, st.line, lim->max_line,
                     limits_why(lim));
            rc = -1;
            break;
        }
        size_t used = csv_parse(&p, buf + pos, len, on_field, on_row, &st);
        if (st.oom) {
            snprintf(err, errlen, "%s: line %d: out of memory", path, st.line);
            rc = -1;
            break;
        }
        if (used != len) {
            int e = csv_error(&p);
            snprintf(err, errlen, "%s: line %d, byte %zu of the line: %s%s", path, st.line, used + 1,
                     e == CSV_EPARSE ? "malformed quoting (a quote inside an unquoted field, or text after a "
                                       "closing quote)"
                                     : csv_strerror(e),
                     "");
            rc = -1;
            break;
        }
        if (lim && lim->max_rows && t->n_rows > lim->max_rows) {
            snprintf(err, errlen, "%s: line %d: more than %d rows (%s)", path, t->line[t->n_rows - 1],
                     lim->max_rows, limits_why(lim));
            rc = -1;
            break;
        }
        pos += len;
        if (nl) st.line++;
    }
    if (rc == 0) {
        int start = st.row_start ? st.row_start : st.line;
        if (csv_fini(&p, on_field, on_row, &st) != 0) {
            snprintf(err, errlen, "%s: line %d: unterminated quoted field (missing closing quote)", path,
                     start);
            rc = -1;
        } else if (st.oom) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
        } else if (lim && lim->max_rows && t->n_rows > lim->max_rows) {
            snprintf(err, errlen, "%s: line %d: more than %d rows (%s)", path, t->line[t->n_rows - 1],
                     lim->max_rows, limits_why(lim));
            rc = -1;
        }
    }
    csv_free(&p);
    free_pending(&st);
    if (rc == 0 && t->n_rows == 0) {
        snprintf(err, errlen, "%s: empty file (no header row)", path);
        rc = -1;
    }
    if (rc) csv_table_free(t);
    return rc;
}

int csv_read_limited(const char *path, const csv_limits *lim, csv_table *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    char *buf = NULL;
    size_t n = 0;
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : CSV_MAX_FILE_BYTES;
    if (read_whole_file(path, max_bytes, limits_why(lim), &buf, &n, err, errlen)) return -1;
    int rc = csv_parse_memory(path, buf, n, lim, t, err, errlen);
    free(buf);
    return rc;
}

int csv_read(const char *path, csv_table *t, char *err, size_t errlen) {
    return csv_read_limited(path, NULL, t, err, errlen);
}

void csv_table_free(csv_table *t) {
    if (!t) return;
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols[r]; c++) free(t->cells[r][c]);
        free(t->cells[r]);
    }
    free(t->cells);
    free(t->n_cols);
    free(t->line);
    memset(t, 0, sizeof *t);
}

int csv_table_column(const csv_table *t, const char *name) {
    if (!t || t->n_rows < 1) return -1;
    for (int c = 0; c < t->n_cols[0]; c++)
        if (!strcmp(t->cells[0][c], name)) return c;
    return -1;
}
