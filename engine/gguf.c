/* gguf.c — GGUF v2/v3 reader: one validating pass over a read-only image (format: see gguf.h).
 *
 * Layout (all little-endian): magic "GGUF", u32 version, u64 tensor_count, u64 kv_count,
 * kv_count × {string key, u32 type, value}, tensor_count × {string name, u32 n_dims,
 * n_dims × u64 ne, u32 ggml_type, u64 offset}, padding to `alignment`, tensor data.
 * A string is a u64 length then that many bytes (no NUL). An array value is u32 element type,
 * u64 count, then the elements (arrays of arrays are accepted up to GGUF_MAX_ARRAY_DEPTH).
 *
 * Every read goes through the reader below, which checks the bytes left before touching them;
 * every count is capped by the bytes left before anything is allocated; every product is checked
 * for overflow. The first failure stops the pass and leaves one message in `err`.
 */
#include "gguf.h"
#include "infile.h"

#include "quant.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_KEY_LEN 65535u   /* spec: keys are at most 2^16-1 bytes */
#define GGUF_MAX_NAME_LEN 64u     /* spec: tensor names are at most 64 bytes */
#define GGUF_MAX_ARRAY_DEPTH 4    /* array nesting accepted (1 = plain array) */
#define GGUF_MIN_KV_BYTES 14u     /* u64 key len + 1 key byte + u32 type + 1 value byte */
#define GGUF_MIN_TENSOR_BYTES 33u /* u64 name len + 1 byte + u32 n_dims + u64 ne + u32 + u64 */

/* The public struct plus what only this file needs to know. */
typedef struct {
    gguf_file pub;
    int owns_map; /* 1 when pub.map came from mmap (gguf_open) and must be unmapped */
} gguf_file_impl;

/* Cursor over the image; `field` says what is being read, for error messages. */
typedef struct {
    const uint8_t *buf;
    uint64_t size;
    uint64_t pos;
    const char *path;
    char field[160];
    char *err;
    size_t errlen;
} gguf_reader;

static uint16_t ld16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t ld64(const uint8_t *p) {
    return (uint64_t)ld32(p) | ((uint64_t)ld32(p + 4) << 32);
}

