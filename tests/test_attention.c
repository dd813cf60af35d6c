/* test_attention.c — the hybrid (full / SWA per KV head) prefill attention against a naive dense
 * masked softmax computed in double precision, written here from the definition in docs/design.md §2:
 * a full head at query i sees keys j <= i; an SWA head sees i-W < j <= i plus the sinks j < S.
 *
 * Every case runs with fp32 keys and values (limit 2e-5) and with bf16 ones (attn_prefill
 * ATTN_KV_BF16) on every instruction set this CPU has (attn_isa_limit: portable C, AVX2 with FMA,
 * AVX-512 BF16), against the same double reference on the unrounded inputs. bf16 limit, TOL_BF16:
 * q·scale, k, v and each probability are rounded to 8 significant bits (relative error <= 2^-9
 * each); with |v| <= 1 the output moves by at most about 2^-9 from v's rounding plus 2^-9 from the
 * probabilities', and a score error δ changes the weights by a factor e^δ, |δ| <= ~2·2^-9·|s|.
 * With the cases' scores (|s| up to ~3) that bounds the error near 1e-2; TOL_BF16 = 1.6e-2 (about
 * 8·2^-9), measured 2–7e-3. A second, tighter check runs the double reference on the kernel's
 * own rounded inputs (q·log2(e)/sqrt(hd), k and v rounded to bf16 here, independently): only the
 * probabilities' rounding and fp32 sums remain, TOL_BF16_ROUNDED = 4e-3 (2·2^-9·max|v|), so a key
 * wrongly seen or missed among a hundred (weight ~1e-2) fails it.
 */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attention.h"
#include "attn_bf16.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* xorshift64*, uniform in [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t x = rng_state * 2685821657736338717ull;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int ref_visible(int i, int j, int full, int window, int sinks) {
    if (j > i) return 0;
    if (full) return 1;
    return j > i - window || j < sinks;
}

/* Dense reference: T x T score matrix per query head (q·k times score_mul, 1/sqrt(hd) for the
 * definition), masked, softmax in double. */
static void ref_attention(const float *q, const float *k, const float *v, double *out, int T, int n_head,
                          int n_head_kv, int hd, const uint8_t *z, int window, int sinks, double score_mul) {
    int group = n_head / n_head_kv;
    double *sc = malloc(sizeof(double) * (size_t)T * T);
    for (int h = 0; h < n_head; h++) {
        int g = h / group;
        for (int i = 0; i < T; i++) {
            double mx = -INFINITY;
            for (int j = 0; j < T; j++) {
                double s = -INFINITY;
                if (ref_visible(i, j, z[g], window, sinks)) {
                    s = 0.0;
                    for (int d = 0; d < hd; d++)
                        s += (double)q[((size_t)i * n_head + h) * hd + d] *
                             k[((size_t)j * n_head_kv + g) * hd + d];
                    s *= score_mul;
                }
                sc[(size_t)i * T + j] = s;
                if (s > mx) mx = s;
            }
            double sum = 0.0;
            for (int j = 0; j < T; j++) {
                double e = isinf(sc[(size_t)i * T + j]) ? 0.0 : exp(sc[(size_t)i * T + j] - mx);
                sc[(size_t)i * T + j] = e;
                sum += e;
            }
            for (int d = 0; d < hd; d++) {
                double a = 0.0;
                for (int j = 0; j < T; j++)
                    a += sc[(size_t)i * T + j] * v[((size_t)j * n_head_kv + g) * hd + d];
                out[((size_t)i * n_head + h) * hd + d] = a / sum;
            }
        }
    }
    free(sc);
}

#define TOL_FP32 2e-5
#define TOL_BF16 1.6e-2
#define TOL_BF16_ROUNDED 4e-3

/* fp32 -> bf16 -> fp32, round to nearest even (finite inputs), written from the definition. */
static float round_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t low = u & 0xFFFFu, keep = u & 0xFFFF0000u;
    if (low > 0x8000u || (low == 0x8000u && (keep & 0x10000u))) keep += 0x10000u;
    memcpy(&f, &keep, 4);
    return f;
}

