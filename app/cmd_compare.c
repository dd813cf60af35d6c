/* cmd_compare.c — `bosch compare`: the comparison protocol of compare/compare.h from the command
 * line. A preset gives the whole plan; the options below change parts of it. Progress goes to
 * stderr, the markdown table to stdout, every file to --out DIR. DIR is checked before the model
 * loads (created if missing, a writable folder, not holding a search run) and its cache before any
 * evaluation (a comparison with other settings is refused); --force starts over. SIGINT (Ctrl-C),
 * SIGTERM and SIGHUP stop after the current evaluation with everything kept in DIR/cache.tsv (exit
 * 130); the same command continues from there. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "backend.h"
#include "cli_backend.h"
#include "cli_dist.h"
#include "cli_plots.h"
#include "model.h"
#include "probes.h"
#include "search.h"
#include "search_methods.h"
#include "search_options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: bosch compare [MODEL] --out DIR [--preset bench|ci|quick] [options]\n"
               "  every method's masks at several ratios from the calibration split, scored on a validation\n"
               "  and a held-out split: accuracy with 95%% Wilson intervals, exact McNemar tests of bosch\n"
               "  against the best other method, turnover, the A' experiment (docs/search.md)\n"
               "  --preset P       bench (default: the documented comparison), ci (minutes), quick (the\n"
               "                   old small table)\n"
               "  --methods LIST   rows, e.g. bosch,bosch_paper,ablation, from:\n");
    search_methods_usage(f, "                     "); /* the method registry's rows (search_methods.h) */
    fprintf(f,
            "  --ratios LIST    e.g. 0.25,0.5,0.75,0.875 (increasing)\n"
            "  --tasks LIST     held-out tasks (niah_multikey runs on prose, the others on noise)\n"
            "  --lengths LIST   held-out lengths, tokens (e.g. 256,512)\n"
            "  --heldout N      samples per held-out (task, length) cell\n"
            "  --valid N        samples per validation cell (0: no validation split)\n"
            "  --transfer N     samples per transfer (task, length) cell: the held-out tasks at longer\n"
            "                   lengths, same window (0: no transfer split; bench: 16 at 2k and 4k)\n"
            "  --transfer-lengths LIST  the transfer split's lengths, tokens (e.g. 2k,4k,8k)\n"
            "  --aprime N       seeds of the A' experiment (0: skip)\n"
            "  --device D       cpu, cuda or auto: where every evaluator runs\n"
            "  --precision P    CPU GEMMs: fp32, bf16 or auto\n"
            "  --kv T           CPU KV cache and attention: bf16 (default) or fp32 (the reference)\n"
            "  --force          start over: remove DIR/cache.tsv (the memo of every evaluation) and\n"
            "                   run even where DIR holds a search run or a comparison with other settings\n"
            "  Ctrl-C, SIGTERM or SIGHUP stops (exit 130); the same command continues from\n"
            "  DIR/cache.tsv. DIR is created if missing and must be writable.\n"
            "%s%s"
            "  under mpirun -np N (docs/distributed.md) rank 0 runs the comparison and writes every file;\n"
            "  ranks 1..N-1 score the searches' batches and shares of every split cell's masks\n"
            "  the search settings of every method (as bosch search spells them):\n",
            cli_dist_usage_batch, cli_dist_usage_timeout);
    search_opts_usage(f, SOPT_COMPARE);
}

/* The files of a search run (bosch search --out): a comparison does not write there. */
static const char *const search_files[] = {"state", "trace.csv", "mask.csv", "layers.csv"};

static void progress(const char *line, void *user) {
    (void)user;
    fprintf(stderr, "compare: %s\n", line);
}