/* Copy at most 48 bytes of a file string into dst as printable ASCII ('?' for anything else). */
static void str_printable(char *dst, size_t cap, const char *s, uint64_t len) {
    size_t n = 0;
    for (uint64_t i = 0; i < len && n + 4 < cap && i < 48; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (len > 48 && n + 4 < cap) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

static void set_field(gguf_reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->field, sizeof r->field, fmt, ap);
    va_end(ap);
}

/* Write "gguf: <path>: offset <at>: <field>: <message>" and return -1. */
static int fail_at(gguf_reader *r, uint64_t at, const char *fmt, ...) {
    if (!r->err || r->errlen == 0) return -1;
    int n =
        snprintf(r->err, r->errlen, "gguf: %s: offset %llu: %s: ", r->path, (unsigned long long)at, r->field);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t bytes_left(const gguf_reader *r) {
    return r->size - r->pos;
}

static int need(gguf_reader *r, uint64_t n, const char *what) {
    if (n <= bytes_left(r)) return 0;
    return fail_at(r, r->pos, "truncated: %s needs %llu bytes, %llu left", what, (unsigned long long)n,
                   (unsigned long long)bytes_left(r));
}

static int rd_u32(gguf_reader *r, uint32_t *v, const char *what) {
    if (need(r, 4, what)) return -1;
    *v = ld32(r->buf + r->pos);
    r->pos += 4;
    return 0;
}

static int rd_u64(gguf_reader *r, uint64_t *v, const char *what) {
    if (need(r, 8, what)) return -1;
    *v = ld64(r->buf + r->pos);
    r->pos += 8;
    return 0;
}

/* String: u64 length (at most max_len) then bytes. */
static int rd_str(gguf_reader *r, gguf_str *s, uint64_t max_len, const char *what) {
    uint64_t at = r->pos, len;
    if (rd_u64(r, &len, what)) return -1;
    if (len > max_len)
        return fail_at(r, at, "%s length %llu exceeds the limit of %llu", what, (unsigned long long)len,
                       (unsigned long long)max_len);
    if (len > bytes_left(r))
        return fail_at(r, at, "truncated: %s of %llu bytes, %llu left", what, (unsigned long long)len,
                       (unsigned long long)bytes_left(r));
    s->len = len;
    s->ptr = (const char *)r->buf + r->pos;
    r->pos += len;
    return 0;
}

/* Bytes of one element of a fixed-size type; 0 for string, array and unknown types. */
static uint64_t type_size(uint32_t t) {
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

static int type_known(uint32_t t) {
    return t <= GGUF_TYPE_FLOAT64;
}

/* Decode one fixed-size scalar at p into kv->v (unsigned and bool -> u64, signed -> i64,
 * floats -> f64). */
static void decode_scalar(uint32_t t, const uint8_t *p, gguf_kv *kv) {
    uint32_t b32;
    uint64_t b64;
    float f;
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_BOOL:
        kv->v.u64 = p[0];
        break;
    case GGUF_TYPE_INT8:
        kv->v.i64 = (int8_t)p[0];
        break;
    case GGUF_TYPE_UINT16:
        kv->v.u64 = ld16(p);
        break;
    case GGUF_TYPE_INT16:
        kv->v.i64 = (int16_t)ld16(p);
        break;
    case GGUF_TYPE_UINT32:
        kv->v.u64 = ld32(p);
        break;
    case GGUF_TYPE_INT32:
        kv->v.i64 = (int32_t)ld32(p);
        break;
    case GGUF_TYPE_UINT64:
        kv->v.u64 = ld64(p);
        break;
    case GGUF_TYPE_INT64:
        kv->v.i64 = (int64_t)ld64(p);
        break;
    case GGUF_TYPE_FLOAT32:
        b32 = ld32(p);
        memcpy(&f, &b32, 4);
        kv->v.f64 = f;
        break;
    case GGUF_TYPE_FLOAT64:
        b64 = ld64(p);
        memcpy(&kv->v.f64, &b64, 8);
        break;
    default:
        break;
    }
}

/* Validate the elements of an array of `n` values of type `et` starting at r->pos. */
static int read_array_body(gguf_reader *r, uint32_t et, uint64_t n, int depth) {
    uint64_t at = r->pos, sz = type_size(et);
    if (sz) {
        if (n > bytes_left(r) / sz)
            return fail_at(r, at, "truncated: array of %llu %s needs more than the %llu bytes left",
                           (unsigned long long)n, gguf_type_name(et), (unsigned long long)bytes_left(r));
        if (et == GGUF_TYPE_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (r->buf[r->pos + i] > 1)
                    return fail_at(r, r->pos + i, "array element %llu: bool value %u is not 0 or 1",
                                   (unsigned long long)i, r->buf[r->pos + i]);
        r->pos += n * sz;
        return 0;
    }
    if (et == GGUF_TYPE_STRING) {
        if (n > bytes_left(r) / 8)
            return fail_at(r, at, "truncated: array of %llu strings needs more than the %llu bytes left",
                           (unsigned long long)n, (unsigned long long)bytes_left(r));
        for (uint64_t i = 0; i < n; i++) {
            gguf_str s;
            if (rd_str(r, &s, UINT64_MAX, "array string")) return -1;
        }
        return 0;
    }
    /* et == GGUF_TYPE_ARRAY: each element is {u32 type, u64 count, elements}. */
    if (depth >= GGUF_MAX_ARRAY_DEPTH)
        return fail_at(r, at, "arrays nested deeper than %d levels are not supported", GGUF_MAX_ARRAY_DEPTH);
    if (n > bytes_left(r) / 12)
        return fail_at(r, at, "truncated: array of %llu arrays needs more than the %llu bytes left",
                       (unsigned long long)n, (unsigned long long)bytes_left(r));
    for (uint64_t i = 0; i < n; i++) {
        uint32_t sub_t;
        uint64_t sub_n, sub_at = r->pos;
        if (rd_u32(r, &sub_t, "nested array type") || rd_u64(r, &sub_n, "nested array count")) return -1;
        if (!type_known(sub_t))
            return fail_at(r, sub_at, "nested array %llu: unknown element type %u", (unsigned long long)i,
                           sub_t);
        if (read_array_body(r, sub_t, sub_n, depth + 1)) return -1;
    }
    return 0;
}

/* Value of kv (type already read) at r->pos. */
static int read_value(gguf_reader *r, gguf_kv *kv) {
    uint64_t at = r->pos;
    if (kv->type == GGUF_TYPE_STRING) return rd_str(r, &kv->v.str, UINT64_MAX, "string value");
    if (kv->type == GGUF_TYPE_ARRAY) {
        uint32_t et;
        if (rd_u32(r, &et, "array element type")) return -1;
        if (!type_known(et)) return fail_at(r, at, "unknown array element type %u", et);
        kv->arr_type = (gguf_type)et;
        if (rd_u64(r, &kv->arr_n, "array count")) return -1;
        kv->arr_data = r->buf + r->pos;
        return read_array_body(r, et, kv->arr_n, 1);
    }
    uint64_t sz = type_size(kv->type);
    if (need(r, sz, gguf_type_name(kv->type))) return -1;
    if (kv->type == GGUF_TYPE_BOOL && r->buf[r->pos] > 1)
        return fail_at(r, at, "bool value %u is not 0 or 1", r->buf[r->pos]);
    decode_scalar(kv->type, r->buf + r->pos, kv);
    r->pos += sz;
    return 0;
}

/* Open-addressing set of names (the gguf_str at base + i*stride), to find duplicates in O(n). */
typedef struct {
    uint64_t *slot; /* index + 1; 0 = empty */
    uint64_t mask;
    const uint8_t *base;
    size_t stride;
} name_set;

static int name_set_init(name_set *s, uint64_t n, const void *base, size_t stride) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1; /* n is capped by the file size, so this cannot overflow */
    s->slot = calloc(cap, sizeof *s->slot);
    s->mask = cap - 1;
    s->base = base;
    s->stride = stride;
    return s->slot ? 0 : -1;
}

static const gguf_str *name_set_get(const name_set *s, uint64_t i) {
    return (const gguf_str *)(const void *)(s->base + i * s->stride);
}

/* Insert name i; returns the index of an earlier equal name, or -1 when it is new. */
static int64_t name_set_insert(name_set *s, uint64_t i) {
    const gguf_str *nm = name_set_get(s, i);
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (uint64_t k = 0; k < nm->len; k++) h = (h ^ (uint8_t)nm->ptr[k]) * 1099511628211ull;
    for (uint64_t j = h & s->mask;; j = (j + 1) & s->mask) {
        if (!s->slot[j]) {
            s->slot[j] = i + 1;
            return -1;
        }
        const gguf_str *o = name_set_get(s, s->slot[j] - 1);
        if (o->len == nm->len && memcmp(o->ptr, nm->ptr, nm->len) == 0) return (int64_t)(s->slot[j] - 1);
    }
}

static int parse_header(gguf_reader *r, gguf_file *g) {
    set_field(r, "magic");
    if (need(r, 4, "magic")) return -1;
    const uint8_t *m = r->buf;
    if (memcmp(m, "GGUF", 4) != 0)
        return fail_at(r, 0, "bad magic %02x %02x %02x %02x, expected 47 47 55 46 (\"GGUF\")%s", m[0], m[1],
                       m[2], m[3], memcmp(m, "FUGG", 4) == 0 ? " (byte-swapped file?)" : "");
    r->pos = 4;
    set_field(r, "version");
    if (rd_u32(r, &g->version, "version")) return -1;
    uint32_t v = g->version;
    uint32_t swapped = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    if (v != 2 && v != 3) {
        if (swapped >= 1 && swapped <= 3)
            return fail_at(r, 4,
                           "byte-swapped (big-endian) header: version reads 0x%08x; only "
                           "little-endian files are supported",
                           v);
        if (v <= 1) return fail_at(r, 4, "version %u is not supported (only 2 and 3)", v);
        return fail_at(r, 4, "unknown version %u (only 2 and 3 are supported)", v);
    }
    uint64_t at = r->pos;
    set_field(r, "tensor_count");
    if (rd_u64(r, &g->n_tensors, "tensor_count")) return -1;
    if (g->n_tensors > bytes_left(r) / GGUF_MIN_TENSOR_BYTES)
        return fail_at(r, at, "%llu tensor infos cannot fit in the %llu bytes left",
                       (unsigned long long)g->n_tensors, (unsigned long long)bytes_left(r));
    at = r->pos;
    set_field(r, "kv_count");
    if (rd_u64(r, &g->n_kv, "kv_count")) return -1;
    if (g->n_kv > bytes_left(r) / GGUF_MIN_KV_BYTES)
        return fail_at(r, at, "%llu key/value pairs cannot fit in the %llu bytes left",
                       (unsigned long long)g->n_kv, (unsigned long long)bytes_left(r));
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return fail_at(r, at, "out of memory");
    return 0;
}

static int parse_kvs(gguf_reader *r, gguf_file *g) {
    name_set set;
    if (name_set_init(&set, g->n_kv, &g->kv[0].key, sizeof(gguf_kv)))
        return fail_at(r, r->pos, "out of memory");
    int rc = 0;
    for (uint64_t i = 0; i < g->n_kv && rc == 0; i++) {
        gguf_kv *kv = &g->kv[i];
        char name[64];
        uint32_t t;
        kv->offset = r->pos;
        set_field(r, "kv %llu key", (unsigned long long)i);
        if ((rc = rd_str(r, &kv->key, GGUF_MAX_KEY_LEN, "key"))) break;
        if (kv->key.len == 0) {
            rc = fail_at(r, kv->offset, "empty key");
            break;
        }
        str_printable(name, sizeof name, kv->key.ptr, kv->key.len);
        set_field(r, "key '%s'", name);
        uint64_t at = r->pos;
        if ((rc = rd_u32(r, &t, "value type"))) break;
        if (!type_known(t)) {
            rc = fail_at(r, at, "unknown value type %u", t);
            break;
        }
        kv->type = (gguf_type)t;
        if ((rc = read_value(r, kv))) break;
        int64_t prev = name_set_insert(&set, i);
        if (prev >= 0)
            rc = fail_at(r, kv->offset, "duplicate key (first at offset %llu)",
                         (unsigned long long)g->kv[prev].offset);
    }
    free(set.slot);
    return rc;
}

/* general.alignment: optional, u32, a power of two; default 32. */
static int parse_alignment(gguf_reader *r, gguf_file *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(g, "general.alignment");
    if (!kv) return 0;
    set_field(r, "key 'general.alignment'");
    if (kv->type != GGUF_TYPE_UINT32)
        return fail_at(r, kv->offset, "type %s, expected u32", gguf_type_name(kv->type));
    if (kv->v.u64 == 0 || (kv->v.u64 & (kv->v.u64 - 1)) != 0)
        return fail_at(r, kv->offset, "alignment %llu is not a power of two", (unsigned long long)kv->v.u64);
    g->alignment = kv->v.u64;
    return 0;
}

/* One tensor info at r->pos; *off_at receives the file offset of its data-offset field. */
static int parse_tensor_info(gguf_reader *r, gguf_tensor *t, uint64_t i, uint64_t *off_at) {
    char name[64];
    uint64_t at = r->pos;
    set_field(r, "tensor %llu name", (unsigned long long)i);
    if (rd_str(r, &t->name, GGUF_MAX_NAME_LEN, "tensor name")) return -1;
    if (t->name.len == 0) return fail_at(r, at, "empty tensor name");
    str_printable(name, sizeof name, t->name.ptr, t->name.len);
    set_field(r, "tensor '%s'", name);
    at = r->pos;
    if (rd_u32(r, &t->n_dims, "n_dims")) return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return fail_at(r, at, "n_dims %u is not in 1..%d", t->n_dims, GGUF_MAX_DIMS);
    uint64_t n_elems = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = r->pos;
        if (rd_u64(r, &t->ne[d], "ne")) return -1;
        if (t->ne[d] == 0) return fail_at(r, at, "ne[%u] is zero", d);
        if (t->ne[d] > (uint64_t)INT64_MAX / n_elems)
            return fail_at(r, at, "ne[%u] = %llu makes the element count overflow", d,
                           (unsigned long long)t->ne[d]);
        n_elems *= t->ne[d];
    }
    at = r->pos;
    if (rd_u32(r, &t->type, "type")) return -1;
    if (!quant_type_supported(t->type)) return fail_at(r, at, "unknown tensor type %u", t->type);
    uint64_t block = quant_block_elems(t->type);
    if (t->ne[0] % block != 0)
        return fail_at(r, at, "row length ne[0] = %llu is not a multiple of the %s block size %llu",
                       (unsigned long long)t->ne[0], quant_type_name(t->type), (unsigned long long)block);
    /* ne[0] <= INT64_MAX and block_bytes <= 256, so (ne[0]/block)*block_bytes cannot overflow. */
    uint64_t row_bytes = (t->ne[0] / block) * quant_block_bytes(t->type);
    uint64_t n_rows = n_elems / t->ne[0];
    if (row_bytes != 0 && n_rows > UINT64_MAX / row_bytes) return fail_at(r, at, "data size overflows");
    t->n_bytes = row_bytes * n_rows;
    *off_at = r->pos;
    if (rd_u64(r, &t->offset, "data offset")) return -1;
    return 0;
}

typedef struct {
    uint64_t offset;
    uint64_t index;
} tensor_span;

static int span_cmp(const void *a, const void *b) {
    const tensor_span *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* Data section: starts at the aligned end of the infos; every tensor aligned, inside the file,
 * and not overlapping another. */
static int check_tensor_data(gguf_reader *r, gguf_file *g, const uint64_t *off_at) {
    char name[64];
    uint64_t a = g->alignment, end_infos = r->pos;
    set_field(r, "tensor data");
    if (end_infos > UINT64_MAX - (a - 1)) return fail_at(r, end_infos, "data offset overflows");
    g->data_offset = (end_infos + a - 1) / a * a;
    if (g->n_tensors == 0) return 0;
    if (g->data_offset > g->file_size)
        return fail_at(r, end_infos, "data section starts at %llu, past end of file (%llu bytes)",
                       (unsigned long long)g->data_offset, (unsigned long long)g->file_size);
    uint64_t data_size = g->file_size - g->data_offset;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        str_printable(name, sizeof name, t->name.ptr, t->name.len);
        set_field(r, "tensor '%s'", name);
        if (t->offset % a != 0)
            return fail_at(r, off_at[i], "data offset %llu is not a multiple of alignment %llu",
                           (unsigned long long)t->offset, (unsigned long long)a);
        if (t->offset > data_size || t->n_bytes > data_size - t->offset)
            return fail_at(r, off_at[i],
                           "data runs past end of file (data offset %llu + %llu bytes > %llu bytes "
                           "in the data section)",
                           (unsigned long long)t->offset, (unsigned long long)t->n_bytes,
                           (unsigned long long)data_size);
        t->data = g->map + g->data_offset + t->offset;
    }
    tensor_span *spans = malloc(g->n_tensors * sizeof *spans);
    if (!spans) return fail_at(r, end_infos, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        spans[i].offset = g->tensors[i].offset;
        spans[i].index = i;
    }
    qsort(spans, g->n_tensors, sizeof *spans, span_cmp);
    int rc = 0;
    for (uint64_t k = 1; k < g->n_tensors && rc == 0; k++) {
        const gguf_tensor *p = &g->tensors[spans[k - 1].index];
        const gguf_tensor *t = &g->tensors[spans[k].index];
        if (p->offset + p->n_bytes > t->offset) {
            char pname[64];
            str_printable(name, sizeof name, t->name.ptr, t->name.len);
            str_printable(pname, sizeof pname, p->name.ptr, p->name.len);
            set_field(r, "tensor '%s'", name);
            rc = fail_at(r, off_at[spans[k].index], "data [%llu, %llu) overlaps tensor '%s' [%llu, %llu)",
                         (unsigned long long)t->offset, (unsigned long long)(t->offset + t->n_bytes), pname,
                         (unsigned long long)p->offset, (unsigned long long)(p->offset + p->n_bytes));
        }
    }
    free(spans);
    return rc;
}

static int parse_tensors(gguf_reader *r, gguf_file *g) {
    uint64_t *off_at = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *off_at);
    name_set set = {0};
    if (!off_at || name_set_init(&set, g->n_tensors, &g->tensors[0].name, sizeof(gguf_tensor))) {
        free(off_at);
        return fail_at(r, r->pos, "out of memory");
    }
    int rc = 0;
    for (uint64_t i = 0; i < g->n_tensors && rc == 0; i++) {
        uint64_t at = r->pos;
        if ((rc = parse_tensor_info(r, &g->tensors[i], i, &off_at[i]))) break;
        int64_t prev = name_set_insert(&set, i);
        if (prev >= 0) rc = fail_at(r, at, "duplicate tensor name (first is tensor %lld)", (long long)prev);
    }
    if (rc == 0) rc = check_tensor_data(r, g, off_at);
    free(set.slot);
    free(off_at);
    return rc;
}

