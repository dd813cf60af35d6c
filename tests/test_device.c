/* test_device.c — the --device choice (engine/backend.h): parsing, the default, and the messages when
 * CUDA is asked for but missing; `bosch bench`'s batch options (parsing, refusals on the CPU, the
 * usage text, the CSV columns and the target ratios of a CPU run on a small random model).
 * On a machine with a GPU and a CUDA build (or over the kernels' CPU emulator, test_device_emu),
 * also runs the batched GPU path on tiny random models written by mkmodel (no model file needed):
 * prefill + decode of one sequence and of a batch of three (two with identical tokens) against
 * the CPU forward of each sequence, and decode after a random KV fill. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "forward.h"
#include "kv_cache.h"
#include "gguf_write.h"
#include "model.h"

static char err[512];

/* GPU vs CPU logits: the bound this test has always used on the tiny model (fp32 CPU, bf16 GPU
 * weights and GEMM inputs; docs/gpu.md). Sequences of one batch with identical tokens must agree
 * far better: only the row a sequence occupies differs. */
#define GPU_CPU_TOL 0.05f
#define SAME_SEQ_TOL 1e-4f

static void test_parse(void **state) {
    (void)state;
    backend_device d = BACKEND_CUDA;
    assert_int_equal(backend_parse_device("cpu", &d, err, sizeof err), 0);
    assert_int_equal(d, BACKEND_CPU);
    assert_int_equal(backend_parse_device("auto", &d, err, sizeof err), 0);
    assert_int_equal(d, backend_cuda_count() > 0 ? BACKEND_CUDA : BACKEND_CPU);
    assert_int_equal(backend_default_device(), d);
    assert_int_equal(backend_parse_device("gpu", &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "'gpu'"));
    assert_string_equal(backend_device_name(BACKEND_CPU), "cpu");
    assert_string_equal(backend_device_name(BACKEND_CUDA), "cuda");
}

/* Without a GPU (or without CUDA in the build) "cuda" is refused and the message says why. */
static void test_cuda_missing(void **state) {
    (void)state;
    if (backend_cuda_count() > 0) skip();
    backend_device d = BACKEND_CPU;
    assert_int_equal(backend_parse_device("cuda", &d, err, sizeof err), -1);
#ifdef BOSCH_HAVE_CUDA
    assert_non_null(strstr(err, "no CUDA GPU is visible"));
#else
    assert_non_null(strstr(err, "no CUDA backend"));
#endif
    backend *g = (backend *)1;
    const backend_options bo = {.device = BACKEND_CUDA, .warm_up = 1};
    assert_int_equal(backend_create(&g, &bo, NULL, err, sizeof err), -1);
    assert_null(g);
}

/* ---- `bosch bench` through the program (BOSCH_BIN) ---- */

