/* test_kv_cache.c — the hybrid KV cache: exact byte counts (computed by hand below for
 * SmolLM2-135M's shape: 30 layers, 3 KV heads, head_dim 64), the allocation really being that
 * size (glibc mallinfo2; under AddressSanitizer, whose allocator glibc does not see, its own
 * count of allocated bytes), decode attention through the cache against a naive double-precision
 * masked softmax (fp32 cache: limit 2e-5; bf16 cache on every instruction set of this CPU, limit
 * 1.6e-2, the bf16 bound of test_attention.c), and, with the real model, greedy generation equal
 * to the teacher-forced argmax of one prefill under the same mask (both caches).
 */
#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_FROM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_FROM_ASAN 1
#endif
#endif
#ifdef HEAP_FROM_ASAN
size_t __sanitizer_get_current_allocated_bytes(void); /* sanitizer/allocator_interface.h (not in gcc) */
#endif

#include "attn_bf16.h"
#include "forward.h"
#include "kv_cache.h"
#include "mask.h"
#include "model.h"

static model_hparams smollm2_shape(void) {
    model_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_layer = 30, hp.n_head = 9, hp.n_head_kv = 3, hp.head_dim = 64, hp.n_embd = 576;
    return hp;
}

/* Mask with the given number of SWA KV heads, taken in row-major order. */
static void mask_first_swa(attn_mask *m, int n_swa, int window, int sinks) {
    assert_int_equal(mask_init(m, 30, 3, window, sinks, ATTN_FULL), 0);
    for (int i = 0; i < n_swa; i++) m->z[i] = ATTN_SWA;
}

static void test_bytes_by_hand(void **state) {
    (void)state;
    model_hparams hp = smollm2_shape();
    attn_mask m;
    /* all full, n_ctx 8192: 30*3 heads * 8192 slots * 64 dims * 2 (K,V) * 4 B = 377,487,360 */
    mask_first_swa(&m, 0, 256, 0);
    assert_true(kv_cache_bytes(&hp, &m, 8192, 4) == 377487360ull);
    assert_true(kv_cache_bytes(&hp, &m, 8192, 2) == 188743680ull); /* bf16: half */
    mask_free(&m);
    /* all SWA, W 256, no sinks: 90 * 256 * 64 * 2 * 4 = 11,796,480 */
    mask_first_swa(&m, 90, 256, 0);
    assert_true(kv_cache_bytes(&hp, &m, 8192, 4) == 11796480ull);
    /* n_ctx 100 < W: an SWA head never holds more than n_ctx slots: 90 * 100 * 512 = 4,608,000 */
    assert_true(kv_cache_bytes(&hp, &m, 100, 4) == 4608000ull);
    mask_free(&m);
    /* rho 0.5 (45 SWA heads), W 256, S 4, n_ctx 8192:
     * 45 * 8192 * 512 + 45 * 260 * 512 = 188,743,680 + 5,990,400 = 194,734,080 */
    mask_first_swa(&m, 45, 256, 4);
    assert_true(kv_cache_bytes(&hp, &m, 8192, 4) == 194734080ull);
    mask_free(&m);
    /* rho 0.875 (79 of 90 rounded: 79 SWA, 11 full), W 1024, S 0, n_ctx 4096:
     * 11 * 4096 * 512 + 79 * 1024 * 512 = 23,068,672 + 41,418,752 = 64,487,424 */
    mask_first_swa(&m, 79, 1024, 0);
    assert_true(kv_cache_bytes(&hp, &m, 4096, 4) == 64487424ull);
    mask_free(&m);
}

static size_t heap_in_use(void) {
#ifdef HEAP_FROM_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* small blocks in use + mmap'd blocks */
#endif
}