static int gguf_parse(gguf_file **out, const uint8_t *buf, uint64_t size, int owns_map, const char *path,
                      char *err, size_t errlen) {
    gguf_reader r = {.buf = buf, .size = size, .path = path, .err = err, .errlen = errlen};
    gguf_file_impl *impl = calloc(1, sizeof *impl);
    char *path_copy = strdup(path);
    if (!impl || !path_copy) {
        free(impl);
        free(path_copy);
        snprintf(err, errlen, "gguf: %s: out of memory", path);
        return -1;
    }
    gguf_file *g = &impl->pub;
    g->path = path_copy;
    g->map = buf;
    g->file_size = size;
    if (parse_header(&r, g) || parse_kvs(&r, g) || parse_alignment(&r, g) || parse_tensors(&r, g)) {
        gguf_close(g); /* does not unmap: owns_map is still 0, the caller unmaps */
        return -1;
    }
    impl->owns_map = owns_map;
    *out = g;
    return 0;
}

int gguf_open_memory(gguf_file **out, const void *buf, size_t size, const char *path, char *err,
                     size_t errlen) {
    *out = NULL;
    if (!path) path = "<memory>";
    if (!buf && size) {
        snprintf(err, errlen, "gguf: %s: NULL buffer", path);
        return -1;
    }
    return gguf_parse(out, buf ? buf : (const void *)"", (uint64_t)size, 0, path, err, errlen);
}

