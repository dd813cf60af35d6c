/* cmd_search.c — `bosch search`: run a BOSCH search (or a baseline) headless.
 *
 *   bosch search [MODEL] --ratio R --out DIR [--preset tiny|demo|default|paper] [--method M]
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
 * search option may be given with it, except the pins --force-full, --force-swa, --pins, which must
 * be the state's: a different set is refused). --device (the evaluator's forward: CPU fp32 or GPU bf16;
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
#include "cli_dist.h"
#include "model.h"
#include "probes.h"
#include "search.h"
#include "search_options.h"
#include "search_rows.h"
#include "clock.h"

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
        if (ev->confirm) { /* a finalist on the confirmation split: its S there, no calibration score */
            fprintf(stderr, "%sconfirm: finalist %d of %d  S %.4f on the confirmation split  %.0fs\n",
                    c->tty ? "\r\033[K" : "", ev->unit + 1, ev->n_units, ev->raw_score, t);
            break;
        }
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
    case SEARCH_EV_GROUP_START: /* the plan's phase (a stage-3 group, or the refinement: group -1) */
        if (ev->group >= 0)
            fprintf(stderr, "%s%s: group %d of %d (%d layers)\n", c->tty ? "\r\033[K" : "",
                    ev->plan && ev->phase >= 0 ? ev->plan->phase[ev->phase].label : "stage 3",
                    ev->unit >= 0 ? ev->unit + 1 : 1, ev->n_units, ev->n_layers_in_group);
        else
            fprintf(stderr, "%s%s\n", c->tty ? "\r\033[K" : "",
                    ev->plan && ev->phase >= 0 ? ev->plan->phase[ev->phase].label : "refinement");
        break;
    case SEARCH_EV_GROUP_END:
        if (ev->plan && ev->phase >= 0 && ev->plan->phase[ev->phase].kind == SEARCH_PHASE_CONFIRM &&
            ev->message) {
            fprintf(stderr, "%s%s, calibration score %.4f  %.0fs\n", c->tty ? "\r\033[K" : "", ev->message,
                    ev->score, t);
            break;
        }
        fprintf(stderr, "%s%s%s done, score %.4f  %.0fs\n", c->tty ? "\r\033[K" : "",
                ev->plan && ev->phase >= 0 ? ev->plan->phase[ev->phase].label : "stage 3",
                ev->group >= 0 ? ": group" : "", ev->score, t);
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
    fprintf(f, "usage: bosch search [MODEL] --ratio R --out DIR [options]\n"
               "       bosch search [MODEL] --resume DIR [--device cpu|cuda|auto] [--precision P]\n");
    search_opts_usage(f, SOPT_ALL);
    fprintf(
        f,
        "  --out DIR        created if missing; must be writable; a folder that holds another run\n"
        "                   (state, trace.csv, mask.csv, layers.csv, cache.tsv, results.csv) is refused\n"
        "  --force          overwrite the run in DIR (its state, trace, mask and layers are removed)\n"
        "  --resume DIR     the search settings come from DIR/state (no other search option but the\n"
        "                   pins, which must be the state's: a search cannot change its pins); the\n"
        "                   device does not: it is a property of the run, taken from this command\n"
        "                   line, and must be the one that saved the state (the resumed scores are\n"
        "                   checked bit for bit; CPU fp32 and GPU bf16 scores differ in the last digits)\n"
        "  --device D       where the evaluator runs (default auto: cuda when a GPU is visible, else cpu)\n"
        "  --precision P    the CPU evaluator's GEMM precision, fp32, bf16 or auto (default: bf16 where\n"
        "                   the CPU has bf16 hardware); like --device a property of the run, which a\n"
        "                   resumed search must repeat\n"
        "  --kv T           the CPU evaluator's keys and values: bf16 (default) or fp32 (the reference);\n"
        "                   a property of the run too\n"
        "%s%s"
        "  under mpirun -np N (docs/distributed.md) rank 0 searches and writes every file, ranks 1..N-1\n"
        "  score the candidates it sends them\n",
        cli_dist_usage_batch, cli_dist_usage_timeout);
}

typedef struct {
    search_opts so;
    const char *out_dir, *resume;
    const char *shaping; /* the first search-shaping option given (refused with --resume) */
    int force;
    search_config cfg; /* --resume: the saved settings */
    char state_path[4096];
    cli_dist_opts dist; /* --batch, --worker-timeout: properties of the run (allowed with --resume) */
} search_cli;

static void search_init(void *opts) {
    search_cli *o = opts;
    cli_dist_opts_init(&o->dist);
}