/* Apply the held-out shape options to every cell: tasks x lengths with n samples. */
static int reshape_cells(compare_cell *cells, int *n_cells, const char *tasks_s, const char *lengths_s,
                         long n, const compare_cell *like) {
    char items[COMPARE_MAX_CELLS][CLI_ITEM_CAP];
    probe_task tasks[COMPARE_MAX_CELLS];
    int lengths[COMPARE_MAX_CELLS], n_tasks = 0, n_lengths = 0;
    if (tasks_s) {
        n_tasks = cli_split_list("compare", "--tasks", tasks_s, items, COMPARE_MAX_CELLS);
        if (n_tasks < 0) return -1;
        for (int i = 0; i < n_tasks; i++)
            if (probe_task_parse(items[i], &tasks[i])) {
                cli_bad_list("compare", "--tasks", tasks_s,
                             "item '%s' is not a task: niah_single, niah_multikey or passkey", items[i]);
                return -1;
            }
    } else { /* the preset's tasks, in order */
        for (int c = 0; c < *n_cells; c++) {
            int seen = 0;
            for (int t = 0; t < n_tasks; t++) seen |= tasks[t] == cells[c].task;
            if (!seen) tasks[n_tasks++] = cells[c].task;
        }
    }
    if (lengths_s) {
        n_lengths = cli_parse_tokens_list("compare", "--lengths", lengths_s, PROBE_MIN_LENGTH, 1L << 24,
                                          lengths, COMPARE_MAX_CELLS);
        if (n_lengths < 0) return -1;
    } else {
        for (int c = 0; c < *n_cells; c++) {
            int seen = 0;
            for (int l = 0; l < n_lengths; l++) seen |= lengths[l] == cells[c].length;
            if (!seen) lengths[n_lengths++] = cells[c].length;
        }
    }
    if (n_tasks * n_lengths > COMPARE_MAX_CELLS) {
        fprintf(stderr, "bosch compare: %d tasks x %d lengths is more than %d cells\n", n_tasks, n_lengths,
                COMPARE_MAX_CELLS);
        return -1;
    }
    const int samples = n > 0 ? (int)n : (*n_cells ? cells[0].n_samples : like->n_samples);
    *n_cells = 0;
    for (int t = 0; t < n_tasks; t++)
        for (int l = 0; l < n_lengths; l++)
            cells[(*n_cells)++] =
                (compare_cell){tasks[t], tasks[t] == PROBE_NIAH_MULTIKEY ? HAYSTACK_TEXT : HAYSTACK_NOISE,
                               lengths[l], samples};
    return 0;
}

typedef struct {
    search_opts so; /* the search options a comparison takes (SOPT_COMPARE) */
    const char *out_dir, *preset, *methods_s, *ratios_s, *tasks_s, *lengths_s, *transfer_lengths_s;
    long heldout, valid, aprime, transfer; /* -1: the preset's */
    int force;
    cli_dist_opts dist; /* --batch, --worker-timeout */
    compare_plan plan;  /* built by the check */
} compare_cli;

static void compare_init(void *opts) {
    compare_cli *o = opts;
    o->preset = "bench";
    o->heldout = o->valid = o->aprime = o->transfer = -1;
    cli_dist_opts_init(&o->dist);
}

static int compare_option(cmd_env *e, void *opts, const char *a, const char *v) {
    compare_cli *o = opts;
    if (!strcmp(a, "--force")) {
        o->force = 1;
        return CMD_OPT_FLAG;
    }
    int r = cli_dist_option("compare", 1, &o->dist, a, v);
    if (r != CMD_OPT_UNKNOWN) return r;
    const char **text = !strcmp(a, "--out")                ? &o->out_dir
                        : !strcmp(a, "--preset")           ? &o->preset
                        : !strcmp(a, "--methods")          ? &o->methods_s
                        : !strcmp(a, "--ratios")           ? &o->ratios_s
                        : !strcmp(a, "--tasks")            ? &o->tasks_s
                        : !strcmp(a, "--lengths")          ? &o->lengths_s
                        : !strcmp(a, "--transfer-lengths") ? &o->transfer_lengths_s
                                                           : NULL;
    long *num = !strcmp(a, "--heldout")    ? &o->heldout
                : !strcmp(a, "--valid")    ? &o->valid
                : !strcmp(a, "--aprime")   ? &o->aprime
                : !strcmp(a, "--transfer") ? &o->transfer
                                           : NULL;
    int id = search_opts_lookup(a, SOPT_COMPARE);
    if (!text && !num && id < 0) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (text) {
        *text = v;
        return text == &o->out_dir ? cmd_value(cli_need_nonempty("compare", a, v, "a folder"))
                                   : CMD_OPT_VALUE;
    }
    if (num) return cmd_value(cli_parse_int("compare", a, v, num == &o->heldout ? 1 : 0, num));
    char why[512];
    if (search_opts_set(&o->so, (search_opt_id)id, v, why, sizeof why)) {
        fprintf(stderr, "bosch compare: %s: %s\n", a, why);
        return CMD_OPT_BAD;
    }
    return CMD_OPT_VALUE;
}

/* --methods into the plan: every name a method or a BOSCH variant, compared in lower case. 0 or -1. */
static int plan_methods(compare_plan *plan, const char *methods_s) {
    char methods[COMPARE_MAX_METHODS][CLI_ITEM_CAP], err[512];
    int n = cli_split_list("compare", "--methods", methods_s, methods, COMPARE_MAX_METHODS);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        search_config c;
        search_config_default(&c);
        if (search_variant_apply(&c, methods[i], err, sizeof err)) {
            cli_bad_list("compare", "--methods", methods_s, "%s", err);
            return -1;
        }
        for (char *q = methods[i]; *q; q++)
            if (*q >= 'A' && *q <= 'Z') *q = (char)(*q - 'A' + 'a');
        snprintf(plan->methods[i], sizeof plan->methods[i], "%.31s", methods[i]);
    }
    plan->n_methods = n;
    return 0;
}