/* Run "$BOSCH_BIN args" with stdout and stderr into out[cap] (truncated); returns the exit status. */
static int run_bosch(const char *args, char *out, size_t cap) {
    const char *bin = getenv("BOSCH_BIN");
    char cmd[2048], tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/bosch_test_device_out_%d.txt", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' %s >%s 2>&1", bin, args, tmp);
    int st = system(cmd);
    FILE *f = fopen(tmp, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = '\0';
    if (f) fclose(f);
    remove(tmp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int have_bin(void) {
    const char *bin = getenv("BOSCH_BIN");
    return bin && access(bin, X_OK) == 0;
}

/* Option errors come before the model is loaded, so no model is needed here. */
static void test_bench_options(void **state) {
    (void)state;
    if (!have_bin()) skip();
    static char out[16384];
    assert_int_equal(run_bosch("bench --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "--batch LIST"));
    assert_non_null(strstr(out, "--decode-fill F"));
    assert_non_null(strstr(out, "does not\n")); /* "decode speed does not / depend on the values" */
    assert_non_null(strstr(out, "depend on the values"));
    /* the CPU bench is single-sequence and always prefills */
    assert_int_equal(run_bosch("bench --device cpu --batch 2", out, sizeof out), 2);
    assert_non_null(strstr(out, "--batch above 1 needs --device cuda"));
    assert_int_equal(run_bosch("bench --device cpu --batch 1,4", out, sizeof out), 2);
    assert_non_null(strstr(out, "--batch above 1 needs --device cuda"));
    assert_int_equal(run_bosch("bench --device cpu --decode-fill random", out, sizeof out), 2);
    assert_non_null(strstr(out, "--decode-fill random needs --device cuda"));
    assert_int_equal(run_bosch("bench --batch 0", out, sizeof out), 2);
    assert_non_null(strstr(out, "--batch: bad list '0'"));
    assert_int_equal(run_bosch("bench --batch 2x", out, sizeof out), 2);
    assert_non_null(strstr(out, "--batch: bad list"));
    assert_int_equal(run_bosch("bench --decode-fill zeros", out, sizeof out), 2);
    assert_non_null(strstr(out, "bad value 'zeros' (need prefill or random)"));
    assert_int_equal(run_bosch("bench --device cpu --decode-fill random --decode 0", out, sizeof out), 2);
    assert_non_null(strstr(out, "--decode is 0"));
}

/* Write mkmodel's "tiny" shape with n_layer layers to a temp file and load it. */
static model *tiny_model(int n_layer, char *path, size_t cap) {
    snprintf(path, cap, "/tmp/bosch_test_device_%d_%d.gguf", (int)getpid(), n_layer);
    mkmodel_shape s;
    assert_int_equal(mkmodel_preset("tiny", &s), 0);
    s.n_layer = n_layer;
    if (mkmodel_write(path, &s, err, sizeof err)) fail_msg("%s", err);
    model *m;
    if (model_load(&m, path, err, sizeof err)) fail_msg("%s", err);
    return m;
}

/* A CPU run on a 4-layer tiny model (8 KV heads, head_dim 32), 2 interleaved rounds: CSV columns
 * (old ones first, new ones appended), the medians' rows each followed by one row per round, and
 * the target lines. Expected KV bytes from the cache layout by hand: a full head holds T
 * positions, an SWA head min(T, window) (sinks 0), keys + values, bf16 (2 bytes, the default
 * --kv). rho 0.875 of 8 heads = 7 SWA heads. */
static void test_bench_cpu_csv_targets(void **state) {
    (void)state;
    if (!have_bin()) skip();
    char path[128], csv[128], args[512];
    model *m = tiny_model(4, path, sizeof path);
    int units = m->hp.n_layer * m->hp.n_head_kv, hd = m->hp.head_dim;
    model_free(m);
    assert_int_equal(units, 8);
    const int T = 64, W = 4;
    snprintf(csv, sizeof csv, "/tmp/bosch_test_device_%d.csv", (int)getpid());
    snprintf(args, sizeof args,
             "bench '%s' --device cpu --lengths %d --ratios 0,0.875 --window %d --decode 2 --eval-samples 0 "
             "--rounds 2 --csv %s",
             path, T, W, csv);
    static char out[16384];
    int rc = run_bosch(args, out, sizeof out);
    remove(path);
    if (rc != 0) fail_msg("bosch bench exited %d:\n%s", rc, out);
    unsigned long long kv_full = (unsigned long long)units * T * hd * 2 * 2;
    unsigned long long kv_swa = (unsigned long long)(1 * T + 7 * W) * hd * 2 * 2;
    char want[256];
    snprintf(want, sizeof want, "KV bytes rho 0.875 / rho 0 = %.3fx (goal <= 0.2: met)",
             (double)kv_swa / kv_full);
    if (!strstr(out, "target T=64 batch=1 (7 of 8 KV heads SWA): decode tok/s rho 0.875 / rho 0 = ") ||
        !strstr(out, want) || !strstr(out, "interleaved: 2 rounds") || !strstr(out, "load average before: "))
        fail_msg("no target line '%s' (or no rounds and load lines) in:\n%s", want, out);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line,
                        "measure,length,ratio,n_swa,window,sinks,kv_bytes,prefill_tok_s,decode_tok_s,"
                        "seconds,cpu_s,first_layer,batch,device,decode_fill,gpu_peak_bytes,round,rounds,"
                        "prefill_tok_s_min,prefill_tok_s_max,decode_tok_s_min,decode_tok_s_max,"
                        "prefill_vs_full,decode_vs_full,kv_type,load_before,load_after\n");
    /* first the GEMM ceiling at T (CPU benches only), then the speed rows */
    assert_non_null(fgets(line, sizeof line, f));
    {
        char measure[32];
        int length;
        double pf;
        assert_int_equal(sscanf(line, "%31[^,],%d,%*f,%*d,%*d,%*d,%*u,%lf", measure, &length, &pf), 3);
        assert_string_equal(measure, "gemm_ceiling");
        assert_int_equal(length, T);
        assert_true(pf > 0.0);
    }
    for (int k = 0; k < 6; k++) { /* per ratio: the medians, then rounds 1 and 2 */
        const int r = k / 3, round = k % 3;
        assert_non_null(fgets(line, sizeof line, f));
        char measure[32], device[16], fill[16], kvt[8];
        int length, n_swa, window, sinks, first, batch, rnd, rounds;
        double ratio, pf, dc, secs, cpu, pmin, pmax, dmin, dmax, pvs, dvs;
        unsigned long long kv, peak;
        int n = sscanf(
            line,
            "%31[^,],%d,%lf,%d,%d,%d,%llu,%lf,%lf,%lf,%lf,%d,%d,%15[^,],%15[^,],%llu,%d,%d,%lf,%lf,%lf,%lf,"
            "%lf,%lf,%7[^,]",
            measure, &length, &ratio, &n_swa, &window, &sinks, &kv, &pf, &dc, &secs, &cpu, &first, &batch,
            device, fill, &peak, &rnd, &rounds, &pmin, &pmax, &dmin, &dmax, &pvs, &dvs, kvt);
        assert_int_equal(n, 25);
        assert_string_equal(measure, round ? "speed_round" : "speed");
        assert_int_equal(rnd, round);
        assert_int_equal(rounds, 2);
        assert_string_equal(kvt, "bf16");
        assert_true(pmin <= pf && pf <= pmax && dmin <= dc && dc <= dmax);
        if (r == 0) assert_true(pvs == 1.0 && dvs == 1.0); /* ratio 0 over itself, every round */
        assert_int_equal(length, T);
        assert_int_equal(n_swa, r == 0 ? 0 : 7);
        assert_int_equal(window, W);
        assert_true(kv == (r == 0 ? kv_full : kv_swa));
        assert_true(pf > 0.0 && dc > 0.0);
        assert_int_equal(batch, 1);
        assert_string_equal(device, "cpu");
        assert_string_equal(fill, "prefill");
        assert_true(peak == 0);
    }
    fclose(f);
    remove(csv);
    for (int k = 0; k < 3; k++) { /* the figure drawn beside the CSV */
        static const char *const ext[] = {"gp", "png", "svg"};
        char fig[160];
        snprintf(fig, sizeof fig, "/tmp/bosch_test_device_%d.%s", (int)getpid(), ext[k]);
        remove(fig);
    }
}

/* ---- the GPU path (a GPU, or the emulator build) ---- */

/* The CUDA backend over m, warmed up as `bosch bench` and `bosch generate` make it. */
static int gpu_create(backend **g, const model *m) {
    const backend_options bo = {.device = BACKEND_CUDA, .warm_up = 1};
    return backend_create(g, &bo, m, err, sizeof err);
}

static void check_close(const float *gpu, const float *cpu, int V, float tol, const char *what, int step) {
    for (int i = 0; i < V; i++)
        if (!(fabsf(gpu[i] - cpu[i]) <= tol))
            fail_msg("%s, step %d, token %d: %g vs %g (tolerance %g)", what, step, i, gpu[i], cpu[i], tol);
}

/* A batch of n_seq sequences with tokens seq_toks[s] (each T prompt tokens + 3 decode tokens):
 * prefill + 3 decode steps on the GPU in one batch, every sequence against its own CPU forward
 * (same mask), and sequences with identical tokens against each other. */
static void run_batch(const model *m, const attn_mask *mk, int n_seq, const int32_t *const *seq_toks, int T) {
    const int V = m->hp.n_vocab, n_ctx = T + 4;
    backend *g;
    if (gpu_create(&g, m)) fail_msg("%s", err);
    if (backend_start(g, mk, n_seq, n_ctx, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_seq(g), n_seq);
    assert_true(backend_kv_bytes(g) == (uint64_t)n_seq * kv_cache_bytes(&m->hp, mk, n_ctx, 4));
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)n_seq * T), dtok[8];
    float *gpu = malloc(sizeof(float) * (size_t)V * n_seq), *cpu = malloc(sizeof(float) * (size_t)V * n_seq);
    kv_cache *kv = calloc((size_t)n_seq, sizeof *kv);
    forward_ws *ws = forward_ws_create(&m->hp, T);
    assert_true(toks && gpu && cpu && kv && ws && n_seq <= 8);
    int last = T - 1;
    for (int s = 0; s < n_seq; s++) {
        memcpy(toks + (size_t)s * T, seq_toks[s], sizeof(int32_t) * T);
        assert_int_equal(kv_cache_init(&kv[s], &m->hp, mk, n_ctx), 0);
        assert_int_equal(forward_prefill(m, mk, seq_toks[s], T, &kv[s], &last, 1, cpu + (size_t)s * V, ws),
                         0);
    }
    if (backend_prefill(g, toks, T, gpu, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_past(g), T);
    for (int step = 0; step <= 3; step++) {
        for (int s = 0; s < n_seq; s++) {
            check_close(gpu + (size_t)s * V, cpu + (size_t)s * V, V, GPU_CPU_TOL, "gpu vs cpu", step);
            for (int t = 0; t < s; t++)
                if (!memcmp(seq_toks[s], seq_toks[t], sizeof(int32_t) * (T + 3)))
                    check_close(gpu + (size_t)s * V, gpu + (size_t)t * V, V, SAME_SEQ_TOL,
                                "identical sequences", step);
        }
        if (step == 3) break;
        for (int s = 0; s < n_seq; s++) {
            dtok[s] = seq_toks[s][T + step];
            assert_int_equal(forward_decode(m, mk, dtok[s], &kv[s], cpu + (size_t)s * V, ws), 0);
        }
        if (backend_decode(g, dtok, gpu, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(backend_n_past(g), T + step + 1);
    }
    assert_true(backend_peak_bytes(g) > 0);
    backend_free(g);
    for (int s = 0; s < n_seq; s++) kv_cache_free(&kv[s]);
    free(kv);
    forward_ws_free(ws);
    free(toks), free(gpu), free(cpu);
}

/* One sequence: prefill + 3 decode steps, one SWA head whose window (4) the 20-token prompt wraps. */
static void test_gpu_matches_cpu(void **state) {
    (void)state;
    if (backend_cuda_count() == 0) skip();
    char path[128];
    model *m = tiny_model(2, path, sizeof path);
    remove(path);
    attn_mask mk;
    assert_int_equal(mask_init(&mk, m->hp.n_layer, m->hp.n_head_kv, 4, 1, ATTN_FULL), 0);
    mk.z[0] = ATTN_SWA;
    int32_t toks[24];
    for (int i = 0; i < 24; i++) toks[i] = (int32_t)((i * 37 + 5) % m->hp.n_vocab);
    const int32_t *seqs[1] = {toks};
    run_batch(m, &mk, 1, seqs, 20);
    mask_free(&mk);
    model_free(m);
}

/* Three sequences in one batch: 0 and 2 with identical tokens, 1 with others. Each matches its own
 * CPU forward (so rows of different sequences are not mixed up), 0 and 2 match each other. */
static void test_gpu_batch_matches_cpu(void **state) {
    (void)state;
    if (backend_cuda_count() == 0) skip();
    char path[128];
    model *m = tiny_model(2, path, sizeof path);
    remove(path);
    attn_mask mk;
    assert_int_equal(mask_init(&mk, m->hp.n_layer, m->hp.n_head_kv, 4, 1, ATTN_FULL), 0);
    mk.z[1] = ATTN_SWA, mk.z[2] = ATTN_SWA;
    int32_t a[24], b[24];
    for (int i = 0; i < 24; i++) {
        a[i] = (int32_t)((i * 37 + 5) % m->hp.n_vocab);
        b[i] = (int32_t)((i * 101 + 17) % m->hp.n_vocab);
    }
    const int32_t *seqs[3] = {a, b, a};
    run_batch(m, &mk, 3, seqs, 20);
    mask_free(&mk);
    model_free(m);
}

/* Decode-only mode: a random fill sets n_past (bounds checked) and decode then runs from there;
 * the fill's values are read (another seed gives other logits, the same seed the same ones) and
 * every slot decode reads was written (the emulator poisons fresh device memory with NaN, so a
 * missed slot makes the logits non-finite). */
static void test_gpu_fill_random(void **state) {
    (void)state;
    if (backend_cuda_count() == 0) skip();
    char path[128];
    model *m = tiny_model(2, path, sizeof path);
    remove(path);
    attn_mask mk;
    assert_int_equal(mask_init(&mk, m->hp.n_layer, m->hp.n_head_kv, 8, 0, ATTN_FULL), 0);
    mk.z[0] = ATTN_SWA;
    const int V = m->hp.n_vocab, n_seq = 2, n_ctx = 40;
    float *l1 = malloc(sizeof(float) * V * n_seq), *l2 = malloc(sizeof(float) * V * n_seq);
    float *l3 = malloc(sizeof(float) * V * n_seq);
    int32_t tok[2] = {7, 300};
    backend *g;
    if (gpu_create(&g, m)) fail_msg("%s", err);
    assert_int_equal(backend_n_seq(g), 0); /* the warm-up's cache is gone */
    assert_true(backend_kv_bytes(g) == 0);
    assert_int_equal(backend_fill_random(g, 1, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "before backend_start"));
    if (backend_start(g, &mk, n_seq, n_ctx, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_n_past(g), 0);
    assert_int_equal(backend_fill_random(g, n_ctx + 1, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "n_past 41 is outside 0..40"));
    assert_int_equal(backend_fill_random(g, -1, 1, err, sizeof err), -1);
    float *outs[3] = {l1, l2, l3};
    uint64_t seeds[3] = {1, 2, 1};
    for (int k = 0; k < 3; k++) {
        if (backend_fill_random(g, 30, seeds[k], err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(backend_n_past(g), 30);
        for (int d = 0; d < 2; d++)
            if (backend_decode(g, tok, outs[k], err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(backend_n_past(g), 32);
    }
    for (int i = 0; i < V * n_seq; i++) assert_true(isfinite(l1[i]) && isfinite(l2[i]));
    assert_memory_equal(l1, l3, sizeof(float) * V * n_seq);
    int differ = 0;
    for (int i = 0; i < V * n_seq; i++) differ += l1[i] != l2[i];
    assert_true(differ > V); /* another seed: other keys/values, other logits */
    /* the cache fills up: n_ctx - 1 positions, then one decode, then full */
    if (backend_fill_random(g, n_ctx - 1, 3, err, sizeof err)) fail_msg("%s", err);
    if (backend_decode(g, tok, NULL, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(backend_decode(g, tok, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "full"));
    backend_free(g);
    free(l1), free(l2), free(l3);
    mask_free(&mk);
    model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),           cmocka_unit_test(test_cuda_missing),
        cmocka_unit_test(test_bench_options),   cmocka_unit_test(test_bench_cpu_csv_targets),
        cmocka_unit_test(test_gpu_matches_cpu), cmocka_unit_test(test_gpu_batch_matches_cpu),
        cmocka_unit_test(test_gpu_fill_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
