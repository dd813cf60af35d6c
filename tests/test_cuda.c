/* test_cuda.c — the CUDA kernels against CPU references: dequantization against quant.c (itself
 * tested against the `gguf` package), RMSNorm/RoPE/SwiGLU against naive loops, the hybrid attention
 * (prefill and decode over the ring-buffer KV cache) against a dense masked softmax in double.
 * Skips (exit 77) when the build has no CUDA or the machine has no GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quant.h"
#ifdef BOSCH_KERN_EMU
#include "emu/emu_config.h"
#endif

#ifdef BOSCH_HAVE_CUDA
#include "kernels.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* splitmix64 -> [-1, 1) */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static char err[512];
static void assert_ok(int rc) {
    if (rc) fail_msg("%s", err);
}

/* Zero `bytes` of device memory (so a kernel that skips an output cannot pass on stale data). */
static int dev_zero(void *d, size_t bytes) {
    void *z = calloc(1, bytes);
    int rc = kern_upload(d, z, bytes, err, sizeof err);
    free(z);
    return rc;
}

static void *dev_copy(const void *h, size_t bytes) {
    void *d;
    assert_ok(kern_malloc(&d, bytes, err, sizeof err));
    assert_ok(kern_upload(d, h, bytes, err, sizeof err));
    return d;
}

/* Random blocks of every type: dequantized on the GPU to bf16 must equal quant.c's fp32 rounded to
 * bf16 (nearest even), up to one bf16 ulp. */
static void test_dequant(void **state) {
    (void)state;
    const uint32_t types[] = {GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                              GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_F32};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t type = types[ti];
        const uint64_t n = 1024;
        size_t bytes = quant_row_bytes(type, n);
        uint8_t *raw = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) raw[i] = (uint8_t)(frand() * 128 + 128);
        /* Finite inputs: F32/F16/BF16 elements are random finite values, and every block's fp16
         * scale fields are set to small positive numbers, so no NaN or Inf enters the comparison. */
        if (type == GGML_TYPE_F32)
            for (uint64_t i = 0; i < n; i++) ((float *)raw)[i] = frand() * 4;
        if (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16)
            for (uint64_t i = 0; i < n; i++)
                ((uint16_t *)raw)[i] =
                    type == GGML_TYPE_F16 ? quant_fp32_to_fp16(frand() * 4) : quant_fp32_to_bf16(frand() * 4);
        if (type == GGML_TYPE_Q4_0 || type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q8_0 ||
            type == GGML_TYPE_Q4_K) {
            size_t bb = quant_block_bytes(type);
            for (size_t b = 0; b < bytes / bb; b++) {
                uint16_t d = quant_fp32_to_fp16(0.01f + 0.1f * (frand() + 1));
                memcpy(raw + b * bb, &d, 2);
                if (type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q4_K) memcpy(raw + b * bb + 2, &d, 2);
            }
        }
        if (type == GGML_TYPE_Q6_K) {
            for (size_t b = 0; b < bytes / 210; b++) {
                uint16_t d = quant_fp32_to_fp16(0.001f + 0.01f * (frand() + 1));
                memcpy(raw + b * 210 + 208, &d, 2);
            }
        }
        float *ref = malloc(n * sizeof(float));
        assert_int_equal(quant_dequantize(type, raw, ref, n), 0);
        void *d_raw = dev_copy(raw, bytes);
        uint16_t *d_out;
        assert_ok(kern_malloc((void **)&d_out, n * 2, err, sizeof err));
        assert_ok(kern_dequant_bf16(type, d_raw, d_out, n, NULL, err, sizeof err));
        assert_ok(kern_sync(NULL, err, sizeof err));
        uint16_t *got = malloc(n * 2);
        assert_ok(kern_download(got, d_out, n * 2, err, sizeof err));
        for (uint64_t i = 0; i < n; i++)
            /* equal after rounding to bf16, or one bf16 ulp apart when the GPU fused a multiply-add
             * that the CPU rounded twice (or the reverse) */
            if (got[i] != quant_fp32_to_bf16(ref[i]) &&
                fabsf(quant_bf16_to_fp32(got[i]) - ref[i]) > fabsf(ref[i]) * (1.0f / 256.0f))
                fail_msg("%s element %llu: gpu bf16 0x%04x, cpu %g -> 0x%04x", quant_type_name(type),
                         (unsigned long long)i, got[i], ref[i], quant_fp32_to_bf16(ref[i]));
        kern_free(d_raw);
        kern_free(d_out);
        free(raw);
        free(ref);
        free(got);
    }
}

