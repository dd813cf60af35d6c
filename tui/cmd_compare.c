/* cmd_compare.c — `bosch compare`: BOSCH against the baselines at several ratios, on held-out probes.
 *
 *   bosch compare [MODEL] [--ratios 0.25,0.5,0.75,0.875] [--methods bosch,rand,bme,intr,nll,...]
 *                 [--preset tiny|default|paper] [--seed N] [--window W] [--sinks S]
 *                 [--tasks niah_single,passkey,...] [--lengths 512,1k] [--heldout N] --out DIR
 *                 [--samples N] [--length T] [--budget1 B] [--budget3 B] [--delta cumulative|marginal]
 *                 [--device cpu|cuda|auto]
 * --samples/--length/--budget* override the preset's calibration size and search budgets;
 * --lengths defaults to the calibration length, --heldout (samples per task and length) to 8.
 * --device: where every evaluator (calibration objective and held-out scoring) runs; default cuda
 * when a GPU is visible (one upload of the weights shared by all of them).
 *
 * Every method gets its masks from the calibration split only (searches and rankings run through
 * search.h's calib objective; evaluations shared between searches are memoized by mask hash).
 * Each mask is then scored on the held-out split (datasets/probes.h, PROBE_SPLIT_HELDOUT) for
 * every task and length. Writes DIR/results.csv (method,ratio,task,length,accuracy,score,kv_bytes;
 * task/length "all" = mean over tasks and lengths), DIR/jaccard.csv (Jaccard distance between two
 * methods' SWA sets at one ratio), DIR/turnover.csv (SWA heads of one ratio no longer SWA at the
 * next), DIR/mask_<method>_<ratio>.csv; prints a markdown table of mean held-out accuracy.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "csvio.h"
#include "device.h"
#include "device_eval.h"
#include "kv_cache.h"
#include "model.h"
#include "probes.h"
#include "search.h"

#define MAX_RATIOS 16
#define MAX_TASKS 8
#define MAX_LENGTHS 8

/* ---- memoized objective: searches at several ratios share their evaluations ---------------- */

typedef struct {
    uint64_t hash;
    search_eval e;
    double *nll;
} memo_entry;

typedef struct {
    const search_objective *inner;
    memo_entry *tab;
    long cap, n;
    long hits, misses;
} memo;

static int memo_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                      size_t errlen) {
    memo *mo = ctx;
    if (2 * (mo->n + 1) > mo->cap) {
        long cap = mo->cap ? 2 * mo->cap : 1024;
        memo_entry *t = calloc((size_t)cap, sizeof *t);
        if (!t) {
            snprintf(err, errlen, "compare: out of memory");
            return -1;
        }
        for (long i = 0; i < mo->cap; i++)
            if (mo->tab[i].hash) {
                long j = (long)(mo->tab[i].hash & (uint64_t)(cap - 1));
                while (t[j].hash) j = (j + 1) & (cap - 1);
                t[j] = mo->tab[i];
            }
        free(mo->tab);
        mo->tab = t, mo->cap = cap;
    }
    uint64_t h = mask_hash(mask) | 1; /* 0 marks an empty slot */
    long j = (long)(h & (uint64_t)(mo->cap - 1));
    while (mo->tab[j].hash && mo->tab[j].hash != h) j = (j + 1) & (mo->cap - 1);
    if (mo->tab[j].hash == h) {
        mo->hits++;
        *out = mo->tab[j].e;
        out->seconds = 0;
        return 0;
    }
    if (mo->inner->score(mo->inner->ctx, mask, make_base, out, err, errlen)) return -1;
    mo->misses++;
    memo_entry *e = &mo->tab[j];
    e->hash = h;
    e->e = *out;
    if (out->sample_nll && out->n_samples > 0) {
        e->nll = malloc(sizeof(double) * (size_t)out->n_samples);
        if (e->nll) memcpy(e->nll, out->sample_nll, sizeof(double) * (size_t)out->n_samples);
    }
    e->e.sample_nll = e->nll;
    e->e.n_samples = e->nll ? out->n_samples : 0;
    mo->n++;
    return 0;
}