/* --transfer and --transfer-lengths into the plan: the held-out split's tasks (and haystacks) at
 * those lengths (default: the preset's transfer lengths, else twice the longest held-out length),
 * N samples each (default: the preset's, else the held-out split's). --transfer 0: none. 0 or -1. */
static int transfer_cells(const compare_cli *o, compare_plan *plan) {
    if (o->transfer == 0) {
        plan->n_transfer = 0;
        return 0;
    }
    if (o->transfer < 0 && !o->transfer_lengths_s && !(o->tasks_s && plan->n_transfer > 0)) return 0;
    int lengths[COMPARE_MAX_CELLS], n_lengths = 0;
    if (o->transfer_lengths_s) {
        n_lengths = cli_parse_tokens_list("compare", "--transfer-lengths", o->transfer_lengths_s,
                                          PROBE_MIN_LENGTH, 1L << 24, lengths, COMPARE_MAX_CELLS);
        if (n_lengths < 0) return -1;
    } else if (plan->n_transfer > 0) {
        for (int c = 0; c < plan->n_transfer; c++) {
            int seen = 0;
            for (int l = 0; l < n_lengths; l++) seen |= lengths[l] == plan->transfer[c].length;
            if (!seen) lengths[n_lengths++] = plan->transfer[c].length;
        }
    } else {
        int longest = 0;
        for (int c = 0; c < plan->n_heldout; c++)
            if (plan->heldout[c].length > longest) longest = plan->heldout[c].length;
        lengths[n_lengths++] = 2 * longest;
    }
    const int samples = o->transfer > 0        ? (int)o->transfer
                        : plan->n_transfer > 0 ? plan->transfer[0].n_samples
                                               : plan->heldout[0].n_samples;
    probe_task tasks[COMPARE_MAX_CELLS];
    haystack_kind hay[COMPARE_MAX_CELLS];
    int n_tasks = 0;
    for (int c = 0; c < plan->n_heldout; c++) {
        int seen = 0;
        for (int t = 0; t < n_tasks; t++) seen |= tasks[t] == plan->heldout[c].task;
        if (!seen) tasks[n_tasks] = plan->heldout[c].task, hay[n_tasks++] = plan->heldout[c].haystack;
    }
    if (n_tasks * n_lengths > COMPARE_MAX_CELLS) {
        fprintf(stderr, "bosch compare: --transfer-lengths: %d tasks x %d lengths is more than %d cells\n",
                n_tasks, n_lengths, COMPARE_MAX_CELLS);
        return -1;
    }
    plan->n_transfer = 0;
    for (int t = 0; t < n_tasks; t++)
        for (int l = 0; l < n_lengths; l++)
            plan->transfer[plan->n_transfer++] = (compare_cell){tasks[t], hay[t], lengths[l], samples};
    return 0;
}

/* The whole plan from the preset and the options, before the model loads, so every option error
 * comes first. 0, or -1 (printed). */
