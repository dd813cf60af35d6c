/* cmd_bench.c — `bosch bench [MODEL]`: what a head mask buys, on the CPU or the GPU.
 *
 * For every context length T, batch B (GPU only; the CPU bench runs one sequence) and ratio rho:
 * prefill tokens/s (one batched forward pass over B sequences of T tokens into the hybrid KV
 * cache: B*T / prefill time), decode tokens/s at context T (B sequences per step: B*steps /
 * decode time) and the exact KV bytes of the batch at T (B * kv_cache_bytes). With
 * --decode-fill random the GPU cache is filled with random keys/values instead of a prefill
 * (decode speed depends on shapes, not values). After the table, the issue-7 target ratios
 * (decode tok/s and KV bytes at rho 0.875 over rho 0) for every (length, batch) that has both.
 * Then the evaluator: scoring a mask that differs from the incumbent (base) only in the last
 * quarter of layers, with prefix reuse versus from scratch, on the CPU and (--device cuda) on
 * the GPU, with evaluations per second of both.
 *
 * A rho-mask makes round(rho * n_layer * n_head_kv) KV heads SWA, evenly spaced over the
 * row-major (layer, kv_head) order, so SWA heads are spread over all layers. Token ids are
 * pseudo-random (speed does not depend on the text). Each timing is the best of --reps runs.
 * On the CPU, before the table: the GEMM ceiling at the model's shapes (gemm.h in the model's
 * precision, best of max(3, reps) runs of each product the prefill of T tokens makes: Q|K|V and Wo
 * at M = T, gate|up and down at M = 512 per FFN chunk), as GFLOP/s per shape and as the tokens/s a
 * prefill would reach if it did nothing but those GEMMs; each CPU row then shows its prefill as a
 * share of that ceiling (column of_ceil; CSV measure "gemm_ceiling", prefill_tok_s = the ceiling).
 * The table goes to stdout, progress to stderr, and --csv writes the same rows (formats/bench.h
 * gives the columns).
 */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include "csvio.h"
#include "backend.h"
#include "cli_backend.h"
#include "cli_plots.h"
#include "eval.h"
#include "kv_cache.h"
#include "model.h"
#include "clock.h"

#define BENCH_MAX_LIST 16
#define BENCH_DEFAULT_WINDOW 256
#define BENCH_TARGET_RHO 0.875 /* issue 7: at batch 16 and 32k, decode >= 2x rho 0, KV <= 0.2x */

typedef struct {
    const char *csv_path;
    int lengths[BENCH_MAX_LIST], n_lengths;
    double ratios[BENCH_MAX_LIST];
    int n_ratios;
    int batches[BENCH_MAX_LIST], n_batches; /* sequences per forward (GPU only above 1) */
    int window, sinks, reps, n_decode, eval_samples, eval_length;
    int fill_random; /* --decode-fill random: no prefill, random GPU KV cache (GPU only) */
    backend_device
        device; /* --device: where prefill and decode run (the evaluator: the CPU, and the GPU too) */
} bench_opts;

