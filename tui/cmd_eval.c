/* cmd_eval.c — `bosch eval [MODEL] [OPTIONS]`: exact-match accuracy and mean answer-token
 * probability of one head mask on probe tasks (held-out split by default), per task and length.
 * Table on stdout, progress bar on stderr, results CSV (DESIGN.md §8:
 * method,ratio,task,length,accuracy,score,kv_bytes) written through csvio.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "csvio.h"
#include "device.h"
#include "device_eval.h"
#include "eval.h"
#include "kv_cache.h"
#include "mask.h"
#include "model.h"
#include "probes.h"

#define MAX_ITEMS 16

typedef struct {
    const char *model_path, *mask_path, *out_path, *method, *device;
    probe_task tasks[MAX_ITEMS];
    int n_tasks;
    int lengths[MAX_ITEMS];
    int n_lengths;
    haystack_kind haystack;
    int samples, window, sinks, all_swa, keys, chat, quiet;
    probe_split split;
    uint64_t seed;
    int seed_set;
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
            "  --split NAME       heldout (default) or calibration\n"
            "  --seed N           probe seed (default: %u held-out, %u calibration)\n"
            "  --no-chat          plain prompts instead of the chat template\n"
            "  --method NAME      method column of the CSV (default: full, all_swa or the mask file)\n"
            "  --out FILE         results CSV (default: eval_results.csv; '-' for none)\n"
            "  --device D         cpu, cuda or auto: where the evaluator runs (default: cuda when a GPU\n"
            "                     is visible; the GPU computes in bf16, so scores differ from the CPU's\n"
            "                     in the last digits)\n"
            "  --quiet            no progress bar\n",
            probe_task_name(PROBE_DEFAULT_TASK), haystack_kind_name(PROBE_DEFAULT_HAYSTACK),
            PROBE_DEFAULT_LENGTH, PROBE_DEFAULT_SAMPLES, PROBE_DEFAULT_WINDOW, PROBE_DEFAULT_SINKS,
            PROBE_DEFAULT_HELDOUT_SEED, PROBE_DEFAULT_CALIB_SEED);
}

static int parse_int(const char *opt, const char *s, int lo, int *out) {
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || v < lo || v > 1 << 24) {
        fprintf(stderr, "bosch eval: %s needs an integer >= %d (got '%s')\n", opt, lo, s ? s : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Split a comma list; each item goes through `one`. */
static int parse_list(const char *opt, const char *s, int *n, int (*one)(const char *, int *), int *vals) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    *n = 0;
    for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_ITEMS || one(it, &vals[*n]) != 0) {
            fprintf(stderr, "bosch eval: %s: bad item '%s'\n", opt, it);
            return -1;
        }
        (*n)++;
    }
    if (*n == 0) fprintf(stderr, "bosch eval: %s needs a list\n", opt);
    return *n ? 0 : -1;
}

static int one_task(const char *s, int *v) {
    probe_task t;
    if (probe_task_parse(s, &t)) return -1;
    *v = (int)t;
    return 0;
}
static int one_length(const char *s, int *v) {
    *v = probe_parse_length(s);
    return *v >= PROBE_MIN_LENGTH ? 0 : -1;
}

