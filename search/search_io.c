/* search_io.c — save a search (config + evaluation log) and resume it by deterministic replay.
 *
 * File format (text, one item per line, UTF-8):
 *   bosch-search-state 1
 *   method bosch | ratio R | preset P | window W | sinks S | seed N | stage1_budget B1 |
 *   stage3_budget B3 | restarts K | n_buckets NB | delta_marginal 0/1 | stage1_k_spec 0/1 | stage2_ranks 0/1
 *   | stage1_independent 0/1 | stage1_singles 0/1 | stage3_scope 0/1 | refine_budget N
 * | calib_samples CS | calib_tokens CT | n_layer L | n_head_kv H | n_evals E   (one "key value" pair per
 * line, written in this order; read in any order, n_evals last; see read_header) eval HASH SCORE ACCURACY NLL
 * SECONDS N [NLL_1 .. NLL_N]    (E lines; doubles as %.17g, exact)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

int search_save(const search_state *st, const char *path, char *err, size_t errlen) {
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    const search_config *c = &st->cfg;
    fprintf(f,
            "bosch-search-state 1\nmethod %s\nratio %.17g\npreset %s\nwindow %d\nsinks %d\n"
            "seed %" PRIu64 "\nstage1_budget %ld\nstage3_budget %ld\nrestarts %d\nn_buckets %d\n"
            "delta_marginal %d\nstage1_k_spec %d\nstage2_ranks %d\nstage1_independent %d\n"
            "stage1_singles %d\nstage3_scope %d\nrefine_budget %ld\n"
            "calib_samples %d\ncalib_tokens %d\ncalib_mix %d\nn_layer %d\nn_head_kv %d\nn_evals %ld\n",
            search_method_name(c->method), c->ratio, c->preset[0] ? c->preset : "-", c->window, c->sinks,
            c->seed, c->stage1_budget_per_layer, c->stage3_budget_per_group, c->restarts, c->n_buckets,
            c->delta_marginal, c->stage1_k_spec, c->stage2_ranks, c->stage1_independent, c->stage1_singles,
            c->stage3_scope, c->refine_budget, c->calib_samples, c->calib_tokens, c->calib_mix, st->L, st->H,
            st->n_log);
    for (long i = 0; i < st->n_log; i++) {
        const search_log_entry *e = &st->log[i];
        fprintf(f, "eval %016" PRIx64 " %.17g %.17g %.17g %.17g %d", e->hash, e->score, e->accuracy, e->nll,
                e->seconds, e->n_samples);
        for (int s = 0; s < e->n_samples; s++) fprintf(f, " %.17g", e->sample_nll[s]);
        fputc('\n', f);
    }
    int bad = ferror(f);
    bad |= fflush(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

/* Parse the header: "key value" lines up to and including n_evals, in any order. Required keys:
 * method ratio window sinks seed stage1_budget stage3_budget restarts n_buckets n_layer n_head_kv
 * n_evals; optional (defaults): preset (-), delta_marginal (0), stage1_k_spec (0), stage2_ranks (0),
 * stage1_independent (0), stage1_singles (0), stage3_scope (0), refine_budget (0), calib_mix (0),
 * calib_samples / calib_tokens (the
 * default preset's). Leaves f after the n_evals line. 0 or -1 naming the line. */
static int read_header(FILE *f, const char *path, int *line, search_config *c, int *L, int *H, long *n_evals,
                       char *err, size_t errlen) {
    static const char *const required[] = {"method",    "ratio",         "window",        "sinks",
                                           "seed",      "stage1_budget", "stage3_budget", "restarts",
                                           "n_buckets", "n_layer",       "n_head_kv"};
    enum { N_REQ = sizeof required / sizeof required[0] };
    int seen[N_REQ] = {0};
    char buf[512], k[64], v[256];
    search_config_default(c);
    /* a key a file does not have means the behaviour before it existed: the paper's options */
    search_config_paper_options(c);
    c->calib_mix = 0;
    *line = 1;
    if (!fgets(buf, sizeof buf, f) || strncmp(buf, "bosch-search-state 1", 20)) {
        snprintf(err, errlen, "%s: line 1: not a search state file (version 1)", path);
        return -1;
    }
    for (;;) {
        (*line)++;
        if (!fgets(buf, sizeof buf, f)) {
            snprintf(err, errlen, "%s: line %d: missing 'n_evals'", path, *line);
            return -1;
        }
        if (sscanf(buf, "%63s %255s", k, v) != 2) {
            snprintf(err, errlen, "%s: line %d: expected 'KEY VALUE'", path, *line);
            return -1;
        }
        for (int i = 0; i < N_REQ; i++)
            if (!strcmp(k, required[i])) seen[i] = 1;
        if (!strcmp(k, "method")) {
            if (search_method_parse(v, &c->method, err, errlen)) return -1;
        } else if (!strcmp(k, "ratio"))
            c->ratio = strtod(v, NULL);
        else if (!strcmp(k, "preset"))
            snprintf(c->preset, sizeof c->preset, "%.15s", v);
        else if (!strcmp(k, "window"))
            c->window = atoi(v);
        else if (!strcmp(k, "sinks"))
            c->sinks = atoi(v);
        else if (!strcmp(k, "seed"))
            c->seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "stage1_budget"))
            c->stage1_budget_per_layer = atol(v);
        else if (!strcmp(k, "stage3_budget"))
            c->stage3_budget_per_group = atol(v);
        else if (!strcmp(k, "restarts"))
            c->restarts = atoi(v);
        else if (!strcmp(k, "n_buckets"))
            c->n_buckets = atoi(v);
        else if (!strcmp(k, "delta_marginal"))
            c->delta_marginal = atoi(v) != 0;
        else if (!strcmp(k, "stage1_k_spec"))
            c->stage1_k_spec = atoi(v) != 0;
        else if (!strcmp(k, "stage2_ranks"))
            c->stage2_ranks = atoi(v) != 0;
        else if (!strcmp(k, "stage1_independent"))
            c->stage1_independent = atoi(v) != 0;
        else if (!strcmp(k, "stage1_singles"))
            c->stage1_singles = atoi(v) != 0;
        else if (!strcmp(k, "stage3_scope"))
            c->stage3_scope = atoi(v) != 0;
        else if (!strcmp(k, "refine_budget"))
            c->refine_budget = atol(v);
        else if (!strcmp(k, "calib_samples"))
            c->calib_samples = atoi(v);
        else if (!strcmp(k, "calib_tokens"))
            c->calib_tokens = atoi(v);
        else if (!strcmp(k, "calib_mix"))
            c->calib_mix = atoi(v) != 0;
        else if (!strcmp(k, "n_layer"))
            *L = atoi(v);
        else if (!strcmp(k, "n_head_kv"))
            *H = atoi(v);
        else if (!strcmp(k, "n_evals")) {
            *n_evals = atol(v);
            break;
        } else {
            snprintf(err, errlen, "%s: line %d: unknown key '%s'", path, *line, k);
            return -1;
        }
    }
    for (int i = 0; i < N_REQ; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "%s: missing '%s' before n_evals", path, required[i]);
            return -1;
        }
    if (*n_evals < 0 || *n_evals > 100000000) {
        snprintf(err, errlen, "%s: line %d: bad n_evals %ld", path, *line, *n_evals);
        return -1;
    }
    return 0;
}