static void memo_free(memo *mo) {
    for (long i = 0; i < mo->cap; i++) free(mo->tab[i].nll);
    free(mo->tab);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(const search_event *ev, void *user) {
    const char *label = user;
    if (ev->replayed) return;
    if (ev->kind == SEARCH_EV_STAGE_END)
        fprintf(stderr, "  %s: stage %d done, %ld evaluations\n", label, ev->stage, ev->eval_index);
    else if (ev->kind == SEARCH_EV_DONE)
        fprintf(stderr, "  %s: %s\n", label, ev->message ? ev->message : "done");
}

static int run_search(const search_config *cfg, const model *m, const search_objective *obj,
                      const char *label, search_state **out, char *err, size_t errlen) {
    if (search_create(out, cfg, m->hp.n_layer, m->hp.n_head_kv, obj, m, progress, (void *)label, err, errlen))
        return -1;
    return search_run(*out, NULL, err, errlen) == 1 ? 0 : -1;
}

/* Jaccard distance 1 - |A n B| / |A u B| of two masks' SWA sets (0 when both are empty). */
static double jaccard_distance(const attn_mask *a, const attn_mask *b) {
    int inter = 0, uni = 0, n = a->n_layer * a->n_head_kv;
    for (int i = 0; i < n; i++) {
        int x = a->z[i] == ATTN_SWA, y = b->z[i] == ATTN_SWA;
        inter += x && y;
        uni += x || y;
    }
    return uni ? 1.0 - (double)inter / uni : 0.0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: bosch compare [MODEL] --out DIR [--ratios 0.25,0.5,0.75,0.875]\n"
               "         [--methods bosch,rand,bme,intr,nll,ablation,fisher] [--preset tiny|default|paper]\n"
               "         [--seed N] [--window W] [--sinks S] [--tasks niah_single,passkey]\n"
               "         [--lengths 512,1k] [--heldout N] [--delta cumulative|marginal]\n"
               "         [--stage1-k capped|spec]\n"
               "         [--samples N] [--length T] [--budget1 B] [--budget3 B]   (calibration/search size)\n"
               "         [--device cpu|cuda|auto]   (evaluator; default cuda when a GPU is visible)\n"
               "         [--precision fp32|bf16|auto]   (CPU GEMMs; default bf16 where the CPU has it)\n");
}

