/* gguf_get.c — type names, lookups and typed getters over a validated gguf_file (see gguf.h); the
 * reader (gguf.c) uses the first two, nothing here calls back into it.
 *
 * Everything here runs after gguf_open has checked every length and count, so reads need no
 * bounds checks; only types and value ranges are checked. Values are little-endian in the file.
 */
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gguf_type_name(gguf_type t) {
    static const char *names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return ((unsigned)t <= GGUF_TYPE_FLOAT64) ? names[t] : "unknown";
}

/* Little-endian unsigned load of `n` bytes (1, 2, 4 or 8). */
static uint64_t ld_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static int is_unsigned_type(gguf_type t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}

static int is_signed_type(gguf_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

/* Bytes of one integer element (0 for non-integer types). */
static int int_size(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
        return 8;
    default:
        return 0;
    }
}

/* Element i of an integer array as int64 (sign-extended); *big set when an unsigned value
 * exceeds INT64_MAX. */
static int64_t arr_int_at(const gguf_kv *kv, uint64_t i, int *big) {
    int n = int_size(kv->arr_type);
    uint64_t u = ld_le((const uint8_t *)kv->arr_data + i * (uint64_t)n, n);
    *big = 0;
    if (is_unsigned_type(kv->arr_type)) {
        *big = u > (uint64_t)INT64_MAX;
        return (int64_t)(u & (uint64_t)INT64_MAX);
    }
    if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~0ull << (8 * n); /* sign-extend */
    return (int64_t)u;
}

static int str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (str_eq(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (str_eq(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

/* Find `key` and check its type with `ok_type`; otherwise write the reason and return NULL. */
static const gguf_kv *get_kv(const gguf_file *g, const char *key, int (*ok_type)(const gguf_kv *),
                             const char *expected, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) {
        snprintf(err, errlen, "gguf: %s: key '%s': missing", g->path, key);
        return NULL;
    }
    if (!ok_type(kv)) {
        snprintf(err, errlen, "gguf: %s: offset %llu: key '%s': type %s%s%s, expected %s", g->path,
                 (unsigned long long)kv->offset, key, gguf_type_name(kv->type),
                 kv->type == GGUF_TYPE_ARRAY ? " of " : "",
                 kv->type == GGUF_TYPE_ARRAY ? gguf_type_name(kv->arr_type) : "", expected);
        return NULL;
    }
    return kv;
}

static int kv_is_int(const gguf_kv *kv) {
    return is_unsigned_type(kv->type) || is_signed_type(kv->type);
}
static int kv_is_float(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_FLOAT32 || kv->type == GGUF_TYPE_FLOAT64;
}
static int kv_is_bool(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_BOOL;
}
static int kv_is_str(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_STRING;
}
static int kv_is_str_arr(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_ARRAY && kv->arr_type == GGUF_TYPE_STRING;
}
static int kv_is_int_arr(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_ARRAY && (is_unsigned_type(kv->arr_type) || is_signed_type(kv->arr_type));
}
static int kv_is_f32_arr(const gguf_kv *kv) {
    return kv->type == GGUF_TYPE_ARRAY && kv->arr_type == GGUF_TYPE_FLOAT32;
}

int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out, char *err, size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_int, "an integer", err, errlen);
    if (!kv) return -1;
    int fits = is_unsigned_type(kv->type) ? kv->v.u64 <= UINT32_MAX
                                          : (kv->v.i64 >= 0 && kv->v.i64 <= (int64_t)UINT32_MAX);
    if (!fits) {
        if (is_unsigned_type(kv->type))
            snprintf(err, errlen, "gguf: %s: offset %llu: key '%s': value %llu does not fit in u32", g->path,
                     (unsigned long long)kv->offset, key, (unsigned long long)kv->v.u64);
        else
            snprintf(err, errlen, "gguf: %s: offset %llu: key '%s': value %lld does not fit in u32", g->path,
                     (unsigned long long)kv->offset, key, (long long)kv->v.i64);
        return -1;
    }
    *out = is_unsigned_type(kv->type) ? (uint32_t)kv->v.u64 : (uint32_t)kv->v.i64;
    return 0;
}

int gguf_get_f32(const gguf_file *g, const char *key, float *out, char *err, size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_float, "f32 or f64", err, errlen);
    if (!kv) return -1;
    *out = (float)kv->v.f64;
    return 0;
}

int gguf_get_bool(const gguf_file *g, const char *key, int *out, char *err, size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_bool, "bool", err, errlen);
    if (!kv) return -1;
    *out = kv->v.u64 != 0;
    return 0;
}

int gguf_get_str(const gguf_file *g, const char *key, char **out, char *err, size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_str, "string", err, errlen);
    if (!kv) return -1;
    char *s = malloc(kv->v.str.len + 1);
    if (!s) {
        snprintf(err, errlen, "gguf: %s: key '%s': out of memory", g->path, key);
        return -1;
    }
    memcpy(s, kv->v.str.ptr, kv->v.str.len);
    s[kv->v.str.len] = '\0';
    *out = s;
    return 0;
}

/* malloc(n * elem) with the product checked; n == 0 still returns a valid pointer. */
static void *alloc_array(const gguf_file *g, const char *key, uint64_t n, size_t elem, char *err,
                         size_t errlen) {
    void *p = (n <= SIZE_MAX / elem) ? malloc(n ? (size_t)n * elem : 1) : NULL;
    if (!p)
        snprintf(err, errlen, "gguf: %s: key '%s': out of memory for %llu elements", g->path, key,
                 (unsigned long long)n);
    return p;
}

int gguf_get_str_array(const gguf_file *g, const char *key, gguf_str **out, uint64_t *n, char *err,
                       size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_str_arr, "array of string", err, errlen);
    if (!kv) return -1;
    gguf_str *a = alloc_array(g, key, kv->arr_n, sizeof *a, err, errlen);
    if (!a) return -1;
    const uint8_t *p = kv->arr_data; /* validated at open: every length fits in the file */
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        a[i].len = ld_le(p, 8);
        a[i].ptr = (const char *)p + 8;
        p += 8 + a[i].len;
    }
    *out = a;
    *n = kv->arr_n;
    return 0;
}

int gguf_get_i32_array(const gguf_file *g, const char *key, int32_t **out, uint64_t *n, char *err,
                       size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_int_arr, "array of integers", err, errlen);
    if (!kv) return -1;
    int32_t *a = alloc_array(g, key, kv->arr_n, sizeof *a, err, errlen);
    if (!a) return -1;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        int big;
        int64_t v = arr_int_at(kv, i, &big);
        if (big || v < INT32_MIN || v > INT32_MAX) {
            snprintf(err, errlen, "gguf: %s: offset %llu: key '%s': element %llu does not fit in i32",
                     g->path, (unsigned long long)kv->offset, key, (unsigned long long)i);
            free(a);
            return -1;
        }
        a[i] = (int32_t)v;
    }
    *out = a;
    *n = kv->arr_n;
    return 0;
}

int gguf_get_f32_array(const gguf_file *g, const char *key, float **out, uint64_t *n, char *err,
                       size_t errlen) {
    const gguf_kv *kv = get_kv(g, key, kv_is_f32_arr, "array of f32", err, errlen);
    if (!kv) return -1;
    float *a = alloc_array(g, key, kv->arr_n, sizeof *a, err, errlen);
    if (!a) return -1;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        uint32_t b = (uint32_t)ld_le((const uint8_t *)kv->arr_data + 4 * i, 4);
        memcpy(&a[i], &b, 4);
    }
    *out = a;
    *n = kv->arr_n;
    return 0;
}
