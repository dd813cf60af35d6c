/* cmd_eval.c — `bosch eval [MODEL] [OPTIONS]`: exact-match accuracy and mean answer-token
 * probability of one head mask on probe tasks (held-out split by default), per task and length.
 * Table on stdout, progress bar on stderr, results CSV (formats/results.h, the eval layout:
 * method,ratio,task,length,accuracy,score,kv_bytes) written once every row is known
 * (checked before the model loads: not a directory, its folder writable; csvio removes the stale
 * temporary files of a killed run), with SIGINT/SIGTERM/SIGHUP held while it is written: an interrupted
 * run dies of the signal (130/143) and leaves no PATH.tmp.XXXXXX behind. MODEL may stand anywhere
 * among the options; every option value is checked in full, with a message naming option and value.
 * Beside each row's kv_bytes, servable_kv: the KV bytes of the mask's servable projection (mask.h's
 * mask_servable: what an engine with one window per layer runs), by the same kv_cache_bytes; with
 * --servable the projection is also scored on the same samples (a second table, and rows
 * METHOD+servable in the CSV).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "csvio.h"
#include "backend.h"
#include "cli_backend.h"
#include "cli_dist.h"
#include "eval.h"
#include "kv_cache.h"
#include "mask.h"
#include "model.h"
#include "parse.h"
#include "probe_score.h"
#include "probes.h"
#include "results.h"
#include "clock.h"

#define MAX_ITEMS 16

typedef struct {
    const char *mask_path, *out_path, *method;
    probe_task tasks[MAX_ITEMS];
    int n_tasks;
    int lengths[MAX_ITEMS];
    int n_lengths;
    haystack_kind haystack;
    int samples, window, sinks, all_swa, keys, chat, quiet, servable;
    probe_split split;
    uint64_t seed;
    int seed_set;
    cli_dist_opts dist; /* --worker-timeout */
} eval_opts;

static void eval_usage(FILE *f) {
    fprintf(f,
            "usage: bosch eval [MODEL] [OPTIONS]\n"
            "  score a head mask on probe tasks (exact match %% and mean answer-token probability)\n"
            "  --mask FILE        mask CSV (default: full attention everywhere)\n"
            "  --all-swa          every KV head SWA (ratio 1)\n"
            "  --tasks LIST       niah_single,niah_multikey,passkey (default: %s)\n"
            "  --haystack KIND    noise or text (default: %s)\n"
            "  --lengths LIST     tokens, e.g. 1k,2k,4k,8k (default: %d)\n"
            "  --samples N        samples per task and length (default: %d)\n"
            "  --window W         SWA window, tokens (default: the mask file's, else %d)\n"
            "  --sinks S          sink tokens visible to SWA heads (default: the mask file's, else %d)\n"
            "  --keys K           needles of niah_multikey (default: 4)\n"
            "  --split NAME       heldout (default), calibration or validation\n"
            "  --seed N           probe seed (default: %u held-out, %u calibration, %u validation)\n"
            "  --no-chat          plain prompts instead of the chat template\n"
            "  --method NAME      method column of the CSV (default: full, all_swa or the mask file)\n"
            "  --out FILE         results CSV (default: eval_results.csv; '-' for none)\n"
            "  --device D         cpu, cuda or auto: where the evaluator runs (default: cuda when a GPU\n"
            "                     is visible; the GPU computes in bf16, so scores differ from the CPU's\n"
            "                     in the last digits)\n"
            "  --precision P      CPU GEMM precision: fp32, bf16 or auto (default: bf16 where the CPU\n"
            "                     has bf16 hardware, else fp32)\n"
            "  --kv T             CPU KV cache and attention: bf16 (default) or fp32 (the reference);\n"
            "                     also the element size of the KV bytes shown\n"
            "  --servable         also score the mask's servable projection (a layer SWA only if all its\n"
            "                     KV heads are: what a per-layer engine runs); every row shows its KV\n"
            "                     bytes as servable_kv either way\n"
            "  --quiet            no progress bar\n"
            "%s"
            "  under mpirun -np N (docs/distributed.md) rank 0 writes the table and the CSV; every\n"
            "  (task, length) cell's samples are cut into N ranges, one per rank (the same results)\n",
            probe_task_name(PROBE_DEFAULT_TASK), haystack_kind_name(PROBE_DEFAULT_HAYSTACK),
            PROBE_DEFAULT_LENGTH, PROBE_DEFAULT_SAMPLES, PROBE_DEFAULT_WINDOW, PROBE_DEFAULT_SINKS,
            PROBE_DEFAULT_HELDOUT_SEED, PROBE_DEFAULT_CALIB_SEED, PROBE_DEFAULT_VALID_SEED,
            cli_dist_usage_timeout);
}

