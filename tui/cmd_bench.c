/* cmd_bench.c — `bosch bench [MODEL]`: what a head mask buys on the CPU.
 *
 * For every context length T and ratio rho: prefill tokens/s (one forward pass over T tokens into
 * the hybrid KV cache), decode tokens/s at context T (greedy steps after that prefill) and the
 * exact KV bytes at T. Then the evaluator: scoring a mask that differs from the incumbent (base)
 * only in the last quarter of layers, with prefix reuse versus from scratch.
 *
 * A rho-mask makes round(rho * n_layer * n_head_kv) KV heads SWA, evenly spaced over the
 * row-major (layer, kv_head) order, so SWA heads are spread over all layers. Token ids are
 * pseudo-random (speed does not depend on the text). Each timing is the best of --reps runs.
 * The table goes to stdout, progress to stderr, and --csv writes the same rows.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "csvio.h"
#include "device.h"
#include "eval.h"
#include "forward.h"
#include "kv_cache.h"
#include "model.h"

#define BENCH_MAX_LIST 16
#define BENCH_DEFAULT_WINDOW 256

typedef struct {
    const char *model_path, *csv_path;
    int lengths[BENCH_MAX_LIST], n_lengths;
    double ratios[BENCH_MAX_LIST];
    int n_ratios;
    int window, sinks, reps, n_decode, eval_samples, eval_length, do_eval, do_decode;
    bosch_device device; /* where prefill and decode run (the evaluator bench runs on the CPU) */
} bench_opts;

static void bench_usage(FILE *f) {
    fprintf(f,
            "usage: bosch bench [MODEL] [options]\n"
            "  CPU prefill and decode speed and KV bytes per (context length, ratio), and the\n"
            "  evaluator's prefix-reuse speed-up; a table on stdout, progress on stderr\n"
            "  MODEL              GGUF file (default: %s)\n"
            "  --lengths LIST     context lengths in tokens (default 1024,2048,4096,8192)\n"
            "  --ratios LIST      ratios rho of SWA KV heads (default 0,0.5,0.875,1)\n"
            "  --window W         SWA window in tokens (default %d)\n"
            "  --sinks S          sink tokens of SWA heads (default 0)\n"
            "  --reps N           repetitions per timing, the best is kept (default 1)\n"
            "  --decode N         decode steps timed at each length (default 16; 0 skips decode)\n"
            "  --eval-samples N   evaluator samples (default 4; 0 skips the evaluator bench)\n"
            "  --eval-length T    tokens per evaluator sample (default 1024)\n"
            "  --csv FILE         also write the rows as CSV\n"
            "  --device D         cpu, cuda or auto for prefill/decode (default: cuda when a GPU is visible;\n"
            "                     the evaluator bench always runs on the CPU)\n",
            cli_default_model(), BENCH_DEFAULT_WINDOW);
}

/* CPU seconds used by the process so far, all threads (a check when the machine is shared). */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "bosch bench: %s expects an integer in [%d, %d], got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Comma-separated list of integers (is_int) or of numbers in [0, 1]. Returns the count or -1. */
static int parse_list(const char *opt, const char *s, int is_int, int *ints, double *reals) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        int bad = errno || end == p || (*end && *end != ',') || n >= BENCH_MAX_LIST;
        if (is_int)
            bad = bad || v < 1 || v > 1 << 20 || v != floor(v);
        else
            bad = bad || v < 0.0 || v > 1.0;
        if (bad) {
            fprintf(stderr, "bosch bench: %s: bad list '%s' (%s, at most %d values)\n", opt, s,
                    is_int ? "positive integers" : "numbers in [0, 1]", BENCH_MAX_LIST);
            return -1;
        }
        if (is_int)
            ints[n++] = (int)v;
        else
            reals[n++] = v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) fprintf(stderr, "bosch bench: %s: empty list\n", opt);
    return n > 0 ? n : -1;
}