static void bench_usage(FILE *f) {
    fprintf(f,
            "usage: bosch bench [MODEL] [options]\n"
            "  prefill and decode speed and KV bytes per (context length, batch, ratio) on the CPU or\n"
            "  the GPU, and the evaluator's prefix-reuse speed-up; a table on stdout, progress on stderr\n"
            "  MODEL              GGUF file (default: %s)\n"
            "  --lengths LIST     context lengths in tokens (default 1024,2048,4096,8192)\n"
            "  --ratios LIST      ratios rho of SWA KV heads (default 0,0.5,0.875,1)\n"
            "  --batch LIST       sequences per prefill and per decode step (default 1; above 1 needs\n"
            "                     --device cuda: the CPU bench runs one sequence); tokens/s count all\n"
            "                     sequences, kv_bytes is the whole batch's\n"
            "  --window W         SWA window in tokens (default %d)\n"
            "  --sinks S          sink tokens of SWA heads (default 0)\n"
            "  --reps N           repetitions per timing, the best is kept (default 1)\n"
            "  --decode N         decode steps timed at each length (default 16; 0 skips decode)\n"
            "  --decode-fill F    prefill (default): decode follows a real prefill of T tokens;\n"
            "                     random: no prefill, the GPU KV cache of every sequence is filled\n"
            "                     with random keys/values for positions 0..T-1 (decode speed does not\n"
            "                     depend on the values; needs --device cuda and --decode > 0)\n"
            "  --eval-samples N   evaluator samples (default 4; 0 skips the evaluator bench)\n"
            "  --eval-length T    tokens per evaluator sample (default 1024)\n"
            "  --csv FILE         also write the rows as CSV\n"
            "  --device D         cpu, cuda or auto (default: cuda when a GPU is visible); with cuda the\n"
            "                     evaluator bench runs on the CPU and on the GPU (evaluations/s of both)\n"
            "  --precision P      CPU GEMMs: fp32, bf16 or auto (default: bf16 where the CPU has it)\n"
            "  --kv T             CPU KV cache and attention: bf16 (default) or fp32 (the reference)\n"
            "  --decode-weights D CPU decode: blocks (default, the file's quantized weights) or gemm\n"
            "  After the table: decode tok/s and KV bytes at rho %.3f over rho 0 for each (length,\n"
            "  batch) with both rows (issue 7's target: at batch 16 and 32k, >= 2x and <= 0.2x).\n",
            cli_default_model(), BENCH_DEFAULT_WINDOW, BENCH_TARGET_RHO);
}

static void bench_init(void *opts) {
    bench_opts *o = opts;
    const int def_len[] = {1024, 2048, 4096, 8192};
    const double def_rho[] = {0.0, 0.5, 0.875, 1.0};
    memcpy(o->lengths, def_len, sizeof def_len), o->n_lengths = 4;
    memcpy(o->ratios, def_rho, sizeof def_rho), o->n_ratios = 4;
    o->batches[0] = 1, o->n_batches = 1;
    o->window = BENCH_DEFAULT_WINDOW, o->reps = 1, o->n_decode = 16;
    o->eval_samples = 4, o->eval_length = 1024;
}

/* An integer option of bench: its name, range and field. */
static const struct {
    const char *name;
    int min, max;
    size_t off;
} int_opts[] = {
    {"--window", 1, 1 << 24, offsetof(bench_opts, window)},
    {"--sinks", 0, 1 << 24, offsetof(bench_opts, sinks)},
    {"--reps", 1, 1000, offsetof(bench_opts, reps)},
    {"--decode", 0, 100000, offsetof(bench_opts, n_decode)},
    {"--eval-samples", 0, 1000, offsetof(bench_opts, eval_samples)},
    {"--eval-length", 8, 1 << 20, offsetof(bench_opts, eval_length)},
};

static int bench_option(cmd_env *e, void *opts, const char *a, const char *v) {
    bench_opts *o = opts;
    int k = 0, n = (int)(sizeof int_opts / sizeof int_opts[0]);
    while (k < n && strcmp(a, int_opts[k].name)) k++;
    if (k == n && strcmp(a, "--lengths") && strcmp(a, "--ratios") && strcmp(a, "--batch") &&
        strcmp(a, "--decode-fill") && strcmp(a, "--csv"))
        return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (k < n)
        return cmd_value(cli_parse_int_in("bench", a, v, int_opts[k].min, int_opts[k].max,
                                          (int *)((char *)o + int_opts[k].off)));
    if (!strcmp(a, "--lengths"))
        return cmd_value(
            (o->n_lengths = cli_parse_int_list("bench", a, v, 1, 1 << 20, o->lengths, BENCH_MAX_LIST)) < 0);
    if (!strcmp(a, "--ratios"))
        return cmd_value(
            (o->n_ratios = cli_parse_real_list("bench", a, v, 0.0, 1.0, o->ratios, BENCH_MAX_LIST)) < 0);
    if (!strcmp(a, "--batch"))
        return cmd_value(
            (o->n_batches = cli_parse_int_list("bench", a, v, 1, 1 << 20, o->batches, BENCH_MAX_LIST)) < 0);
    if (!strcmp(a, "--decode-fill"))
        return cmd_value(cli_parse_choice("bench", a, v, "prefill", "random", &o->fill_random));
    o->csv_path = v; /* --csv */
    return CMD_OPT_VALUE;
}

