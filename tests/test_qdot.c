/* test_qdot.c — the decode dot products (engine/qdot.h) against an independent reference.
 *
 * Weights: the records of tests/fixtures/quant_blocks.bin (scripts/fixtures/make_quant_fixtures.py):
 * blocks of every type (random floats quantized, random bytes, real blocks of the default model)
 * with their values as dequantized by the PyPI gguf package. Activations: random fp32 vectors
 * quantized by qdot_quantize_act. Reference: the float64 sum over elements of
 * (gguf's weight value) x (the dequantized activation d * q) — exactly what the integer kernels
 * compute, so the only difference allowed is fp32 rounding of the block sums:
 * |ours - ref| <= 2e-5 * sum |w x| + 1e-30. F32/F16/BF16 rows dot the fp32 activation itself.
 * Every kernel level this CPU supports (scalar, AVX2, AVX-512 VNNI) is checked.
 * Also: the activation quantization's own invariants (|x - d q| <= d/2, |q| <= 127, the sums).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/qdot.h"
#include "engine/quant.h"

typedef struct {
    uint32_t type, origin, n_elems, n_bytes;
    uint8_t *raw;
    float *expected;
} record;

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int load_records(record **out, int *n_out) {
    FILE *f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/quant_blocks.bin", "rb");
    if (!f) return -1;
    uint8_t h[8];
    if (fread(h, 1, 8, f) != 8 || memcmp(h, "BQB1", 4)) return fclose(f), -1;
    int n = (int)rd32(h + 4);
    record *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        uint8_t m[24];
        if (fread(m, 1, 24, f) != 24) return fclose(f), -1;
        r[i].type = rd32(m), r[i].origin = rd32(m + 4), r[i].n_elems = rd32(m + 8),
        r[i].n_bytes = rd32(m + 12);
        r[i].raw = malloc(r[i].n_bytes);
        r[i].expected = malloc(sizeof(float) * r[i].n_elems);
        if (fread(r[i].raw, 1, r[i].n_bytes, f) != r[i].n_bytes ||
            fread(r[i].expected, sizeof(float), r[i].n_elems, f) != r[i].n_elems)
            return fclose(f), -1;
    }
    fclose(f);
    *out = r;
    *n_out = n;
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* splitmix64 -> [0, 1) */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static void test_quantize_act(void **state) {
    (void)state;
    enum { N = 256 };
    float x[N];
    qdot_act_block b[N / 32];
    for (int i = 0; i < N; i++) x[i] = (float)((urand() - 0.5) * (i < 32 ? 0.0 : i < 64 ? 1e-3 : 40.0));
    qdot_quantize_act(x, N, b);
    assert_true(b[0].d == 0.0f && b[0].s == 0.0f); /* an all-zero block */
    for (int k = 0; k < N / 32; k++) {
        int s0 = 0, s1 = 0;
        for (int i = 0; i < 32; i++) {
            float v = x[32 * k + i];
            assert_true(abs(b[k].q[i]) <= 127);
            assert_true(fabsf(v - b[k].d * b[k].q[i]) <= 0.5f * b[k].d * 1.0001f + 1e-30f);
            if (i < 16)
                s0 += b[k].q[i];
            else
                s1 += b[k].q[i];
        }
        assert_int_equal(b[k].bsum[0], s0);
        assert_int_equal(b[k].bsum[1], s1);
        assert_true(fabsf(b[k].s - b[k].d * (float)(s0 + s1)) <= 1e-6f * fabsf(b[k].s) + 1e-30f);
    }
}

static void test_rows_against_gguf(void **state) {
    (void)state;
    record *r = NULL;
    int n = 0;
    assert_int_equal(load_records(&r, &n), 0);
    int checked[3][32] = {{0}};
    for (int i = 0; i < n; i++) {
        const uint32_t t = r[i].type;
        const int ne = (int)r[i].n_elems;
        if (!qdot_type_supported(t) || ne % 32) continue;
        float *x = malloc(sizeof(float) * ne), *xd = malloc(sizeof(float) * ne);
        qdot_act_block *xq = malloc(sizeof *xq * (size_t)(ne / 32 + 1));
        for (int j = 0; j < ne; j++) x[j] = (float)((urand() - 0.5) * 6.0);
        const int uses = qdot_type_uses_act(t);
        if (uses) qdot_quantize_act(x, ne, xq);
        for (int j = 0; j < ne; j++) xd[j] = uses ? xq[j / 32].d * xq[j / 32].q[j % 32] : x[j];
        double ref = 0, mag = 0;
        for (int j = 0; j < ne; j++) {
            ref += (double)r[i].expected[j] * xd[j];
            mag += fabs((double)r[i].expected[j] * xd[j]);
        }
        for (int lv = QDOT_SCALAR; lv <= (int)qdot_level_best(); lv++) {
            double got = qdot_row((qdot_level)lv, t, r[i].raw, ne, xq, x);
            if (!(fabs(got - ref) <= 2e-5 * mag + 1e-30)) {
                fprintf(stderr, "%s (origin %u, %d elems) at %s: %.9g, reference %.9g (sum |wx| %.3g)\n",
                        quant_type_name(t), r[i].origin, ne, qdot_level_name((qdot_level)lv), got, ref, mag);
                fail();
            }
            checked[lv][t]++;
        }
        /* qdot_rows over the same data seen as rows of 32 or 256 */
        const int blk = (int)quant_block_elems(t) > 32 ? (int)quant_block_elems(t) : 32;
        if (ne % blk == 0 && ne / blk >= 2) {
            const int rows = ne / blk;
            const size_t rb = quant_row_bytes(t, (uint64_t)blk);
            float *y = malloc(sizeof(float) * rows);
            qdot_rows(qdot_level_best(), t, r[i].raw, rb, 1, rows - 1, blk, xq, x, y);
            for (int k = 1; k < rows; k++) {
                float one = qdot_row(qdot_level_best(), t, r[i].raw + k * rb, blk, xq, x);
                assert_true(y[k - 1] == one); /* xq/x are the first row's: the same call, same result */
            }
            free(y);
        }
        free(x), free(xd), free(xq);
    }
    const uint32_t want[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,
                             GGML_TYPE_Q4_1, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K};
    for (int lv = QDOT_SCALAR; lv <= (int)qdot_level_best(); lv++) {
        fprintf(stderr, "%-11s:", qdot_level_name((qdot_level)lv));
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            fprintf(stderr, " %s %d", quant_type_name(want[k]), checked[lv][want[k]]);
            assert_true(checked[lv][want[k]] >= 1);
        }
        fprintf(stderr, "\n");
    }
    for (int i = 0; i < n; i++) free(r[i].raw), free(r[i].expected);
    free(r);
}

int main(void) {
    fprintf(stderr, "best kernel level on this CPU: %s\n", qdot_level_name(qdot_level_best()));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_act),
        cmocka_unit_test(test_rows_against_gguf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
