/* csvio.h — the CSV mechanics every file of the program uses (docs/design.md §8), through libcsv, and
 * the mask file (csvio_mask.c). The other files have a writer each beside it: trace.h, layers.h,
 * results.h, bench.h. Writes go to a temporary file in the same folder, then fsync + rename, so an
 * interrupted export never leaves a half-written file. Errors name the file, the line and the field.
 */
#ifndef BOSCH_CSVIO_H
#define BOSCH_CSVIO_H

#include <stddef.h>

#include "mask.h"
#include "model.h"

/* A CSV file being written: rows go to PATH.tmp.<pid>.XXXXXX (tmpfiles.h); csv_out_commit renames it
 * to PATH. */
typedef struct csv_out csv_out;

/* Open for writing and write the header row (n_cols names). NULL with a message on failure. */
csv_out *csv_out_open(const char *path, const char *const *header, int n_cols, char *err, size_t errlen);
/* Write one row of n_cols fields (quoted by libcsv as needed). 0 or -1. */
int csv_out_row(csv_out *w, const char *const *fields);
/* printf-style convenience: fields separated by '\x1f' in fmt's output. */
int csv_out_rowf(csv_out *w, const char *fmt, ...);
/* Flush, fsync, rename into place, free. 0 or -1 with a message. */
int csv_out_commit(csv_out *w, char *err, size_t errlen);
/* Remove the temporary file and free. */
void csv_out_abort(csv_out *w);

/* Cells of numbers, into buf[cap] (returned): x with `decimals` decimals ("%.*f"), or "" when x is
 * not finite; k in decimal, or "" when k is negative (not known). */
const char *csv_cell_real(char *buf, size_t cap, double x, int decimals);
const char *csv_cell_count(char *buf, size_t cap, long k);

/* Write a whole text file atomically (the same temporary file, fsync and rename as csv_out).
 * 0, or -1 with a message naming the file. */
int csv_write_text(const char *path, const char *text, char *err, size_t errlen);
/* The same for n bytes of any content (a PNG image: plots/). 0, or -1 with a message naming the file. */
int csv_write_bytes(const char *path, const void *data, size_t n, char *err, size_t errlen);

/* Read a whole CSV file: rows[n_rows][n_cols[row]] of malloc'd strings (row 0 = header).
 * Blank lines are skipped; a UTF-8 byte-order mark is ignored; quoting is strict (RFC 4180).
 * Returns 0, or -1 naming the file and line (e.g. "t.csv: line 3: unterminated quoted field").
 * Free with csv_table_free. */
typedef struct {
    int n_rows;
    int *n_cols;
    char ***cells;
    int *line; /* [n_rows] physical line (1-based) where each row starts, for error messages */
} csv_table;
int csv_read(const char *path, csv_table *t, char *err, size_t errlen);
/* Bounds for a file the user gives, checked before it is read whole: max_bytes (0: 1 GiB; a
 * regular file's size is checked before reading), max_rows (rows counting the header; 0: no
 * limit), max_line (bytes of one physical line without its newline; 0: no limit); why says where
 * the limits come from, for the message (e.g. "a mask for 30 layers x 3 KV heads has 91 rows").
 * Past a limit: -1 with e.g. "m.csv: line 93: more than 91 rows (...)". */
typedef struct {
    size_t max_bytes;
    int max_rows;
    size_t max_line;
    const char *why;
} csv_limits;
/* csv_read with limits (lim NULL: the defaults above). */
int csv_read_limited(const char *path, const csv_limits *lim, csv_table *t, char *err, size_t errlen);
/* csv_read_limited on buf[0..n) already in memory; path only names it in messages. */
int csv_parse_memory(const char *path, const char *buf, size_t n, const csv_limits *lim, csv_table *t,
                     char *err, size_t errlen);
void csv_table_free(csv_table *t);
/* Index of the header column called `name`, or -1. */
int csv_table_column(const csv_table *t, const char *name);

/* Mask file: columns model,n_layer,n_head_kv,window,sinks,ratio,layer,kv_head,q_heads,attention
 * (one row per KV head, rows in layer then kv_head order; attention is "full" or "swa"; q_heads
 * lists the GQA group, e.g. "0;1;2"; ratio = SWA KV heads / all KV heads, written with 6 decimals).
 * n_head is the number of query heads (for q_heads); a multiple of m->n_head_kv. 0 or -1. */
int csv_mask_save(const char *path, const attn_mask *m, const char *model_name, int n_head, char *err,
                  size_t errlen);
/* Load a mask file into *out (allocated here; free with mask_free). Columns are found by header
 * name (any order; extra columns ignored). Checks: every cell parses; model/n_layer/n_head_kv/
 * window/sinks/ratio are the same on every row; layer and kv_head are in range; each
 * (layer,kv_head) appears exactly once; attention is full or swa; q_heads is the GQA group of the
 * KV head (with hp: the model's group); ratio agrees with the rows. When hp is non-NULL the shape
 * must match it (checked on the first row); the error names what differs (e.g. "mask.csv: n_head_kv
 * is 4, model has 3"). 0, or -1 with the file, line and
 * field in err. */
int csv_mask_load(const char *path, attn_mask *out, const model_hparams *hp, char *err, size_t errlen);
/* csv_mask_load that also compares the file's model field with model_name (the loaded model's
 * name; NULL: no comparison). The shape decides (hp): a file naming another model whose shape
 * matches loads (masks move between quantizations of one model), and warn[warnlen] gets e.g.
 * "m.csv: field 'model': the mask is for 'A', the loaded model is 'B' (loaded anyway: the shape
 * matches)" for the caller to show; otherwise (same name, or an empty model field) warn[0] = '\0'.
 * A shape that differs is an error as in csv_mask_load. 0, or -1 with a message in err. */
int csv_mask_load_for(const char *path, attn_mask *out, const model_hparams *hp, const char *model_name,
                      char *warn, size_t warnlen, char *err, size_t errlen);
/* csv_mask_load_for on buf[0..n) in memory (path names it in messages; used by the fuzz target).
 *
 * Bounds (both): with hp the file may hold a header and hp->n_layer x hp->n_head_kv rows, each line
 * at most ~2.3 KiB + 12 bytes per query head of a KV head; a regular file over those bytes is
 * refused before it is read (e.g. "big.csv: 209715200 bytes, more than the 214032 a CSV file of
 * this kind can have (a mask for 30 layers x 3 KV heads has a header and 90 rows ...)"). With hp
 * the GQA group of q_heads is the model's n_head / n_head_kv, and sinks above hp->n_ctx_train are
 * refused naming the value and the context length. */
int csv_mask_parse(const char *path, const char *buf, size_t n, attn_mask *out, const model_hparams *hp,
                   const char *model_name, char *warn, size_t warnlen, char *err, size_t errlen);

#endif
