/* test_quant.c — dequantization and fp16/bf16 conversions against an independent implementation.
 *
 * Reference values come from the PyPI `gguf` package (gguf.quants, numpy code) and numpy's float16,
 * written to tests/fixtures/quant_* by scripts/fixtures/make_quant_fixtures.py (layouts documented
 * there, summarized here):
 *   quant_blocks.bin      "BQB1", u32 n_records; record = u32 type, u32 origin (0 quantized random
 *                         floats, 1 random bytes, 2 real model blocks), u32 n_elems, u32 n_bytes,
 *                         u64 model_offset, raw[n_bytes], f32 expected[n_elems].
 *   quant_convert.txt     "h2f|f2h|f2b <in hex> <out hex>" and "h2f_all_fnv1a64 <hex>".
 *   quant_model_sums.txt  per tensor: name type n_elems data_offset sum wsum asum (float64).
 * Tolerance: none, dequantized values are compared bit for bit. Even where the compiler fuses
 * Q4_1's d*q + m or Q4_K's (d*sc)*q - dmin*m into an FMA, the products are exact in fp32 (an fp16
 * d has 11 significant bits, scales 6, q 4), so both orders round once, at the add. The whole-model
 * sums allow 1e-8 * asum for the float64 summation order (worst case n * 2^-53 = 3.2e-9).
 * The whole-model test needs the model (BOSCH_MODEL or BOSCH_DEFAULT_MODEL); without it the
 * program runs the other tests and exits 77 (skip) if they pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include <cmocka.h>

#include "engine/quant.h"

static const uint32_t ALL_TYPES[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                                     GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_BF16};
#define N_TYPES (sizeof ALL_TYPES / sizeof ALL_TYPES[0])

static int type_index(uint32_t t) {
    for (size_t i = 0; i < N_TYPES; i++)
        if (ALL_TYPES[i] == t) return (int)i;
    return -1;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static const char *model_path(void) {
    const char *p = getenv("BOSCH_MODEL");
    return (p && *p) ? p : BOSCH_DEFAULT_MODEL;
}

static uint8_t *read_whole(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

/* ---- quant_blocks.bin ------------------------------------------------------------------ */

typedef struct {
    uint32_t type, origin, n_elems, n_bytes;
    uint64_t model_offset;
    const uint8_t *raw;
    float *expected; /* copied out: the file's floats are unaligned */
} block_record;

typedef struct {
    uint8_t *file;
    size_t n;
    block_record *rec;
} block_fixture;

static void load_blocks(block_fixture *fx) {
    size_t len = 0;
    fx->file = read_whole(BOSCH_SOURCE_DIR "/tests/fixtures/quant_blocks.bin", &len);
    assert_non_null(fx->file);
    assert_true(len >= 8);
    assert_memory_equal(fx->file, "BQB1", 4);
    fx->n = rd32(fx->file + 4);
    fx->rec = calloc(fx->n, sizeof *fx->rec);
    size_t off = 8;
    for (size_t i = 0; i < fx->n; i++) {
        block_record *r = &fx->rec[i];
        assert_true(off + 24 <= len);
        const uint8_t *h = fx->file + off;
        r->type = rd32(h);
        r->origin = rd32(h + 4);
        r->n_elems = rd32(h + 8);
        r->n_bytes = rd32(h + 12);
        r->model_offset = rd32(h + 16) | (uint64_t)rd32(h + 20) << 32;
        off += 24;
        size_t need = r->n_bytes + (size_t)r->n_elems * 4;
        assert_true(off + need <= len);
        r->raw = fx->file + off;
        off += r->n_bytes;
        r->expected = malloc((size_t)r->n_elems * 4);
        memcpy(r->expected, fx->file + off, (size_t)r->n_elems * 4);
        off += (size_t)r->n_elems * 4;
    }
    assert_int_equal(off, len);
}

static void free_blocks(block_fixture *fx) {
    for (size_t i = 0; i < fx->n; i++) free(fx->rec[i].expected);
    free(fx->rec);
    free(fx->file);
}

/* Compares got[] with the record's expected values (element index modulo n_elems); returns the
 * number of mismatches and prints the first few. */
static size_t compare_record(const block_record *r, const float *got, size_t n, const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = i % r->n_elems;
        float e = r->expected[k];
        if (bits_of(got[i]) != bits_of(e) && bad++ < 5)
            fprintf(stderr, "%s %s origin %u: element %zu (block %zu): got %.9g (%08x), want %.9g (%08x)\n",
                    what, quant_type_name(r->type), r->origin, i, k / quant_block_elems(r->type), got[i],
                    bits_of(got[i]), e, bits_of(e));
    }
    return bad;
}

