/* cmd_search.c — `bosch search`: run a BOSCH search (or a baseline) headless.
 *
 *   bosch search [MODEL] --ratio R --out DIR [--preset tiny|default|paper] [--method M]
 *                [--window W] [--sinks S] [--seed N] [--budget1 B] [--budget3 B] [--restarts K]
 *                [--buckets N] [--samples N] [--length T] [--delta cumulative|marginal]
 *                [--stage1-k capped|spec] [--stage2 proportional|ranks]
 *                [--stage1 cascade|independent] [--granularity head|layer] [--device cpu|cuda|auto]
 *                [--force]
 *   bosch search [MODEL] --resume DIR [--device cpu|cuda|auto]
 *
 * Writes DIR/mask.csv, DIR/trace.csv, DIR/layers.csv and DIR/state (search_io.c format: a log; its
 * header is written before the first evaluation, then one line is appended and flushed after every
 * evaluation, so a kill -9 loses only the evaluation in flight). DIR is checked before any work: it
 * is created if missing and must be a writable folder; one that already holds a run (a state,
 * trace, mask, layers or comparison file) is refused unless --force (its search files are removed
 * first) or --resume. Progress goes to stderr; a one-line summary (key=value) to stdout. SIGINT
 * (Ctrl-C), SIGTERM and SIGHUP only set a flag: the search stops after the current evaluation,
 * saves DIR/state and the trace so far, and exits 1;
 * `--resume DIR` continues it to the same final mask (the settings come from DIR/state, so no other
 * search option may be given with it). --device (the evaluator's forward: CPU fp32 or GPU bf16;
 * default cuda when a GPU is visible) is a property of the run, not of the result: the state does
 * not store it, and a resumed search must use the device that saved the state, because search_load
 * checks the restored base's score bit for bit and the CPU and GPU differ in the last bits.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "csvio.h"
#include "cli.h"
#include "backend.h"
#include "cli_backend.h"
#include "model.h"
#include "probes.h"
#include "search.h"
#include "search_rows.h"
#include "clock.h"

/* Upper limit of --window and --sinks, tokens (bosch eval's). */
#define MAX_TOKENS (1L << 24)

/* The files of a run in an --out folder: what a search writes, and what a comparison writes. */
static const char *const run_files[] = {"state",      "trace.csv", "mask.csv",
                                        "layers.csv", "cache.tsv", "results.csv"};
enum { N_SEARCH_FILES = 4, N_RUN_FILES = sizeof run_files / sizeof run_files[0] };

typedef struct {
    trace_rows trace;
    int tty;
    double t0;
    long budget;
    int cur_stage;
} cli_listener;

static void on_event(const search_event *ev, void *user) {
    cli_listener *c = user;
    (void)search_trace_add(&c->trace, ev); /* out of memory: the row is lost, as before */
    if (ev->kind == SEARCH_EV_SEARCH_START) c->budget = ev->eval_budget;
    if (ev->replayed) return;
    double t = base_now_s() - c->t0;
    switch (ev->kind) {
    case SEARCH_EV_EVAL:
        if (c->tty)
            fprintf(stderr, "\r\033[K[stage %d%s%.0d] eval %ld/~%ld  score %.4f  acc %.2f  best %.4f  %.0fs",
                    ev->stage, ev->layer >= 0 ? " layer " : "", ev->layer >= 0 ? ev->layer : 0,
                    ev->eval_index, c->budget, ev->score, ev->accuracy, ev->best_score, t);
        break;
    case SEARCH_EV_LAYER_END:
        if (!c->tty)
            fprintf(stderr, "stage 1: layer %2d  s_best %.4f (normalized %.4f)  %.0fs\n", ev->layer,
                    ev->raw_score, ev->score, t);
        break;
    case SEARCH_EV_LAYER_STATS:
        fprintf(stderr, "%sstage 2: layer %2d  delta %+.4f  w %.3f  ratio %.3f  bucket %d\n",
                c->tty ? "\r\033[K" : "", ev->layer, ev->delta, ev->weight, ev->ratio, ev->bucket);
        break;
    case SEARCH_EV_GROUP_START:
        fprintf(stderr, "%sstage 3: group %d (%d layers)\n", c->tty ? "\r\033[K" : "", ev->group,
                ev->n_layers_in_group);
        break;
    case SEARCH_EV_GROUP_END:
        fprintf(stderr, "%sstage 3: group %d done, score %.4f  %.0fs\n", c->tty ? "\r\033[K" : "", ev->group,
                ev->score, t);
        break;
    case SEARCH_EV_SEARCH_START:
    case SEARCH_EV_DONE:
    case SEARCH_EV_ERROR:
        fprintf(stderr, "%s%s\n", c->tty ? "\r\033[K" : "", ev->message ? ev->message : "");
        break;
    default:
        break;
    }
}