static int search_option(cmd_env *e, void *opts, const char *a, const char *v) {
    search_cli *o = opts;
    if (!strcmp(a, "--force")) {
        o->force = 1;
        return CMD_OPT_FLAG;
    }
    int r = cli_dist_option("search", 1, &o->dist, a, v);
    if (r != CMD_OPT_UNKNOWN) return r;
    int id = search_opts_lookup(a, SOPT_ALL);
    if (id < 0 && strcmp(a, "--out") && strcmp(a, "--resume")) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (!strcmp(a, "--out")) return o->out_dir = v, cmd_value(cli_need_nonempty("search", a, v, "a folder"));
    if (!strcmp(a, "--resume"))
        return o->resume = v, cmd_value(cli_need_nonempty("search", a, v, "the folder of a saved search"));
    /* the pins may repeat a resumed search's (checked against its state), not change them */
    if (!o->shaping && !(SOPT_BIT(id) & SOPT_PIN_BITS)) o->shaping = a;
    char why[512];
    if (search_opts_set(&o->so, (search_opt_id)id, v, why, sizeof why)) {
        fprintf(stderr, "bosch search: %s: %s\n", a, why);
        return CMD_OPT_BAD;
    }
    return CMD_OPT_VALUE;
}

/* The combinations of --resume, --force, --ratio and --out. 0, or 2 (printed). */
static int search_check_args(search_cli *o) {
    const char *r = o->resume;
    if (r && o->shaping) {
        fprintf(
            stderr,
            "bosch search: %s cannot be combined with --resume (the search settings come from %s/state)\n",
            o->shaping, r);
        return 2;
    }
    if (r && o->force) {
        fprintf(stderr,
                "bosch search: --force cannot be combined with --resume (it continues the run in %s)\n", r);
        return 2;
    }
    int no_ratio = !(o->so.given & SOPT_BIT(SOPT_RATIO));
    if (!r && (!o->out_dir || no_ratio)) {
        fprintf(stderr, "bosch search: %s is required (or --resume DIR)\n",
                !o->out_dir && no_ratio ? "--ratio R and --out DIR are"
                : !o->out_dir           ? "--out DIR"
                                        : "--ratio R");
        usage(stderr);
        return 2;
    }
    if (r && !o->out_dir) o->out_dir = r;
    return 0;
}

/* Before the model loads: the arguments, a resumed run's settings, and the output folder (a
 * writable folder not holding another run, or emptied of its search files with --force). */
static int search_check(cmd_env *e, void *opts) {
    search_cli *o = opts;
    int rc = search_check_args(o);
    if (rc) return rc;
    char err[1024];
    snprintf(o->state_path, sizeof o->state_path, "%s/state", o->resume ? o->resume : o->out_dir);
    if (o->resume && search_load_config(o->state_path, &o->cfg, err, sizeof err)) {
        fprintf(stderr, "bosch search: %s\n", err);
        return 1;
    }
    if (o->resume && (o->so.given & SOPT_PIN_BITS)) { /* the same pins as the state's, or refused */
        static search_config given;                   /* too large for the stack of a command */
        given.n_pins = o->so.n_pins;
        memcpy(given.pins, o->so.pins, sizeof(search_pin) * (size_t)o->so.n_pins);
        if (!search_pins_equal(&given, &o->cfg)) {
            char f0[4096], s0[4096], f1[4096], s1[4096];
            fprintf(
                stderr,
                "bosch search: --resume %s: the search was made with pinned heads full [%s] swa [%s]; the "
                "pins given, full [%s] swa [%s], differ (a search cannot change its pins: start a new one "
                "with --out)\n",
                o->resume, search_pins_format(&o->cfg, 0, f0, sizeof f0),
                search_pins_format(&o->cfg, 1, s0, sizeof s0), search_pins_format(&given, 0, f1, sizeof f1),
                search_pins_format(&given, 1, s1, sizeof s1));
            return 1;
        }
    }
    if (cmd_out_dir(e, o->out_dir, 1)) return 1;
    if (o->resume) return 0;
    char found[256];
    if (cli_out_dir_holds(o->out_dir, run_files, N_RUN_FILES, found, sizeof found) && !o->force) {
        fprintf(stderr,
                "bosch search: %s already holds a run (%s); continue it with --resume %s, overwrite it "
                "with --force, or choose another --out\n",
                o->out_dir, found, o->out_dir);
        return 1;
    }
    for (int i = 0; o->force && i < N_SEARCH_FILES; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", o->out_dir, run_files[i]);
        if (remove(p) && errno != ENOENT) {
            fprintf(stderr, "bosch search: --force: cannot remove %s: %s\n", p, strerror(errno));
            return 1;
        }
    }
    return 0;
}