int cmd_compare(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = NULL, *preset = "tiny";
    const char *ratios_s = "0.25,0.5,0.75,0.875", *methods_s = "bosch,rand,bme,intr,nll,ablation,fisher";
    const char *tasks_s = "niah_single,passkey", *lengths_s = NULL, *device_s = "auto";
    long window = -1, sinks = -1, heldout = 8;
    int delta_marginal = 0, k_spec = 0;
    long samples = -1, length = -1, b1 = -1, b3 = -1; /* -1 (and window/sinks -1): not given */
    unsigned long long seed = 1;
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
        if (!v) {
            fprintf(stderr, "bosch compare: option %s needs a value\n", a);
            return 2;
        }
        i++;
        int bad = 0;
        if (!strcmp(a, "--out"))
            out_dir = v;
        else if (!strcmp(a, "--ratios"))
            ratios_s = v;
        else if (!strcmp(a, "--methods"))
            methods_s = v;
        else if (!strcmp(a, "--preset"))
            preset = v;
        else if (!strcmp(a, "--tasks"))
            tasks_s = v;
        else if (!strcmp(a, "--lengths"))
            lengths_s = v;
        else if (!strcmp(a, "--device"))
            device_s = v;
        else if (!strcmp(a, "--precision"))
            bad = cli_parse_precision("compare", v, &mopts.precision);
        else if (!strcmp(a, "--seed")) {
            if (cli_parse_seed("compare", a, v, &seed)) return 2;
        } else if (!strcmp(a, "--window"))
            bad = cli_parse_int("compare", a, v, 1, &window);
        else if (!strcmp(a, "--sinks"))
            bad = cli_parse_int("compare", a, v, 0, &sinks);
        else if (!strcmp(a, "--heldout"))
            bad = cli_parse_int("compare", a, v, 1, &heldout);
        else if (!strcmp(a, "--delta"))
            bad = cli_parse_choice("compare", a, v, "cumulative", "marginal", &delta_marginal);
        else if (!strcmp(a, "--stage1-k"))
            bad = cli_parse_choice("compare", a, v, "capped", "spec", &k_spec);
        else if (!strcmp(a, "--samples"))
            bad = cli_parse_int("compare", a, v, 1, &samples);
        else if (!strcmp(a, "--length")) {
            length = probe_parse_length(v);
            if (length < PROBE_MIN_LENGTH) {
                fprintf(stderr,
                        "bosch compare: %s: bad value '%s' (need a token count >= %d, e.g. 512 or 1k)\n", a,
                        v, PROBE_MIN_LENGTH);
                return 2;
            }
        } else if (!strcmp(a, "--budget1"))
            bad = cli_parse_int("compare", a, v, 1, &b1);
        else if (!strcmp(a, "--budget3"))
            bad = cli_parse_int("compare", a, v, 1, &b3);
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
    if (!model_path) model_path = cli_default_model();
    bosch_device device;
    {
        char derr[256];
        if (device_parse(device_s, &device, derr, sizeof derr)) {
            fprintf(stderr, "bosch compare: %s\n", derr);
            return 2;
        }
    }
    struct stat sb;
    if (stat(out_dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "bosch compare: %s: not a directory\n", out_dir);
        return 1;
    }

    char items[MAX_TASKS > SEARCH_METHOD_COUNT + 3 ? MAX_TASKS : SEARCH_METHOD_COUNT + 3][CLI_ITEM_CAP];
    char err[1024];
    double ratios[MAX_RATIOS];
    int n_ratios = cli_parse_real_list("compare", "--ratios", ratios_s, 0.0, 1.0, ratios, MAX_RATIOS);
    if (n_ratios < 0) return 2;
    /* variants: "bosch_marginal" = BOSCH with the marginal stage-2 drop (delta_marginal = 1),
     * "bosch_ranks" = BOSCH with the rank-ladder stage-2 rule (stage2_ranks = 1),
     * "bosch_indep" = BOSCH with independent (non-cascaded) stage-1 probes */
    search_method methods[SEARCH_METHOD_COUNT + 3];
    int marginal[SEARCH_METHOD_COUNT + 3] = {0}, rank_rule[SEARCH_METHOD_COUNT + 3] = {0},
                                       indep[SEARCH_METHOD_COUNT + 3] = {0};
    char names[SEARCH_METHOD_COUNT + 3][32];
    int n_methods = cli_split_list("compare", "--methods", methods_s, items, SEARCH_METHOD_COUNT + 3);
    if (n_methods < 0) return 2;
    for (int i = 0; i < n_methods; i++) {
        snprintf(names[i], sizeof names[i], "%s", items[i]);
        if (!strcmp(items[i], "bosch_marginal") || !strcmp(items[i], "bosch_ranks") ||
            !strcmp(items[i], "bosch_indep")) {
            methods[i] = SEARCH_METHOD_BOSCH;
            indep[i] = !strcmp(items[i], "bosch_indep");
            marginal[i] = !strcmp(items[i], "bosch_marginal");
            rank_rule[i] = !strcmp(items[i], "bosch_ranks");
            continue;
        }
        if (search_method_parse(items[i], &methods[i], err, sizeof err)) {
            cli_bad_list("compare", "--methods", methods_s, "%s", err);
            return 2;
        }
        snprintf(names[i], sizeof names[i], "%s", search_method_name(methods[i]));
    }
    probe_task tasks[MAX_TASKS];
    int n_tasks = cli_split_list("compare", "--tasks", tasks_s, items, MAX_TASKS);
    for (int i = 0; i < n_tasks; i++)
        if (probe_task_parse(items[i], &tasks[i])) {
            cli_bad_list("compare", "--tasks", tasks_s,
                         "item '%s' is not a task: niah_single, niah_multikey or passkey", items[i]);
            return 2;
        }
    if (n_tasks < 0) return 2;
    int lengths[MAX_LENGTHS], n_lengths = 1; /* none given: the calibration length, set below */
    if (lengths_s) {
        n_lengths = cli_parse_tokens_list("compare", "--lengths", lengths_s, PROBE_MIN_LENGTH, 1L << 24,
                                          lengths, MAX_LENGTHS);
        if (n_lengths < 0) return 2;
    }

    search_config cfg;
    search_config_default(&cfg);
    model *m = NULL;
    if (cli_load_model("compare", model_path, &mopts, &m)) return 1;
    if (search_preset_apply(&cfg, preset, m->hp.n_ctx_train, err, sizeof err)) {
        fprintf(stderr, "bosch compare: %s\n", err);
        model_free(m);
        return 2;
    }
    cfg.seed = seed;
    cfg.delta_marginal = delta_marginal;
    cfg.stage1_k_spec = k_spec;
    if (samples > 0) cfg.calib_samples = (int)samples;
    if (length > 0) cfg.calib_tokens = (int)length;
    if (b1 > 0) cfg.stage1_budget_per_layer = b1;
    if (b3 > 0) cfg.stage3_budget_per_group = b3;
    if (window > 0) cfg.window = (int)window;
    if (sinks >= 0) cfg.sinks = (int)sinks;
    if (!lengths_s) lengths[0] = cfg.calib_tokens;
    if (mkdir(out_dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "bosch compare: %s: cannot create: %s\n", out_dir, strerror(errno));
        model_free(m);
        return 1;
    }
    if (stat(out_dir, &sb) || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "bosch compare: %s: not a directory\n", out_dir);
        model_free(m);
        return 1;
    }

    const int L = m->hp.n_layer, H = m->hp.n_head_kv;
    int rc = 1;
    double t0 = now_s();
    calib_set *cs = NULL;
    device_eval *dev = NULL;
    search_objective calib = {0}, memo_obj = {0};
    memo mo = {0};
    attn_mask *masks = calloc((size_t)n_methods * n_ratios, sizeof *masks); /* [method][ratio] */
    probe_set *sets = calloc((size_t)n_tasks * n_lengths, sizeof *sets);
    if (!masks || !sets) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n_methods * n_ratios; i++)
        if (mask_init(&masks[i], L, H, cfg.window, cfg.sinks, ATTN_FULL)) goto fail;
    if (device_eval_create(&dev, device, m, err, sizeof err)) goto fail;
    {
        char desc[256];
        device_eval_describe(dev, desc, sizeof desc);
        fprintf(stderr, "compare: evaluators on %s\n", desc);
    }
    if (search_calib_generate(&cs, m, &cfg, err, sizeof err) ||
        search_objective_calib_on(&calib, m, device_eval_backend(dev), cs, err, sizeof err))
        goto fail;
    mo.inner = &calib;
    memo_obj = (search_objective){memo_score, NULL, &mo, calib.samples, calib.n_samples};

    /* 1. masks from the calibration split */
    for (int mi = 0; mi < n_methods; mi++) {
        search_method me = methods[mi];
        char label[64];
        snprintf(label, sizeof label, "%s", names[mi]);
        fprintf(stderr, "compare: %s (%.0fs)\n", label, now_s() - t0);
        if (me == SEARCH_METHOD_RAND || me == SEARCH_METHOD_BME || me == SEARCH_METHOD_INTR) {
            uint8_t *swa = malloc((size_t)L);
            for (int ri = 0; swa && ri < n_ratios; ri++) {
                search_layer_pattern(me, L, ratios[ri], cfg.seed, NULL, swa);
                for (int l = 0; l < L; l++)
                    for (int h = 0; h < H; h++)
                        mask_set(&masks[mi * n_ratios + ri], l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
            }
            free(swa);
            continue;
        }
        search_state *st = NULL;
        if (me != SEARCH_METHOD_BOSCH) { /* static ranking: computed once, cut at each ratio */
            search_config c = cfg;
            c.method = me;
            c.ratio = ratios[0];
            if (run_search(&c, m, &memo_obj, label, &st, err, sizeof err)) {
                search_free(st);
                goto fail;
            }
            int n_imp = 0;
            const double *imp = search_importance(st, &n_imp);
            uint8_t *swa = malloc((size_t)L);
            for (int ri = 0; imp && swa && ri < n_ratios; ri++) {
                attn_mask *mk = &masks[mi * n_ratios + ri];
                if (me == SEARCH_METHOD_NLL) {
                    search_layer_pattern(me, L, ratios[ri], cfg.seed, imp, swa);
                    for (int l = 0; l < L; l++)
                        for (int h = 0; h < H; h++) mask_set(mk, l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
                } else {
                    search_cut_heads(imp, ratios[ri], mk);
                }
            }
            free(swa);
            search_free(st);
            continue;
        }
        for (int ri = 0; ri < n_ratios; ri++) {
            search_config c = cfg;
            c.ratio = ratios[ri];
            if (marginal[mi]) c.delta_marginal = 1;
            if (rank_rule[mi]) c.stage2_ranks = 1;
            if (indep[mi]) c.stage1_independent = 1;
            snprintf(label, sizeof label, "%s@%.3g", names[mi], ratios[ri]);
            if (run_search(&c, m, &memo_obj, label, &st, err, sizeof err)) {
                search_free(st);
                goto fail;
            }
            memcpy(masks[mi * n_ratios + ri].z, search_result_mask(st)->z, (size_t)L * H);
            search_free(st);
        }
    }
    fprintf(stderr, "compare: masks done (%.0fs; %ld calibration evaluations, %ld shared)\n", now_s() - t0,
            mo.misses, mo.hits);

    /* 2. held-out scores */
    for (int ti = 0; ti < n_tasks; ti++)
        for (int li = 0; li < n_lengths; li++) {
            probe_config pc = probe_config_default();
            pc.task = tasks[ti];
            pc.length_tokens = lengths[li];
            pc.n_samples = (int)heldout;
            if (probe_set_generate(&sets[ti * n_lengths + li], m->tok, &pc, PROBE_SPLIT_HELDOUT,
                                   PROBE_DEFAULT_HELDOUT_SEED, err, sizeof err))
                goto fail;
        }
    char path[4096];
    snprintf(path, sizeof path, "%s/results.csv", out_dir);
    const char *hdr[] = {"method", "ratio", "task", "length", "accuracy", "score", "kv_bytes"};
    csv_out *w = csv_out_open(path, hdr, 7, err, sizeof err);
    if (!w) goto fail;
    double *mean_acc = calloc((size_t)n_methods * n_ratios, sizeof(double));
    double *mean_score = calloc((size_t)n_methods * n_ratios, sizeof(double));
    for (int si = 0; mean_acc && mean_score && si < n_tasks * n_lengths; si++) {
        probe_set *ps = &sets[si];
        eval_sample *es = calloc((size_t)ps->n, sizeof *es);
        evaluator *ev = NULL;
        if (!es) goto fail_w;
        probe_set_eval_samples(ps, es);
        if (evaluator_create_on(&ev, m, device_eval_backend(dev), es, ps->n, 0, err, sizeof err)) {
            free(es);
            goto fail_w;
        }
        char len_label[32];
        probe_length_label(ps->cfg.length_tokens, len_label, sizeof len_label);
        for (int k = 0; k < n_methods * n_ratios; k++) {
            eval_result r;
            if (evaluator_score(ev, &masks[k], &r, NULL, err, sizeof err)) {
                evaluator_free(ev);
                free(es);
                goto fail_w;
            }
            mean_acc[k] += r.accuracy / (n_tasks * n_lengths);
            mean_score[k] += r.score / (n_tasks * n_lengths);
            csv_out_rowf(w, "%s\x1f%.4f\x1f%s\x1f%s\x1f%.4f\x1f%.6f\x1f%llu", names[k / n_ratios],
                         ratios[k % n_ratios], probe_task_name(ps->cfg.task), len_label, r.accuracy, r.score,
                         (unsigned long long)kv_cache_bytes(&m->hp, &masks[k], ps->cfg.length_tokens, 4));
        }
        fprintf(stderr, "compare: held-out %s %s done (%.0fs)\n", probe_task_name(ps->cfg.task), len_label,
                now_s() - t0);
        evaluator_free(ev);
        free(es);
    }
    for (int k = 0; mean_acc && mean_score && k < n_methods * n_ratios; k++)
        csv_out_rowf(w,
                     "%s\x1f%.4f\x1f"
                     "all\x1f"
                     "all\x1f%.4f\x1f%.6f\x1f%llu",
                     names[k / n_ratios], ratios[k % n_ratios], mean_acc[k], mean_score[k],
                     (unsigned long long)kv_cache_bytes(&m->hp, &masks[k], lengths[0], 4));
    if (csv_out_commit(w, err, sizeof err)) {
        w = NULL;
        goto fail_w;
    }
    w = NULL;

    /* 3. mask files, Jaccard distances, turnover */
    for (int k = 0; k < n_methods * n_ratios; k++) {
        snprintf(path, sizeof path, "%s/mask_%s_%.3f.csv", out_dir, names[k / n_ratios],
                 ratios[k % n_ratios]);
        if (csv_mask_save(path, &masks[k], m->name, m->hp.n_head, err, sizeof err)) goto fail_w;
    }
    snprintf(path, sizeof path, "%s/jaccard.csv", out_dir);
    const char *jh[] = {"ratio", "method_a", "method_b", "jaccard_distance"};
    w = csv_out_open(path, jh, 4, err, sizeof err);
    if (!w) goto fail_w;
    for (int ri = 0; ri < n_ratios; ri++)
        for (int a = 0; a < n_methods; a++)
            for (int b = a + 1; b < n_methods; b++)
                csv_out_rowf(w, "%.4f\x1f%s\x1f%s\x1f%.4f", ratios[ri], names[a], names[b],
                             jaccard_distance(&masks[a * n_ratios + ri], &masks[b * n_ratios + ri]));
    if (csv_out_commit(w, err, sizeof err)) {
        w = NULL;
        goto fail_w;
    }
    snprintf(path, sizeof path, "%s/turnover.csv", out_dir);
    const char *th[] = {"method", "ratio_from", "ratio_to", "heads_leaving_swa", "fraction"};
    w = csv_out_open(path, th, 5, err, sizeof err);
    if (!w) goto fail_w;
    for (int a = 0; a < n_methods; a++)
        for (int ri = 0; ri + 1 < n_ratios; ri++) {
            const attn_mask *x = &masks[a * n_ratios + ri], *y = &masks[a * n_ratios + ri + 1];
            int leave = 0, nx = mask_count_swa(x);
            for (int i = 0; i < L * H; i++) leave += x->z[i] == ATTN_SWA && y->z[i] == ATTN_FULL;
            csv_out_rowf(w, "%s\x1f%.4f\x1f%.4f\x1f%d\x1f%.4f", names[a], ratios[ri], ratios[ri + 1], leave,
                         nx ? (double)leave / nx : 0.0);
        }
    if (csv_out_commit(w, err, sizeof err)) {
        w = NULL;
        goto fail_w;
    }
    w = NULL;

    /* 4. the table */
    printf("| method |");
    for (int ri = 0; ri < n_ratios; ri++) printf(" rho=%.3g |", ratios[ri]);
    printf("\n|---|");
    for (int ri = 0; ri < n_ratios; ri++) printf("---|");
    printf("\n");
    for (int a = 0; a < n_methods; a++) {
        printf("| %s |", names[a]);
        for (int ri = 0; ri < n_ratios; ri++)
            printf(" %.3f (%.3f) |", mean_acc[a * n_ratios + ri], mean_score[a * n_ratios + ri]);
        printf("\n");
    }
    printf("(held-out exact-match accuracy, mean answer probability in parentheses; %.0f s)\n", now_s() - t0);
    rc = 0;
fail_w:
    if (w) csv_out_abort(w);
    free(mean_acc);
    free(mean_score);
    if (rc) goto fail;
    goto done;
fail:
    fprintf(stderr, "bosch compare: %s\n", err);
    rc = 1;
done:
    if (masks)
        for (int i = 0; i < n_methods * n_ratios; i++) mask_free(&masks[i]);
    free(masks);
    if (sets)
        for (int i = 0; i < n_tasks * n_lengths; i++) probe_set_free(&sets[i]);
    free(sets);
    memo_free(&mo);
    search_objective_free(&calib); /* its evaluator uses dev: free it first */
    device_eval_free(dev);
    calib_set_free(cs);
    model_free(m);
    return rc;
}
