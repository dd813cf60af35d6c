/* cmd_bench.c — `bosch bench [MODEL]`: what a head mask buys, on the CPU or the GPU.
 *
 * For every context length T, batch B (GPU only; the CPU bench runs one sequence) and ratio rho:
 * prefill tokens/s (one batched forward pass over B sequences of T tokens into the hybrid KV
 * cache: B*T / prefill time), decode tokens/s at context T (B sequences per step: B*steps /
 * decode time) and the exact KV bytes of the batch at T (B * kv_cache_bytes at the cache's element
 * size: bf16 or fp32 on the CPU, --kv; fp32 on the GPU). With --decode-fill random the GPU cache
 * is filled with random keys/values instead of a prefill (decode speed depends on shapes, not
 * values). The table is interleaved (bench_table.c): --rounds rounds, each measuring every length
 * and ratio once; medians with min-max; the load average before and after. After the table, the
 * issue-7 target ratios (decode tok/s and KV bytes at rho 0.875 over rho 0) for every (length,
 * batch) that has both. Then the evaluator: scoring a mask that differs from the incumbent (base)
 * only in the last quarter of layers, with prefix reuse versus from scratch (alternating, once
 * each per round), on the CPU and (--device cuda) on the GPU, with evaluations per second of both.
 *
 * A rho-mask makes round(rho * n_layer * n_head_kv) KV heads SWA, evenly spaced over the
 * row-major (layer, kv_head) order, so SWA heads are spread over all layers. Token ids are
 * pseudo-random (speed does not depend on the text). On the CPU, before the table: the GEMM
 * ceiling at the model's shapes (bench_table.c); each CPU row then shows its prefill as a share
 * of that ceiling (column of_ceil; CSV measure "gemm_ceiling", prefill_tok_s = the ceiling).
 * The table goes to stdout, progress to stderr, and --csv writes the same rows (formats/bench.h
 * gives the columns) and draws the figure beside it (plots/plot_bench.c).
 */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include "cmd_bench_internal.h"
#include "csvio.h"
#include "backend.h"
#include "cli_backend.h"
#include "cli_plots.h"
#include "eval.h"
#include "kv_cache.h"
#include "model.h"
#include "clock.h"

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
            "  --rounds N         interleaved rounds: each measures every length and ratio once; the\n"
            "                     table shows medians (min-max) and per-round ratios (default %d;\n"
            "                     --reps N is the same)\n"
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
            cli_default_model(), BENCH_DEFAULT_WINDOW, BENCH_DEFAULT_ROUNDS, BENCH_TARGET_RHO);
}

static void bench_init(void *opts) {
    bench_opts *o = opts;
    const int def_len[] = {1024, 2048, 4096, 8192};
    const double def_rho[] = {0.0, 0.5, 0.875, 1.0};
    memcpy(o->lengths, def_len, sizeof def_len), o->n_lengths = 4;
    memcpy(o->ratios, def_rho, sizeof def_rho), o->n_ratios = 4;
    o->batches[0] = 1, o->n_batches = 1;
    o->window = BENCH_DEFAULT_WINDOW, o->rounds = BENCH_DEFAULT_ROUNDS, o->n_decode = 16;
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
    {"--rounds", 1, 100, offsetof(bench_opts, rounds)},
    {"--reps", 1, 100, offsetof(bench_opts, rounds)}, /* the older name */
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

/* Evaluator on backend be: base = the rho 0.5 mask; the scored mask toggles head 0
 * in every layer of the last quarter. Per round one evaluation with prefix reuse, then one from
 * scratch (the results must be identical); the medians over the rounds with their range, and the
 * median of the per-round speed-ups; evals_s[0], [1] = evaluations (one mask scored on every
 * sample) per second from scratch and with reuse, from the medians. */
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
    bench_fill_tokens(toks, ns * T, hp->n_vocab);
    for (int s = 0; s < ns; s++) smp[s] = (eval_sample){toks + (size_t)s * T, T, T - 4, 4};
    if (bench_mask_for_ratio(&base, hp, 0.5, o->window, o->sinks) || mask_copy(&other, &base)) goto out;
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
    double x[5][100], s[5][3]; /* per round: reuse s, scratch s, their CPU s, the speed-up */
    eval_result rr = {0}, rs = {0};
    for (int k = 0; k < o->rounds; k++) {
        fprintf(stderr, "bench: evaluator round %d/%d\n", k + 1, o->rounds);
        double c0 = base_cpu_s();
        if (evaluator_score(reuse, &other, &rr, NULL, err, sizeof err)) goto out;
        double c1 = base_cpu_s();
        if (evaluator_score(scratch, &other, &rs, NULL, err, sizeof err)) goto out;
        double c2 = base_cpu_s();
        x[0][k] = rr.seconds, x[1][k] = rs.seconds, x[2][k] = c1 - c0, x[3][k] = c2 - c1;
        x[4][k] = rs.seconds / rr.seconds;
    }
    for (int q = 0; q < 5; q++) bench_median_range(x[q], o->rounds, &s[q][0], &s[q][1], &s[q][2]);
    const double best_reuse = s[0][0], best_scratch = s[1][0], cpu_reuse = s[2][0], cpu_scratch = s[3][0];
    printf("\nevaluator on %s: %d samples x %d tokens, window %d; base rho 0.5, scored mask differs in "
           "layers %d..%d\n",
           backend_device_name(dev), ns, T, o->window, from, hp->n_layer - 1);
    printf("  medians of %d rounds (min-max)\n", o->rounds);
    printf("  from scratch   %8.3f s (%.3f-%.3f)   cpu %8.3f s\n", best_scratch, s[1][1], s[1][2],
           cpu_scratch);
    printf("  prefix reuse   %8.3f s (%.3f-%.3f)   cpu %8.3f s  (from layer %d)\n", best_reuse, s[0][1],
           s[0][2], cpu_reuse, rr.first_layer);
    printf("  speed-up       %8.2fx (%.2f-%.2f)   cpu %8.2fx   results identical: %s\n", s[4][0], s[4][1],
           s[4][2], cpu_scratch / cpu_reuse,
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
    fs.rounds = fr.rounds = o->rounds;
    if (bench_csv_put(csv, o, fs) || bench_csv_put(csv, o, fr))
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
