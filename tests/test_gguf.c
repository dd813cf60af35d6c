/* test_gguf.c — GGUF reader: valid images built here, crafted bad images (one per failure mode,
 * checking the message names the file, byte offset and field), every truncation of a valid image,
 * and two real files checked against what the independent Python `gguf` package reads from them
 * (tests/fixtures/gguf_tiny.* and gguf_smollm2_tensors.txt, made by
 * scripts/fixtures/make_gguf_fixtures.py).
 */
/* cmocka needs these first */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gguf.h"
#include "engine/quant.h"

/* ---- a tiny GGUF image builder (little-endian) ------------------------------------------- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} bld;

static void b_bytes(bld *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void b_le(bld *b, uint64_t v, int n) {
    uint8_t t[8];
    for (int i = 0; i < n; i++) t[i] = (uint8_t)(v >> (8 * i));
    b_bytes(b, t, (size_t)n);
}
static void b_u8(bld *b, uint8_t v) { b_le(b, v, 1); }
static void b_u32(bld *b, uint32_t v) { b_le(b, v, 4); }
static void b_u64(bld *b, uint64_t v) { b_le(b, v, 8); }
static void b_str(bld *b, const char *s) {
    b_u64(b, strlen(s));
    b_bytes(b, s, strlen(s));
}
static void b_header(bld *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b_bytes(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}
static void b_kv(bld *b, const char *key, uint32_t type) {
    b_str(b, key);
    b_u32(b, type);
}
static void b_kv_u32(bld *b, const char *key, uint32_t v) {
    b_kv(b, key, GGUF_TYPE_UINT32);
    b_u32(b, v);
}
static void b_arr(bld *b, const char *key, uint32_t elem_type, uint64_t n) {
    b_kv(b, key, GGUF_TYPE_ARRAY);
    b_u32(b, elem_type);
    b_u64(b, n);
}
/* Tensor info; returns the offset of its data-offset field. ne has n_dims entries. */
static size_t b_tensor(bld *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                       uint64_t offset) {
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) b_u64(b, ne[d]);
    b_u32(b, type);
    size_t at = b->n;
    b_u64(b, offset);
    return at;
}
static void b_pad(bld *b, size_t align) {
    while (b->n % align) b_u8(b, 0);
}
static void b_data(bld *b, size_t n) { /* recognisable bytes: low byte of the position */
    for (size_t i = 0; i < n; i++) b_u8(b, (uint8_t)(b->n & 0xff));
}

/* Minimal valid image: kv "k" = 7, tensor "t" F32 [8] at 0 (32 bytes of data). */
static void b_minimal(bld *b) {
    const uint64_t ne[1] = {8};
    b_header(b, 3, 1, 1);
    b_kv_u32(b, "k", 7);
    b_tensor(b, "t", 1, ne, GGML_TYPE_F32, 0);
    b_pad(b, 32);
    b_data(b, 32);
}

/* The call must fail and say "gguf: bad.gguf: offset <offset>: " and contain `text`. */
static void expect_fail(const bld *b, uint64_t offset, const char *text) {
    char err[512] = "", prefix[96];
    gguf_file *g = NULL;
    int rc = gguf_open_memory(&g, b->p, b->n, "bad.gguf", err, sizeof err);
    snprintf(prefix, sizeof prefix, "gguf: bad.gguf: offset %llu: ", (unsigned long long)offset);
    if (rc != -1 || g != NULL || !strstr(err, prefix) || !strstr(err, text))
        fail_msg("rc %d; message '%s'; wanted '%s' and '%s'", rc, err, prefix, text);
}

/* ---- valid images -------------------------------------------------------------------------- */

typedef struct {
    size_t kv_str_at, arr_nested_at, end_infos, data_start, off_at[3];
} rich_layout;

/* Every scalar type, arrays (strings, ints, floats, bools, empty, nested), alignment 64 and three
 * tensors of types F32 [4,3], Q4_0 [64,2], Q8_0 [32]. */