/* Run one configuration with keys and values of `type` and compare every output element. */
static void check_one(attn_kv_type type, int T, int n_head, int n_head_kv, int hd, const uint8_t *z,
                      int window, int sinks) {
    size_t nq = (size_t)T * n_head * hd, nk = (size_t)T * n_head_kv * hd;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *out = malloc(nq * 4);
    double *ref = malloc(nq * 8);
    for (size_t i = 0; i < nq; i++) q[i] = 2.0f * frand();
    for (size_t i = 0; i < nk; i++) k[i] = 2.0f * frand();
    for (size_t i = 0; i < nk; i++) v[i] = frand();
    attn_prefill(type, q, k, v, out, T, n_head, n_head_kv, hd, z, window, sinks);
    ref_attention(q, k, v, ref, T, n_head, n_head_kv, hd, z, window, sinks, 1.0 / sqrt((double)hd));
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < nq; i++) {
        double e = fabs(out[i] - ref[i]);
        if (!(e <= worst)) {
            worst = e;
            at = i;
        }
    }
    const double tol = type == ATTN_KV_BF16 ? TOL_BF16 : TOL_FP32;
    if (!(worst < tol))
        print_error(
            "%s (%s) T=%d heads=%d/%d hd=%d W=%d S=%d: max error %g at element %zu (got %g, want %g)\n",
            attn_kv_type_name(type), type == ATTN_KV_BF16 ? attn_isa_name(attn_isa_current()) : "fp32 kernel",
            T, n_head, n_head_kv, hd, window, sinks, worst, at, out[at], ref[at]);
    if (getenv("BOSCH_TEST_VERBOSE"))
        fprintf(stderr, "%s (%s) T=%d heads=%d/%d hd=%d W=%d S=%d: max error %.3g\n", attn_kv_type_name(type),
                type == ATTN_KV_BF16 ? attn_isa_name(attn_isa_current()) : "fp32 kernel", T, n_head,
                n_head_kv, hd, window, sinks, worst);
    assert_true(worst < tol);
    if (type == ATTN_KV_BF16) { /* the reference on the kernel's rounded inputs: only P's rounding is left */
        const float scale = 1.4426950408889634f / sqrtf((float)hd); /* the kernel's base-2 query scale */
        for (size_t i = 0; i < nq; i++) q[i] = round_bf16(q[i] * scale);
        for (size_t i = 0; i < nk; i++) k[i] = round_bf16(k[i]), v[i] = round_bf16(v[i]);
        ref_attention(q, k, v, ref, T, n_head, n_head_kv, hd, z, window, sinks, log(2.0));
        double w2 = 0.0;
        for (size_t i = 0; i < nq; i++) w2 = fmax(w2, fabs(out[i] - ref[i]));
        if (!(w2 < TOL_BF16_ROUNDED) || getenv("BOSCH_TEST_VERBOSE"))
            fprintf(stderr, "  against the rounded inputs: max error %.3g (limit %g)\n", w2,
                    TOL_BF16_ROUNDED);
        assert_true(w2 < TOL_BF16_ROUNDED);
    }
    free(q), free(k), free(v), free(out), free(ref);
}

/* fp32, then bf16 on every instruction set up to this CPU's best (the same random inputs: the
 * generator is reset per run). */
static void check_case(int T, int n_head, int n_head_kv, int hd, const uint8_t *z, int window, int sinks) {
    const uint64_t seed = rng_state;
    check_one(ATTN_KV_FP32, T, n_head, n_head_kv, hd, z, window, sinks);
    for (int isa = ATTN_ISA_PORTABLE; isa <= (int)attn_isa_best(); isa++) {
        rng_state = seed;
        attn_isa old = attn_isa_limit((attn_isa)isa);
        check_one(ATTN_KV_BF16, T, n_head, n_head_kv, hd, z, window, sinks);
        attn_isa_limit(old);
    }
}

