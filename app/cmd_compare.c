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
#include "model.h"
#include "probes.h"
#include "search.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: bosch compare [MODEL] --out DIR [--preset bench|ci|quick] [options]\n"
            "  every method's masks at several ratios from the calibration split, scored on a validation\n"
            "  and a held-out split: accuracy with 95%% Wilson intervals, exact McNemar tests of bosch\n"
            "  against the best other method, turnover, the A' experiment (docs/search.md)\n"
            "  --preset P       bench (default: the documented comparison), ci (minutes), quick (the\n"
            "                   old small table)\n"
            "  --methods LIST   rows, e.g. bosch,bosch_paper,ablation (bosch, bosch_paper, bosch_indep,\n"
            "                   bosch_marginal, bosch_ranks, bosch_heads, bosch_bucket, bosch_plus,\n"
            "                   bosch_layer (BOSCH over whole layers), rand, bme, intr, nll, ablation,\n"
            "                   fisher, locality, echo)\n"
            "  --ratios LIST    e.g. 0.25,0.5,0.75,0.875 (increasing)\n"
            "  --tasks LIST     held-out tasks (niah_multikey runs on prose, the others on noise)\n"
            "  --lengths LIST   held-out lengths, tokens (e.g. 256,512)\n"
            "  --heldout N      samples per held-out (task, length) cell\n"
            "  --valid N        samples per validation cell (0: no validation split)\n"
            "  --samples N --length T   calibration split size\n"
            "  --calib single|mix       calibration tasks: niah_single only, or shared out between\n"
            "                   niah_single, niah_multikey (prose) and passkey\n"
            "  --window W --sinks S --seed N --budget1 B --budget3 B   search settings\n"
            "  --aprime N       seeds of the A' experiment (0: skip)\n"
            "  --device D       cpu, cuda or auto: where every evaluator runs\n"
            "  --precision P    CPU GEMMs: fp32, bf16 or auto\n"
            "  --force          start over: remove DIR/cache.tsv (the memo of every evaluation) and\n"
            "                   run even where DIR holds a search run or a comparison with other settings\n"
            "  Ctrl-C, SIGTERM or SIGHUP stops (exit 130); the same command continues from\n"
            "  DIR/cache.tsv. DIR is created if missing and must be writable.\n");
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