static int parse_opts(int argc, char **argv, eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->model_path = cli_default_model();
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
    o->device = "auto";
    int task_vals[MAX_ITEMS];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            eval_usage(stdout);
            return 1;
        } else if (!strcmp(a, "--mask"))
            o->mask_path = v;
        else if (!strcmp(a, "--out"))
            o->out_path = v;
        else if (!strcmp(a, "--method"))
            o->method = v;
        else if (!strcmp(a, "--device"))
            o->device = v;
        else if (!strcmp(a, "--samples"))
            rc = parse_int(a, v, 1, &o->samples);
        else if (!strcmp(a, "--window"))
            rc = parse_int(a, v, 1, &o->window);
        else if (!strcmp(a, "--sinks"))
            rc = parse_int(a, v, 0, &o->sinks);
        else if (!strcmp(a, "--keys"))
            rc = parse_int(a, v, 2, &o->keys);
        else if (!strcmp(a, "--lengths"))
            rc = parse_list(a, v, &o->n_lengths, one_length, o->lengths);
        else if (!strcmp(a, "--tasks")) {
            rc = parse_list(a, v, &o->n_tasks, one_task, task_vals);
            for (int k = 0; !rc && k < o->n_tasks; k++) o->tasks[k] = (probe_task)task_vals[k];
        } else if (!strcmp(a, "--haystack")) {
            if (haystack_kind_parse(v, &o->haystack)) {
                fprintf(stderr, "bosch eval: --haystack is noise or text (got '%s')\n", v ? v : "");
                rc = -1;
            }
        } else if (!strcmp(a, "--split")) {
            if (v && !strcmp(v, "heldout"))
                o->split = PROBE_SPLIT_HELDOUT;
            else if (v && (!strcmp(v, "calibration") || !strcmp(v, "calib")))
                o->split = PROBE_SPLIT_CALIBRATION;
            else {
                fprintf(stderr, "bosch eval: --split is heldout or calibration (got '%s')\n", v ? v : "");
                rc = -1;
            }
        } else if (!strcmp(a, "--seed")) {
            int s = 0;
            rc = parse_int(a, v, 0, &s);
            o->seed = (uint64_t)s;
            o->seed_set = 1;
        } else {
            used = 0;
            if (!strcmp(a, "--all-swa"))
                o->all_swa = 1;
            else if (!strcmp(a, "--no-chat"))
                o->chat = 0;
            else if (!strcmp(a, "--quiet"))
                o->quiet = 1;
            else if (a[0] != '-' && i == 1)
                o->model_path = a;
            else {
                fprintf(stderr, "bosch eval: unknown argument '%s'\n", a);
                rc = -1;
            }
        }
        if (!rc && used && !v) {
            fprintf(stderr, "bosch eval: %s needs a value\n", a);
            rc = -1;
        }
        if (rc) {
            eval_usage(stderr);
            return -1;
        }
        i += used;
    }
    if (o->mask_path && o->all_swa) {
        fprintf(stderr, "bosch eval: --mask and --all-swa exclude each other\n");
        return -1;
    }
    if (!o->seed_set)
        o->seed = o->split == PROBE_SPLIT_HELDOUT ? PROBE_DEFAULT_HELDOUT_SEED : PROBE_DEFAULT_CALIB_SEED;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One line on stderr: [#####.....] done/total label, elapsed and ETA. */
static void progress(int quiet, int done, int total, const char *label, double t0) {
    if (quiet) return;
    int width = 30, fill = total ? done * width / total : width;
    double el = now_s() - t0, eta = done ? el * (total - done) / done : 0.0;
    fprintf(stderr, "\r[");
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %-22s %6.1fs eta %6.1fs", done, total, label, el, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* The mask to score: a file, all SWA or all full; window and sinks from flags, the file or defaults. */
static int eval_make_mask(const eval_opts *o, const model *m, attn_mask *mask, char *err, size_t errlen) {
    if (o->mask_path) {
        if (csv_mask_load(o->mask_path, mask, &m->hp, err, errlen)) return -1;
    } else if (mask_init(mask, m->hp.n_layer, m->hp.n_head_kv, PROBE_DEFAULT_WINDOW, PROBE_DEFAULT_SINKS,
                         o->all_swa ? ATTN_SWA : ATTN_FULL)) {
        snprintf(err, errlen, "cannot allocate a %dx%d mask", m->hp.n_layer, m->hp.n_head_kv);
        return -1;
    }
    if (o->window > 0) mask->window = o->window;
    if (o->sinks >= 0) mask->sinks = o->sinks;
    return 0;
}

int cmd_eval(int argc, char **argv) {
    eval_opts o;
    int prc = parse_opts(argc, argv, &o);
    if (prc) return prc > 0 ? 0 : 2;

    char err[512];
    bosch_device device;
    if (o.device && device_parse(o.device, &device, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        return 2;
    }
    model *m = NULL;
    if (model_load(&m, o.model_path, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        return 1;
    }
    device_eval *dev = NULL;
    if (device_eval_create(&dev, device, m, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        model_free(m);
        return 1;
    }
    attn_mask mask = {0};
    if (eval_make_mask(&o, m, &mask, err, sizeof err)) {
        fprintf(stderr, "bosch eval: %s\n", err);
        device_eval_free(dev);
        model_free(m);
        return 1;
    }
    const char *method = o.method ? o.method : o.mask_path ? o.mask_path : o.all_swa ? "all_swa" : "full";
    double ratio = mask_ratio(&mask);

    csv_out *csv = NULL;
    if (strcmp(o.out_path, "-")) {
        static const char *const header[] = {"method",   "ratio", "task",    "length",
                                             "accuracy", "score", "kv_bytes"};
        csv = csv_out_open(o.out_path, header, 7, err, sizeof err);
        if (!csv) {
            fprintf(stderr, "bosch eval: %s\n", err);
            mask_free(&mask);
            device_eval_free(dev);
            model_free(m);
            return 1;
        }
    }

    printf("# model %s  method %s  ratio %.4f  window %d  sinks %d  split %s  seed %llu  haystack %s  device "
           "%s\n",
           m->name, method, ratio, mask.window, mask.sinks, probe_split_name(o.split),
           (unsigned long long)o.seed, haystack_kind_name(o.haystack), device_name(device));
    printf("%-14s %7s %8s %10s %8s %14s %9s\n", "task", "length", "accuracy", "score", "samples", "kv_bytes",
           "seconds");
    fflush(stdout);

    int rc = 0, total = o.n_tasks * o.n_lengths * o.samples, done = 0;
    double t0 = now_s();
    for (int ti = 0; ti < o.n_tasks && !rc; ti++)
        for (int li = 0; li < o.n_lengths && !rc; li++) {
            probe_config cfg = probe_config_default();
            cfg.task = o.tasks[ti];
            cfg.haystack = o.haystack;
            cfg.length_tokens = o.lengths[li];
            cfg.n_samples = o.samples;
            cfg.n_keys = o.keys;
            cfg.use_chat = o.chat;
            probe_set set;
            char label[64], len_label[16];
            probe_length_label(cfg.length_tokens, len_label, sizeof len_label);
            snprintf(label, sizeof label, "%s@%s", probe_task_name(cfg.task), len_label);
            if (probe_set_generate(&set, m->tok, &cfg, o.split, o.seed, err, sizeof err)) {
                fprintf(stderr, "\nbosch eval: %s\n", err);
                rc = 1;
                break;
            }
            eval_sample *es = malloc((size_t)set.n * sizeof *es);
            double acc = 0, score = 0, t_group = now_s();
            if (!es)
                rc = 1;
            else
                probe_set_eval_samples(&set, es);
            /* One evaluator per sample keeps memory at one sequence and lets the bar move. */
            for (int i = 0; i < set.n && !rc; i++) {
                evaluator *ev = NULL;
                eval_result r;
                progress(o.quiet, done, total, label, t0);
                if (evaluator_create_on(&ev, m, device_eval_backend(dev), &es[i], 1, 0, err, sizeof err) ||
                    evaluator_score(ev, &mask, &r, NULL, err, sizeof err)) {
                    fprintf(stderr, "\nbosch eval: %s: %s\n", label, err);
                    rc = 1;
                }
                evaluator_free(ev);
                if (!rc) {
                    acc += r.accuracy;
                    score += r.score;
                    done++;
                }
            }
            progress(o.quiet, done, total, label, t0);
            if (!rc) {
                acc /= set.n;
                score /= set.n;
                uint64_t kvb = kv_cache_bytes(&m->hp, &mask, cfg.length_tokens, 4);
                printf("%-14s %7s %7.1f%% %10.4f %8d %14llu %9.1f\n", probe_task_name(cfg.task), len_label,
                       100.0 * acc, score, set.n, (unsigned long long)kvb, now_s() - t_group);
                fflush(stdout);
                if (csv && csv_out_rowf(csv, "%s\x1f%.6f\x1f%s\x1f%d\x1f%.6f\x1f%.6f\x1f%llu", method, ratio,
                                        probe_task_name(cfg.task), cfg.length_tokens, acc, score,
                                        (unsigned long long)kvb)) {
                    fprintf(stderr, "bosch eval: cannot write %s\n", o.out_path);
                    rc = 1;
                }
            }
            free(es);
            probe_set_free(&set);
        }
    if (csv) {
        if (rc)
            csv_out_abort(csv);
        else if (csv_out_commit(csv, err, sizeof err)) {
            fprintf(stderr, "bosch eval: %s\n", err);
            rc = 1;
        } else if (!o.quiet)
            fprintf(stderr, "results: %s\n", o.out_path);
    }
    mask_free(&mask);
    device_eval_free(dev);
    model_free(m);
    return rc;
}