/* DIR/trace.csv and DIR/layers.csv (formats/trace.h, formats/layers.h: the explorer's exports
 * write the same). */
static int write_trace(const char *dir, const cli_listener *c, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/trace.csv", dir);
    return trace_write(path, c->trace.rows, c->trace.n, err, errlen);
}

static int write_layers(const char *dir, const search_state *st, int n_layer, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/layers.csv", dir);
    return search_layers_write(path, st, n_layer, err, errlen);
}

static void usage(FILE *f) {
    fprintf(f, "usage: bosch search [MODEL] --ratio R --out DIR [--preset tiny|default|paper]\n"
               "         [--method bosch|bosch_paper|bosch_indep|bosch_marginal|bosch_ranks|bosch_heads|\n"
               "                   bosch_bucket|bosch_plus|bosch_layer|rand|bme|intr|nll|ablation|fisher|\n"
               "                   locality|echo]\n"
               "         [--window W] [--sinks S] [--seed N] [--budget1 B] [--budget3 B]\n"
               "         [--restarts K] [--buckets N] [--samples N] [--length T]\n"
               "         [--delta cumulative|marginal] [--stage1-k capped|spec] [--calib single|mix]\n"
               "         [--stage2 proportional|ranks] [--stage1 cascade|independent]\n"
               "         [--granularity head|layer] [--device cpu|cuda|auto] [--force]\n"
               "       bosch search [MODEL] --resume DIR [--device cpu|cuda|auto]\n"
               "  --out DIR: created if missing; must be writable; a folder that holds another run\n"
               "            (state, trace.csv, mask.csv, layers.csv, cache.tsv, results.csv) is refused\n"
               "  --granularity: what BOSCH chooses: single KV heads (head, default) or whole layers\n"
               "            (layer: every KV head of a layer SWA or none, round(ratio x layers) SWA layers,\n"
               "            the masks a per-layer serving engine runs; docs/search.md)\n"
               "  --force:  overwrite the run in DIR (its state, trace, mask and layers are removed)\n"
               "  --resume: the search settings come from DIR/state (no other search option); the device\n"
               "            does not: it is a property of the run, taken from this command line, and must\n"
               "            be the one that saved the state (the resumed scores are checked bit for bit;\n"
               "            CPU fp32 and GPU bf16 scores differ in the last digits)\n"
               "  --device: where the evaluator runs (default auto: cuda when a GPU is visible, else cpu)\n"
               "  --precision fp32|bf16|auto: the CPU evaluator's GEMM precision (default auto: bf16 where\n"
               "            the CPU has bf16 hardware); like --device a property of the run, which a\n"
               "            resumed search must repeat\n");
}

