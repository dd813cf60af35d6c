/* test_ops.c — RMSNorm, RoPE (adjacent-pair and NEOX layouts), SwiGLU, softmax against float64
 * numpy values. The REF_* tables below are the output of
 *   python3 scripts/fixtures/make_logit_fixtures.py ops
 * (numpy, independent of this code). RoPE is checked at positions 3, 8,000 and 123,457, where
 * angles computed naively in fp32 are off by ~1e-4 rad.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ops.h"

static const double REF_RMSNORM[8] = {0.399758938, -0.899457611, 1.75893933, 0.719566089, -0.19188429, 0.879469664, 0, -1.23125753};
static const double REF_ROPE_ADJ_3[16] = {0.777666752, 0.495211492, -0.42574041, -0.478273042, -0.298089162, -0.202837007, -0.0999999858, -5.33483798e-05, -0.127223251, -0.183886499, 0.228579717, 0.44469238, 0.494285486, 0.604716346, 0.699573113, 0.800373325};
static const double REF_ROPE_NEOX_3[16] = {0.73533075, -0.557901419, -0.499028831, -0.399999943, 0.198213743, -0.29790268, -0.104738845, -0.000213393519, -0.169559254, 0.0964187078, 0.293345817, 0.399573156, -0.480884247, 0.625062743, 0.702814507, 0.80021328};
static const double REF_ROPE_ADJ_8000[16] = {0.55275423, -0.737877199, 0.171250968, 0.61698712, -0.262956649, -0.246685632, -0.01476312, -0.0989042481, -0.193004094, 0.112913329, -0.00909470835, -0.499917279, 0.394334189, 0.674166558, -0.687892144, 0.810434697};
static const double REF_ROPE_NEOX_8000[16] = {0.25340132, 0.369398938, -0.476697111, -0.0590524801, -0.718183661, 0.513365781, -0.180996862, -0.395616992, -0.492357003, 0.189053262, 0.180593726, -0.732181504, 0.132606867, -0.603538619, 0.739855328, 0.513721953};
static const double REF_ROPE_ADJ_123457[16] = {-0.761195297, 0.520174702, -0.620044674, -0.159826788, -0.0485163931, -0.357276027, 0.0999313932, -0.00370359906, 0.219107156, -0.0446324349, 0.437628551, 0.241828971, -0.119097354, 0.771891068, -0.729148545, -0.773525952};
static const double REF_ROPE_NEOX_123457[16] = {-0.471487249, -0.629250552, -0.255823913, 0.399725573, 0.598080074, 0.0635904269, -0.441082901, -0.0148143962, 0.508815204, 0.428422673, -0.326404874, -0.429354365, 0.0332729368, 0.465246186, 0.688084194, -0.78463675};
static const double REF_SWIGLU[6] = {-0.0711388098, -0.377540669, -0, 0.421632376, -0.548293934, 0.392805516};
static const double REF_SOFTMAX[6] = {0, 0, 0, 0.731058579, 0.268941421, 0};
static const double REF_LOGSUMEXP = 1000.31326169;

static void assert_close(const float *got, const double *want, int n, double tol) {
    for (int i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) > tol)
            fail_msg("element %d: got %.9g want %.9g (tol %g)", i, (double)got[i], want[i], tol);
    }
}

static void test_rmsnorm(void **state) {
    (void)state;
    float x[8] = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f, 1.1f, 0.0f, -2.2f};
    float w[8] = {1.0f, 0.9f, 1.1f, 1.2f, 0.8f, 1.0f, 1.3f, 0.7f};
    float out[8];
    ops_rmsnorm(out, x, w, 8, 1e-5f);
    assert_close(out, REF_RMSNORM, 8, 1e-6);
    /* rows variant, in place, 40 rows (parallel path) */
    float rows[40 * 8];
    for (int r = 0; r < 40; r++)
        for (int i = 0; i < 8; i++) rows[r * 8 + i] = x[i];
    ops_rmsnorm_rows(rows, rows, w, 40, 8, 1e-5f);
    for (int r = 0; r < 40; r++) assert_close(rows + r * 8, REF_RMSNORM, 8, 1e-6);
}

static void rope_case(int pos, int neox, const double *want) {
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)(i * 0.1 - 0.7);
    float c[4], s[4];
    ops_rope_angles(pos, 8, 100000.0f, c, s);
    ops_rope_row(v, 2, 8, 8, neox, c, s);
    assert_close(v, want, 16, 2e-6);
}

static void test_rope_layouts(void **state) {
    (void)state;
    rope_case(3, 0, REF_ROPE_ADJ_3);
    rope_case(3, 1, REF_ROPE_NEOX_3);
    rope_case(8000, 0, REF_ROPE_ADJ_8000);
    rope_case(8000, 1, REF_ROPE_NEOX_8000);
    rope_case(123457, 0, REF_ROPE_ADJ_123457);
    rope_case(123457, 1, REF_ROPE_NEOX_123457);
}