/* Every record: whole record in one call, block by block, and from an unaligned copy. */
static void test_blocks_against_gguf(void **state) {
    (void)state;
    block_fixture fx;
    load_blocks(&fx);
    int seen[N_TYPES][3] = {{0}};
    size_t bad = 0;
    for (size_t i = 0; i < fx.n; i++) {
        const block_record *r = &fx.rec[i];
        int ti = type_index(r->type);
        assert_true(ti >= 0);
        assert_true(r->origin <= 2);
        seen[ti][r->origin]++;
        assert_int_equal(quant_row_bytes(r->type, r->n_elems), r->n_bytes);

        float *got = malloc((size_t)r->n_elems * 4);
        assert_int_equal(quant_dequantize(r->type, r->raw, got, r->n_elems), 0);
        bad += compare_record(r, got, r->n_elems, "whole");

        size_t be = quant_block_elems(r->type), bb = quant_block_bytes(r->type);
        memset(got, 0xff, (size_t)r->n_elems * 4);
        for (size_t b = 0; b < r->n_elems / be; b++)
            assert_int_equal(quant_dequantize(r->type, r->raw + b * bb, got + b * be, be), 0);
        bad += compare_record(r, got, r->n_elems, "per-block");

        uint8_t *odd = malloc(r->n_bytes + 1);
        memcpy(odd + 1, r->raw, r->n_bytes);
        memset(got, 0xff, (size_t)r->n_elems * 4);
        assert_int_equal(quant_dequantize(r->type, odd + 1, got, r->n_elems), 0);
        bad += compare_record(r, got, r->n_elems, "unaligned");
        free(odd);
        free(got);
    }
    assert_int_equal(bad, 0);
    /* Coverage: every type from random data; real blocks of the default model's three types. */
    for (size_t t = 0; t < N_TYPES; t++) assert_true(seen[t][0] + seen[t][1] > 0);
    assert_true(seen[type_index(GGML_TYPE_Q4_1)][2] > 0);
    assert_true(seen[type_index(GGML_TYPE_Q8_0)][2] > 0);
    assert_true(seen[type_index(GGML_TYPE_F32)][2] > 0);
    free_blocks(&fx);
}

/* The OpenMP path: each record tiled to > 2^20 elements (a count that is not a multiple of the
 * internal chunk) must give the reference values at every position. */
static void test_blocks_parallel_path(void **state) {
    (void)state;
    block_fixture fx;
    load_blocks(&fx);
    int done[N_TYPES] = {0};
    size_t bad = 0;
    for (size_t i = 0; i < fx.n; i++) {
        const block_record *r = &fx.rec[i];
        int ti = type_index(r->type);
        if (done[ti]++) continue; /* one record per type is enough here */
        size_t reps = (1100001 + r->n_elems - 1) / r->n_elems;
        size_t n = reps * r->n_elems;
        uint8_t *src = malloc(reps * r->n_bytes);
        for (size_t k = 0; k < reps; k++) memcpy(src + k * r->n_bytes, r->raw, r->n_bytes);
        float *got = malloc(n * 4);
        assert_int_equal(quant_dequantize(r->type, src, got, n), 0);
        bad += compare_record(r, got, n, "parallel");
        free(got);
        free(src);
    }
    assert_int_equal(bad, 0);
    free_blocks(&fx);
}

/* The real blocks in the fixture are the bytes at their recorded offsets in the model file. */
static void test_blocks_are_from_model(void **state) {
    (void)state;
    block_fixture fx;
    load_blocks(&fx);
    FILE *f = fopen(model_path(), "rb");
    assert_non_null(f);
    size_t n_real = 0;
    for (size_t i = 0; i < fx.n; i++) {
        const block_record *r = &fx.rec[i];
        if (r->origin != 2) continue;
        uint8_t *buf = malloc(r->n_bytes);
        assert_int_equal(fseek(f, (long)r->model_offset, SEEK_SET), 0);
        assert_int_equal(fread(buf, 1, r->n_bytes, f), r->n_bytes);
        assert_memory_equal(buf, r->raw, r->n_bytes);
        free(buf);
        n_real++;
    }
    fclose(f);
    assert_true(n_real >= 5);
    free_blocks(&fx);
}

/* ---- conversions --------------------------------------------------------------------- */