/* The live mappings, for gguf_mapping_path (a signal handler reads them: base is set last and
 * cleared first, each an atomic store). Changed under map_mu. */
static struct {
    _Atomic(const uint8_t *) base;
    size_t size;
    char path[1024];
} mappings[GGUF_MAX_MAPPINGS];
static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;

static void mapping_add(const uint8_t *base, size_t size, const char *path) {
    pthread_mutex_lock(&map_mu);
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++)
        if (!atomic_load(&mappings[i].base)) {
            mappings[i].size = size;
            snprintf(mappings[i].path, sizeof mappings[i].path, "%s", path);
            atomic_store(&mappings[i].base, base);
            break;
        }
    pthread_mutex_unlock(&map_mu);
}

static void mapping_remove(const uint8_t *base) {
    pthread_mutex_lock(&map_mu);
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++)
        if (atomic_load(&mappings[i].base) == base) atomic_store(&mappings[i].base, NULL);
    pthread_mutex_unlock(&map_mu);
}

const char *gguf_mapping_path(const void *addr) {
    const uint8_t *a = addr;
    for (int i = 0; i < GGUF_MAX_MAPPINGS; i++) {
        const uint8_t *b = atomic_load(&mappings[i].base);
        if (b && a >= b && a < b + mappings[i].size) return mappings[i].path;
    }
    return NULL;
}