/* ops_rope over a block of positions (and ops_rope_table + ops_rope_apply) equals row-by-row
 * rotation, for q and k. */
static void test_rope_block(void **state) {
    (void)state;
    enum { T = 40, HQ = 3, HK = 1, D = 8 };
    float q[T * HQ * D], k[T * HK * D], q2[T * HQ * D], k2[T * HK * D];
    for (int i = 0; i < T * HQ * D; i++) q[i] = q2[i] = (float)sin(i * 0.37);
    for (int i = 0; i < T * HK * D; i++) k[i] = k2[i] = (float)cos(i * 0.11);
    int pos0 = 7990;
    ops_rope(q, HQ, k, HK, T, pos0, D, D, 100000.0f, 1);
    for (int t = 0; t < T; t++) {
        float c[4], s[4];
        ops_rope_angles(pos0 + t, D, 100000.0f, c, s);
        ops_rope_row(q2 + t * HQ * D, HQ, D, D, 1, c, s);
        ops_rope_row(k2 + t * HK * D, HK, D, D, 1, c, s);
    }
    for (int i = 0; i < T * HQ * D; i++) assert_true(q[i] == q2[i]);
    for (int i = 0; i < T * HK * D; i++) assert_true(k[i] == k2[i]);
    /* precomputed tables give the same result */
    float ct[T * D / 2], st[T * D / 2];
    for (int i = 0; i < T * HQ * D; i++) q2[i] = (float)sin(i * 0.37);
    for (int i = 0; i < T * HK * D; i++) k2[i] = (float)cos(i * 0.11);
    ops_rope_table(pos0, T, D, 100000.0f, ct, st);
    ops_rope_apply(q2, HQ, k2, HK, T, D, D, 1, ct, st);
    for (int i = 0; i < T * HQ * D; i++) assert_true(q[i] == q2[i]);
    for (int i = 0; i < T * HK * D; i++) assert_true(k[i] == k2[i]);
}

/* RoPE's defining property: <rope(q, m), rope(k, n)> depends only on m - n. Checked far out
 * (m ~ 1e5), where fp32 angle arithmetic would break it. Partial rotation (rope_dim < head_dim)
 * leaves the tail untouched. */
static double rot_dot(int m, int n, int neox) {
    float q[16], k[16], c[8], s[8];
    for (int i = 0; i < 16; i++) {
        q[i] = (float)sin(1.0 + i);
        k[i] = (float)cos(2.0 * i);
    }
    ops_rope_angles(m, 16, 10000.0f, c, s);
    ops_rope_row(q, 1, 16, 16, neox, c, s);
    ops_rope_angles(n, 16, 10000.0f, c, s);
    ops_rope_row(k, 1, 16, 16, neox, c, s);
    double d = 0;
    for (int i = 0; i < 16; i++) d += (double)q[i] * k[i];
    return d;
}

static void test_rope_relative(void **state) {
    (void)state;
    for (int neox = 0; neox < 2; neox++) {
        double near = rot_dot(12, 5, neox);
        assert_true(fabs(rot_dot(100012, 100005, neox) - near) < 1e-4);
        assert_true(fabs(rot_dot(8012, 8005, neox) - near) < 1e-4);
    }
    float v[12], c[2], s[2];
    for (int i = 0; i < 12; i++) v[i] = (float)i;
    ops_rope_angles(9, 4, 10000.0f, c, s);
    ops_rope_row(v, 2, 6, 4, 1, c, s);
    assert_true(v[4] == 4.0f && v[5] == 5.0f && v[10] == 10.0f && v[11] == 11.0f);
    assert_true(v[0] != 0.0f || v[2] != 2.0f);
}

static void test_swiglu_softmax(void **state) {
    (void)state;
    float g[6] = {-3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 4.0f};
    float u[6] = {0.5f, 2.0f, -1.0f, 3.0f, -0.75f, 0.1f};
    float o[6];
    ops_swiglu(o, 6, g, 6, u, 6, 1, 6);
    assert_close(o, REF_SWIGLU, 6, 1e-6);
    float z[6] = {1.0f, 2.0f, -3.0f, 1000.0f, 999.0f, 0.5f};
    assert_true(fabs(ops_logsumexp(z, 6) - REF_LOGSUMEXP) < 1e-4);
    assert_int_equal(ops_argmax(z, 6), 3);
    assert_int_equal(ops_argmax(z, 0), -1);
    ops_softmax(z, 6);
    assert_close(z, REF_SOFTMAX, 6, 1e-6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),       cmocka_unit_test(test_rope_layouts),
        cmocka_unit_test(test_rope_block),    cmocka_unit_test(test_rope_relative),
        cmocka_unit_test(test_swiglu_softmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