static uint64_t fnv1a_update(uint64_t h, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

static void test_conversions_against_numpy(void **state) {
    (void)state;
    size_t len = 0;
    char *text = (char *)read_whole(BOSCH_SOURCE_DIR "/tests/fixtures/quant_convert.txt", &len);
    assert_non_null(text);
    size_t n_h2f = 0, n_f2h = 0, n_f2b = 0, n_fnv = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kind[32];
        unsigned long long a = 0, b = 0;
        if (line[0] == '#') continue;
        if (sscanf(line, "%31s %llx %llx", kind, &a, &b) < 2) fail_msg("bad line: %s", line);
        if (strcmp(kind, "h2f") == 0) {
            uint32_t got = bits_of(quant_fp16_to_fp32((uint16_t)a));
            if (got != b && bad++ < 10) fprintf(stderr, "h2f %04llx: got %08x want %08llx\n", a, got, b);
            n_h2f++;
        } else if (strcmp(kind, "f2h") == 0) {
            uint16_t got = quant_fp32_to_fp16(float_of((uint32_t)a));
            if (got != b && bad++ < 10) fprintf(stderr, "f2h %08llx: got %04x want %04llx\n", a, got, b);
            n_f2h++;
        } else if (strcmp(kind, "f2b") == 0) {
            uint16_t got = quant_fp32_to_bf16(float_of((uint32_t)a));
            if (got != b && bad++ < 10) fprintf(stderr, "f2b %08llx: got %04x want %04llx\n", a, got, b);
            /* bf16 -> fp32 is exact: the upper half of the fp32 pattern. */
            if (bits_of(quant_bf16_to_fp32((uint16_t)b)) != (uint32_t)b << 16) bad++;
            n_f2b++;
        } else if (strcmp(kind, "h2f_all_fnv1a64") == 0) {
            uint64_t h = 0xcbf29ce484222325ull;
            for (uint32_t v = 0; v < 65536; v++)
                h = fnv1a_update(h, bits_of(quant_fp16_to_fp32((uint16_t)v)));
            if (h != a) {
                fprintf(stderr, "fp16->fp32 over all 65536 patterns: fnv %016llx want %016llx\n",
                        (unsigned long long)h, a);
                bad++;
            }
            n_fnv++;
        } else {
            fail_msg("unknown kind: %s", kind);
        }
    }
    free(text);
    assert_int_equal(bad, 0);
    assert_true(n_h2f >= 20 && n_f2h >= 500 && n_f2b >= 500 && n_fnv == 1);
}

/* The F16 dequantizer path agrees with the scalar conversion for every pattern (incl. NaN). */
static void test_f16_bulk_matches_scalar(void **state) {
    (void)state;
    uint8_t src[65536 * 2];
    static float got[65536];
    for (uint32_t v = 0; v < 65536; v++) {
        src[2 * v] = (uint8_t)v;
        src[2 * v + 1] = (uint8_t)(v >> 8);
    }
    assert_int_equal(quant_dequantize(GGML_TYPE_F16, src, got, 65536), 0);
    for (uint32_t v = 0; v < 65536; v++)
        assert_int_equal(bits_of(got[v]), bits_of(quant_fp16_to_fp32((uint16_t)v)));
    assert_int_equal(quant_dequantize(GGML_TYPE_BF16, src, got, 65536), 0);
    for (uint32_t v = 0; v < 65536; v++) assert_int_equal(bits_of(got[v]), v << 16);
}

/* ---- sizes and bad input ---------------------------------------------------------------- */

static void test_sizes_and_bad_input(void **state) {
    (void)state;
    /* Block sizes from the GGUF spec (gguf.GGML_QUANT_SIZES / ggml-common.h). */
    static const struct {
        uint32_t t;
        size_t elems, bytes;
        const char *name;
    } spec[] = {
        {0, 1, 4, "F32"},    {1, 1, 2, "F16"},       {2, 32, 18, "Q4_0"},    {3, 32, 20, "Q4_1"},
        {8, 32, 34, "Q8_0"}, {12, 256, 144, "Q4_K"}, {14, 256, 210, "Q6_K"}, {30, 1, 2, "BF16"},
    };
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        assert_true(quant_type_supported(spec[i].t));
        assert_string_equal(quant_type_name(spec[i].t), spec[i].name);
        assert_int_equal(quant_block_elems(spec[i].t), spec[i].elems);
        assert_int_equal(quant_block_bytes(spec[i].t), spec[i].bytes);
        assert_int_equal(quant_row_bytes(spec[i].t, 768), 768 / spec[i].elems * spec[i].bytes);
        assert_int_equal(quant_row_bytes(spec[i].t, 0), 0);
    }
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q4_1, 31), 0);
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q4_1, 33), 0);
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q4_K, 128), 0);
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q6_K, 576), 0);
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q8_0, 1536), 48 * 34);
    /* A count whose byte size overflows size_t. */
    assert_int_equal(quant_row_bytes(GGML_TYPE_Q8_0, UINT64_MAX - 31), 0);
    assert_int_equal(quant_row_bytes(GGML_TYPE_F32, (uint64_t)1 << 62), 0);

    /* Unsupported ids: Q5_0 (6), Q5_1 (7), Q5_K (13), IQ types, out of range. */
    static const uint32_t bad_types[] = {4, 5, 6, 7, 9, 10, 11, 13, 15, 16, 29, 31, 39, 1000, UINT32_MAX};
    uint8_t src[64] = {0};
    float dst[64];
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        uint32_t t = bad_types[i];
        assert_false(quant_type_supported(t));
        assert_string_equal(quant_type_name(t), "unknown");
        assert_int_equal(quant_block_elems(t), 0);
        assert_int_equal(quant_block_bytes(t), 0);
        assert_int_equal(quant_row_bytes(t, 32), 0);
        assert_int_equal(quant_dequantize(t, src, dst, 32), -1);
    }
    /* A count that is not a whole number of blocks is refused and writes nothing. */
    for (int i = 0; i < 64; i++) dst[i] = 7.0f;
    assert_int_equal(quant_dequantize(GGML_TYPE_Q4_0, src, dst, 16), -1);
    assert_int_equal(quant_dequantize(GGML_TYPE_Q8_0, src, dst, 33), -1);
    assert_int_equal(quant_dequantize(GGML_TYPE_Q6_K, src, dst, 32), -1);
    for (int i = 0; i < 64; i++) assert_true(dst[i] == 7.0f);
    assert_int_equal(quant_dequantize(GGML_TYPE_Q4_1, src, dst, 0), 0);
}