static void b_rich(bld *b, uint32_t version, rich_layout *L) {
    b_header(b, version, 3, 20);
    b_kv_u32(b, "general.alignment", 64);
    b_kv(b, "s.u8", GGUF_TYPE_UINT8), b_u8(b, 250);
    b_kv(b, "s.i8", GGUF_TYPE_INT8), b_u8(b, 0xf9); /* -7 */
    b_kv(b, "s.u16", GGUF_TYPE_UINT16), b_le(b, 65000, 2);
    b_kv(b, "s.i16", GGUF_TYPE_INT16), b_le(b, 0x8ad0, 2);      /* -30000 */
    b_kv(b, "s.i32", GGUF_TYPE_INT32), b_u32(b, 0x88ca6c00u);   /* -2000000000 */
    b_kv(b, "s.f32", GGUF_TYPE_FLOAT32), b_u32(b, 0x3fc00000u); /* 1.5 */
    b_kv(b, "s.bool", GGUF_TYPE_BOOL), b_u8(b, 1);
    L->kv_str_at = b->n;
    b_kv(b, "s.str", GGUF_TYPE_STRING), b_str(b, "hello");
    b_kv(b, "s.u64", GGUF_TYPE_UINT64), b_u64(b, 0x8000000000000005ull);
    b_kv(b, "s.i64", GGUF_TYPE_INT64), b_u64(b, (uint64_t)-5);
    b_kv(b, "s.f64", GGUF_TYPE_FLOAT64), b_u64(b, 0xc004000000000000ull); /* -2.5 */
    b_arr(b, "a.str", GGUF_TYPE_STRING, 3), b_str(b, "x"), b_str(b, ""), b_str(b, "yz");
    b_arr(b, "a.i32", GGUF_TYPE_INT32, 2), b_u32(b, 0xffffffffu), b_u32(b, 40000);
    b_arr(b, "a.u8", GGUF_TYPE_UINT8, 3), b_u8(b, 1), b_u8(b, 2), b_u8(b, 255);
    b_arr(b, "a.u64big", GGUF_TYPE_UINT64, 1), b_u64(b, 1ull << 40);
    b_arr(b, "a.f32", GGUF_TYPE_FLOAT32, 2), b_u32(b, 0x3f800000u), b_u32(b, 0xc0000000u);
    b_arr(b, "a.bool", GGUF_TYPE_BOOL, 2), b_u8(b, 0), b_u8(b, 1);
    b_arr(b, "a.empty", GGUF_TYPE_INT16, 0);
    L->arr_nested_at = b->n; /* [[1, 2], ["q"]] */
    b_arr(b, "a.nested", GGUF_TYPE_ARRAY, 2);
    b_u32(b, GGUF_TYPE_INT32), b_u64(b, 2), b_u32(b, 1), b_u32(b, 2);
    b_u32(b, GGUF_TYPE_STRING), b_u64(b, 1), b_str(b, "q");
    const uint64_t ne_a[2] = {4, 3}, ne_b[2] = {64, 2}, ne_c[1] = {32};
    L->off_at[0] = b_tensor(b, "w.f32", 2, ne_a, GGML_TYPE_F32, 0);     /* 48 bytes */
    L->off_at[1] = b_tensor(b, "w.q4_0", 2, ne_b, GGML_TYPE_Q4_0, 64);  /* 2*2*18 = 72 */
    L->off_at[2] = b_tensor(b, "w.q8_0", 1, ne_c, GGML_TYPE_Q8_0, 192); /* 34 */
    L->end_infos = b->n;
    b_pad(b, 64);
    L->data_start = b->n;
    b_data(b, 192 + 34);
}