static int bench_check(cmd_env *e, void *opts) {
    bench_opts *o = opts;
    o->device = e->device;
    int max_b = 1;
    for (int i = 0; i < o->n_batches; i++) max_b = o->batches[i] > max_b ? o->batches[i] : max_b;
    if (o->fill_random && o->n_decode == 0) {
        fprintf(stderr, "bosch bench: --decode-fill random times decode only, but --decode is 0\n");
        return 2;
    }
    if (o->device != BACKEND_CUDA && (max_b > 1 || o->fill_random)) {
        fprintf(stderr,
                "bosch bench: %s needs --device cuda (the CPU bench runs one sequence after a real "
                "prefill; the device is %s)\n",
                max_b > 1 ? "--batch above 1" : "--decode-fill random", backend_device_name(o->device));
        return 2;
    }
    fprintf(stderr, "bench: loading %s\n", e->model_path);
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
    double prefill_s, decode_s; /* wall seconds, best of reps (prefill_s 0 with --decode-fill random) */
    double prefill_cpu_s;       /* CPU seconds of the whole process (all threads) in that prefill */
    uint64_t kv_bytes;          /* whole batch at context T */
    uint64_t gpu_peak;          /* peak GPU memory so far (0 on the CPU) */
} speed_row;

/* bench_speed on backend b for a batch of B sequences: tokens [B][T] (sequence s at toks + s*T),
 * decode tokens [n_decode][B] at dtoks. The cache is allocated before timing; each prefill and
 * decode step returns when the device is done. With fill_random the prefill is replaced by an
 * untimed random fill of positions 0..T-1. prefill_cpu_s is measured on the CPU only (else 0). */
static int bench_speed_on(backend *b, const model *m, const attn_mask *mask, const int32_t *toks,
                          const int32_t *dtoks, int T, int B, int n_decode, int reps, int fill_random,
                          speed_row *row) {
    char err[512] = "";
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab * B);
    int rc = logits ? backend_start(b, mask, B, T + n_decode + 1, err, sizeof err) : -1;
    row->prefill_s = row->decode_s = INFINITY;
    row->prefill_cpu_s = 0.0;
    row->kv_bytes = (uint64_t)B * kv_cache_bytes(&m->hp, mask, T, 4); /* at context T exactly */
    for (int r = 0; r < reps && rc == 0; r++) {
        double c0 = base_cpu_s(), t0 = base_now_s();
        if (fill_random)
            rc = backend_fill_random(b, T, 0x5eedull + (uint64_t)r, err, sizeof err);
        else
            rc = backend_prefill(b, toks, T, logits, err, sizeof err);
        double t1 = base_now_s(), c1 = base_cpu_s();
        if (fill_random && rc == 0) fprintf(stderr, "bench: random KV fill %.3f s (not timed)\n", t1 - t0);
        for (int d = 0; d < n_decode && rc == 0; d++)
            rc = backend_decode(b, dtoks + (size_t)d * B, logits, err, sizeof err);
        double t2 = base_now_s();
        if (t1 - t0 < row->prefill_s) {
            row->prefill_s = fill_random ? 0.0 : t1 - t0;
            if (b->device == BACKEND_CPU) row->prefill_cpu_s = c1 - c0;
        }
        if (t2 - t1 < row->decode_s) row->decode_s = t2 - t1;
    }
    row->gpu_peak = backend_peak_bytes(b);
    if (rc && err[0]) fprintf(stderr, "bosch bench: %s\n", err);
    free(logits);
    return rc;
}

/* Best-of-reps prefill of T tokens into a fresh cache, then n_decode greedy-free decode steps of
 * toks[0..n_decode-1], on the CPU backend. */