static int parse_args(int argc, char **argv, bench_opts *o) {
    memset(o, 0, sizeof *o);
    const int def_len[] = {1024, 2048, 4096, 8192};
    const double def_rho[] = {0.0, 0.5, 0.875, 1.0};
    memcpy(o->lengths, def_len, sizeof def_len), o->n_lengths = 4;
    memcpy(o->ratios, def_rho, sizeof def_rho), o->n_ratios = 4;
    o->device = device_default();
    o->window = BENCH_DEFAULT_WINDOW, o->reps = 1, o->n_decode = 16;
    o->eval_samples = 4, o->eval_length = 1024;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bench_usage(stdout);
            return 1;
        } else if (a[0] == '-' && a[1] && !val) {
            fprintf(stderr, "bosch bench: %s needs a value (or is unknown)\n", a);
            return 2;
        } else if (!strcmp(a, "--lengths")) {
            rc = (o->n_lengths = parse_list(a, val, 1, o->lengths, NULL)) < 0, i++;
        } else if (!strcmp(a, "--ratios")) {
            rc = (o->n_ratios = parse_list(a, val, 0, NULL, o->ratios)) < 0, i++;
        } else if (!strcmp(a, "--window")) {
            rc = parse_int(a, val, 1, 1 << 24, &o->window), i++;
        } else if (!strcmp(a, "--sinks")) {
            rc = parse_int(a, val, 0, 1 << 24, &o->sinks), i++;
        } else if (!strcmp(a, "--reps")) {
            rc = parse_int(a, val, 1, 1000, &o->reps), i++;
        } else if (!strcmp(a, "--decode")) {
            rc = parse_int(a, val, 0, 100000, &o->n_decode), i++;
        } else if (!strcmp(a, "--eval-samples")) {
            rc = parse_int(a, val, 0, 1000, &o->eval_samples), i++;
        } else if (!strcmp(a, "--eval-length")) {
            rc = parse_int(a, val, 8, 1 << 20, &o->eval_length), i++;
        } else if (!strcmp(a, "--csv")) {
            o->csv_path = val, i++;
        } else if (!strcmp(a, "--device")) {
            char derr[256];
            rc = device_parse(val, &o->device, derr, sizeof derr) != 0, i++;
            if (rc) fprintf(stderr, "bosch bench: %s\n", derr);
        } else if (a[0] == '-') {
            fprintf(stderr, "bosch bench: unknown option %s (see bosch bench --help)\n", a);
            return 2;
        } else if (!o->model_path) {
            o->model_path = a;
        } else {
            fprintf(stderr, "bosch bench: unexpected argument '%s'\n", a);
            return 2;
        }
        if (rc) return 2;
    }
    if (!o->model_path) o->model_path = cli_default_model();
    return 0;
}

/* round(rho * units) SWA KV heads, evenly spaced over the row-major (layer, kv_head) order. */
static int mask_for_ratio(attn_mask *m, const model_hparams *hp, double rho, int window, int sinks) {
    if (mask_init(m, hp->n_layer, hp->n_head_kv, window, sinks, ATTN_FULL)) return -1;
    long long units = (long long)hp->n_layer * hp->n_head_kv;
    long long n = llround(rho * (double)units);
    for (long long k = 0; k < n; k++) m->z[k * units / n] = ATTN_SWA;
    return 0;
}

static void fill_tokens(int32_t *t, int n, int n_vocab) {
    uint64_t s = 0x853c49e6748fea9bull;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull; /* 64-bit LCG (Knuth's MMIX) */
        t[i] = (int32_t)((s >> 33) % (uint64_t)(n_vocab > 1000 ? n_vocab - 1000 : n_vocab)) +
               (n_vocab > 1000 ? 500 : 0);
    }
}

typedef struct {
    double prefill_s, decode_s; /* wall seconds, best of reps */
    double prefill_cpu_s;       /* CPU seconds of the whole process (all threads) in that prefill */
    uint64_t kv_bytes;
} speed_row;