static void check_rich(const bld *b, const rich_layout *L, uint32_t version) {
    char err[512] = "";
    gguf_file *g = NULL;
    if (gguf_open_memory(&g, b->p, b->n, "rich.gguf", err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(g->version, version);
    assert_int_equal(g->n_kv, 20);
    assert_int_equal(g->n_tensors, 3);
    assert_int_equal(g->alignment, 64);
    assert_int_equal(g->data_offset, L->data_start);
    assert_int_equal(g->data_offset, (L->end_infos + 63) / 64 * 64);
    assert_int_equal(g->file_size, b->n);
    const gguf_kv *kv = gguf_find_kv(g, "s.str");
    assert_non_null(kv);
    assert_int_equal(kv->offset, L->kv_str_at);
    assert_int_equal(kv->v.str.len, 5);
    assert_memory_equal(kv->v.str.ptr, "hello", 5);
    assert_int_equal(gguf_find_kv(g, "s.u8")->v.u64, 250);
    assert_int_equal(gguf_find_kv(g, "s.i8")->v.i64, -7);
    assert_int_equal(gguf_find_kv(g, "s.u16")->v.u64, 65000);
    assert_int_equal(gguf_find_kv(g, "s.i16")->v.i64, -30000);
    assert_int_equal(gguf_find_kv(g, "s.i32")->v.i64, -2000000000);
    assert_true(gguf_find_kv(g, "s.f32")->v.f64 == 1.5);
    assert_int_equal(gguf_find_kv(g, "s.bool")->v.u64, 1);
    assert_true(gguf_find_kv(g, "s.u64")->v.u64 == 0x8000000000000005ull);
    assert_int_equal(gguf_find_kv(g, "s.i64")->v.i64, -5);
    assert_true(gguf_find_kv(g, "s.f64")->v.f64 == -2.5);
    kv = gguf_find_kv(g, "a.nested");
    assert_int_equal(kv->offset, L->arr_nested_at);
    assert_int_equal(kv->type, GGUF_TYPE_ARRAY);
    assert_int_equal(kv->arr_type, GGUF_TYPE_ARRAY);
    assert_int_equal(kv->arr_n, 2);
    assert_ptr_equal(kv->arr_data, b->p + L->arr_nested_at + 8 + 8 + 4 + 4 + 8);
    kv = gguf_find_kv(g, "a.empty");
    assert_int_equal(kv->arr_type, GGUF_TYPE_INT16);
    assert_int_equal(kv->arr_n, 0);
    assert_null(gguf_find_kv(g, "absent"));
    const char *names[3] = {"w.f32", "w.q4_0", "w.q8_0"};
    const uint64_t offs[3] = {0, 64, 192}, sizes[3] = {48, 72, 34}, types[3] = {0, 2, 8};
    const uint64_t ne[3][4] = {{4, 3, 1, 1}, {64, 2, 1, 1}, {32, 1, 1, 1}};
    for (int i = 0; i < 3; i++) {
        const gguf_tensor *t = gguf_find_tensor(g, names[i]);
        assert_ptr_equal(t, &g->tensors[i]);
        assert_int_equal(t->type, types[i]);
        assert_int_equal(t->n_dims, i == 2 ? 1 : 2);
        for (int d = 0; d < 4; d++) assert_int_equal(t->ne[d], ne[i][d]);
        assert_int_equal(t->offset, offs[i]);
        assert_int_equal(t->n_bytes, sizes[i]);
        assert_ptr_equal(t->data, b->p + L->data_start + offs[i]);
        assert_int_equal(((const uint8_t *)t->data)[0], (L->data_start + offs[i]) & 0xff);
    }
    assert_null(gguf_find_tensor(g, "w"));
    gguf_close(g);
}

static void test_valid_v3_and_v2(void **state) {
    for (uint32_t version = 2; version <= 3; version++) {
        bld b = {0};
        rich_layout L;
        b_rich(&b, version, &L);
        check_rich(&b, &L, version);
        free(b.p);
    }
}

static void test_getters(void **state) {
    bld b = {0};
    rich_layout L;
    char err[512] = "";
    gguf_file *g = NULL;
    b_rich(&b, 3, &L);
    assert_int_equal(gguf_open_memory(&g, b.p, b.n, "rich.gguf", err, sizeof err), 0);
    uint32_t u = 0;
    float f = 0;
    int flag = -1;
    char *s = NULL;
    assert_int_equal(gguf_get_u32(g, "s.u8", &u, err, sizeof err), 0);
    assert_int_equal(u, 250);
    assert_int_equal(gguf_get_u32(g, "s.u16", &u, err, sizeof err), 0);
    assert_int_equal(u, 65000);
    assert_int_equal(gguf_get_u32(g, "general.alignment", &u, err, sizeof err), 0);
    assert_int_equal(u, 64);
    assert_int_equal(gguf_get_u32(g, "s.i8", &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "gguf: rich.gguf: offset "));
    assert_non_null(strstr(err, "key 's.i8': value -7 does not fit in u32"));
    assert_int_equal(gguf_get_u32(g, "s.u64", &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "9223372036854775813 does not fit"));
    assert_int_equal(gguf_get_u32(g, "s.str", &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "key 's.str': type string, expected an integer"));
    assert_int_equal(gguf_get_u32(g, "nope", &u, err, sizeof err), -1);
    assert_string_equal(err, "gguf: rich.gguf: key 'nope': missing");
    assert_int_equal(gguf_get_f32(g, "s.f32", &f, err, sizeof err), 0);
    assert_true(f == 1.5f);
    assert_int_equal(gguf_get_f32(g, "s.f64", &f, err, sizeof err), 0);
    assert_true(f == -2.5f);
    assert_int_equal(gguf_get_f32(g, "s.u8", &f, err, sizeof err), -1);
    assert_int_equal(gguf_get_bool(g, "s.bool", &flag, err, sizeof err), 0);
    assert_int_equal(flag, 1);
    assert_int_equal(gguf_get_bool(g, "s.u8", &flag, err, sizeof err), -1);
    assert_int_equal(gguf_get_str(g, "s.str", &s, err, sizeof err), 0);
    assert_string_equal(s, "hello");
    free(s);
    assert_int_equal(gguf_get_str(g, "a.str", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "type array of string, expected string"));

    gguf_str *strs = NULL;
    uint64_t n = 0;
    assert_int_equal(gguf_get_str_array(g, "a.str", &strs, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(strs[0].len, 1);
    assert_memory_equal(strs[0].ptr, "x", 1);
    assert_int_equal(strs[1].len, 0);
    assert_int_equal(strs[2].len, 2);
    assert_memory_equal(strs[2].ptr, "yz", 2);
    free(strs);
    assert_int_equal(gguf_get_str_array(g, "a.nested", &strs, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "type array of array"));

    int32_t *iv = NULL;
    assert_int_equal(gguf_get_i32_array(g, "a.i32", &iv, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(iv[0], -1);
    assert_int_equal(iv[1], 40000);
    free(iv);
    assert_int_equal(gguf_get_i32_array(g, "a.u8", &iv, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(iv[2], 255);
    free(iv);
    assert_int_equal(gguf_get_i32_array(g, "a.empty", &iv, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    free(iv);
    assert_int_equal(gguf_get_i32_array(g, "a.u64big", &iv, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "key 'a.u64big': element 0 does not fit in i32"));
    assert_int_equal(gguf_get_i32_array(g, "a.f32", &iv, &n, err, sizeof err), -1);

    float *fv = NULL;
    assert_int_equal(gguf_get_f32_array(g, "a.f32", &fv, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_true(fv[0] == 1.0f && fv[1] == -2.0f);
    free(fv);
    assert_int_equal(gguf_get_f32_array(g, "a.i32", &fv, &n, err, sizeof err), -1);
    assert_string_equal(gguf_type_name(GGUF_TYPE_UINT32), "u32");
    assert_string_equal(gguf_type_name((gguf_type)99), "unknown");
    gguf_close(g);
    free(b.p);
}

static void test_default_alignment_and_open_file(void **state) {
    bld b = {0};
    b_minimal(&b);
    char path[] = "/tmp/test_gguf_XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    gguf_file *g = NULL;
    if (gguf_open(&g, path, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(g->alignment, 32);
    assert_int_equal(g->data_offset, 96); /* infos end at 74 (24 + 17 + 33), aligned to 32 */
    assert_int_equal(g->file_size, 128);
    assert_int_equal(g->tensors[0].n_bytes, 32);
    assert_memory_equal(g->tensors[0].data, b.p + 96, 32);
    assert_string_equal(g->path, path);
    gguf_close(g);
    /* An empty file and a missing one fail with the path in the message. */
    fd = open(path, O_WRONLY | O_TRUNC);
    close(fd);
    assert_int_equal(gguf_open(&g, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "offset 0: magic: truncated"));
    assert_non_null(strstr(err, path));
    unlink(path);
    assert_int_equal(gguf_open(&g, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, path));
    free(b.p);
}

/* ---- bad files: one per failure mode ------------------------------------------------------- */

static void test_bad_header(void **state) {
    bld b = {0};
    b_bytes(&b, "GGUX", 4), b_u32(&b, 3), b_u64(&b, 0), b_u64(&b, 0);
    expect_fail(&b, 0, "magic: bad magic 47 47 55 58");
    const uint32_t bad_versions[4] = {0, 1, 4, 0xffffffffu};
    const char *texts[4] = {"version: version 0 is not supported",
                            "version: version 1 is not supported", "version: unknown version 4",
                            "version: unknown version 4294967295"};
    for (int i = 0; i < 4; i++) {
        b.n = 0;
        b_header(&b, bad_versions[i], 0, 0);
        expect_fail(&b, 4, texts[i]);
    }
    b.n = 0; /* a big-endian writer: version 3 stored as 00 00 00 03 */
    b_bytes(&b, "GGUF", 4), b_bytes(&b, "\0\0\0\3", 4), b_u64(&b, 0), b_u64(&b, 0);
    expect_fail(&b, 4, "version: byte-swapped (big-endian) header");
    /* Counts are capped by the bytes left before anything is allocated. */
    b.n = 0;
    b_header(&b, 3, UINT64_MAX, 0);
    expect_fail(&b, 8, "tensor_count: 18446744073709551615 tensor infos cannot fit");
    b.n = 0;
    b_header(&b, 3, 0, 1ull << 62);
    expect_fail(&b, 16, "kv_count: 4611686018427387904 key/value pairs cannot fit");
    b.n = 0;
    b_header(&b, 3, 0, 1); /* one kv promised, none there */
    expect_fail(&b, 16, "kv_count: 1 key/value pairs cannot fit in the 0 bytes left");
    free(b.p);
}

static void test_bad_kv(void **state) {
    bld b = {0};
    size_t at;
    b_header(&b, 3, 0, 1), b_u64(&b, UINT64_MAX), b_bytes(&b, "abcdefgh", 8);
    expect_fail(&b, 24, "kv 0 key: key length 18446744073709551615 exceeds the limit of 65535");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_str(&b, ""), b_u32(&b, 0), b_u32(&b, 0);
    expect_fail(&b, 24, "kv 0 key: empty key");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_kv(&b, "k.s", GGUF_TYPE_STRING), at = b.n, b_u64(&b, 1ull << 60);
    expect_fail(&b, at, "key 'k.s': truncated: string value of 1152921504606846976 bytes, 0 left");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_str(&b, "k.t"), at = b.n, b_u32(&b, 13), b_u32(&b, 0);
    expect_fail(&b, at, "key 'k.t': unknown value type 13");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_kv(&b, "k.a", GGUF_TYPE_ARRAY), at = b.n, b_u32(&b, 77), b_u64(&b, 0);
    expect_fail(&b, at, "key 'k.a': unknown array element type 77");
    b.n = 0; /* 2^61 + 1 u64 elements: n * 8 would wrap to 8 */
    b_header(&b, 3, 0, 1), b_arr(&b, "k.big", GGUF_TYPE_UINT64, (1ull << 61) + 1), at = b.n;
    b_u64(&b, 1);
    expect_fail(&b, at, "key 'k.big': truncated: array of 2305843009213693953 u64");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_arr(&b, "k.strs", GGUF_TYPE_STRING, 2), b_str(&b, "a"), at = b.n;
    b_u64(&b, 100), b_bytes(&b, "b", 1);
    expect_fail(&b, at, "key 'k.strs': truncated: array string of 100 bytes, 1 left");
    b.n = 0; /* arrays nested 5 deep */
    b_header(&b, 3, 0, 1), b_arr(&b, "k.deep", GGUF_TYPE_ARRAY, 1);
    for (int d = 0; d < 3; d++) b_u32(&b, GGUF_TYPE_ARRAY), b_u64(&b, 1);
    at = b.n, b_u32(&b, GGUF_TYPE_ARRAY), b_u64(&b, 1);
    b_u32(&b, GGUF_TYPE_UINT8), b_u64(&b, 0);
    expect_fail(&b, at, "key 'k.deep': arrays nested deeper than 4 levels");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_kv(&b, "k.b", GGUF_TYPE_BOOL), at = b.n, b_u8(&b, 2);
    expect_fail(&b, at, "key 'k.b': bool value 2 is not 0 or 1");
    b.n = 0;
    b_header(&b, 3, 0, 1), b_arr(&b, "k.bs", GGUF_TYPE_BOOL, 3), at = b.n;
    b_u8(&b, 1), b_u8(&b, 0), b_u8(&b, 9);
    expect_fail(&b, at + 2, "key 'k.bs': array element 2: bool value 9");
    b.n = 0;
    b_header(&b, 3, 0, 3), b_kv_u32(&b, "a", 1), at = b.n, b_kv_u32(&b, "b", 2);
    size_t at2 = b.n;
    b_kv_u32(&b, "b", 3);
    char text[96];
    snprintf(text, sizeof text, "key 'b': duplicate key (first at offset %zu)", at);
    expect_fail(&b, at2, text);
    free(b.p);
}

static void test_bad_alignment(void **state) {
    bld b = {0};
    const uint32_t values[2] = {48, 0};
    const char *texts[2] = {"key 'general.alignment': alignment 48 is not a power of two",
                            "key 'general.alignment': alignment 0 is not a power of two"};
    for (int i = 0; i < 2; i++) {
        b.n = 0;
        b_header(&b, 3, 0, 2), b_kv_u32(&b, "x", 0);
        size_t at = b.n;
        b_kv_u32(&b, "general.alignment", values[i]);
        expect_fail(&b, at, texts[i]);
    }
    b.n = 0;
    b_header(&b, 3, 0, 1), b_kv(&b, "general.alignment", GGUF_TYPE_UINT64), b_u64(&b, 32);
    expect_fail(&b, 24, "key 'general.alignment': type u64, expected u32");
    free(b.p);
}

/* One tensor info after a valid kv; `ne`, `type`, `name` vary. Returns the info's offset. */
static size_t b_one_tensor(bld *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                           uint32_t type, uint64_t offset, size_t data) {
    b->n = 0;
    b_header(b, 3, 1, 1), b_kv_u32(b, "k", 1);
    size_t at = b->n;
    b_tensor(b, name, n_dims, ne, type, offset);
    b_pad(b, 32);
    b_data(b, data);
    return at;
}

static void test_bad_tensor_info(void **state) {
    bld b = {0};
    const uint64_t ne8[5] = {8, 1, 1, 1, 1};
    size_t at = b_one_tensor(&b, "", 1, ne8, GGML_TYPE_F32, 0, 32);
    expect_fail(&b, at, "tensor 0 name: empty tensor name");
    at = b_one_tensor(&b, "n12345678901234567890123456789012345678901234567890123456789012345", 1,
                      ne8, GGML_TYPE_F32, 0, 32);
    expect_fail(&b, at, "tensor 0 name: tensor name length 66 exceeds the limit of 64");
    at = b_one_tensor(&b, "t.dims", 5, ne8, GGML_TYPE_F32, 0, 64);
    expect_fail(&b, at + 8 + 6, "tensor 't.dims': n_dims 5 is not in 1..4");
    at = b_one_tensor(&b, "t.dims0", 0, ne8, GGML_TYPE_F32, 0, 64);
    expect_fail(&b, at + 8 + 7, "tensor 't.dims0': n_dims 0 is not in 1..4");
    const uint64_t ne_zero[2] = {8, 0};
    at = b_one_tensor(&b, "t.z", 2, ne_zero, GGML_TYPE_F32, 0, 32);
    expect_fail(&b, at + 8 + 3 + 4 + 8, "tensor 't.z': ne[1] is zero");
    const uint64_t ne_big[3] = {1ull << 32, 1ull << 30, 2};
    at = b_one_tensor(&b, "t.big", 3, ne_big, GGML_TYPE_F32, 0, 32);
    expect_fail(&b, at + 8 + 5 + 4 + 16,
                "tensor 't.big': ne[2] = 2 makes the element count overflow");
    const uint64_t ne_bytes[2] = {1ull << 40, 1ull << 22}; /* 2^62 elements, 2^64 bytes of F32 */
    at = b_one_tensor(&b, "t.bytes", 2, ne_bytes, GGML_TYPE_F32, 0, 32);
    expect_fail(&b, at + 8 + 7 + 4 + 16, "tensor 't.bytes': data size overflows");
    at = b_one_tensor(&b, "t.type", 1, ne8, 99, 0, 32);
    expect_fail(&b, at + 8 + 6 + 4 + 8, "tensor 't.type': unknown tensor type 99");
    at = b_one_tensor(&b, "t.q2", 1, ne8, 4 /* Q4_2, removed from ggml */, 0, 32);
    expect_fail(&b, at + 8 + 4 + 4 + 8, "tensor 't.q2': unknown tensor type 4");
    const uint64_t ne48[1] = {48};
    at = b_one_tensor(&b, "t.row", 1, ne48, GGML_TYPE_Q4_0, 0, 32);
    expect_fail(
        &b, at + 8 + 5 + 4 + 8,
        "tensor 't.row': row length ne[0] = 48 is not a multiple of the Q4_0 block size 32");
    free(b.p);
}

static void test_bad_tensor_data(void **state) {
    bld b = {0};
    const uint64_t ne8[1] = {8};
    size_t at = b_one_tensor(&b, "t.mis", 1, ne8, GGML_TYPE_F32, 16, 64);
    expect_fail(&b, at + 8 + 5 + 4 + 8 + 4,
                "tensor 't.mis': data offset 16 is not a multiple of alignment 32");
    at = b_one_tensor(&b, "t.end", 1, ne8, GGML_TYPE_F32, 0, 31);
    expect_fail(&b, at + 8 + 5 + 4 + 8 + 4, "tensor 't.end': data runs past end of file");
    at = b_one_tensor(&b, "t.far", 1, ne8, GGML_TYPE_F32, UINT64_MAX - 31, 32);
    expect_fail(&b, at + 8 + 5 + 4 + 8 + 4, "tensor 't.far': data runs past end of file");
    /* Overlap: a [0, 64) and b [32, 64) under alignment 32. */
    const uint64_t ne16[1] = {16};
    b.n = 0;
    b_header(&b, 3, 2, 0);
    b_tensor(&b, "a", 1, ne16, GGML_TYPE_F32, 0);
    at = b_tensor(&b, "b", 1, ne8, GGML_TYPE_F32, 32);
    b_pad(&b, 32), b_data(&b, 64);
    expect_fail(&b, at, "tensor 'b': data [32, 64) overlaps tensor 'a' [0, 64)");
    /* Duplicate tensor names. */
    b.n = 0;
    b_header(&b, 3, 2, 0);
    b_tensor(&b, "same", 1, ne8, GGML_TYPE_F32, 0);
    at = b.n;
    b_tensor(&b, "same", 1, ne8, GGML_TYPE_F32, 32);
    b_pad(&b, 32), b_data(&b, 64);
    expect_fail(&b, at, "tensor 'same': duplicate tensor name (first is tensor 0)");
    /* Data section past the end: the file stops right after the infos (not aligned). */
    b.n = 0;
    b_header(&b, 3, 1, 0);
    b_tensor(&b, "t", 1, ne8, GGML_TYPE_F32, 0);
    at = b.n;
    expect_fail(&b, at, "tensor data: data section starts at 64, past end of file (57 bytes)");
    free(b.p);
}

/* Every prefix of a valid image fails cleanly with a message naming the file and an offset. */
static void test_truncated_everywhere(void **state) {
    bld b = {0};
    rich_layout L;
    b_rich(&b, 3, &L);
    char err[512];
    for (size_t n = 0; n < b.n; n++) {
        gguf_file *g = NULL;
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy so ASan sees any over-read */
        memcpy(copy, b.p, n);
        err[0] = '\0';
        int rc = gguf_open_memory(&g, copy, n, "trunc.gguf", err, sizeof err);
        if (rc != -1 || g || strncmp(err, "gguf: trunc.gguf: offset ", 25) != 0)
            fail_msg("length %zu of %zu: rc %d, message '%s'", n, b.n, rc, err);
        free(copy);
    }
    free(b.p);
}

/* ---- real files against the Python gguf package -------------------------------------------- */

static size_t hex_decode(const char *hex, uint8_t *out, size_t cap) {
    size_t n = 0;
    assert_int_equal(hex[0], 'x');
    for (const char *h = hex + 1; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        assert_int_equal(sscanf(h, "%2x", &v), 1);
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* Little-endian integer element i of an integer array, read here independently of the reader. */
static int64_t raw_int_elem(const gguf_kv *kv, uint64_t i, int *is_unsigned, uint64_t *u) {
    static const int size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    int n = size[kv->arr_type];
    const uint8_t *p = (const uint8_t *)kv->arr_data + i * (uint64_t)n;
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = (v << 8) | p[k];
    *u = v;
    *is_unsigned = kv->arr_type == GGUF_TYPE_UINT8 || kv->arr_type == GGUF_TYPE_UINT16 ||
                   kv->arr_type == GGUF_TYPE_UINT32 || kv->arr_type == GGUF_TYPE_UINT64 ||
                   kv->arr_type == GGUF_TYPE_BOOL;
    if (!*is_unsigned && n < 8 && ((v >> (8 * n - 1)) & 1)) v |= ~0ull << (8 * n);
    return (int64_t)v;
}

static void check_value(const gguf_file *g, const gguf_kv *kv, gguf_type t, const char *val,
                        const char *what, uint64_t index) {
    static uint8_t bytes[1 << 16];
    char err[512];
    if (t == GGUF_TYPE_STRING) {
        size_t n = hex_decode(val, bytes, sizeof bytes);
        gguf_str s = kv->v.str;
        gguf_str *arr = NULL;
        uint64_t count = 0;
        if (kv->type == GGUF_TYPE_ARRAY) {
            if (gguf_get_str_array(g, what, &arr, &count, err, sizeof err)) fail_msg("%s", err);
            s = arr[index];
        }
        if (s.len != n || memcmp(s.ptr, bytes, n) != 0)
            fail_msg("%s[%llu]: string differs", what, (unsigned long long)index);
        free(arr);
    } else if (t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64) {
        double want = strtod(val, NULL), got = kv->v.f64;
        if (kv->type == GGUF_TYPE_ARRAY) {
            float *fv = NULL;
            uint64_t count = 0;
            if (gguf_get_f32_array(g, what, &fv, &count, err, sizeof err)) fail_msg("%s", err);
            got = fv[index];
            free(fv);
        }
        if (got != want)
            fail_msg("%s[%llu]: %.17g != %.17g", what, (unsigned long long)index, got, want);
    } else if (kv->type == GGUF_TYPE_ARRAY) {
        int is_u;
        uint64_t u;
        int64_t v = raw_int_elem(kv, index, &is_u, &u);
        if (is_u)
            assert_true(u == strtoull(val, NULL, 10));
        else
            assert_true(v == strtoll(val, NULL, 10));
        int32_t *iv = NULL;
        uint64_t count = 0;
        if (t != GGUF_TYPE_BOOL && (is_u ? u <= INT32_MAX : (v >= INT32_MIN && v <= INT32_MAX))) {
            if (gguf_get_i32_array(g, what, &iv, &count, err, sizeof err)) fail_msg("%s", err);
            assert_int_equal(iv[index], strtoll(val, NULL, 10));
            free(iv);
        }
    } else if (t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 ||
               t == GGUF_TYPE_INT64) {
        assert_true(kv->v.i64 == strtoll(val, NULL, 10));
    } else {
        assert_true(kv->v.u64 == strtoull(val, NULL, 10));
    }
}

/* Open `gguf_path` and compare every record of `fixture` (format: see make_gguf_fixtures.py). */
static void check_against_fixture(const char *gguf_path, const char *fixture) {
    char err[512], line[70000], a[256], b[65536 * 2 + 8];
    gguf_file *g = NULL;
    if (gguf_open(&g, gguf_path, err, sizeof err)) fail_msg("%s", err);
    FILE *f = fopen(fixture, "r");
    if (!f) fail_msg("cannot open fixture %s", fixture);
    uint64_t n_kv_seen = 0, n_tensor_seen = 0, n_elem_seen = 0;
    unsigned long long h[6];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "header %llu %llu %llu %llu %llu %llu", &h[0], &h[1], &h[2], &h[3], &h[4],
                   &h[5]) == 6) {
            assert_int_equal(g->version, h[0]);
            assert_int_equal(g->n_kv, h[1]);
            assert_int_equal(g->n_tensors, h[2]);
            assert_int_equal(g->alignment, h[3]);
            assert_int_equal(g->data_offset, h[4]);
            assert_int_equal(g->file_size, h[5]);
            continue;
        }
        int t, at;
        long long an;
        unsigned long long idx, ne[4], off, nb;
        unsigned type, nd;
        if (sscanf(line, "kv %255s %d %d %lld %s", a, &t, &at, &an, b) == 5) {
            const gguf_kv *kv = gguf_find_kv(g, a);
            if (!kv) fail_msg("key %s missing", a);
            assert_ptr_equal(kv, &g->kv[n_kv_seen]); /* same order as in the file */
            n_kv_seen++;
            assert_int_equal(kv->type, t);
            if (t == GGUF_TYPE_ARRAY) {
                assert_int_equal(kv->arr_type, at);
                assert_int_equal(kv->arr_n, an);
            } else {
                check_value(g, kv, (gguf_type)t, b, a, 0);
            }
        } else if (sscanf(line, "elem %255s %llu %s", a, &idx, b) == 3) {
            const gguf_kv *kv = gguf_find_kv(g, a);
            assert_non_null(kv);
            check_value(g, kv, kv->arr_type, b, a, idx);
            n_elem_seen++;
        } else if (sscanf(line, "tensor %255s %u %u %llu %llu %llu %llu %llu %llu", a, &type, &nd,
                          &ne[0], &ne[1], &ne[2], &ne[3], &off, &nb) == 9) {
            const gguf_tensor *tn = gguf_find_tensor(g, a);
            if (!tn) fail_msg("tensor %s missing", a);
            assert_ptr_equal(tn, &g->tensors[n_tensor_seen]);
            n_tensor_seen++;
            assert_int_equal(tn->type, type);
            assert_int_equal(tn->n_dims, nd);
            for (int d = 0; d < 4; d++) assert_int_equal(tn->ne[d], ne[d]);
            assert_int_equal(g->data_offset + tn->offset, off);
            assert_int_equal(tn->n_bytes, nb);
            assert_ptr_equal(tn->data, g->map + off);
        } else {
            fail_msg("bad fixture line: %s", line);
        }
    }
    fclose(f);
    assert_int_equal(n_kv_seen, g->n_kv);
    assert_int_equal(n_tensor_seen, g->n_tensors);
    assert_true(n_elem_seen > 0);
    gguf_close(g);
}

static void test_python_tiny_file(void **state) {
    check_against_fixture(BOSCH_SOURCE_DIR "/tests/fixtures/gguf_tiny.gguf",
                          BOSCH_SOURCE_DIR "/tests/fixtures/gguf_tiny.txt");
}

static const char *model_path(void) {
    const char *p = getenv("BOSCH_MODEL");
    return (p && *p) ? p : BOSCH_DEFAULT_MODEL;
}

static void test_real_model(void **state) {
    check_against_fixture(model_path(),
                          BOSCH_SOURCE_DIR "/tests/fixtures/gguf_smollm2_tensors.txt");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_v3_and_v2),
        cmocka_unit_test(test_getters),
        cmocka_unit_test(test_default_alignment_and_open_file),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_kv),
        cmocka_unit_test(test_bad_alignment),
        cmocka_unit_test(test_bad_tensor_info),
        cmocka_unit_test(test_bad_tensor_data),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_python_tiny_file),
    };
    int failed = cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
    if (failed) return failed;
    if (access(model_path(), R_OK) != 0) {
        fprintf(stderr, "test_gguf: model %s missing: real-model test skipped\n", model_path());
        return 77;
    }
    const struct CMUnitTest model_tests[] = {cmocka_unit_test(test_real_model)};
    return cmocka_run_group_tests_name("gguf_model", model_tests, NULL, NULL);
}