int cmd_compare(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = NULL, *preset = "bench", *methods_s = NULL, *ratios_s = NULL;
    const char *tasks_s = NULL, *lengths_s = NULL, *device_s = "auto";
    long window = -1, sinks = -1, heldout = -1, valid = -1, samples = -1, length = -1, b1 = -1, b3 = -1,
         aprime = -1;
    unsigned long long seed = 0;
    int have_seed = 0, calib_mix = -1, force = 0;
    model_opts mopts = {PRECISION_AUTO, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-') {
            if (model_path) {
                fprintf(stderr, "bosch compare: unexpected argument '%s'\n", a);
                return 2;
            }
            model_path = a;
            continue;
        }
        if (!strcmp(a, "--force")) {
            force = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "bosch compare: option %s needs a value\n", a);
            return 2;
        }
        i++;
        int bad = 0;
        if (!strcmp(a, "--out"))
            bad = cli_need_nonempty("compare", a, v, "a folder"), out_dir = v;
        else if (!strcmp(a, "--preset"))
            preset = v;
        else if (!strcmp(a, "--methods"))
            methods_s = v;
        else if (!strcmp(a, "--ratios"))
            ratios_s = v;
        else if (!strcmp(a, "--tasks"))
            tasks_s = v;
        else if (!strcmp(a, "--lengths"))
            lengths_s = v;
        else if (!strcmp(a, "--device"))
            device_s = v;
        else if (!strcmp(a, "--precision"))
            bad = cli_parse_precision("compare", v, &mopts.precision);
        else if (!strcmp(a, "--seed"))
            bad = cli_parse_seed("compare", a, v, &seed), have_seed = 1;
        else if (!strcmp(a, "--window"))
            bad = cli_parse_int_range("compare", a, v, 1, 1L << 24, &window);
        else if (!strcmp(a, "--sinks"))
            bad = cli_parse_int_range("compare", a, v, 0, 1L << 24, &sinks);
        else if (!strcmp(a, "--heldout"))
            bad = cli_parse_int("compare", a, v, 1, &heldout);
        else if (!strcmp(a, "--valid"))
            bad = cli_parse_int("compare", a, v, 0, &valid);
        else if (!strcmp(a, "--samples"))
            bad = cli_parse_int("compare", a, v, 1, &samples);
        else if (!strcmp(a, "--length"))
            bad = cli_parse_tokens("compare", a, v, PROBE_MIN_LENGTH, 1L << 24, &length);
        else if (!strcmp(a, "--budget1"))
            bad = cli_parse_int("compare", a, v, 1, &b1);
        else if (!strcmp(a, "--budget3"))
            bad = cli_parse_int("compare", a, v, 1, &b3);
        else if (!strcmp(a, "--aprime"))
            bad = cli_parse_int("compare", a, v, 0, &aprime);
        else if (!strcmp(a, "--calib"))
            bad = cli_parse_choice("compare", a, v, "single", "mix", &calib_mix);
        else {
            fprintf(stderr, "bosch compare: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) return 2;
    }
    if (!out_dir) {
        fprintf(stderr, "bosch compare: --out DIR is required\n");
        usage(stderr);
        return 2;
    }
    backend_device device;
    char err[1024];
    if (backend_parse_device(device_s, &device, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        return 2;
    }
    double ratios[COMPARE_MAX_RATIOS];
    int n_ratios =
        ratios_s ? cli_parse_real_list("compare", "--ratios", ratios_s, 0.0, 1.0, ratios, COMPARE_MAX_RATIOS)
                 : 0;
    if (n_ratios < 0) return 2;
    char methods[COMPARE_MAX_METHODS][CLI_ITEM_CAP];
    int n_methods =
        methods_s ? cli_split_list("compare", "--methods", methods_s, methods, COMPARE_MAX_METHODS) : 0;
    if (n_methods < 0) return 2;
    for (int i = 0; i < n_methods; i++) { /* every name is a method or a BOSCH variant */
        search_config c;
        search_config_default(&c);
        if (search_variant_apply(&c, methods[i], err, sizeof err)) {
            cli_bad_list("compare", "--methods", methods_s, "%s", err);
            return 2;
        }
    }
    /* the whole plan before the model loads, so every option error comes first */
    compare_plan plan;
    if (compare_plan_preset(&plan, preset, NULL, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        return 2;
    }
    if (n_ratios) memcpy(plan.ratios, ratios, sizeof(double) * (size_t)n_ratios), plan.n_ratios = n_ratios;
    if (n_methods) {
        for (int i = 0; i < n_methods; i++) { /* names compare in lower case, as they parse */
            for (char *q = methods[i]; *q; q++)
                if (*q >= 'A' && *q <= 'Z') *q = (char)(*q - 'A' + 'a');
            snprintf(plan.methods[i], sizeof plan.methods[i], "%.31s", methods[i]);
        }
        plan.n_methods = n_methods;
    }
    if (window > 0) plan.cfg.window = (int)window;
    if (sinks >= 0) plan.cfg.sinks = (int)sinks;
    if (have_seed) plan.cfg.seed = seed;
    if (samples > 0) plan.cfg.calib_samples = (int)samples;
    if (length > 0) plan.cfg.calib_tokens = (int)length;
    if (b1 > 0) plan.cfg.stage1_budget_per_layer = b1;
    if (b3 > 0) plan.cfg.stage3_budget_per_group = b3;
    if (aprime >= 0) plan.aprime_seeds = (int)aprime;
    if (calib_mix >= 0) plan.cfg.calib_mix = calib_mix;
    if ((tasks_s || lengths_s || heldout > 0) &&
        reshape_cells(plan.heldout, &plan.n_heldout, tasks_s, lengths_s, heldout, &plan.heldout[0]))
        return 2;
    if (valid == 0)
        plan.n_valid = 0;
    else if (valid > 0)
        for (int c = 0; c < plan.n_valid; c++) plan.valid[c].n_samples = (int)valid;

    if (compare_plan_check(&plan, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        return 2;
    }
    if ((window > 0 && plan.cfg.window >= plan.cfg.calib_tokens) ||
        (sinks >= 0 && plan.cfg.sinks >= plan.cfg.calib_tokens)) {
        fprintf(stderr,
                "bosch compare: %s %d: bad value (need fewer tokens than the calibration length, %d "
                "(--length), or every SWA head sees the whole sequence)\n",
                window > 0 && plan.cfg.window >= plan.cfg.calib_tokens ? "--window" : "--sinks",
                window > 0 && plan.cfg.window >= plan.cfg.calib_tokens ? plan.cfg.window : plan.cfg.sinks,
                plan.cfg.calib_tokens);
        return 2;
    }
    /* the output folder before the model loads: created, writable, not another kind of run */
    if (cli_out_dir_ready("compare", out_dir)) return 1;
    char found[128];
    if (cli_out_dir_holds(out_dir, search_files, 4, found, sizeof found) && !force) {
        fprintf(stderr,
                "bosch compare: %s holds a search run (%s), not a comparison; choose another --out, or "
                "--force\n",
                out_dir, found);
        return 1;
    }
    if (force) {
        char p[4200];
        snprintf(p, sizeof p, "%s/cache.tsv", out_dir);
        if (remove(p) && errno != ENOENT) {
            fprintf(stderr, "bosch compare: --force: cannot remove %s: %s\n", p, strerror(errno));
            return 1;
        }
    }
    struct sigaction old_sa[3];
    cli_catch_stop_signals(old_sa); /* from here a signal stops the comparison cleanly */
    if (!model_path) model_path = cli_default_model();
    model *m = NULL;
    if (cli_load_model("compare", model_path, &mopts, &m)) {
        cli_restore_stop_signals(old_sa);
        return 1;
    }
    int rc = 1;
    backend *dev = NULL;
    backend_options bo = cli_backend_options(device, 0);
    if (backend_create(&dev, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        goto out;
    }
    {
        char desc[256];
        backend_describe(dev, 1, desc, sizeof desc);
        fprintf(stderr, "compare: preset %s, evaluators on %s%s%s\n", plan.preset, desc,
                device == BACKEND_CPU ? ", GEMMs " : "",
                device == BACKEND_CPU ? gemm_precision_name(m->precision) : "");
    }
    compare_result *res = NULL;
    int s = compare_run(&plan, m, dev, out_dir, &cli_stop, progress, NULL, &res, err, sizeof err);
    if (s == 0) {
        size_t cap = 1 << 16;
        char *buf = malloc(cap);
        if (buf) {
            compare_result_table(res, buf, cap);
            fputs(buf, stdout);
            free(buf);
        }
        compare_result_free(res);
        rc = 0;
    } else {
        fprintf(stderr, "bosch compare: %s\n", err);
        rc = s == 1 ? 130 : 1;
    }
    backend_free(dev);
out:
    cli_restore_stop_signals(old_sa);
    model_free(m);
    return rc;
}