/* Upper limits of the numeric options (the messages quote the same constants). */
#define EVAL_MAX_SAMPLES (1L << 20)
#define EVAL_MAX_TOKENS (1L << 24) /* --lengths, --window, --sinks */

/* --tasks: names of probe_task_parse. */
static int parse_tasks(const char *opt, const char *v, eval_opts *o) {
    char items[MAX_ITEMS][CLI_ITEM_CAP];
    int n = cli_split_list("eval", opt, v, items, MAX_ITEMS);
    for (int i = 0; i < n; i++)
        if (probe_task_parse(items[i], &o->tasks[i])) {
            cli_bad_list("eval", opt, v, "item '%s' is not a task: niah_single, niah_multikey or passkey",
                         items[i]);
            return -1;
        }
    if (n > 0) o->n_tasks = n;
    return n > 0 ? 0 : -1;
}

/* One option of eval's own with its value v (NULL when missing), command.h's contract. */
static int eval_option(cmd_env *e, void *opts, const char *a, const char *v) {
    eval_opts *o = opts;
    int rc = cli_dist_option("eval", 0, &o->dist, a, v), n;
    if (rc != CMD_OPT_UNKNOWN) return rc;
    rc = 0;
    int *flag = !strcmp(a, "--all-swa")    ? &o->all_swa
                : !strcmp(a, "--quiet")    ? &o->quiet
                : !strcmp(a, "--servable") ? &o->servable
                                           : NULL;
    if (flag || !strcmp(a, "--no-chat")) {
        if (flag)
            *flag = 1;
        else
            o->chat = 0;
        return CMD_OPT_FLAG;
    }
    static const char *const known[] = {"--mask",   "--out",      "--method", "--samples",
                                        "--window", "--sinks",    "--keys",   "--lengths",
                                        "--tasks",  "--haystack", "--split",  "--seed"};
    int is_known = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) is_known |= !strcmp(a, known[k]);
    if (!is_known) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (!strcmp(a, "--mask")) {
        o->mask_path = v;
        rc = cli_need_nonempty("eval", a, v, "a mask file");
    } else if (!strcmp(a, "--out")) {
        o->out_path = v;
        rc = cli_need_nonempty("eval", a, v, "a file name, or '-' for none");
    } else if (!strcmp(a, "--method"))
        o->method = v;
    else if (!strcmp(a, "--samples"))
        rc = cli_parse_int_in("eval", a, v, 1, EVAL_MAX_SAMPLES, &o->samples);
    else if (!strcmp(a, "--window"))
        rc = cli_parse_int_in("eval", a, v, 1, EVAL_MAX_TOKENS, &o->window);
    else if (!strcmp(a, "--sinks"))
        rc = cli_parse_int_in("eval", a, v, 0, EVAL_MAX_TOKENS, &o->sinks);
    else if (!strcmp(a, "--keys"))
        rc = cli_parse_int_in("eval", a, v, 2, PROBE_MAX_NEEDLES, &o->keys);
    else if (!strcmp(a, "--lengths")) {
        n = cli_parse_tokens_list("eval", a, v, PROBE_MIN_LENGTH, EVAL_MAX_TOKENS, o->lengths, MAX_ITEMS);
        rc = n < 0 ? -1 : (o->n_lengths = n, 0);
    } else if (!strcmp(a, "--tasks"))
        rc = parse_tasks(a, v, o);
    else if (!strcmp(a, "--haystack")) {
        if (haystack_kind_parse(v, &o->haystack)) {
            fprintf(stderr, "bosch eval: %s: bad value '%s' (need noise or text)\n", a, v);
            rc = -1;
        }
    } else if (!strcmp(a, "--split")) {
        /* validation: the split options and presets are chosen on (compare's, docs/search.md) */
        static const char *const names[] = {"heldout", "calibration", "validation"};
        static const probe_split splits[] = {PROBE_SPLIT_HELDOUT, PROBE_SPLIT_CALIBRATION,
                                             PROBE_SPLIT_VALIDATION};
        char why[256];
        int idx = 0;
        if (!strcmp(v, "calib"))
            idx = 1;
        else if (base_parse_choice(v, names, 3, &idx, why, sizeof why)) {
            fprintf(stderr, "bosch eval: %s: %s\n", a, why);
            rc = -1;
        }
        o->split = splits[idx];
    } else { /* --seed */
        unsigned long long seed = 0;
        rc = cli_parse_seed("eval", a, v, &seed);
        o->seed = (uint64_t)seed;
        o->seed_set = 1;
    }
    return cmd_value(rc);
}