/* Best-of-reps prefill of T tokens into a fresh cache, then n_decode greedy-free decode steps. */
static int bench_speed(const model *m, const attn_mask *mask, const int32_t *toks, int T, int n_decode,
                       int reps, speed_row *row) {
    kv_cache kv;
    if (kv_cache_init(&kv, &m->hp, mask, T + n_decode + 1)) return -1;
    forward_ws *ws = forward_ws_create(&m->hp, T);
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    int rc = ws && logits ? 0 : -1, last = T - 1;
    row->prefill_s = row->decode_s = INFINITY;
    row->prefill_cpu_s = 0.0;
    row->kv_bytes = kv_cache_bytes(&m->hp, mask, T, 4); /* at context T exactly (the cache has decode room) */
    for (int r = 0; r < reps && rc == 0; r++) {
        kv_cache_clear(&kv);
        double c0 = cpu_s(), t0 = now_s();
        rc = forward_prefill(m, mask, toks, T, &kv, &last, 1, logits, ws);
        double t1 = now_s(), c1 = cpu_s();
        for (int d = 0; d < n_decode && rc == 0; d++) rc = forward_decode(m, mask, toks[d], &kv, logits, ws);
        double t2 = now_s();
        if (t1 - t0 < row->prefill_s) row->prefill_s = t1 - t0, row->prefill_cpu_s = c1 - c0;
        if (t2 - t1 < row->decode_s) row->decode_s = t2 - t1;
    }
    free(logits);
    forward_ws_free(ws);
    kv_cache_free(&kv);
    return rc;
}

/* bench_speed on the GPU: the cache is allocated before timing; each prefill and decode step
 * returns when the GPU is done. prefill_cpu_s is not measured there (0). */
static int bench_speed_gpu(device_gpu *gpu, const model *m, const attn_mask *mask, const int32_t *toks, int T,
                           int n_decode, int reps, speed_row *row) {
    char err[512];
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    int rc = logits ? device_gpu_start(gpu, mask, T + n_decode + 1, err, sizeof err) : -1;
    row->prefill_s = row->decode_s = INFINITY;
    row->prefill_cpu_s = 0.0;
    row->kv_bytes = kv_cache_bytes(&m->hp, mask, T, 4);
    for (int r = 0; r < reps && rc == 0; r++) {
        double t0 = now_s();
        rc = device_gpu_prefill(gpu, toks, T, logits, err, sizeof err);
        double t1 = now_s();
        for (int d = 0; d < n_decode && rc == 0; d++) rc = device_gpu_decode(gpu, toks[d], logits, err, sizeof err);
        double t2 = now_s();
        if (t1 - t0 < row->prefill_s) row->prefill_s = t1 - t0;
        if (t2 - t1 < row->decode_s) row->decode_s = t2 - t1;
    }
    if (rc && logits) fprintf(stderr, "bosch bench: %s\n", err);
    free(logits);
    return rc;
}

static const char *const CSV_HEADER[] = {"measure",      "length",  "ratio",    "n_swa",
                                         "window",       "sinks",   "kv_bytes", "prefill_tok_s",
                                         "decode_tok_s", "seconds", "cpu_s",    "first_layer"};

static int csv_row(csv_out *w, const char *measure, int length, double ratio, int n_swa, const bench_opts *o,
                   uint64_t kv_bytes, double pf, double dc, double secs, double cpu, int first) {
    if (!w) return 0;
    int rc = csv_out_rowf(
        w, "%s\x1f%d\x1f%.4f\x1f%d\x1f%d\x1f%d\x1f%llu\x1f%.2f\x1f%.2f\x1f%.4f\x1f%.4f\x1f%d", measure,
        length, ratio, n_swa, o->window, o->sinks, (unsigned long long)kv_bytes, pf, dc, secs, cpu, first);
    if (rc) fprintf(stderr, "bosch bench: writing a CSV row to %s failed\n", o->csv_path);
    return rc;
}

/* Evaluator: base = the rho 0.5 mask; the scored mask toggles head 0 in every layer of the last
 * quarter. Best-of-reps time with prefix reuse vs from scratch; the results must be identical. */