static int bench_speed(const model *m, const attn_mask *mask, const int32_t *toks, int T, int n_decode,
                       int reps, speed_row *row) {
    backend *cpu;
    char err[256];
    if (backend_cpu_create(&cpu, m, err, sizeof err)) {
        fprintf(stderr, "bosch bench: %s\n", err);
        return -1;
    }
    int rc = bench_speed_on(cpu, m, mask, toks, toks, T, 1, n_decode, reps, 0, row);
    backend_free(cpu);
    return rc;
}

/* One row of the --csv file (formats/bench.h): r with the run's window, sinks and decode fill
 * filled in; no file: nothing. 0 or -1 (said on stderr). */
static int csv_row(csv_out *w, const bench_opts *o, bench_row r) {
    if (!w) return 0;
    r.window = o->window;
    r.sinks = o->sinks;
    r.decode_fill = strcmp(r.measure, "speed") ? "-" : o->fill_random ? "random" : "prefill";
    int rc = bench_csv_row(w, &r);
    if (rc) fprintf(stderr, "bosch bench: writing a CSV row to %s failed\n", o->csv_path);
    return rc;
}

/* Evaluator on backend be: base = the rho 0.5 mask; the scored mask toggles head 0
 * in every layer of the last quarter. Best-of-reps time with prefix reuse vs from scratch (the
 * results must be identical); evals_s[0], [1] = evaluations (one mask scored on every sample) per
 * second from scratch and with reuse. */