/* Dense reference: out[i] = softmax over visible j of q_i·k_j/sqrt(d), weighted sum of v_j. */
static void attn_ref(const float *q, const float *k, const float *v, float *out, int T, int n_head, int n_kv,
                     int hd, const uint8_t *z, int window, int sinks) {
    double *s = malloc(sizeof(double) * T);
    for (int h = 0; h < n_head; h++) {
        int g = h / (n_head / n_kv);
        for (int i = 0; i < T; i++) {
            double mx = -1e300;
            for (int j = 0; j <= i; j++) {
                int vis = z[g] || j > i - window || j < sinks;
                s[j] = -1e300;
                if (!vis) continue;
                double d = 0;
                for (int c = 0; c < hd; c++)
                    d += (double)q[(size_t)i * n_head * hd + h * hd + c] *
                         k[(size_t)j * n_kv * hd + g * hd + c];
                s[j] = d / sqrt((double)hd);
                if (s[j] > mx) mx = s[j];
            }
            double sum = 0;
            for (int j = 0; j <= i; j++) sum += s[j] > -1e299 ? exp(s[j] - mx) : 0;
            for (int c = 0; c < hd; c++) {
                double acc = 0;
                for (int j = 0; j <= i; j++)
                    if (s[j] > -1e299) acc += exp(s[j] - mx) / sum * v[(size_t)j * n_kv * hd + g * hd + c];
                out[(size_t)i * n_head * hd + h * hd + c] = (float)acc;
            }
        }
    }
    free(s);
}