/* What a run holds while it searches. */
typedef struct {
    calib_set *cs;
    search_objective obj;  /* this rank's objective */
    search_objective dobj; /* under mpirun: the pool over obj and the workers (cli_dist.h) */
    search_state *st;
    cli_listener lis;
} search_run_state;

/* Under mpirun: start the workers with the search's settings; the search then evaluates through
 * r->dobj. *use is the objective the search uses. 0 or -1. */
static int search_dist_start(const cmd_env *e, const search_cli *o, search_run_state *r,
                             const search_objective **use, char *err, size_t errlen) {
    *use = &r->obj;
    if (!cli_dist_active()) return 0;
    if (cli_dist_start(e->m, e->be, &r->obj, &o->cfg, sizeof o->cfg, o->dist.worker_timeout, &r->dobj, err,
                       errlen))
        return -1;
    *use = &r->dobj;
    return 0;
}

/* The calibration split, the objective and the search (created, or loaded from the state). 0 or -1. */
static int search_prepare(cmd_env *e, search_cli *o, search_run_state *r, char *err, size_t errlen) {
    const model *m = e->m;
    const search_config *cfg = &o->cfg;
    if (search_calib_generate(&r->cs, m, cfg, err, errlen) ||
        search_objective_calib_on(&r->obj, m, e->be, r->cs, err, errlen))
        return -1;
    const search_objective *obj;
    if (search_dist_start(e, o, r, &obj, err, errlen)) return -1;
    const int batch = cli_dist_batch(&o->dist);
    if (!o->resume) {
        if (search_create(&r->st, cfg, m->hp.n_layer, m->hp.n_head_kv, obj, m, on_event, &r->lis, err,
                          errlen))
            return -1;
        search_set_confirm_env(r->st, e->be, NULL); /* the confirmation on --device too */
        return search_set_batch(r->st, batch) ? snprintf(err, errlen, "out of memory"), -1 : 0;
    }
    if (search_load(&r->st, o->state_path, m->hp.n_layer, m->hp.n_head_kv, obj, m, on_event, &r->lis, err,
                    errlen)) {
        if (strstr(err, "objective changed")) { /* the usual cause besides a new program version */
            size_t len = strlen(err);
            snprintf(err + len, errlen - len,
                     "; or another device or precision: this run evaluates on %s (--device) in %s "
                     "(--precision) with %s keys and values (--kv), was the state saved with others?",
                     backend_device_name(e->device),
                     e->device == BACKEND_CPU ? gemm_precision_name(m->precision) : "bf16",
                     e->device == BACKEND_CPU ? attn_kv_type_name(m->kv_type) : "fp32");
        }
        return -1;
    }
    fprintf(stderr, "resumed %s after %ld evaluations\n", o->state_path, search_n_evals(r->st));
    search_set_confirm_env(r->st, e->be, NULL);
    return search_set_batch(r->st, batch) ? snprintf(err, errlen, "out of memory"), -1 : 0;
}

/* Step until done, an error or a stop signal, appending each evaluation to the state's log (its
 * header, and on a resume the replayed evaluations, written atomically first). A failed append (a
 * full disk, EIO) stops the search at once: computing on would lose every evaluation. 1 done, 0
 * stopped, -1 error. */
static int search_loop(search_run_state *r, const char *state_path, const char *out_dir, char *err,
                       size_t errlen) {
    if (search_save(r->st, state_path, err, errlen)) return -1;
    long logged = search_n_evals(r->st);
    int s = 0;
    while (!cli_stop) {
        s = search_step(r->st, err, errlen);
        char aerr[1024];
        if (s >= 0 && search_append(r->st, state_path, &logged, aerr, sizeof aerr)) {
            snprintf(err, errlen,
                     "%.250s; the search stopped: %.250s holds the first %ld evaluations, each line whole; "
                     "make room and continue with --resume %.250s",
                     aerr, state_path, logged, out_dir);
            return -1;
        }
        if (s) break;
    }
    if (s < 0) return -1;
    if (search_save(r->st, state_path, err, errlen) || write_trace(out_dir, &r->lis, err, errlen)) return -1;
    return s;
}

/* The files and the summary line of a finished search (s 1) or a stopped one (s 0). 0 done, 1
 * stopped, -1 error. */
