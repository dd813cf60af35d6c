/* gguf.h — GGUF v2/v3 reader (format spec: ggml/docs/gguf.md in the ggml repository).
 *
 * The whole file is memory-mapped read-only; every count, size and offset is validated in one
 * pass before anything is trusted. Errors name the file, the byte offset and the field, e.g.
 *   "gguf: model.gguf: offset 1032: tensor 'blk.3.attn_q.weight': data runs past end of file".
 *
 * What is rejected: a magic other than "GGUF"; versions other than 2 and 3 (0, 1, unknown, and
 * byte-swapped i.e. big-endian headers); a truncation anywhere; a count that cannot fit in the
 * bytes left (checked before allocating); unknown value or array element types; arrays nested
 * more than 4 deep; bool values other than 0/1; empty keys, keys over 65535 bytes; duplicate keys;
 * general.alignment that is not a u32 power of two; tensor names empty, over 64 bytes or
 * duplicated; n_dims outside 1..4; a zero dimension; an element count over INT64_MAX or a byte
 * size over UINT64_MAX; tensor types quant.h does not support; ne[0] not a multiple of the type's
 * block size; data offsets not a multiple of the alignment; tensor data outside the file or
 * overlapping another tensor's. The data section starts at the end of the tensor infos rounded up
 * to the alignment. Tensors may appear in any order and with gaps between them (the format allows
 * it; files written by gguf-py and llama.cpp are packed in order).
 * Implementation: gguf.c (validation), gguf_get.c (lookups and typed getters).
 */
#ifndef BOSCH_GGUF_H
#define BOSCH_GGUF_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
} gguf_type;

/* A string inside the mapped file: u64 length then bytes, not NUL-terminated. */
typedef struct {
    uint64_t len;
    const char *ptr;
} gguf_str;

/* One metadata key/value. For arrays, `arr_type` is the element type, `arr_n` the count and
 * `arr_data` points at the first element in the mapping (strings: the first u64 length; arrays of
 * arrays: the first nested {u32 type, u64 count, elements}; no getter reads those). Scalars keep
 * arr_n = 0 and arr_data = NULL. */
typedef struct {
    gguf_str key;
    gguf_type type;
    gguf_type arr_type;
    uint64_t arr_n;
    const void *arr_data;
    union {
        uint64_t u64; /* every unsigned type and bool */
        int64_t i64;  /* every signed type */
        double f64;   /* FLOAT32 and FLOAT64 */
        gguf_str str;
    } v;
    uint64_t offset; /* byte offset of the key in the file */
} gguf_kv;

#define GGUF_MAX_DIMS 4

typedef struct {
    gguf_str name;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] = row length (fastest), unused dims = 1 */
    uint32_t type;              /* ggml_type (quant.h) */
    uint64_t offset;            /* relative to the data section */
    uint64_t n_bytes;           /* validated size of the tensor's data */
    const void *data;           /* pointer into the mapping */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    uint32_t version;
    uint64_t alignment; /* general.alignment or 32 */
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t data_offset; /* start of the tensor data section in the file */
    const uint8_t *map;   /* whole file, read-only */
    uint64_t file_size;
} gguf_file;

/* Open and validate `path`. On success returns 0 and sets *out (free with gguf_close); on failure
 * returns -1 and writes a message naming the file, byte offset and field into err[errlen]. */
int gguf_open(gguf_file **out, const char *path, char *err, size_t errlen);

/* Validate an in-memory image (same checks; `buf` must outlive the result; path used in errors). */
int gguf_open_memory(gguf_file **out, const void *buf, size_t size, const char *path, char *err,
                     size_t errlen);

/* Unmap (gguf_open only) and free; NULL is allowed. */
void gguf_close(gguf_file *g);

/* The path of the file whose live gguf_open mapping holds addr, or NULL. For a SIGBUS handler (its
 * si_addr): a mapped file that shrank while in use (truncated, or rewritten in place) makes the
 * next access to a page past its new end a bus error, and the handler can then name the file.
 * Async-signal-safe: it reads a fixed table of at most GGUF_MAX_MAPPINGS mappings (more are not
 * tracked). */
#define GGUF_MAX_MAPPINGS 16
const char *gguf_mapping_path(const void *addr);

/* For a SIGBUS handler: when addr (its si_addr) lies in a live mapping (gguf_mapping_path), writes
 * "bosch: PATH: the model file changed or was truncated while in use (...)" to stderr, prefixed by
 * `lead` (e.g. "\n" or "\r\n"; may be empty), and ends the process with _exit(1); returns
 * otherwise. Async-signal-safe. Used by app/main.c and the explorer's fatal-signal handler. */
void gguf_bus_error_exit(const void *addr, const char *lead);

/* Lookup by key (exact bytes); NULL when absent. Linear in n_kv. */
const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key);

/* Typed getters: 0 on success; -1 (message in err) when the key is missing or has another type.
 * Integer getters accept any integer type (not bool) whose value fits; gguf_get_f32 accepts
 * FLOAT32 and FLOAT64 (rounded to float); gguf_get_bool accepts BOOL only. */
int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out, char *err, size_t errlen);
int gguf_get_f32(const gguf_file *g, const char *key, float *out, char *err, size_t errlen);
int gguf_get_bool(const gguf_file *g, const char *key, int *out, char *err, size_t errlen);
/* Returns a malloc'd NUL-terminated copy. */
int gguf_get_str(const gguf_file *g, const char *key, char **out, char *err, size_t errlen);

/* Array of strings: fills a malloc'd array of gguf_str (pointing into the mapping) and its count.
 * Array getters return a valid malloc'd pointer (free it) even when the count is 0. */
int gguf_get_str_array(const gguf_file *g, const char *key, gguf_str **out, uint64_t *n, char *err,
                       size_t errlen);
/* Array of any integer type, converted to int32 (values must fit). malloc'd. */
int gguf_get_i32_array(const gguf_file *g, const char *key, int32_t **out, uint64_t *n, char *err,
                       size_t errlen);
/* Array of FLOAT32, malloc'd copy. */
int gguf_get_f32_array(const gguf_file *g, const char *key, float **out, uint64_t *n, char *err,
                       size_t errlen);

/* Tensor by name; NULL when absent. Linear in n_tensors. */
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name);

/* Printable name of a metadata type ("u32", "string", ...). */
const char *gguf_type_name(gguf_type t);

#endif