static void test_allocated_size(void **state) {
    (void)state;
    model_hparams hp = smollm2_shape();
    const int n_swa[] = {0, 45, 79, 90};
    for (int c = 0; c < 8; c++) {
        const attn_kv_type type = c < 4 ? ATTN_KV_FP32 : ATTN_KV_BF16;
        attn_mask m;
        mask_first_swa(&m, n_swa[c % 4], 256, 4);
        uint64_t want = kv_cache_bytes(&hp, &m, 8192, type == ATTN_KV_BF16 ? 2 : 4);
        size_t before = heap_in_use();
        kv_cache kv;
        assert_int_equal(kv_cache_init_type(&kv, &hp, &m, 8192, type), 0);
        size_t grown = heap_in_use() - before;
        assert_true(kv.bytes == want);
        /* the block plus four small per-head arrays and page rounding, nothing more */
        assert_true(grown >= want);
        assert_true(grown < want + 8192);
        /* every slot is addressable: write the last element of each head's K and V */
        for (int i = 0; i < 90; i++) {
            int cap = kv.cap[i];
            assert_int_equal(cap, m.z[i] == ATTN_SWA ? 260 : 8192);
            if (type == ATTN_KV_BF16) {
                ((uint16_t *)kv.k[i])[(size_t)cap * 64 - 1] = 0x3F80; /* 1.0 */
                ((uint16_t *)kv.v[i])[(size_t)cap * 64 - 1] = 0x3F80;
            } else {
                ((float *)kv.k[i])[(size_t)cap * 64 - 1] = 1.0f;
                ((float *)kv.v[i])[(size_t)cap * 64 - 1] = 1.0f;
            }
        }
        kv_cache_free(&kv);
        assert_true(heap_in_use() < before + 4096); /* freed (small chunks may sit in tcache) */
        mask_free(&m);
    }
    attn_mask bad;
    assert_int_equal(mask_init(&bad, 29, 3, 256, 0, ATTN_FULL), 0);
    kv_cache kv;
    assert_int_equal(kv_cache_init(&kv, &hp, &bad, 128), -1); /* n_layer differs */
    mask_free(&bad);
}

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Decode through the cache at every position; compare to a dense masked softmax in double. */
static void check_decode_type(attn_kv_type type, int T, int n_ctx, int nh, int nkv, int hd, const uint8_t *z,
                              int window, int sinks) {
    model_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_layer = 2, hp.n_head = nh, hp.n_head_kv = nkv, hp.head_dim = hd;
    attn_mask m;
    assert_int_equal(mask_init(&m, 2, nkv, window, sinks, ATTN_FULL), 0);
    memcpy(m.z + nkv, z, (size_t)nkv); /* layer 1 carries the pattern, layer 0 is full */
    kv_cache kv;
    assert_int_equal(kv_cache_init_type(&kv, &hp, &m, n_ctx, type), 0);
    size_t nk = (size_t)T * nkv * hd, nq = (size_t)nh * hd;
    float *k = malloc(nk * 4), *v = malloc(nk * 4), *q = malloc(nq * 4), *out = malloc(nq * 4);
    double *w = malloc(sizeof(double) * (size_t)T);
    int group = nh / nkv;
    double worst = 0.0;
    for (size_t i = 0; i < nk; i++) k[i] = 2.0f * frand(), v[i] = frand();
    for (int pos = 0; pos < T; pos++) {
        kv_cache_store(&kv, 1, pos, k + (size_t)pos * nkv * hd, v + (size_t)pos * nkv * hd);
        for (size_t i = 0; i < nq; i++) q[i] = 2.0f * frand();
        kv_cache_attend(&kv, 1, pos, q, out, nh);
        for (int h = 0; h < nh; h++) {
            int g = h / group;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j <= pos; j++) {
                int vis = z[g] || j > pos - window || j < sinks;
                double s = -INFINITY;
                if (vis) {
                    s = 0.0;
                    for (int d = 0; d < hd; d++)
                        s += (double)q[h * hd + d] * k[((size_t)j * nkv + g) * hd + d];
                    s /= sqrt((double)hd);
                }
                w[j] = s;
                if (s > mx) mx = s;
            }
            for (int j = 0; j <= pos; j++) sum += w[j] = isinf(w[j]) ? 0.0 : exp(w[j] - mx);
            for (int d = 0; d < hd; d++) {
                double a = 0.0;
                for (int j = 0; j <= pos; j++) a += w[j] * v[((size_t)j * nkv + g) * hd + d];
                double e = fabs(a / sum - out[h * hd + d]);
                if (!(e <= worst)) worst = e;
            }
        }
    }
    const double tol = type == ATTN_KV_BF16 ? 1.6e-2 : 2e-5;
    if (!(worst < tol) || getenv("BOSCH_TEST_VERBOSE"))
        fprintf(stderr, "decode %s (%s) T=%d n_ctx=%d W=%d S=%d: max error %g (limit %g)\n",
                attn_kv_type_name(type),
                type == ATTN_KV_BF16 ? attn_isa_name(attn_isa_current()) : "fp32 kernel", T, n_ctx, window,
                sinks, worst, tol);
    assert_true(worst < tol);
    free(k), free(v), free(q), free(out), free(w);
    kv_cache_free(&kv);
    mask_free(&m);
}