static void eval_init(void *opts) {
    eval_opts *o = opts;
    o->out_path = "eval_results.csv";
    o->tasks[0] = PROBE_DEFAULT_TASK;
    o->n_tasks = 1;
    o->lengths[0] = PROBE_DEFAULT_LENGTH;
    o->n_lengths = 1;
    o->haystack = PROBE_DEFAULT_HAYSTACK;
    o->samples = PROBE_DEFAULT_SAMPLES;
    o->window = o->sinks = -1;
    o->keys = 4;
    o->chat = 1;
    o->split = PROBE_SPLIT_HELDOUT;
    cli_dist_opts_init(&o->dist);
}

/* One line on stderr: [#####.....] done/total label, elapsed and ETA. */
static void progress(int quiet, int done, int total, const char *label, double t0) {
    if (quiet) return;
    int width = 30, fill = total ? done * width / total : width;
    double el = base_now_s() - t0, eta = done ? el * (total - done) / done : 0.0;
    fprintf(stderr, "\r[");
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %-22s %6.1fs eta %6.1fs", done, total, label, el, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* The mask to score: a file, all SWA or all full; window and sinks from flags, the file or defaults. */
static int eval_make_mask(const eval_opts *o, const model *m, attn_mask *mask, char *err, size_t errlen) {
    if (o->mask_path) {
        char warn[512];
        if (csv_mask_load_for(o->mask_path, mask, &m->hp, m->name, warn, sizeof warn, err, errlen)) return -1;
        if (warn[0]) fprintf(stderr, "bosch eval: warning: %s\n", warn);
    } else if (mask_init(mask, m->hp.n_layer, m->hp.n_head_kv, PROBE_DEFAULT_WINDOW, PROBE_DEFAULT_SINKS,
                         o->all_swa ? ATTN_SWA : ATTN_FULL)) {
        snprintf(err, errlen, "cannot allocate a %dx%d mask", m->hp.n_layer, m->hp.n_head_kv);
        return -1;
    }
    if (o->window > 0) mask->window = o->window;
    if (o->sinks >= 0) mask->sinks = o->sinks;
    return 0;
}

/* While the results file is written its PATH.tmp.XXXXXX exists. SIGINT, SIGTERM and SIGHUP are then
 * only noted (a process-wide handler: whichever thread, OpenMP's included, receives one), and
 * re-raised once the file is in place or removed, so the process still dies of the signal. A signal
 * the process ignores (e.g. SIGINT in a background job) stays ignored. */
static const int held_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t held_signal; /* the last signal noted while held; 0: none */

static void note_signal(int sig) {
    held_signal = sig;
}

static void hold_signals(struct sigaction old[3]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    held_signal = 0;
    for (int i = 0; i < 3; i++) {
        sigaction(held_sigs[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(held_sigs[i], &sa, NULL);
    }
}

static void release_signals(const struct sigaction old[3]) {
    for (int i = 0; i < 3; i++) sigaction(held_sigs[i], &old[i], NULL);
    if (held_signal) raise(held_signal);
}

/* Write the results CSV in one go (formats/results.h, the eval layout: temporary file, then
 * rename) with the signals held, so Ctrl-C or SIGTERM at any time leaves neither a temporary file
 * nor a half-written PATH, and the process still dies of the signal (status 130 / 143). rows =
 * NULL, n = 0: only check now that PATH can be written (its folder exists and is writable). 0, or
 * -1 with a message. */
static int write_results(const char *path, const results_row *rows, int n, char *err, size_t errlen) {
    struct sigaction old[3];
    hold_signals(old);
    int rc = results_write(path, RESULTS_EVAL, rows, n, err, errlen);
    release_signals(old);
    return rc;
}

/* Combinations, the seed's default, and the results file writable: before the model loads. */
static int eval_check(cmd_env *e, void *opts) {
    (void)e;
    eval_opts *o = opts;
    if (o->mask_path && o->all_swa) {
        fprintf(stderr, "bosch eval: --mask and --all-swa exclude each other\n");
        return 2;
    }
    if (!o->seed_set)
        o->seed = o->split == PROBE_SPLIT_HELDOUT      ? PROBE_DEFAULT_HELDOUT_SEED
                  : o->split == PROBE_SPLIT_VALIDATION ? PROBE_DEFAULT_VALID_SEED
                                                       : PROBE_DEFAULT_CALIB_SEED;
    char err[512];
    if (strcmp(o->out_path, "-") && write_results(o->out_path, NULL, 0, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        return 1;
    }
    return strcmp(o->out_path, "-") && cmd_lock_output(e, o->out_path, 1) ? 1 : 0;
}

/* The run's fixed parts: what the per-cell loop shares. */
typedef struct {
    const eval_opts *o;
    const model *m;
    const backend *be;
    const attn_mask *mask;
    const attn_mask *serv; /* the mask's servable projection (scored with --servable) */
    const char *method;
    int done, total;
    double t0;
} eval_run_ctx;

/* The mask (and with --servable its projection) on every sample of the cell, here: one evaluator
 * per sample and mask keeps memory at one sequence and lets the bar move. 0 or -1 with a message. */
static int eval_cell_here(eval_run_ctx *c, const probe_cell *cell, const char *label, eval_sample_result *res,
                          eval_sample_result *sres, char *err, size_t errlen) {
    probe_scorer *sc = NULL;
    if (probe_scorer_open(&sc, c->m, c->be, cell, 0, err, errlen)) return -1;
    int rc = 0;
    for (int i = 0; i < cell->n_samples && !rc; i++) {
        progress(c->o->quiet, c->done, c->total, label, c->t0);
        rc = probe_scorer_score(sc, c->mask, i, 1, &res[i], err, errlen) ||
             (c->o->servable && probe_scorer_score(sc, c->serv, i, 1, &sres[i], err, errlen));
        if (!rc) c->done++;
    }
    probe_scorer_free(sc);
    return rc ? -1 : 0;
}

/* The same under mpirun: the samples cut into one contiguous range per rank (cli_dist.h). */
static int eval_cell_spread(eval_run_ctx *c, const probe_cell *cell, eval_sample_result *res,
                            eval_sample_result *sres, char *err, size_t errlen) {
    if (cli_dist_cell_samples(cell, c->mask, res, err, errlen) ||
        (c->o->servable && cli_dist_cell_samples(cell, c->serv, sres, err, errlen)))
        return -1;
    c->done += cell->n_samples;
    return 0;
}

/* Score the mask on one (task, length) cell: a row on stdout and in *row; with --servable its
 * projection too, on the same samples, into *srow (method and n left to the caller). 0, or -1
 * (printed). */
static int eval_cell(eval_run_ctx *c, probe_task task, int length, results_row *row, results_row *srow) {
    const eval_opts *o = c->o;
    probe_config cfg = probe_config_default();
    cfg.task = task;
    cfg.haystack = o->haystack;
    cfg.length_tokens = length;
    cfg.n_samples = o->samples;
    cfg.n_keys = o->keys;
    cfg.use_chat = o->chat;
    char err[512], label[64], len_label[16];
    probe_length_label(length, len_label, sizeof len_label);
    snprintf(label, sizeof label, "%s@%s", probe_task_name(task), len_label);
    const probe_cell cell = probe_cell_make(&cfg, o->split, o->seed);
    const int n = cfg.n_samples;
    eval_sample_result *res = calloc((size_t)n, sizeof *res), *sres = calloc((size_t)n, sizeof *sres);
    double acc = 0, score = 0, sacc = 0, sscore = 0, t_group = base_now_s();
    progress(o->quiet, c->done, c->total, label, c->t0);
    int rc = !res || !sres       ? (snprintf(err, sizeof err, "out of memory"), -1)
             : cli_dist_active() ? eval_cell_spread(c, &cell, res, sres, err, sizeof err)
                                 : eval_cell_here(c, &cell, label, res, sres, err, sizeof err);
    if (rc) fprintf(stderr, "\nbosch eval: %s: %s\n", label, err);
    for (int i = 0; i < n && !rc; i++) /* in sample order, wherever each was scored: the same sums */
        acc += res[i].exact, score += res[i].p_answer, sacc += sres[i].exact, sscore += sres[i].p_answer;
    progress(o->quiet, c->done, c->total, label, c->t0);
    if (!rc) {
        acc /= n, score /= n;
        const int elem =
            c->be && c->be->device != BACKEND_CPU ? 4 : attn_kv_elem_bytes(c->m->kv_type); /* CUDA: fp32 */
        uint64_t kvb = kv_cache_bytes(&c->m->hp, c->mask, length, elem),
                 skvb = kv_cache_bytes(&c->m->hp, c->serv, length, elem);
        printf("%-14s %7s %7.1f%% %10.4f %8d %14llu %14llu %9.1f\n", probe_task_name(task), len_label,
               100.0 * acc, score, n, (unsigned long long)kvb, (unsigned long long)skvb,
               base_now_s() - t_group);
        fflush(stdout);
        *row = (results_row){.method = c->method,
                             .ratio = mask_ratio(c->mask),
                             .task = probe_task_name(task),
                             .length = length,
                             .accuracy = acc,
                             .score = score,
                             .kv_bytes = kvb};
        *srow = (results_row){.ratio = mask_ratio(c->serv),
                              .task = probe_task_name(task),
                              .length = length,
                              .n = n,
                              .accuracy = sacc / n,
                              .score = sscore / n,
                              .kv_bytes = skvb};
    }
    free(res), free(sres);
    return rc;
}

/* --servable: the projection's table (the same columns; its kv_bytes is its servable_kv; n holds
 * the samples). */
static void print_servable(const char *method, const results_row *srows, int n) {
    printf("# servable projection, scored on the same samples (method %s)\n", method);
    for (int i = 0; i < n; i++) {
        char len_label[16];
        probe_length_label(srows[i].length, len_label, sizeof len_label);
        printf("%-14s %7s %7.1f%% %10.4f %8d %14llu %14llu %9s\n", srows[i].task, len_label,
               100.0 * srows[i].accuracy, srows[i].score, (int)srows[i].n,
               (unsigned long long)srows[i].kv_bytes, (unsigned long long)srows[i].kv_bytes, "-");
    }
    fflush(stdout);
}

static int eval_run(cmd_env *e, void *opts) {
    const eval_opts *o = opts;
    const model *m = e->m;
    char err[512];
    for (int li = 0; li < o->n_lengths; li++) /* as sinks past the context are: refused, not run */
        if (m->hp.n_ctx_train > 0 && o->lengths[li] > m->hp.n_ctx_train) {
            fprintf(stderr,
                    "bosch eval: --lengths: %d tokens is more than the model's context length %d (the "
                    "model was not trained on positions past it)\n",
                    o->lengths[li], m->hp.n_ctx_train);
            return 2;
        }
    attn_mask mask = {0};
    if (eval_make_mask(o, m, &mask, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        return 1;
    }
    attn_mask serv = {0};
    if (mask_servable(&serv, &mask)) {
        fprintf(stderr, "bosch eval: cannot allocate the servable projection\n");
        mask_free(&mask);
        return 1;
    }
    if (cli_dist_active() &&
        cli_dist_start(m, e->be, NULL, "eval", 4, o->dist.worker_timeout, NULL, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        mask_free(&serv);
        mask_free(&mask);
        return 1;
    }
    eval_run_ctx c = {o,           m, e->be, &mask, &serv, NULL, 0, o->n_tasks * o->n_lengths * o->samples,
                      base_now_s()};
    c.method = o->method ? o->method : o->mask_path ? o->mask_path : o->all_swa ? "all_swa" : "full";
    char smethod[512];
    snprintf(smethod, sizeof smethod, "%s+servable", c.method);
    printf("# model %s  method %s  ratio %.4f  window %d  sinks %d  split %s  seed %llu  haystack %s  device "
           "%s\n",
           m->name, c.method, mask_ratio(&mask), mask.window, mask.sinks, probe_split_name(o->split),
           (unsigned long long)o->seed, haystack_kind_name(o->haystack), backend_device_name(e->device));
    printf("# servable projection (one window per layer): %d of %d layers SWA, ratio %.4f%s\n",
           mask_count_swa_layers(&serv), serv.n_layer, mask_ratio(&serv),
           o->servable ? " (scored below)" : "");
    printf("%-14s %7s %8s %10s %8s %14s %14s %9s\n", "task", "length", "accuracy", "score", "samples",
           "kv_bytes", "servable_kv", "seconds");
    fflush(stdout);
    results_row rows[2 * MAX_ITEMS * MAX_ITEMS], srows[MAX_ITEMS * MAX_ITEMS];
    int rc = 0, n_rows = 0;
    for (int ti = 0; ti < o->n_tasks && !rc; ti++)
        for (int li = 0; li < o->n_lengths && !rc; li++, n_rows++) {
            rc = eval_cell(&c, o->tasks[ti], o->lengths[li], &rows[n_rows], &srows[n_rows]) ? 1 : 0;
            srows[n_rows].method = smethod;
        }
    if (o->servable && !rc) { /* its table, and its rows after the mask's in the CSV */
        print_servable(smethod, srows, n_rows);
        memcpy(rows + n_rows, srows, sizeof srows[0] * (size_t)n_rows);
        n_rows *= 2;
    }
    if (strcmp(o->out_path, "-") && !rc) {
        if (write_results(o->out_path, rows, n_rows, err, sizeof err)) {
            fprintf(stderr, "bosch eval: %s\n", err);
            rc = 1;
        } else if (!o->quiet)
            fprintf(stderr, "results: %s\n", o->out_path);
    }
    char dist[256];
    cli_dist_describe(dist, sizeof dist);
    if (dist[0] && !o->quiet) fprintf(stderr, "eval: %s\n", dist);
    cli_dist_stop();
    mask_free(&serv);
    mask_free(&mask);
    return rc;
}

/* A worker under mpirun: rank 0's sample ranges of each cell. Writes nothing. */
static int eval_worker(cmd_env *e, void *opts) {
    (void)opts;
    return cli_dist_worker_samples("eval", e->m, e->be);
}

const command cmd_eval = {
    .name = "eval",
    .help = "accuracy of a mask on probe tasks (held-out split)",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DEVICE | CMD_LOAD | CMD_BACKEND,
    .opts_size = sizeof(eval_opts),
    .init = eval_init,
    .option = eval_option,
    .check = eval_check,
    .run = eval_run,
    .worker = eval_worker,
    .usage = eval_usage,
};