/* x rounded to bf16 (round to nearest even, quant.c) and back. */
static float bf16_round(float x) {
    uint32_t u = (uint32_t)quant_fp32_to_bf16(x) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Run prefill kernel `which` (0 tiled fp32, 1 simple fp32, 2 tensor cores WMMA, 3 tensor cores mma.sync)
 * into dout. */
static int run_prefill(int which, const float *dq, const float *dk, const float *dv, float *dout, int T,
                       int n_head, int n_kv, int hd, const uint8_t *dz, int window, int sinks) {
    if (which == 0)
        return kern_attn_prefill(dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks, NULL, err,
                                 sizeof err);
    if (which == 1)
        return kern_attn_prefill_simple(dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks, NULL, err,
                                        sizeof err);
    if (which == 2)
        return kern_attn_prefill_tc(dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks, NULL, err,
                                    sizeof err);
    return kern_attn_prefill_mma(dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks, NULL, err,
                                 sizeof err);
}

/* The fp32 kernels must match the dense double reference to 1e-4. The tensor-core kernels round
 * Q·scale, K, V and P to bf16: against the reference computed from the same bf16-rounded Q, K, V
 * only P's rounding (relative 2^-9 per weight) remains, so |err| <= 4e-3 with |v| < 1; against the
 * unrounded reference it must stay within 1e-2 (measured on the emulator: 1.0e-3..1.4e-3 and
 * 2.1e-3..3.0e-3). */
static void check_prefill(int T, int n_head, int n_kv, int hd, int window, int sinks) {
    size_t nq = (size_t)T * n_head * hd, nk = (size_t)T * n_kv * hd;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *ref = malloc(nq * 4),
          *got = malloc(nq * 4);
    float *qr = malloc(nq * 4), *kr = malloc(nk * 4), *vr = malloc(nk * 4), *ref_r = malloc(nq * 4);
    uint8_t z[8];
    for (int g = 0; g < n_kv; g++) z[g] = (uint8_t)(g % 2); /* alternate SWA / full */
    for (size_t i = 0; i < nq; i++) q[i] = frand();
    for (size_t i = 0; i < nk; i++) k[i] = frand(), v[i] = frand();
    attn_ref(q, k, v, ref, T, n_head, n_kv, hd, z, window, sinks);
    const float scale = 1.0f / sqrtf((float)hd);
    for (size_t i = 0; i < nq; i++) qr[i] = bf16_round(q[i] * scale) / scale;
    for (size_t i = 0; i < nk; i++) kr[i] = bf16_round(k[i]), vr[i] = bf16_round(v[i]);
    attn_ref(qr, kr, vr, ref_r, T, n_head, n_kv, hd, z, window, sinks);
    float *dq = dev_copy(q, nq * 4), *dk = dev_copy(k, nk * 4), *dv = dev_copy(v, nk * 4), *dout;
    uint8_t *dz = dev_copy(z, (size_t)n_kv);
    assert_ok(kern_malloc((void **)&dout, nq * 4, err, sizeof err));
    static const char *const names[4] = {"tiled", "simple", "tensor cores", "tensor cores mma"};
    for (int which = 0; which < 4; which++) {
        if (which == 3 && hd > 128) { /* mma keeps 16 x head_dim outputs per warp in registers */
            assert_int_equal(run_prefill(which, dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks),
                             -1);
            assert_non_null(strstr(err, "unsupported"));
            continue;
        }
        assert_ok(dev_zero(dout, nq * 4));
        assert_ok(run_prefill(which, dq, dk, dv, dout, T, n_head, n_kv, hd, dz, window, sinks));
        assert_ok(kern_sync(NULL, err, sizeof err));
        assert_ok(kern_download(got, dout, nq * 4, err, sizeof err));
        double max_err = 0, max_err_r = 0;
        for (size_t i = 0; i < nq; i++) {
            max_err = fmax(max_err, fabs((double)got[i] - ref[i]));
            max_err_r = fmax(max_err_r, fabs((double)got[i] - ref_r[i]));
        }
        const int tc = which >= 2;
        if (tc)
            printf("prefill (%s) T=%d hd=%d W=%d S=%d: max |err| %.3g, vs bf16-rounded inputs %.3g\n",
                   names[which], T, hd, window, sinks, max_err, max_err_r);
        if (max_err > (tc ? 1e-2 : 1e-4) || (tc && max_err_r > 4e-3))
            fail_msg(
                "prefill (%s) T=%d heads=%d/%d hd=%d W=%d S=%d: max |err| %g (vs bf16-rounded inputs %g)",
                names[which], T, n_head, n_kv, hd, window, sinks, max_err, max_err_r);
    }
    kern_free(dq), kern_free(dk), kern_free(dv), kern_free(dout), kern_free(dz);
    free(q), free(k), free(v), free(ref), free(got), free(qr), free(kr), free(vr), free(ref_r);
}

static void test_attn_prefill(void **state) {
    (void)state;
    check_prefill(77, 9, 3, 64, 1, 0);
    check_prefill(77, 9, 3, 64, 2, 0);
    check_prefill(100, 4, 4, 64, 200, 0); /* W >= T */
    check_prefill(100, 4, 1, 128, 99, 0); /* W = T - 1, group of 4 */
    check_prefill(130, 6, 2, 64, 16, 4);  /* sinks */
    check_prefill(70, 6, 2, 32, 3, 8);    /* S >= W */
    check_prefill(45, 2, 1, 96, 7, 1);    /* head_dim 96 (3 lanes' worth), T not a multiple of 16 */
    check_prefill(40, 2, 2, 256, 40, 0);  /* head_dim 256: more than 48 KB of shared memory */
    check_prefill(300, 3, 3, 64, 50, 5);  /* several key tiles per window */
    check_prefill(1, 8, 1, 64, 1, 0);     /* one token; a GQA group of 8 */
    check_prefill(65, 4, 2, 128, 1, 70);  /* one row past a 64-row block; window 1; sinks > T */
#ifdef BOSCH_KERN_EMU
    /* an A100's 163 KiB per block: the WMMA kernel for head_dim 256 (184.5 KiB) falls back to fp32 */
    size_t prev = emu_set_shmem_optin(166912);
    check_prefill(40, 2, 2, 256, 40, 0);
    emu_set_shmem_optin(prev);
#endif
}

/* Decode at every position through the ring-buffer cache must equal the prefill reference rows. */
static void test_attn_decode(void **state) {
    (void)state;
    const int T = 90, n_head = 6, n_kv = 2, hd = 64, window = 13, sinks = 3, n_seq = 2;
    const uint8_t z[2] = {0, 1};
    size_t nq = (size_t)T * n_head * hd, nk = (size_t)T * n_kv * hd;
    float *q[2], *k[2], *v[2], *ref[2];
    for (int s = 0; s < n_seq; s++) {
        q[s] = malloc(nq * 4), k[s] = malloc(nk * 4), v[s] = malloc(nk * 4), ref[s] = malloc(nq * 4);
        for (size_t i = 0; i < nq; i++) q[s][i] = frand();
        for (size_t i = 0; i < nk; i++) k[s][i] = frand(), v[s][i] = frand();
        attn_ref(q[s], k[s], v[s], ref[s], T, n_head, n_kv, hd, z, window, sinks);
    }
    int cap[2] = {sinks + window, T};
    float *d_kh[2], *d_vh[2];
    for (int g = 0; g < n_kv; g++) {
        assert_ok(kern_malloc((void **)&d_kh[g], (size_t)n_seq * cap[g] * hd * 4, err, sizeof err));
        assert_ok(kern_malloc((void **)&d_vh[g], (size_t)n_seq * cap[g] * hd * 4, err, sizeof err));
    }
    float **dd_kh = dev_copy(d_kh, sizeof d_kh), **dd_vh = dev_copy(d_vh, sizeof d_vh);
    int *d_cap = dev_copy(cap, sizeof cap);
    uint8_t *d_z = dev_copy(z, sizeof z);
    float *d_knew, *d_vnew, *d_q, *d_out;
    assert_ok(kern_malloc((void **)&d_knew, (size_t)n_seq * n_kv * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_vnew, (size_t)n_seq * n_kv * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_q, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_out, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
    float *got = malloc((size_t)n_seq * n_head * hd * 4), *d_scratch;
    const size_t scratch_n = kern_attn_decode_scratch_floats(n_seq, n_head, hd, T - 1, 32);
    assert_ok(kern_malloc((void **)&d_scratch, scratch_n * 4, err, sizeof err));
    double max_err[3] = {0, 0, 0};
    for (int pos = 0; pos < T; pos++) {
        for (int s = 0; s < n_seq; s++) {
            assert_ok(kern_upload(d_knew + (size_t)s * n_kv * hd, k[s] + (size_t)pos * n_kv * hd,
                                  n_kv * hd * 4, err, sizeof err));
            assert_ok(kern_upload(d_vnew + (size_t)s * n_kv * hd, v[s] + (size_t)pos * n_kv * hd,
                                  n_kv * hd * 4, err, sizeof err));
            assert_ok(kern_upload(d_q + (size_t)s * n_head * hd, q[s] + (size_t)pos * n_head * hd,
                                  n_head * hd * 4, err, sizeof err));
        }
        assert_ok(kern_kv_store(d_knew, d_vnew, dd_kh, dd_vh, d_cap, d_z, n_seq, pos, n_kv, hd, window, sinks,
                                NULL, err, sizeof err));
        /* the plain kernel, then the split one with 32-position chunks (up to 3 chunks and a merge) and
         * with the default chunk (one block per KV head) */
        for (int which = 0; which < 3; which++) {
            assert_ok(dev_zero(d_out, (size_t)n_seq * n_head * hd * 4));
            if (which == 0)
                assert_ok(kern_attn_decode(d_q, (const float *const *)dd_kh, (const float *const *)dd_vh,
                                           d_cap, d_z, d_out, n_seq, pos, n_head, n_kv, hd, window, sinks,
                                           NULL, err, sizeof err));
            else
                assert_ok(kern_attn_decode_split(d_q, (const float *const *)dd_kh,
                                                 (const float *const *)dd_vh, d_cap, d_z, d_out, n_seq, pos,
                                                 n_head, n_kv, hd, window, sinks, which == 1 ? 32 : 0,
                                                 d_scratch, scratch_n, NULL, err, sizeof err));
            assert_ok(kern_sync(NULL, err, sizeof err));
            assert_ok(kern_download(got, d_out, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
            for (int s = 0; s < n_seq; s++)
                for (int c = 0; c < n_head * hd; c++)
                    max_err[which] = fmax(max_err[which], fabs((double)got[(size_t)s * n_head * hd + c] -
                                                               ref[s][(size_t)pos * n_head * hd + c]));
        }
    }
    for (int which = 0; which < 3; which++)
        if (max_err[which] > 1e-4)
            fail_msg("decode (%s): max |err| %g", which ? "split" : "plain", max_err[which]);
    kern_free(d_scratch);
    for (int g = 0; g < n_kv; g++) kern_free(d_kh[g]), kern_free(d_vh[g]);
    kern_free(dd_kh), kern_free(dd_vh), kern_free(d_cap), kern_free(d_z);
    kern_free(d_knew), kern_free(d_vnew), kern_free(d_q), kern_free(d_out);
    for (int s = 0; s < n_seq; s++) free(q[s]), free(k[s]), free(v[s]), free(ref[s]);
    free(got);
}

/* A prefilled block stored at once (kern_kv_store_block) then decode continuing through the ring
 * must equal the dense reference; the first decode position reads only what the block stored. */
static void test_kv_store_block(void **state) {
    (void)state;
    const int T = 90, P = 57, n_head = 4, n_kv = 2, hd = 32, window = 11, sinks = 2, n_seq = 2;
    const uint8_t z[2] = {0, 1};
    size_t nq = (size_t)T * n_head * hd, nk = (size_t)T * n_kv * hd;
    float *q[2], *k[2], *v[2], *ref[2];
    for (int s = 0; s < n_seq; s++) {
        q[s] = malloc(nq * 4), k[s] = malloc(nk * 4), v[s] = malloc(nk * 4), ref[s] = malloc(nq * 4);
        for (size_t i = 0; i < nq; i++) q[s][i] = frand();
        for (size_t i = 0; i < nk; i++) k[s][i] = frand(), v[s][i] = frand();
        attn_ref(q[s], k[s], v[s], ref[s], T, n_head, n_kv, hd, z, window, sinks);
    }
    int cap[2] = {sinks + window, T};
    float *d_kh[2], *d_vh[2];
    for (int g = 0; g < n_kv; g++) {
        assert_ok(kern_malloc((void **)&d_kh[g], (size_t)n_seq * cap[g] * hd * 4, err, sizeof err));
        assert_ok(kern_malloc((void **)&d_vh[g], (size_t)n_seq * cap[g] * hd * 4, err, sizeof err));
    }
    float **dd_kh = dev_copy(d_kh, sizeof d_kh), **dd_vh = dev_copy(d_vh, sizeof d_vh);
    int *d_cap = dev_copy(cap, sizeof cap);
    uint8_t *d_z = dev_copy(z, sizeof z);
    /* the block: [n_seq][P][n_kv*hd] */
    float *kb = malloc((size_t)n_seq * P * n_kv * hd * 4), *vb = malloc((size_t)n_seq * P * n_kv * hd * 4);
    for (int s = 0; s < n_seq; s++) {
        memcpy(kb + (size_t)s * P * n_kv * hd, k[s], (size_t)P * n_kv * hd * 4);
        memcpy(vb + (size_t)s * P * n_kv * hd, v[s], (size_t)P * n_kv * hd * 4);
    }
    float *d_kb = dev_copy(kb, (size_t)n_seq * P * n_kv * hd * 4),
          *d_vb = dev_copy(vb, (size_t)n_seq * P * n_kv * hd * 4);
    assert_ok(kern_kv_store_block(d_kb, d_vb, dd_kh, dd_vh, d_cap, d_z, n_seq, 0, P, n_kv, hd, window, sinks,
                                  NULL, err, sizeof err));
    float *d_knew, *d_vnew, *d_q, *d_out;
    assert_ok(kern_malloc((void **)&d_knew, (size_t)n_seq * n_kv * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_vnew, (size_t)n_seq * n_kv * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_q, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
    assert_ok(kern_malloc((void **)&d_out, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
    float *got = malloc((size_t)n_seq * n_head * hd * 4);
    double max_err = 0;
    for (int pos = P - 1; pos < T; pos++) {
        for (int s = 0; s < n_seq; s++) {
            assert_ok(kern_upload(d_knew + (size_t)s * n_kv * hd, k[s] + (size_t)pos * n_kv * hd,
                                  n_kv * hd * 4, err, sizeof err));
            assert_ok(kern_upload(d_vnew + (size_t)s * n_kv * hd, v[s] + (size_t)pos * n_kv * hd,
                                  n_kv * hd * 4, err, sizeof err));
            assert_ok(kern_upload(d_q + (size_t)s * n_head * hd, q[s] + (size_t)pos * n_head * hd,
                                  n_head * hd * 4, err, sizeof err));
        }
        if (pos >= P) /* position P-1 is already in the cache from the block */
            assert_ok(kern_kv_store(d_knew, d_vnew, dd_kh, dd_vh, d_cap, d_z, n_seq, pos, n_kv, hd, window,
                                    sinks, NULL, err, sizeof err));
        assert_ok(kern_attn_decode(d_q, (const float *const *)dd_kh, (const float *const *)dd_vh, d_cap, d_z,
                                   d_out, n_seq, pos, n_head, n_kv, hd, window, sinks, NULL, err,
                                   sizeof err));
        assert_ok(kern_sync(NULL, err, sizeof err));
        assert_ok(kern_download(got, d_out, (size_t)n_seq * n_head * hd * 4, err, sizeof err));
        for (int s = 0; s < n_seq; s++)
            for (int c = 0; c < n_head * hd; c++)
                max_err = fmax(max_err, fabs((double)got[(size_t)s * n_head * hd + c] -
                                             ref[s][(size_t)pos * n_head * hd + c]));
    }
    if (max_err > 1e-4) fail_msg("kv store block + decode: max |err| %g", max_err);
    for (int g = 0; g < n_kv; g++) kern_free(d_kh[g]), kern_free(d_vh[g]);
    kern_free(dd_kh), kern_free(dd_vh), kern_free(d_cap), kern_free(d_z), kern_free(d_kb), kern_free(d_vb);
    kern_free(d_knew), kern_free(d_vnew), kern_free(d_q), kern_free(d_out);
    for (int s = 0; s < n_seq; s++) free(q[s]), free(k[s]), free(v[s]), free(ref[s]);
    free(kb), free(vb), free(got);
}

/* Row gather: dst[i] = src[rows[i]], exact copies. */
static void test_gather_rows(void **state) {
    (void)state;
    const int n_src = 20, n = 300;
    const int32_t rows[5] = {19, 0, 7, 7, 3};
    float *src = malloc(sizeof(float) * n_src * n), *got = malloc(sizeof(float) * 5 * n);
    for (int i = 0; i < n_src * n; i++) src[i] = frand();
    float *d_src = dev_copy(src, sizeof(float) * n_src * n), *d_dst;
    int32_t *d_rows = dev_copy(rows, sizeof rows);
    assert_ok(kern_malloc((void **)&d_dst, sizeof(float) * 5 * n, err, sizeof err));
    assert_ok(kern_gather_rows(d_src, d_rows, d_dst, 5, n, NULL, err, sizeof err));
    assert_ok(kern_download(got, d_dst, sizeof(float) * 5 * n, err, sizeof err));
    for (int i = 0; i < 5; i++)
        assert_memory_equal(got + (size_t)i * n, src + (size_t)rows[i] * n, sizeof(float) * n);
    kern_free(d_src), kern_free(d_dst), kern_free(d_rows);
    free(src), free(got);
}

/* RMSNorm, RoPE (both layouts, position 8000+), SwiGLU against double-precision loops. */
static void test_elementwise(void **state) {
    (void)state;
    const int rows = 5, n = 576, hd = 64, heads = 3;
    float *x = malloc(rows * n * 4), *w = malloc(n * 4), *y = malloc(rows * n * 4);
    for (int i = 0; i < rows * n; i++) x[i] = frand() * 3;
    for (int i = 0; i < n; i++) w[i] = frand();
    float *dx = dev_copy(x, rows * n * 4), *dw = dev_copy(w, n * 4), *dy;
    assert_ok(kern_malloc((void **)&dy, rows * n * 4, err, sizeof err));
    assert_ok(kern_rmsnorm(dx, dw, dy, rows, n, 1e-5f, NULL, err, sizeof err));
    assert_ok(kern_sync(NULL, err, sizeof err));
    assert_ok(kern_download(y, dy, rows * n * 4, err, sizeof err));
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < n; c++) ss += (double)x[r * n + c] * x[r * n + c];
        double sc = 1.0 / sqrt(ss / n + 1e-5);
        for (int c = 0; c < n; c++) assert_float_equal(y[r * n + c], x[r * n + c] * sc * w[c], 1e-4);
    }
    for (int neox = 0; neox <= 1; neox++) {
        const int T = 4, pos0 = 8190;
        float *h = malloc(T * heads * hd * 4), *g = malloc(T * heads * hd * 4);
        for (int i = 0; i < T * heads * hd; i++) h[i] = frand();
        float *dh = dev_copy(h, T * heads * hd * 4);
        assert_ok(kern_rope(dh, T, heads, hd, hd, pos0, 100000.0f, neox, NULL, err, sizeof err));
        assert_ok(kern_sync(NULL, err, sizeof err));
        assert_ok(kern_download(g, dh, T * heads * hd * 4, err, sizeof err));
        for (int t = 0; t < T; t++)
            for (int hh = 0; hh < heads; hh++)
                for (int kk = 0; kk < hd / 2; kk++) {
                    double th = (pos0 + t) * pow(100000.0, -2.0 * kk / hd);
                    int a = neox ? kk : 2 * kk, b = neox ? kk + hd / 2 : 2 * kk + 1;
                    const float *src = h + (t * heads + hh) * hd;
                    const float *dst = g + (t * heads + hh) * hd;
                    assert_float_equal(dst[a], src[a] * cos(th) - src[b] * sin(th), 1e-5);
                    assert_float_equal(dst[b], src[a] * sin(th) + src[b] * cos(th), 1e-5);
                }
        kern_free(dh);
        free(h), free(g);
    }
    kern_free(dx), kern_free(dw), kern_free(dy);
    free(x), free(w), free(y);
}

/* bf16 GEMM through cuBLAS against a double loop on the same bf16-rounded inputs. */
static void test_gemm(void **state) {
    (void)state;
    const int m = 37, kdim = 576, nout = 192;
    float *x = malloc(m * kdim * 4), *w = malloc(nout * kdim * 4), *y = malloc(m * nout * 4);
    for (int i = 0; i < m * kdim; i++) x[i] = quant_bf16_to_fp32(quant_fp32_to_bf16(frand()));
    for (int i = 0; i < nout * kdim; i++) w[i] = quant_bf16_to_fp32(quant_fp32_to_bf16(frand()));
    float *dxf = dev_copy(x, m * kdim * 4), *dwf = dev_copy(w, nout * kdim * 4), *dy;
    uint16_t *dx, *dw;
    assert_ok(kern_malloc((void **)&dx, m * kdim * 2, err, sizeof err));
    assert_ok(kern_malloc((void **)&dw, nout * kdim * 2, err, sizeof err));
    assert_ok(kern_malloc((void **)&dy, m * nout * 4, err, sizeof err));
    assert_ok(kern_f32_to_bf16(dxf, dx, m * kdim, NULL, err, sizeof err));
    assert_ok(kern_f32_to_bf16(dwf, dw, nout * kdim, NULL, err, sizeof err));
    kern_blas *b;
    assert_ok(kern_blas_create(&b, err, sizeof err));
    assert_ok(kern_gemm_bf16(b, dx, dw, dy, m, kdim, nout, NULL, err, sizeof err));
    assert_ok(kern_sync(NULL, err, sizeof err));
    assert_ok(kern_download(y, dy, m * nout * 4, err, sizeof err));
    for (int i = 0; i < m; i++)
        for (int o = 0; o < nout; o++) {
            double acc = 0;
            for (int c = 0; c < kdim; c++) acc += (double)x[i * kdim + c] * w[o * kdim + c];
            assert_float_equal(y[i * nout + o], acc, 1e-3);
        }
    kern_blas_free(b);
    kern_free(dxf), kern_free(dwf), kern_free(dx), kern_free(dw), kern_free(dy);
    free(x), free(w), free(y);
}

int main(void) {
    if (kern_device_count() == 0) {
        printf(
            "test_cuda: SKIP: no CUDA device found (the CUDA kernels were compiled but cannot run here)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequant),     cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_gemm),        cmocka_unit_test(test_attn_prefill),
        cmocka_unit_test(test_attn_decode), cmocka_unit_test(test_kv_store_block),
        cmocka_unit_test(test_gather_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("test_cuda: SKIP: built without CUDA (nvcc not found at configure time)\n");
    return 77;
}
#endif