static int build_plan(compare_cli *o) {
    compare_plan *plan = &o->plan;
    char err[1024];
    double ratios[COMPARE_MAX_RATIOS];
    int n_ratios = o->ratios_s ? cli_parse_real_list("compare", "--ratios", o->ratios_s, 0.0, 1.0, ratios,
                                                     COMPARE_MAX_RATIOS)
                               : 0;
    if (n_ratios < 0) return -1;
    if (compare_plan_preset(plan, o->preset, NULL, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        return -1;
    }
    if (o->methods_s && plan_methods(plan, o->methods_s)) return -1;
    if (n_ratios) memcpy(plan->ratios, ratios, sizeof(double) * (size_t)n_ratios), plan->n_ratios = n_ratios;
    if (o->aprime >= 0) plan->aprime_seeds = (int)o->aprime;
    if ((o->tasks_s || o->lengths_s || o->heldout > 0) &&
        reshape_cells(plan->heldout, &plan->n_heldout, o->tasks_s, o->lengths_s, o->heldout,
                      &plan->heldout[0]))
        return -1;
    if (transfer_cells(o, plan)) return -1;
    if (o->valid == 0)
        plan->n_valid = 0;
    else if (o->valid > 0)
        for (int c = 0; c < plan->n_valid; c++) plan->valid[c].n_samples = (int)o->valid;
    if (search_opts_apply_sizes(&o->so, &plan->cfg, err, sizeof err) ||
        compare_plan_check(plan, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        return -1;
    }
    return 0;
}

/* The plan, then the output folder (created, writable, not another kind of run; --force: the cache
 * removed). 0, or the exit status. */
static int compare_check(cmd_env *e, void *opts) {
    compare_cli *o = opts;
    if (!o->out_dir) {
        fprintf(stderr, "bosch compare: --out DIR is required\n");
        usage(stderr);
        return 2;
    }
    if (build_plan(o)) return 2;
    if (cmd_out_dir(e, o->out_dir, 1)) return 1;
    char found[128];
    if (cli_out_dir_holds(o->out_dir, search_files, 4, found, sizeof found) && !o->force) {
        fprintf(stderr,
                "bosch compare: %s holds a search run (%s), not a comparison; choose another --out, or "
                "--force\n",
                o->out_dir, found);
        return 1;
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/cache.tsv", o->out_dir);
    if (o->force && remove(p) && errno != ENOENT) {
        fprintf(stderr, "bosch compare: --force: cannot remove %s: %s\n", p, strerror(errno));
        return 1;
    }
    return 0;
}

/* The hooks of compare_exec under mpirun (cli_dist.h). */
typedef struct {
    const cmd_env *e;
    const compare_cli *o;
} compare_dist;

/* compare_exec.calib: the workers start with the plan's search config (the calibration split). */
static int dist_calib(void *user, const search_objective *local, search_objective *out, char *err,
                      size_t errlen) {
    const compare_dist *d = user;
    return cli_dist_start(d->e->m, d->e->be, local, &d->o->plan.cfg, sizeof d->o->plan.cfg,
                          d->o->dist.worker_timeout, out, err, errlen);
}

/* compare_exec.cell: the sorted masks in contiguous shares over the ranks. A wait ended by a stop
 * signal is a stop (1). */
static int dist_cell(void *user, const probe_cell *cell, const attn_mask *const *masks, int n,
                     eval_sample_result *const *res, char *err, size_t errlen) {
    (void)user;
    int rc = cli_dist_cell_masks(cell, masks, n, res, err, errlen);
    return rc && cli_stop ? 1 : rc;
}

static int compare_cmd_run(cmd_env *e, void *opts) {
    compare_cli *o = opts;
    char err[1024], desc[256];
    backend_describe(e->be, 1, desc, sizeof desc);
    fprintf(stderr, "compare: preset %s, evaluators on %s%s%s%s%s\n", o->plan.preset, desc,
            e->device == BACKEND_CPU ? ", GEMMs " : "",
            e->device == BACKEND_CPU ? gemm_precision_name(e->m->precision) : "",
            e->device == BACKEND_CPU ? ", KV cache " : "",
            e->device == BACKEND_CPU ? attn_kv_type_name(e->m->kv_type) : "");
    compare_dist d = {e, o};
    const compare_exec ex = {dist_calib, cli_dist_batch(&o->dist), dist_cell, &d};
    compare_result *res = NULL;
    int s = compare_run(&o->plan, e->m, e->be, cli_dist_active() ? &ex : NULL, o->out_dir, &cli_stop,
                        progress, NULL, &res, err, sizeof err);
    char dist[256];
    cli_dist_describe(dist, sizeof dist);
    if (dist[0]) fprintf(stderr, "compare: batch %d, %s\n", cli_dist_batch(&o->dist), dist);
    cli_dist_stop();
    if (s != 0) {
        fprintf(stderr, "bosch compare: %s\n", err);
        if (cli_dist_failed())
            fprintf(stderr,
                    "bosch compare: %s/cache.tsv holds every finished evaluation; continue with the same "
                    "command (any N)\n",
                    o->out_dir);
        return s == 1 ? 130 : 1;
    }
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    if (buf) {
        compare_result_table(res, buf, cap);
        fputs(buf, stdout);
        free(buf);
    }
    compare_result_free(res);
    return cli_plots_compare(o->out_dir); /* the figures beside results.csv */
}

/* A worker under mpirun: the plan's calibration objective (its search config from rank 0) and
 * probe cells. Writes no file. */
static int compare_worker(cmd_env *e, void *opts) {
    (void)opts;
    return cli_dist_worker_calib("compare", e->m, e->be);
}

const command cmd_compare = {
    .name = "compare",
    .help = "BOSCH against baselines at several ratios",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DEVICE | CMD_LOAD | CMD_BACKEND | CMD_STOP,
    .opts_size = sizeof(compare_cli),
    .init = compare_init,
    .option = compare_option,
    .check = compare_check,
    .run = compare_cmd_run,
    .worker = compare_worker,
    .usage = usage,
};