/* fp32, then bf16 on every instruction set up to this CPU's best, the same random inputs. */
static void check_decode(int T, int n_ctx, int nh, int nkv, int hd, const uint8_t *z, int window, int sinks) {
    const uint64_t seed = rng_state;
    check_decode_type(ATTN_KV_FP32, T, n_ctx, nh, nkv, hd, z, window, sinks);
    for (int isa = ATTN_ISA_PORTABLE; isa <= (int)attn_isa_best(); isa++) {
        rng_state = seed;
        attn_isa old = attn_isa_limit((attn_isa)isa);
        check_decode_type(ATTN_KV_BF16, T, n_ctx, nh, nkv, hd, z, window, sinks);
        attn_isa_limit(old);
    }
}

static void test_decode_vs_reference(void **state) {
    (void)state;
    const uint8_t z3[3] = {0, 1, 0}, z2[2] = {0, 0}, z4[4] = {0, 1, 1, 0};
    check_decode(300, 300, 9, 3, 64, z3, 17, 0);  /* ring wraps many times; chunks of 256 */
    check_decode(300, 400, 9, 3, 64, z3, 17, 5);  /* sinks */
    check_decode(120, 120, 8, 2, 64, z2, 4, 10);  /* sinks >= window */
    check_decode(50, 50, 8, 2, 24, z2, 1, 0);     /* window 1; odd head_dim */
    check_decode(40, 40, 4, 4, 64, z4, 100, 3);   /* n_ctx < sinks + window: no ring */
    check_decode(600, 600, 3, 1, 64, z2, 600, 0); /* W = n_ctx, several chunks */
}

/* Real model: greedy decode with a hybrid mask through the cache equals the argmax of one
 * teacher-forced prefill over prompt + generated tokens under the same mask, with keys and values
 * of `type` in both (the prefill without a cache takes the model's kv_type). */
static void greedy_equals_teacher_forced(attn_kv_type type) {
    const char *path = getenv("BOSCH_MODEL");
    if (!path || !*path) path = BOSCH_DEFAULT_MODEL;
    if (access(path, R_OK) != 0) skip();
    char err[512];
    model *mdl = NULL;
    if (model_load(&mdl, path, err, sizeof err) != 0) fail_msg("%s", err);
    mdl->kv_type = type;
    const model_hparams *hp = &mdl->hp;
    /* a fixed prompt of token ids (no tokenizer needed): a repetitive pattern the model continues */
    enum { P = 40, N = 24 };
    int32_t toks[P + N];
    for (int i = 0; i < P; i++) toks[i] = 1000 + (i * 37) % 200;
    attn_mask m;
    assert_int_equal(mask_init(&m, hp->n_layer, hp->n_head_kv, 12, 2, ATTN_FULL), 0);
    for (int l = 0; l < hp->n_layer; l++) /* rho ~ 2/3, the window wraps during generation */
        for (int g = 0; g < hp->n_head_kv; g++)
            if ((l + g) % 3 != 0) mask_set(&m, l, g, ATTN_SWA);
    kv_cache kv;
    assert_int_equal(kv_cache_init_type(&kv, hp, &m, P + N, type), 0);
    forward_ws *ws = forward_ws_create(hp, P + N);
    assert_non_null(ws);
    float *logits = malloc(sizeof(float) * (size_t)hp->n_vocab * (P + N));
    int last = P - 1;
    assert_int_equal(forward_prefill(mdl, &m, toks, P, &kv, &last, 1, logits, ws), 0);
    for (int t = 0; t < N; t++) {
        int best = 0;
        for (int i = 1; i < hp->n_vocab; i++)
            if (logits[i] > logits[best]) best = i;
        toks[P + t] = best;
        if (t + 1 < N) assert_int_equal(forward_decode(mdl, &m, best, &kv, logits, ws), 0);
    }
    int rows[N];
    for (int t = 0; t < N; t++) rows[t] = P - 1 + t;
    assert_int_equal(forward_prefill(mdl, &m, toks, P + N - 1, NULL, rows, N, logits, ws), 0);
    for (int t = 0; t < N; t++) {
        const float *lg = logits + (size_t)t * hp->n_vocab;
        int best = 0;
        for (int i = 1; i < hp->n_vocab; i++)
            if (lg[i] > lg[best]) best = i;
        assert_int_equal(best, toks[P + t]);
    }
    free(logits);
    forward_ws_free(ws);
    kv_cache_free(&kv);
    mask_free(&m);
    model_free(mdl);
}

static void test_greedy_equals_teacher_forced(void **state) {
    (void)state;
    greedy_equals_teacher_forced(ATTN_KV_FP32);
    greedy_equals_teacher_forced(ATTN_KV_BF16);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_by_hand),
        cmocka_unit_test(test_allocated_size),
        cmocka_unit_test(test_decode_vs_reference),
        cmocka_unit_test(test_greedy_equals_teacher_forced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