int search_load_config(const char *path, search_config *cfg, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int line, L = 0, H = 0;
    long n = 0;
    int rc = read_header(f, path, &line, cfg, &L, &H, &n, err, errlen);
    fclose(f);
    return rc;
}

/* Restore the objective's prefix-reuse base (the last mask scored with make_base) and check that
 * the objective still gives that mask its logged score, bit for bit: a different program version,
 * model or calibration split would otherwise continue the search on different numbers. */
static int verify_objective(search_state *st, const char *path, char *err, size_t errlen) {
    uint64_t h = mask_hash(&st->base);
    long i = st->n_log - 1;
    while (i >= 0 && st->log[i].hash != h) i--;
    search_eval e;
    if (st->obj->score(st->obj->ctx, &st->base, 1, &e, err, errlen)) return -1;
    if (i >= 0 && e.score != st->log[i].score) {
        snprintf(err, errlen,
                 "%s: the objective changed since the state was saved (evaluation %ld scored %.17g, "
                 "now %.17g): different program version, model or calibration data",
                 path, i + 1, st->log[i].score, e.score);
        return -1;
    }
    return 0;
}

int search_load(search_state **out, const char *path, int n_layer, int n_head_kv, const search_objective *obj,
                const model *m, search_listener listener, void *user, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int line = 1, ok = 1, L = 0, H = 0;
    long n_evals = 0;
    search_config c;
    if (read_header(f, path, &line, &c, &L, &H, &n_evals, err, errlen)) {
        fclose(f);
        return -1;
    }
    if (L != n_layer || H != n_head_kv) {
        snprintf(err, errlen, "%s: mask shape is %d layers x %d KV heads, model has %d x %d", path, L, H,
                 n_layer, n_head_kv);
        fclose(f);
        return -1;
    }
    search_log_entry *log = NULL;
    long n_read = 0;
    if (ok) {
        log = calloc((size_t)(n_evals > 0 ? n_evals : 1), sizeof *log);
        if (!log) {
            snprintf(err, errlen, "%s: out of memory", path);
            ok = 0;
        }
    }
    for (; ok && n_read < n_evals; n_read++) {
        line++;
        search_log_entry *e = &log[n_read];
        int pos = 0;
        /* lines can be long (per-sample NLLs): read with fscanf field by field */
        if (fscanf(f, " eval %" SCNx64 " %lf %lf %lf %lf %d%n", &e->hash, &e->score, &e->accuracy, &e->nll,
                   &e->seconds, &e->n_samples, &pos) != 6 ||
            e->n_samples < 0 || e->n_samples > 1000000) {
            snprintf(err, errlen, "%s: line %d: malformed eval record", path, line);
            ok = 0;
            break;
        }
        if (e->n_samples > 0) {
            e->sample_nll = malloc(sizeof(double) * (size_t)e->n_samples);
            if (!e->sample_nll) {
                snprintf(err, errlen, "%s: out of memory", path);
                ok = 0;
                break;
            }
            for (int s = 0; ok && s < e->n_samples; s++)
                if (fscanf(f, "%lf", &e->sample_nll[s]) != 1) {
                    snprintf(err, errlen, "%s: line %d: missing sample NLL %d", path, line, s + 1);
                    ok = 0;
                }
        }
    }
    fclose(f);
    search_state *st = NULL;
    if (ok && search_create(&st, &c, n_layer, n_head_kv, obj, m, listener, user, err, errlen)) ok = 0;
    if (!ok) {
        search_log_free(log, n_evals);
        return -1;
    }
    st->replay = log;
    st->n_replay = n_evals;
    while (st->replay_pos < st->n_replay) {
        int r = search_step(st, err, errlen);
        if (r < 0 || (r == 1 && st->replay_pos < st->n_replay)) {
            if (r == 1)
                snprintf(err, errlen, "%s: the search ended after %ld of %ld saved evaluations", path,
                         st->replay_pos, st->n_replay);
            search_free(st);
            return -1;
        }
    }
    st->replaying = 0;
    if (st->have_base && verify_objective(st, path, err, errlen)) {
        search_free(st);
        return -1;
    }
    *out = st;
    return 0;
}