static void test_window_edges(void **state) {
    (void)state;
    const uint8_t swa[3] = {0, 0, 0}, mixed[3] = {1, 0, 1};
    const int T = 77;                       /* not a multiple of any tile size */
    check_case(T, 3, 3, 64, swa, 1, 0);     /* W = 1: each query sees only itself */
    check_case(T, 3, 3, 64, swa, 2, 0);     /* W = 2 */
    check_case(T, 3, 3, 64, swa, T - 1, 0); /* W = T-1 */
    check_case(T, 3, 3, 64, swa, T, 0);     /* W = T: same as full */
    check_case(T, 3, 3, 64, swa, 5 * T, 0); /* W > T */
    check_case(T, 3, 3, 64, mixed, 16, 0);  /* full and SWA heads in one layer */
}

static void test_sinks(void **state) {
    (void)state;
    const uint8_t swa[2] = {0, 0}, mixed[2] = {0, 1};
    check_case(150, 6, 2, 64, swa, 16, 4);   /* S > 0 */
    check_case(150, 6, 2, 64, swa, 4, 10);   /* S >= W */
    check_case(150, 6, 2, 64, mixed, 70, 3); /* window spans several key blocks */
    check_case(131, 6, 2, 64, swa, 1, 1);    /* W = 1 with one sink */
    check_case(200, 6, 2, 64, swa, 100, 90); /* sinks reach into the window */
}

static void test_gqa_groups(void **state) {
    (void)state;
    const uint8_t z1[4] = {1, 0, 0, 1}, z3[3] = {0, 1, 0}, z4[2] = {0, 1};
    check_case(99, 4, 4, 64, z1, 7, 2);  /* group 1 */
    check_case(99, 9, 3, 64, z3, 33, 0); /* group 3 (SmolLM2) */
    check_case(99, 8, 2, 64, z4, 40, 1); /* group 4 */
    check_case(70, 8, 2, 24, z4, 9, 2);  /* head_dim that is not a SIMD multiple */
    check_case(1, 9, 3, 64, z3, 4, 0);   /* a single token */
}

/* Row i sees min(i+1, W) keys of its window plus the sinks that lie below the window. */
static void test_visible_keys(void **state) {
    (void)state;
    const int windows[] = {1, 2, 5, 64, 300}, sinks_list[] = {0, 1, 4, 10};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++)
            for (int i = 0; i < 400; i++) {
                int W = windows[a], S = sinks_list[b];
                int n = 0;
                for (int j = 0; j < 400; j++) n += ref_visible(i, j, 0, W, S);
                int sinks_outside = 0;
                for (int j = 0; j < S; j++) sinks_outside += j <= i - W;
                assert_int_equal(n, (i + 1 < W ? i + 1 : W) + sinks_outside);
                assert_int_equal(attn_visible_keys(i, 0, W, S), n);
                assert_int_equal(attn_visible_keys(i, 1, W, S), i + 1);
            }
}

/* The result must not depend on the number of threads (the evaluator relies on bitwise equality). */
static void test_thread_count_invariant(void **state) {
    (void)state;
    const int T = 300, nh = 9, nkv = 3, hd = 64;
    const uint8_t z[3] = {1, 0, 0};
    size_t nq = (size_t)T * nh * hd, nk = (size_t)T * nkv * hd;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
    float *o1 = malloc(nq * 4), *o2 = malloc(nq * 4);
    for (size_t i = 0; i < nq; i++) q[i] = frand();
    for (size_t i = 0; i < nk; i++) k[i] = frand(), v[i] = frand();
    int saved = omp_get_max_threads();
    for (int type = ATTN_KV_FP32; type <= ATTN_KV_BF16; type++) {
        omp_set_num_threads(1);
        attn_prefill((attn_kv_type)type, q, k, v, o1, T, nh, nkv, hd, z, 50, 2);
        omp_set_num_threads(3);
        attn_prefill((attn_kv_type)type, q, k, v, o2, T, nh, nkv, hd, z, 50, 2);
        omp_set_num_threads(saved);
        assert_memory_equal(o1, o2, nq * 4);
    }
    free(q), free(k), free(v), free(o1), free(o2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_edges),
        cmocka_unit_test(test_sinks),
        cmocka_unit_test(test_gqa_groups),
        cmocka_unit_test(test_visible_keys),
        cmocka_unit_test(test_thread_count_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