static int search_finish(cmd_env *e, const search_cli *o, search_run_state *r, int s, char *err,
                         size_t errlen) {
    const model *m = e->m;
    double elapsed = base_now_s() - r->lis.t0;
    if (s == 0) {
        fprintf(stderr,
                "\ninterrupted after %ld evaluations; state saved to %s; continue with "
                "'bosch search %s --resume %s'\n",
                search_n_evals(r->st), o->state_path, e->model_path, o->out_dir);
        printf("status=interrupted evals=%ld state=%s seconds=%.1f\n", search_n_evals(r->st), o->state_path,
               elapsed);
        return 1; /* exit status 1: the search did not finish */
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/mask.csv", o->out_dir);
    const attn_mask *mask = search_result_mask(r->st);
    if (csv_mask_save(path, mask, m->name, m->hp.n_head, err, errlen) ||
        write_layers(o->out_dir, r->st, m->hp.n_layer, err, errlen))
        return -1;
    search_race_stats rs;
    search_get_race_stats(r->st, &rs);
    if (rs.raced > 0)
        fprintf(stderr,
                "racing %s: %ld swap candidates, %.2f of %d calibration samples each on average, %ld dropped "
                "(%ld could not win, %ld of %ld scored whole were wrong); moves taken %ld, refused as within "
                "the noise %ld\n",
                o->cfg.race == 0 ? "off"
                : rs.active      ? "on"
                                 : "on (decided on whole evaluations)",
                rs.raced, (double)rs.samples / rs.raced, rs.n_calib, rs.dropped, rs.dropped_sure, rs.wrong,
                rs.checked, rs.accepted, rs.noise);
    printf("status=done method=%s granularity=%s ratio=%.4f achieved_ratio=%.4f score=%.6f evals=%ld "
           "seconds=%.1f mask=%s\n",
           search_method_name(o->cfg.method), search_granularity_name(o->cfg.granularity), o->cfg.ratio,
           mask_ratio(mask), search_best_score(r->st), search_n_evals(r->st), elapsed, path);
    return 0;
}

static int search_cmd_run(cmd_env *e, void *opts) {
    search_cli *o = opts;
    const model *m = e->m;
    char err[1024];
    if (!o->resume && search_opts_config(&o->so, m->hp.n_ctx_train, &o->cfg, err, sizeof err)) {
        fprintf(stderr, "bosch search: %s\n", err);
        return 2;
    }
    const search_config *cfg = &o->cfg;
    fprintf(stderr, "bosch search: %s, %d x %d KV heads, calibration %d x %d tokens, window %d\n", m->name,
            m->hp.n_layer, m->hp.n_head_kv, cfg->calib_samples, cfg->calib_tokens, cfg->window);
    char desc[256];
    backend_describe(e->be, 1, desc, sizeof desc);
    fprintf(stderr, "bosch search: evaluator on %s\n", desc);
    search_run_state r = {.lis = {.tty = isatty(2), .t0 = base_now_s()}};
    int s = search_prepare(e, o, &r, err, sizeof err);
    if (s == 0) s = search_loop(&r, o->state_path, o->out_dir, err, sizeof err);
    if (s >= 0) s = search_finish(e, o, &r, s, err, sizeof err);
    if (s < 0) fprintf(stderr, "%sbosch search: %s\n", r.lis.tty ? "\n" : "", err);
    if (s < 0 && cli_dist_failed())
        fprintf(stderr,
                "bosch search: %s holds every finished evaluation; continue with 'mpirun -np N bosch search "
                "%s --resume %s' (any N)\n",
                o->state_path, e->model_path, o->out_dir);
    char dist[256];
    cli_dist_describe(dist, sizeof dist);
    if (r.st && o->dist.batch + cli_dist_active() > 0)
        fprintf(stderr, "bosch search: batch %d%s%s; %ld look-ahead answers unused\n",
                cli_dist_batch(&o->dist), dist[0] ? ", " : "", dist, search_batch_wasted(r.st));
    cli_dist_stop();
    trace_rows_free(&r.lis.trace);
    search_free(r.st);
    search_objective_free(&r.obj); /* its evaluator uses the backend: freed first */
    calib_set_free(r.cs);
    return s < 0 ? 1 : s;
}

/* A worker under mpirun (cli_dist.h): the settings from rank 0, the same calibration split and
 * objective, then serve rank 0's masks. Writes no file. */
static int search_worker(cmd_env *e, void *opts) {
    (void)opts;
    return cli_dist_worker_calib("search", e->m, e->be);
}

const command cmd_search = {
    .name = "search",
    .help = "run a BOSCH search (or a baseline) headless",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DEVICE | CMD_LOAD | CMD_BACKEND | CMD_STOP,
    .opts_size = sizeof(search_cli),
    .option = search_option,
    .check = search_check,
    .run = search_cmd_run,
    .worker = search_worker,
    .usage = usage,
    .init = search_init,
};