void gguf_bus_error_exit(const void *addr, const char *lead) {
    const char *path = gguf_mapping_path(addr);
    if (!path) return;
    static const char a[] = "bosch: ", b[] = ": the model file changed or was truncated while in use "
                                             "(a bus error reading its mapping)\n";
    ssize_t r = write(STDERR_FILENO, lead, strlen(lead));
    r = write(STDERR_FILENO, a, sizeof a - 1);
    r = write(STDERR_FILENO, path, strlen(path));
    r = write(STDERR_FILENO, b, sizeof b - 1);
    (void)r;
    _exit(1);
}

int gguf_open(gguf_file **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    char why[1024];
    int fd = infile_open(path, why, sizeof why); /* a FIFO is refused, not waited on (infile.h) */
    if (fd < 0) {
        snprintf(err, errlen, "gguf: %s", why);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "gguf: %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        close(fd);
        return gguf_parse(out, (const uint8_t *)"", 0, 0, path, err, errlen);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "gguf: %s: mmap of %lld bytes failed: %s", path, (long long)st.st_size,
                 strerror(map_errno));
        return -1;
    }
    if (gguf_parse(out, map, (uint64_t)st.st_size, 1, path, err, errlen)) {
        munmap(map, (size_t)st.st_size);
        return -1;
    }
    mapping_add(map, (size_t)st.st_size, path);
    return 0;
}

void gguf_close(gguf_file *g) {
    if (!g) return;
    gguf_file_impl *impl = (gguf_file_impl *)g;
    if (impl->owns_map && g->map) {
        mapping_remove(g->map);
        munmap((void *)g->map, (size_t)g->file_size);
    }
    free(g->path);
    free(g->kv);
    free(g->tensors);
    free(impl);
}