static int bench_eval(const model *m, const bench_opts *o, csv_out *csv) {
    const model_hparams *hp = &m->hp;
    int ns = o->eval_samples, T = o->eval_length, rc = -1;
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)ns * T);
    eval_sample *smp = malloc(sizeof *smp * (size_t)ns);
    evaluator *reuse = NULL, *scratch = NULL;
    attn_mask base = {0}, other = {0};
    char err[512] = "";
    if (!toks || !smp) goto out;
    fill_tokens(toks, ns * T, hp->n_vocab);
    for (int s = 0; s < ns; s++) smp[s] = (eval_sample){toks + (size_t)s * T, T, T - 4, 4};
    if (mask_for_ratio(&base, hp, 0.5, o->window, o->sinks) || mask_copy(&other, &base)) goto out;
    int from = hp->n_layer - (hp->n_layer + 3) / 4;
    for (int l = from; l < hp->n_layer; l++) mask_set(&other, l, 0, !mask_get(&other, l, 0));
    if (evaluator_create(&reuse, m, smp, ns, 1, err, sizeof err) ||
        evaluator_create(&scratch, m, smp, ns, 0, err, sizeof err))
        goto out;
    eval_result r;
    fprintf(stderr, "bench: evaluator base mask (%d samples x %d tokens)\n", ns, T);
    if (evaluator_set_base(reuse, &base, &r, NULL, err, sizeof err)) goto out;
    double best_reuse = INFINITY, best_scratch = INFINITY, cpu_reuse = 0.0, cpu_scratch = 0.0;
    eval_result rr = {0}, rs = {0};
    for (int k = 0; k < o->reps; k++) {
        fprintf(stderr, "bench: evaluator rep %d/%d\n", k + 1, o->reps);
        double c0 = cpu_s();
        if (evaluator_score(reuse, &other, &rr, NULL, err, sizeof err)) goto out;
        double c1 = cpu_s();
        if (evaluator_score(scratch, &other, &rs, NULL, err, sizeof err)) goto out;
        double c2 = cpu_s();
        if (rr.seconds < best_reuse) best_reuse = rr.seconds, cpu_reuse = c1 - c0;
        if (rs.seconds < best_scratch) best_scratch = rs.seconds, cpu_scratch = c2 - c1;
    }
    printf("\nevaluator: %d samples x %d tokens, window %d; base rho 0.5, scored mask differs in layers "
           "%d..%d\n",
           ns, T, o->window, from, hp->n_layer - 1);
    printf("  from scratch   %8.3f s   cpu %8.3f s\n", best_scratch, cpu_scratch);
    printf("  prefix reuse   %8.3f s   cpu %8.3f s  (from layer %d)\n", best_reuse, cpu_reuse,
           rr.first_layer);
    printf("  speed-up       %8.2fx  cpu %8.2fx   results identical: %s\n", best_scratch / best_reuse,
           cpu_scratch / cpu_reuse,
           rr.score == rs.score && rr.accuracy == rs.accuracy && rr.nll == rs.nll ? "yes" : "NO");
    double rho = mask_ratio(&other);
    int nsw = mask_count_swa(&other);
    if (csv_row(csv, "eval_scratch", T, rho, nsw, o, 0, 0, 0, best_scratch, cpu_scratch, 0) ||
        csv_row(csv, "eval_reuse", T, rho, nsw, o, 0, 0, 0, best_reuse, cpu_reuse, rr.first_layer))
        snprintf(err, sizeof err, "writing the CSV row failed");
    else
        rc = 0;