int cmd_search(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = NULL, *resume = NULL, *preset = "default";
    const char *opt_method = NULL, *opt_device = "auto";
    model_opts mo = {PRECISION_AUTO, 0};
    double ratio = NAN;
    long window = 0, sinks = 0, b1 = 0, b3 = 0, restarts = 0, buckets = 0, samples = 0, length = 0;
    int have_window = 0, have_sinks = 0, have_b1 = 0, have_b3 = 0, have_restarts = 0, have_buckets = 0,
        have_samples = 0, have_length = 0;
    unsigned long long seed = 1;
    int have_seed = 0, delta_marginal = -1, k_spec = -1, ranks = -1, indep = -1,
        calib_mix = -1;         /* -1: not given */
    const char *shaping = NULL; /* first search-shaping option given (rejected with --resume) */
    int force = 0, have_gran = 0;
    search_granularity gran = SEARCH_GRANULARITY_HEAD;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-') {
            if (model_path) {
                fprintf(stderr, "bosch search: unexpected argument '%s'\n", a);
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
            fprintf(stderr, "bosch search: option %s needs a value\n", a);
            return 2;
        }
        i++;
        int bad = 0;
        if (strcmp(a, "--out") && strcmp(a, "--resume") && strcmp(a, "--device") &&
            strcmp(a, "--precision") && !shaping)
            shaping = a;
        if (!strcmp(a, "--ratio"))
            bad = cli_parse_real("search", a, v, 0.0, 1.0, &ratio);
        else if (!strcmp(a, "--out"))
            bad = cli_need_nonempty("search", a, v, "a folder"), out_dir = v;
        else if (!strcmp(a, "--resume"))
            bad = cli_need_nonempty("search", a, v, "the folder of a saved search"), resume = v;
        else if (!strcmp(a, "--device"))
            opt_device = v;
        else if (!strcmp(a, "--precision"))
            bad = cli_parse_precision("search", v, &mo.precision);
        else if (!strcmp(a, "--preset"))
            preset = v;
        else if (!strcmp(a, "--method"))
            opt_method = v;
        else if (!strcmp(a, "--window"))
            bad = cli_parse_int_range("search", a, v, 1, MAX_TOKENS, &window), have_window = 1;
        else if (!strcmp(a, "--sinks"))
            bad = cli_parse_int_range("search", a, v, 0, MAX_TOKENS, &sinks), have_sinks = 1;
        else if (!strcmp(a, "--seed"))
            bad = cli_parse_seed("search", a, v, &seed), have_seed = 1;
        else if (!strcmp(a, "--budget1"))
            bad = cli_parse_int("search", a, v, 1, &b1), have_b1 = 1;
        else if (!strcmp(a, "--budget3"))
            bad = cli_parse_int("search", a, v, 1, &b3), have_b3 = 1;
        else if (!strcmp(a, "--restarts"))
            bad = cli_parse_int("search", a, v, 0, &restarts), have_restarts = 1;
        else if (!strcmp(a, "--buckets"))
            bad = cli_parse_int("search", a, v, 2, &buckets), have_buckets = 1;
        else if (!strcmp(a, "--delta")) {
            if (strcmp(v, "cumulative") && strcmp(v, "marginal")) {
                fprintf(stderr, "bosch search: --delta must be cumulative or marginal\n");
                return 2;
            }
            delta_marginal = !strcmp(v, "marginal");
        } else if (!strcmp(a, "--stage1-k")) {
            if (strcmp(v, "capped") && strcmp(v, "spec")) {
                fprintf(stderr, "bosch search: --stage1-k must be capped or spec\n");
                return 2;
            }
            k_spec = !strcmp(v, "spec");
        } else if (!strcmp(a, "--stage2")) {
            if (strcmp(v, "proportional") && strcmp(v, "ranks")) {
                fprintf(stderr, "bosch search: --stage2 must be proportional or ranks\n");
                return 2;
            }
            ranks = !strcmp(v, "ranks");
        } else if (!strcmp(a, "--stage1")) {
            if (strcmp(v, "cascade") && strcmp(v, "independent")) {
                fprintf(stderr, "bosch search: --stage1 must be cascade or independent\n");
                return 2;
            }
            indep = !strcmp(v, "independent");
        } else if (!strcmp(a, "--granularity")) {
            char gerr[128];
            if (search_granularity_parse(v, &gran, gerr, sizeof gerr)) {
                fprintf(stderr, "bosch search: --granularity: %s\n", gerr);
                return 2;
            }
            have_gran = 1;
        } else if (!strcmp(a, "--calib")) {
            if (cli_parse_choice("search", a, v, "single", "mix", &calib_mix)) return 2;
        } else if (!strcmp(a, "--samples"))
            bad = cli_parse_int("search", a, v, 1, &samples), have_samples = 1;
        else if (!strcmp(a, "--length")) {
            length = probe_parse_length(v), have_length = 1;
            if (length < PROBE_MIN_LENGTH) {
                fprintf(stderr,
                        "bosch search: %s: bad value '%s' (need a token count >= %d, e.g. 512 or 1k)\n", a, v,
                        PROBE_MIN_LENGTH);
                return 2;
            }
        } else {
            fprintf(stderr, "bosch search: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) return 2;
    }
    if (resume && shaping) {
        fprintf(
            stderr,
            "bosch search: %s cannot be combined with --resume (the search settings come from %s/state)\n",
            shaping, resume);
        return 2;
    }
    if (resume && force) {
        fprintf(stderr,
                "bosch search: --force cannot be combined with --resume (it continues the run in %s)\n",
                resume);
        return 2;
    }
    if (!resume && (!out_dir || isnan(ratio))) {
        fprintf(stderr, "bosch search: %s is required (or --resume DIR)\n",
                !out_dir && isnan(ratio) ? "--ratio R and --out DIR are"
                : !out_dir               ? "--out DIR"
                                         : "--ratio R");
        usage(stderr);
        return 2;
    }
    if (resume && !out_dir) out_dir = resume;
    if (!model_path) model_path = cli_default_model();
    backend_device device;
    {
        char derr[256];
        if (backend_parse_device(opt_device, &device, derr, sizeof derr)) {
            fprintf(stderr, "bosch search: %s\n", derr);
            return 2;
        }
    }
    char err[1024], state_path[4096];
    search_config cfg;
    if (resume) {
        snprintf(state_path, sizeof state_path, "%s/state", resume);
        if (search_load_config(state_path, &cfg, err, sizeof err)) {
            fprintf(stderr, "bosch search: %s\n", err);
            return 1;
        }
    } else {
        search_config_default(&cfg);
        search_config_paper_options(&cfg); /* budgets are totals until the variant splits them */
    }
    /* every output checked before any work: a folder, writable, not holding another run */
    if (cli_out_dir_ready("search", out_dir)) return 1;
    if (!resume) {
        char found[256];
        if (cli_out_dir_holds(out_dir, run_files, N_RUN_FILES, found, sizeof found) && !force) {
            fprintf(stderr,
                    "bosch search: %s already holds a run (%s); continue it with --resume %s, overwrite it "
                    "with --force, or choose another --out\n",
                    out_dir, found, out_dir);
            return 1;
        }
        for (int i = 0; force && i < N_SEARCH_FILES; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", out_dir, run_files[i]);
            if (remove(p) && errno != ENOENT) {
                fprintf(stderr, "bosch search: --force: cannot remove %s: %s\n", p, strerror(errno));
                return 1;
            }
        }
    }
    struct sigaction old_sa[3];
    cli_catch_stop_signals(old_sa); /* from here on a signal stops the search cleanly */

    model *m = NULL;
    if (cli_load_model("search", model_path, &mo, &m)) {
        cli_restore_stop_signals(old_sa);
        return 1;
    }
    if (!resume) {
        if (search_preset_apply(&cfg, preset, m->hp.n_ctx_train, err, sizeof err)) {
            fprintf(stderr, "bosch search: %s\n", err);
            model_free(m);
            cli_restore_stop_signals(old_sa);
            return 2;
        }
        cfg.ratio = ratio;
        if (have_window) cfg.window = (int)window;
        if (have_sinks) cfg.sinks = (int)sinks;
        if (have_seed) cfg.seed = seed;
        if (have_b1) cfg.stage1_budget_per_layer = b1;
        if (have_b3) cfg.stage3_budget_per_group = b3;
        if (have_restarts) cfg.restarts = (int)restarts;
        if (have_buckets) cfg.n_buckets = (int)buckets;
        if (have_samples) cfg.calib_samples = (int)samples;
        if (have_length) cfg.calib_tokens = (int)length;
        if (calib_mix >= 0) cfg.calib_mix = calib_mix;
        /* the method or BOSCH variant after the budgets: a refinement takes its share of them */
        if (search_variant_apply(&cfg, opt_method ? opt_method : "bosch", err, sizeof err)) {
            fprintf(stderr, "bosch search: %s\n", err);
            model_free(m);
            cli_restore_stop_signals(old_sa);
            return 2;
        }
        if (have_gran && gran == SEARCH_GRANULARITY_LAYER && cfg.method != SEARCH_METHOD_BOSCH) {
            fprintf(stderr, "bosch search: --granularity layer is for BOSCH, not the baseline '%s'\n",
                    search_method_name(cfg.method));
            model_free(m);
            cli_restore_stop_signals(old_sa);
            return 2;
        }
        if (have_gran) search_config_set_granularity(&cfg, gran);
        if (delta_marginal >= 0) cfg.delta_marginal = delta_marginal;
        if (k_spec >= 0) cfg.stage1_k_spec = k_spec;
        if (ranks >= 0) cfg.stage2_ranks = ranks;
        if (indep >= 0) cfg.stage1_independent = indep;
        int too_long = have_window && cfg.window >= cfg.calib_tokens ? 1
                       : have_sinks && cfg.sinks >= cfg.calib_tokens ? 2
                                                                     : 0;
        if (too_long) {
            fprintf(stderr,
                    "bosch search: %s %d: bad value (need fewer tokens than the calibration length, %d "
                    "(--length), or every SWA head sees the whole sequence)\n",
                    too_long == 1 ? "--window" : "--sinks", too_long == 1 ? cfg.window : cfg.sinks,
                    cfg.calib_tokens);
            model_free(m);
            cli_restore_stop_signals(old_sa);
            return 2;
        }
        if (search_config_check(&cfg, err, sizeof err)) {
            fprintf(stderr, "bosch search: %s\n", err);
            model_free(m);
            cli_restore_stop_signals(old_sa);
            return 2;
        }
        snprintf(state_path, sizeof state_path, "%s/state", out_dir);
    }

    calib_set *cs = NULL;
    backend *dev = NULL;
    search_objective obj = {0};
    search_state *st = NULL;
    cli_listener lis = {.tty = isatty(2), .t0 = base_now_s()};
    int rc = 1;
    fprintf(stderr, "bosch search: %s, %d x %d KV heads, calibration %d x %d tokens, window %d\n", m->name,
            m->hp.n_layer, m->hp.n_head_kv, cfg.calib_samples, cfg.calib_tokens, cfg.window);
    backend_options bo = cli_backend_options(device, 0);
    if (backend_create(&dev, &bo, m, err, sizeof err)) goto fail;
    {
        char desc[256];
        backend_describe(dev, 1, desc, sizeof desc);
        fprintf(stderr, "bosch search: evaluator on %s\n", desc);
    }
    if (search_calib_generate(&cs, m, &cfg, err, sizeof err) ||
        search_objective_calib_on(&obj, m, dev, cs, err, sizeof err))
        goto fail;
    if (resume) {
        if (search_load(&st, state_path, m->hp.n_layer, m->hp.n_head_kv, &obj, m, on_event, &lis, err,
                        sizeof err)) {
            if (strstr(err, "objective changed")) { /* the usual cause besides a new program version */
                size_t len = strlen(err);
                snprintf(err + len, sizeof err - len,
                         "; or another device or precision: this run evaluates on %s (--device) in %s "
                         "(--precision), was the state saved with others?",
                         backend_device_name(device),
                         device == BACKEND_CPU ? gemm_precision_name(m->precision) : "bf16");
            }
            goto fail;
        }
        fprintf(stderr, "resumed %s after %ld evaluations\n", state_path, search_n_evals(st));
    } else if (search_create(&st, &cfg, m->hp.n_layer, m->hp.n_head_kv, &obj, m, on_event, &lis, err,
                             sizeof err)) {
        goto fail;
    }

    /* the log's header (and, on a resume, the evaluations replayed: a line cut by a kill is gone),
     * written atomically before the first evaluation; then one line per evaluation */
    if (search_save(st, state_path, err, sizeof err)) goto fail;
    long logged = search_n_evals(st);
    int r = 0;
    while (!cli_stop) {
        r = search_step(st, err, sizeof err);
        char aerr[1024];
        if (search_append(st, state_path, &logged, aerr, sizeof aerr)) /* retried after the next one */
            fprintf(stderr, "%swarning: %s\n", lis.tty ? "\n" : "", aerr);
        if (r) break;
    }
    if (r < 0) goto fail;
    if (search_save(st, state_path, err, sizeof err) || write_trace(out_dir, &lis, err, sizeof err))
        goto fail;
    double elapsed = base_now_s() - lis.t0;
    if (r == 0) {
        fprintf(stderr,
                "\ninterrupted after %ld evaluations; state saved to %s; continue with "
                "'bosch search %s --resume %s'\n",
                search_n_evals(st), state_path, model_path, out_dir);
        printf("status=interrupted evals=%ld state=%s seconds=%.1f\n", search_n_evals(st), state_path,
               elapsed);
        goto done;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/mask.csv", out_dir);
    const attn_mask *mask = search_result_mask(st);
    if (csv_mask_save(path, mask, m->name, m->hp.n_head, err, sizeof err) ||
        write_layers(out_dir, st, m->hp.n_layer, err, sizeof err))
        goto fail;
    printf("status=done method=%s granularity=%s ratio=%.4f achieved_ratio=%.4f score=%.6f evals=%ld "
           "seconds=%.1f mask=%s\n",
           search_method_name(cfg.method), search_granularity_name(cfg.granularity), cfg.ratio,
           mask_ratio(mask), search_best_score(st), search_n_evals(st), elapsed, path);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "%sbosch search: %s\n", lis.tty ? "\n" : "", err);
    rc = 1;
done:
    cli_restore_stop_signals(old_sa);
    trace_rows_free(&lis.trace);
    search_free(st);
    search_objective_free(&obj); /* its evaluator uses dev: free it first */
    backend_free(dev);
    calib_set_free(cs);
    model_free(m);
    return rc;
}