static int bench_eval(const model *m, const bench_opts *o, const backend *be, csv_out *csv,
                      double evals_s[2]) {
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
    backend_device dev = be->device;
    if (evaluator_create_on(&reuse, m, be, smp, ns, 1, err, sizeof err) ||
        evaluator_create_on(&scratch, m, be, smp, ns, 0, err, sizeof err))
        goto out;
    eval_result r;
    fprintf(stderr, "bench: evaluator on %s: base mask (%d samples x %d tokens)\n", backend_device_name(dev),
            ns, T);
    if (evaluator_set_base(reuse, &base, &r, NULL, err, sizeof err)) goto out;
    double best_reuse = INFINITY, best_scratch = INFINITY, cpu_reuse = 0.0, cpu_scratch = 0.0;
    eval_result rr = {0}, rs = {0};
    for (int k = 0; k < o->reps; k++) {
        fprintf(stderr, "bench: evaluator rep %d/%d\n", k + 1, o->reps);
        double c0 = base_cpu_s();
        if (evaluator_score(reuse, &other, &rr, NULL, err, sizeof err)) goto out;
        double c1 = base_cpu_s();
        if (evaluator_score(scratch, &other, &rs, NULL, err, sizeof err)) goto out;
        double c2 = base_cpu_s();
        if (rr.seconds < best_reuse) best_reuse = rr.seconds, cpu_reuse = c1 - c0;
        if (rs.seconds < best_scratch) best_scratch = rs.seconds, cpu_scratch = c2 - c1;
    }
    printf("\nevaluator on %s: %d samples x %d tokens, window %d; base rho 0.5, scored mask differs in "
           "layers %d..%d\n",
           backend_device_name(dev), ns, T, o->window, from, hp->n_layer - 1);
    printf("  from scratch   %8.3f s   cpu %8.3f s\n", best_scratch, cpu_scratch);
    printf("  prefix reuse   %8.3f s   cpu %8.3f s  (from layer %d)\n", best_reuse, cpu_reuse,
           rr.first_layer);
    printf("  speed-up       %8.2fx  cpu %8.2fx   results identical: %s\n", best_scratch / best_reuse,
           cpu_scratch / cpu_reuse,
           rr.score == rs.score && rr.accuracy == rs.accuracy && rr.nll == rs.nll ? "yes" : "NO");
    double rho = mask_ratio(&other);
    int nsw = mask_count_swa(&other);
    bench_row fs = {.measure = "eval_scratch",
                    .length = T,
                    .n_swa = nsw,
                    .ratio = rho,
                    .seconds = best_scratch,
                    .cpu_s = cpu_scratch,
                    .device = backend_device_name(dev)};
    bench_row fr = fs;
    fr.measure = "eval_reuse", fr.seconds = best_reuse, fr.cpu_s = cpu_reuse, fr.first_layer = rr.first_layer;
    evals_s[0] = 1.0 / best_scratch, evals_s[1] = 1.0 / best_reuse;
    if (csv_row(csv, o, fs) || csv_row(csv, o, fr))
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

/* The GEMM ceiling of a T-token prefill (file comment): the seconds of the model's GEMMs alone,
 * best of max(3, reps) runs each, printed per shape. Returns the ceiling in tokens/s, or 0. */
static double bench_gemm_ceiling(const model *m, int T, int reps, csv_out *csv, const bench_opts *o) {
    const model_hparams *hp = &m->hp;
    const model_layer *L = &m->layers[0];
    const int chunk = T < 512 ? T : 512, n_chunks = (T + 511) / 512;
    const struct {
        const char *name;
        const gemm_weight *w;
        int M, times;
    } shapes[4] = {{"qkv", L->g_qkv, T, 1},
                   {"o", L->g_o, T, 1},
                   {"gate_up", L->g_gate_up, chunk, n_chunks},
                   {"down", L->g_down, chunk, n_chunks}};
    int maxk = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    int maxn = 2 * hp->n_ff > hp->n_embd * 2 ? 2 * hp->n_ff : hp->n_embd * 2;
    maxn = maxn > (hp->n_head + 2 * hp->n_head_kv) * hp->head_dim
               ? maxn
               : (hp->n_head + 2 * hp->n_head_kv) * hp->head_dim;
    float *X = malloc(sizeof(float) * (size_t)T * maxk), *Y = malloc(sizeof(float) * (size_t)T * maxn);
    gemm_scratch *gs = gemm_scratch_create(m->gemm);
    double total = 0.0;
    char err[256] = "";
    if (!X || !Y || !gs) goto out;
    for (size_t i = 0; i < (size_t)T * maxk; i++) X[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    printf("GEMM ceiling at T=%d (%s, %s):", T, gemm_precision_name(m->precision), "best of runs");
    for (int k = 0; k < 4; k++) {
        const int K = gemm_weight_cols(shapes[k].w), N = gemm_weight_rows(shapes[k].w), M = shapes[k].M;
        double best = INFINITY;
        for (int r = 0; r < (reps > 3 ? reps : 3); r++) {
            double t0 = base_now_s();
            if (gemm_run(gs, shapes[k].w, Y, N, X, K, M, 0, err, sizeof err)) goto out;
            double t = base_now_s() - t0;
            if (t < best) best = t;
        }
        printf(" %s %dx%dx%d %.0f GFLOP/s;", shapes[k].name, M, K, N, 2.0 * M * K * N / best / 1e9);
        total += best * shapes[k].times;
    }
    total *= hp->n_layer;
    printf(" ceiling %.1f tok/s\n", T / total);
    bench_row f = {.measure = "gemm_ceiling",
                   .length = T,
                   .prefill_tok_s = T / total,
                   .seconds = total,
                   .device = backend_device_name(BACKEND_CPU)};
    if (csv_row(csv, o, f)) total = 0.0;
out:
    if (err[0]) fprintf(stderr, "bosch bench: GEMM ceiling: %s\n", err);
    gemm_scratch_free(gs);
    free(X);
    free(Y);
    return total > 0.0 && !err[0] ? T / total : 0.0;
}

/* One row of the table, kept for the target ratios printed after it. */
typedef struct {
    int length, batch, n_swa, units;
    double rho; /* the requested ratio */
    double decode_tok_s;
    uint64_t kv_bytes;
} done_row;

/* For each (length, batch) with rows at rho 0 and BENCH_TARGET_RHO: decode tok/s and KV bytes
 * ratios (issue 7: at batch 16 and 32k, >= 2x and <= 0.2x). One line each, starting "target ". */
static void print_targets(const done_row *rows, int n, int n_decode) {
    int header = 0;
    for (int i = 0; i < n; i++) {
        if (fabs(rows[i].rho - BENCH_TARGET_RHO) > 1e-9) continue;
        for (int j = 0; j < n; j++) {
            const done_row *t = &rows[i], *f = &rows[j];
            if (f->rho != 0.0 || f->length != t->length || f->batch != t->batch) continue;
            if (!header) printf("\n"), header = 1;
            double kv = f->kv_bytes ? (double)t->kv_bytes / (double)f->kv_bytes : 0.0;
            printf("target T=%d batch=%d (%d of %d KV heads SWA): ", t->length, t->batch, t->n_swa, t->units);
            if (n_decode > 0 && f->decode_tok_s > 0.0) {
                double dec = t->decode_tok_s / f->decode_tok_s;
                printf("decode tok/s rho %.3f / rho 0 = %.4g / %.4g = %.2fx (goal >= 2: %s), ",
                       BENCH_TARGET_RHO, t->decode_tok_s, f->decode_tok_s, dec,
                       dec >= 2.0 ? "met" : "NOT met");
            } else {
                printf("decode not timed, ");
            }
            printf("KV bytes rho %.3f / rho 0 = %.3fx (goal <= 0.2: %s)\n", BENCH_TARGET_RHO, kv,
                   kv <= 0.2 ? "met" : "NOT met");
            break;
        }
    }
}

/* What every row of the speed table shares. */
typedef struct {
    const model *m;
    const bench_opts *o;
    backend *gpu;
    csv_out *csv;
    const int32_t *toks, *dec_toks; /* prefill [max_b][max_t] (+ CPU decode), GPU decode [n_decode][max_b] */
    double full_pf, full_dc;        /* the rho = 0 row of this (length, batch): prefill s, decode tok/s */
    done_row *rows;
    int n_rows;
} bench_table_ctx;

/* One row: length T, batch B, ratio rho (of_ceil from ceiling, 0 = none). 0, or 1 (printed). */
static int bench_row_at(bench_table_ctx *c, int T, int B, double rho, double ceiling) {
    const bench_opts *o = c->o;
    const model_hparams *hp = &c->m->hp;
    attn_mask mask;
    speed_row row;
    if (mask_for_ratio(&mask, hp, rho, o->window, o->sinks)) return 1;
    fprintf(stderr, "bench: T=%d batch=%d rho=%.3f ...\n", T, B, mask_ratio(&mask));
    if (c->gpu ? bench_speed_on(c->gpu, c->m, &mask, c->toks, c->dec_toks, T, B, o->n_decode, o->reps,
                                o->fill_random, &row)
               : bench_speed(c->m, &mask, c->toks, T, o->n_decode, o->reps, &row)) {
        fprintf(stderr, "bosch bench: T=%d batch=%d: out of memory or forward failure\n", T, B);
        mask_free(&mask);
        return 1;
    }
    double pf = row.prefill_s > 0.0 ? (double)B * T / row.prefill_s : 0.0;
    double dc = o->n_decode > 0 ? (double)B * o->n_decode / row.decode_s : 0.0;
    int n_swa = mask_count_swa(&mask);
    if (n_swa == 0) c->full_pf = row.prefill_s, c->full_dc = dc;
    char vs[16] = "-", dvs[16] = "-", pfs[24] = "-", pft[24] = "-", peak[24] = "-", oc[16] = "-";
    if (ceiling > 0.0 && pf > 0.0) snprintf(oc, sizeof oc, "%.0f%%", 100.0 * pf / ceiling);
    if (c->full_pf > 0.0 && pf > 0.0) snprintf(vs, sizeof vs, "%.2fx", c->full_pf / row.prefill_s);
    if (c->full_dc > 0.0) snprintf(dvs, sizeof dvs, "%.2fx", dc / c->full_dc);
    if (pf > 0.0) snprintf(pfs, sizeof pfs, "%.3f", row.prefill_s), snprintf(pft, sizeof pft, "%.1f", pf);
    if (c->gpu) snprintf(peak, sizeof peak, "%.1f", row.gpu_peak / 1048576.0);
    printf("%7d %5d %6.3f %5d %14llu %10s %10.3f %14s %9s %8s %13.2f %9s %10s\n", T, B, mask_ratio(&mask),
           n_swa, (unsigned long long)row.kv_bytes, pfs, row.prefill_cpu_s, pft, vs, oc, dc, dvs, peak);
    fflush(stdout);
    c->rows[c->n_rows++] = (done_row){.length = T,
                                      .batch = B,
                                      .n_swa = n_swa,
                                      .units = hp->n_layer * hp->n_head_kv,
                                      .rho = rho,
                                      .decode_tok_s = dc,
                                      .kv_bytes = row.kv_bytes};
    bench_row f = {.measure = "speed",
                   .length = T,
                   .batch = B,
                   .n_swa = n_swa,
                   .ratio = mask_ratio(&mask),
                   .prefill_tok_s = pf,
                   .decode_tok_s = dc,
                   .seconds = row.prefill_s,
                   .cpu_s = row.prefill_cpu_s,
                   .kv_bytes = row.kv_bytes,
                   .gpu_peak_bytes = row.gpu_peak,
                   .device = backend_device_name(o->device)};
    mask_free(&mask);
    return csv_row(c->csv, o, f) ? 1 : 0;
}

/* The table's header lines; on the CPU also the GEMM ceiling of every length into ceiling[]. */
static void bench_table_head(const model *m, const bench_opts *o, int on_gpu, csv_out *csv, double *ceiling) {
    const model_hparams *hp = &m->hp;
    printf("model %s: %d layers x %d KV heads, window %d, sinks %d, %d decode steps, best of %d, on %s%s\n",
           m->name, hp->n_layer, hp->n_head_kv, o->window, o->sinks, o->n_decode, o->reps,
           backend_device_name(o->device),
           o->fill_random ? ", decode after a random KV fill (no prefill)" : "");
    if (!on_gpu) {
        char gd[160];
        gemm_describe(gd, sizeof gd);
        printf("GEMMs: %s; decode %s\n", gd,
               m->decode_blocks ? "from the file's blocks" : "through the GEMM weights");
        for (int li = 0; li < o->n_lengths; li++)
            ceiling[li] = bench_gemm_ceiling(m, o->lengths[li], o->reps, csv, o);
    }
    printf("%7s %5s %6s %5s %14s %10s %10s %14s %9s %8s %13s %9s %10s\n", "length", "batch", "ratio", "n_swa",
           "kv_bytes", "prefill_s", "cpu_s", "prefill_tok/s", "vs_full", "of_ceil", "decode_tok/s",
           "dec_vs_0", "gpu_peak_MiB");
}

/* The speed table: every (length, batch, ratio) on the CPU (batch 1) or on gpu. Returns 0 or 1. */
static int bench_table(const model *m, const bench_opts *o, backend *gpu, csv_out *csv) {
    int max_t = 1, max_b = 1;
    for (int i = 0; i < o->n_lengths; i++) max_t = o->lengths[i] > max_t ? o->lengths[i] : max_t;
    for (int i = 0; i < o->n_batches; i++) max_b = o->batches[i] > max_b ? o->batches[i] : max_b;
    if ((long long)max_b * max_t > 1 << 28) {
        fprintf(stderr, "bosch bench: batch %d x length %d is too many tokens\n", max_b, max_t);
        return 1;
    }
    size_t n_pf = (size_t)max_b * max_t + (size_t)o->n_decode + 1, n_dc = (size_t)o->n_decode * max_b + 1;
    int32_t *toks = malloc(sizeof(int32_t) * (n_pf + n_dc));
    done_row *rows = malloc(sizeof *rows * (size_t)(o->n_lengths * o->n_batches * o->n_ratios));
    if (!toks || !rows) {
        fprintf(stderr, "bosch bench: out of memory for %zu tokens\n", n_pf + n_dc);
        free(toks), free(rows);
        return 1;
    }
    fill_tokens(toks, (int)(n_pf + n_dc), m->hp.n_vocab);
    double ceiling[BENCH_MAX_LIST] = {0};
    bench_table_head(m, o, gpu != NULL, csv, ceiling);
    bench_table_ctx c = {m, o, gpu, csv, toks, toks + n_pf, 0, 0, rows, 0};
    int status = 0;
    for (int li = 0; li < o->n_lengths && !status; li++)
        for (int bi = 0; bi < o->n_batches && !status; bi++) {
            c.full_pf = c.full_dc = 0.0;
            for (int ri = 0; ri < o->n_ratios && !status; ri++)
                status = bench_row_at(&c, o->lengths[li], o->batches[bi], o->ratios[ri], ceiling[li]);
        }
    if (!status) print_targets(rows, c.n_rows, o->n_decode);
    if (gpu) printf("GPU peak memory: %.1f MiB\n", backend_peak_bytes(gpu) / 1048576.0);
    free(rows);
    free(toks);
    return status;
}

/* The evaluator bench on the CPU, and also on the GPU with --device cuda (same code path,
 * evaluator_create_on with the device's backend); then evaluations/s GPU against CPU. */
static int bench_evals(const model *m, const bench_opts *o, csv_out *csv) {
    double cpu[2] = {0}, gpu[2] = {0};
    char err[512], desc[512];
    backend *de = NULL;
    backend_options bo = cli_backend_options(BACKEND_CPU, 0);
    if (backend_create(&de, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch bench: evaluator on the CPU: %s\n", err);
        return 1;
    }
    int rc = bench_eval(m, o, de, csv, cpu);
    backend_free(de);
    if (rc) return 1;
    if (o->device != BACKEND_CUDA) return 0;
    bo = cli_backend_options(BACKEND_CUDA, 0);
    if (backend_create(&de, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch bench: evaluator on the GPU: %s\n", err);
        return 1;
    }
    backend_describe(de, 1, desc, sizeof desc);
    fprintf(stderr, "bench: evaluator backend %s\n", desc);
    rc = bench_eval(m, o, de, csv, gpu);
    backend_free(de);
    if (rc) return 1;
    printf("\nevaluations/s (one mask scored on %d samples x %d tokens): from scratch cpu %.3f, cuda %.3f "
           "(%.2fx); prefix reuse cpu %.3f, cuda %.3f (%.2fx)\n",
           o->eval_samples, o->eval_length, cpu[0], gpu[0], gpu[0] / cpu[0], cpu[1], gpu[1], gpu[1] / cpu[1]);
    return 0;
}

static int bench_run(cmd_env *e, void *opts) {
    const bench_opts *o = opts;
    const model *m = e->m;
    char err[1024];
    backend *gpu = NULL;
    if (o->device == BACKEND_CUDA) {
        char desc[512];
        backend_options bo = cli_backend_options(BACKEND_CUDA, 1);
        if (backend_create(&gpu, &bo, m, err, sizeof err)) {
            fprintf(stderr, "bosch bench: %s\n", err);
            return 1;
        }
        backend_describe(gpu, 0, desc, sizeof desc);
        fprintf(stderr, "bench: GPU %s\n", desc);
    }
    csv_out *csv = NULL;
    if (o->csv_path && !(csv = bench_csv_open(o->csv_path, err, sizeof err))) {
        fprintf(stderr, "bosch bench: %s\n", err);
        backend_free(gpu);
        return 1;
    }
    int status = bench_table(m, o, gpu, csv);
    backend_free(gpu);
    if (!status && o->eval_samples > 0) status = bench_evals(m, o, csv);
    if (csv) {
        if (status) {
            csv_out_abort(csv);
        } else if (csv_out_commit(csv, err, sizeof err)) {
            fprintf(stderr, "bosch bench: %s\n", err);
            status = 1;
        } else {
            status = cli_plots_bench(o->csv_path); /* the figure beside the CSV */
        }
    }
    return status;
}

const command cmd_bench = {
    .name = "bench",
    .help = "prefill / decode speed, KV bytes, evaluator cost",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DECODE | CMD_DEVICE | CMD_LOAD,
    .opts_size = sizeof(bench_opts),
    .init = bench_init,
    .option = bench_option,
    .check = bench_check,
    .run = bench_run,
    .usage = bench_usage,
};