/* ---- the whole default model ------------------------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every tensor of the model, dequantized whole from the file, against gguf's float64 sums. */
static void test_whole_model_sums(void **state) {
    (void)state;
    size_t len = 0;
    char *text = (char *)read_whole(BOSCH_SOURCE_DIR "/tests/fixtures/quant_model_sums.txt", &len);
    assert_non_null(text);
    FILE *f = fopen(model_path(), "rb");
    assert_non_null(f);
    size_t n_tensors = 0, bad = 0;
    double dq_s = 0, src_bytes = 0, dst_bytes = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char name[128];
        unsigned type;
        unsigned long long n, offset;
        double ref_sum, ref_wsum, ref_asum;
        assert_int_equal(sscanf(line, "%127s %u %llu %llu %lf %lf %lf", name, &type, &n, &offset, &ref_sum,
                                &ref_wsum, &ref_asum),
                         7);
        size_t nb = quant_row_bytes(type, n);
        assert_true(nb > 0);
        uint8_t *src = malloc(nb);
        float *dst = malloc((size_t)n * 4);
        assert_non_null(src);
        assert_non_null(dst);
        assert_int_equal(fseek(f, (long)offset, SEEK_SET), 0);
        assert_int_equal(fread(src, 1, nb, f), nb);
        double t0 = now_s();
        assert_int_equal(quant_dequantize(type, src, dst, n), 0);
        dq_s += now_s() - t0;
        src_bytes += (double)nb;
        dst_bytes += (double)n * 4;
        double sum = 0, wsum = 0;
        for (size_t i = 0; i < n; i++) {
            sum += dst[i];
            wsum += dst[i] * (double)(i % 13 + 1);
        }
        double tol = 1e-8 * ref_asum + 1e-30;
        if ((fabs(sum - ref_sum) > tol || fabs(wsum - ref_wsum) > tol) && bad++ < 10)
            fprintf(stderr, "%s (%s, %llu): sum %.12g want %.12g, wsum %.12g want %.12g\n", name,
                    quant_type_name(type), n, sum, ref_sum, wsum, ref_wsum);
        free(src);
        free(dst);
        n_tensors++;
    }
    fclose(f);
    free(text);
    printf("# dequantized %zu tensors: %.1f MB -> %.1f MB fp32 in %.3f s (%.0f MB/s of fp32 out)\n",
           n_tensors, src_bytes / 1e6, dst_bytes / 1e6, dq_s, dst_bytes / 1e6 / dq_s);
    assert_int_equal(bad, 0);
    assert_true(n_tensors > 0);
}

int main(void) {
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_sizes_and_bad_input),     cmocka_unit_test(test_conversions_against_numpy),
        cmocka_unit_test(test_f16_bulk_matches_scalar), cmocka_unit_test(test_blocks_against_gguf),
        cmocka_unit_test(test_blocks_parallel_path),
    };
    const struct CMUnitTest with_model[] = {
        cmocka_unit_test(test_blocks_are_from_model),
        cmocka_unit_test(test_whole_model_sums),
    };
    int failed = cmocka_run_group_tests_name("quant", pure, NULL, NULL);
    FILE *f = fopen(model_path(), "rb");
    if (!f) {
        fprintf(stderr, "test_quant: model %s not found; model tests skipped\n", model_path());
        return failed ? 1 : 77;
    }
    fclose(f);
    failed += cmocka_run_group_tests_name("quant_model", with_model, NULL, NULL);
    return failed ? 1 : 0;
}