out:
    if (rc && err[0]) fprintf(stderr, "bosch bench: %s\n", err);
    evaluator_free(reuse);
    evaluator_free(scratch);
    mask_free(&base);
    mask_free(&other);
    free(toks);
    free(smp);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    int prc = parse_args(argc, argv, &o);
    if (prc) return prc == 1 ? 0 : 2;
    char err[1024];
    model *m = NULL;
    fprintf(stderr, "bench: loading %s\n", o.model_path);
    if (model_load(&m, o.model_path, err, sizeof err)) {
        fprintf(stderr, "bosch bench: %s\n", err);
        return 1;
    }
    const model_hparams *hp = &m->hp;
    device_gpu *gpu = NULL;
    if (o.device == DEVICE_CUDA) {
        char desc[512];
        if (device_gpu_create(&gpu, m, err, sizeof err)) {
            fprintf(stderr, "bosch bench: %s\n", err);
            model_free(m);
            return 1;
        }
        device_gpu_describe(gpu, desc, sizeof desc);
        fprintf(stderr, "bench: GPU %s\n", desc);
    }
    csv_out *csv = NULL;
    if (o.csv_path) {
        csv = csv_out_open(o.csv_path, CSV_HEADER, (int)(sizeof CSV_HEADER / sizeof *CSV_HEADER), err,
                           sizeof err);
        if (!csv) {
            fprintf(stderr, "bosch bench: %s\n", err);
            device_gpu_free(gpu);
            model_free(m);
            return 1;
        }
    }
    int max_t = 1;
    for (int i = 0; i < o.n_lengths; i++) max_t = o.lengths[i] > max_t ? o.lengths[i] : max_t;
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(max_t + o.n_decode + 1));
    int status = toks ? 0 : 1;
    if (toks) fill_tokens(toks, max_t + o.n_decode + 1, hp->n_vocab);
    printf("model %s: %d layers x %d KV heads, window %d, sinks %d, %d decode steps, best of %d, on %s\n",
           m->name, hp->n_layer, hp->n_head_kv, o.window, o.sinks, o.n_decode, o.reps, device_name(o.device));
    printf("%7s %6s %5s %14s %10s %10s %14s %9s %13s\n", "length", "ratio", "n_swa", "kv_bytes", "prefill_s",
           "cpu_s", "prefill_tok/s", "vs_full", "decode_tok/s");
    for (int li = 0; li < o.n_lengths && !status; li++) {
        double full_s = 0.0;
        for (int ri = 0; ri < o.n_ratios && !status; ri++) {
            int T = o.lengths[li];
            attn_mask mask;
            speed_row row;
            if (mask_for_ratio(&mask, hp, o.ratios[ri], o.window, o.sinks)) {
                status = 1;
                break;
            }
            fprintf(stderr, "bench: T=%d rho=%.3f ...\n", T, mask_ratio(&mask));
            if (gpu ? bench_speed_gpu(gpu, m, &mask, toks, T, o.n_decode, o.reps, &row)
                    : bench_speed(m, &mask, toks, T, o.n_decode, o.reps, &row)) {
                fprintf(stderr, "bosch bench: T=%d: out of memory or forward failure\n", T);
                mask_free(&mask);
                status = 1;
                break;
            }
            if (mask_count_swa(&mask) == 0) full_s = row.prefill_s;
            double dec = o.n_decode > 0 ? o.n_decode / row.decode_s : 0.0;
            char vs[16] = "-";
            if (full_s > 0.0) snprintf(vs, sizeof vs, "%.2fx", full_s / row.prefill_s);
            printf("%7d %6.3f %5d %14llu %10.3f %10.3f %14.1f %9s %13.2f\n", T, mask_ratio(&mask),
                   mask_count_swa(&mask), (unsigned long long)row.kv_bytes, row.prefill_s, row.prefill_cpu_s,
                   T / row.prefill_s, vs, dec);
            fflush(stdout);
            if (csv_row(csv, "speed", T, mask_ratio(&mask), mask_count_swa(&mask), &o, row.kv_bytes,
                        T / row.prefill_s, dec, row.prefill_s, row.prefill_cpu_s, 0))
                status = 1;
            mask_free(&mask);
        }
    }
    if (gpu) printf("GPU peak memory: %.1f MiB\n", device_gpu_peak_bytes() / 1048576.0);
    device_gpu_free(gpu);
    if (!status && o.eval_samples > 0 && bench_eval(m, &o, csv)) status = 1;
    if (csv) {
        if (status) {
            csv_out_abort(csv);
        } else if (csv_out_commit(csv, err, sizeof err)) {
            fprintf(stderr, "bosch bench: %s\n", err);
            status = 1;
        }
    }
    free(toks);
    model_free(m);
    return status;
}
