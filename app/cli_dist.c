/* cli_dist.c — the MPI mode of the commands (cli_dist.h). */
#include "cli_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "command.h"

/* ---- the run options (with or without MPI) ------------------------------------------------------ */

const char cli_dist_usage_batch[] =
    "  --batch B        score B candidates at once (the sub-search's next B if none improves; the\n"
    "                   trace and mask do not change); default: the number of MPI ranks, else 1\n";
const char cli_dist_usage_timeout[] =
    "  --worker-timeout S  under mpirun: seconds a worker may take per answer (default 600)\n";

void cli_dist_opts_init(cli_dist_opts *o) {
    o->batch = 0;
    o->worker_timeout = 600;
}

int cli_dist_option(const char *cmd, int with_batch, cli_dist_opts *o, const char *a, const char *v) {
    const int is_batch = with_batch && !strcmp(a, "--batch");
    if (!is_batch && strcmp(a, "--worker-timeout")) return CMD_OPT_UNKNOWN;
    if (!v) {
        fprintf(stderr, "bosch %s: option %s needs a value\n", cmd, a);
        return CMD_OPT_BAD;
    }
    char *end;
    if (is_batch) {
        long b = strtol(v, &end, 10);
        if (*end || end == v || b < 1 || b > 4096) {
            fprintf(stderr, "bosch %s: --batch: '%s' is not a whole number in 1..4096\n", cmd, v);
            return CMD_OPT_BAD;
        }
        o->batch = (int)b;
        return CMD_OPT_VALUE;
    }
    double t = strtod(v, &end);
    if (*end || end == v || !(t > 0 && t <= 1e6)) {
        fprintf(stderr, "bosch %s: --worker-timeout: '%s' is not a number of seconds in (0, 1e6]\n", cmd, v);
        return CMD_OPT_BAD;
    }
    o->worker_timeout = t;
    return CMD_OPT_VALUE;
}

int cli_dist_batch(const cli_dist_opts *o) {
    return o->batch ? o->batch : cli_dist_size();
}

/* ---- workers (with or without MPI: without, cli_dist_worker_setup fails) ---------------------- */

/* A worker's setup blob (*blob malloc'd, n bytes): 0, or the worker's exit status + 1 when it has
 * none (told to stop first: 0; an error, printed: 1). */
static int worker_setup(const char *cmd, void **blob, size_t *n) {
    char err[1024] = "";
    int r = cli_dist_worker_setup(blob, n, err, sizeof err);
    if (r < 0) fprintf(stderr, "bosch %s: %s\n", cmd, err);
    return r ? 1 + (r < 0) : 0;
}

int cli_dist_worker_calib(const char *cmd, const model *m, const backend *be) {
    char err[1024] = "", desc[256] = "";
    void *blob = NULL;
    size_t n = 0;
    int r = worker_setup(cmd, &blob, &n);
    if (r) return r - 1;
    search_config cfg;
    calib_set *cs = NULL;
    search_objective obj = {0};
    int rc = -1;
    if (n != sizeof cfg)
        snprintf(err, sizeof err, "a setup of %zu bytes, not a search config (%zu): another bosch build?", n,
                 sizeof cfg);
    else if (memcpy(&cfg, blob, n), !search_calib_generate(&cs, m, &cfg, err, sizeof err) &&
                                        !search_objective_calib_on(&obj, m, be, cs, err, sizeof err))
        rc = 0;
    free(blob);
    backend_describe(be, 0, desc, sizeof desc);
    int status = cli_dist_worker_run(cmd, rc, desc, err, rc ? NULL : &obj, m, be);
    search_objective_free(&obj);
    calib_set_free(cs);
    return status;
}

int cli_dist_worker_samples(const char *cmd, const model *m, const backend *be) {
    char desc[256] = "";
    void *blob = NULL;
    size_t n = 0;
    int r = worker_setup(cmd, &blob, &n);
    if (r) return r - 1;
    free(blob); /* the jobs carry their cells */
    backend_describe(be, 0, desc, sizeof desc);
    return cli_dist_worker_run(cmd, 0, desc, "", NULL, m, be);
}

#ifdef BOSCH_MPI
#include "dist.h"

static int g_active, g_started;
static dist_pool *g_pool;
static probe_score_cache g_cells; /* rank 0's share of sample jobs, and a worker's */

int cli_dist_init(int *argc, char ***argv) {
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) return 0;
    char err[512];
    if (dist_init(argc, argv, err, sizeof err)) {
        fprintf(stderr, "bosch: %s\n", err);
        return 1;
    }
    g_active = 1;
    return 0;
}
int cli_dist_active(void) {
    return g_active;
}
int cli_dist_rank(void) {
    return g_active ? dist_rank() : 0;
}
int cli_dist_size(void) {
    return g_active ? dist_size() : 1;
}
int cli_dist_local_rank(void) {
    return g_active ? dist_local_rank() : 0;
}

int cli_dist_start(const model *m, const backend *be, const search_objective *local, const void *setup,
                   size_t n, double timeout_s, search_objective *obj, char *err, size_t errlen) {
    g_started = 1;
    g_cells = (probe_score_cache){m, be, NULL};
    if (dist_pool_start(&g_pool, local, setup, n, timeout_s, &cli_stop, err, errlen)) return -1;
    if (local) dist_pool_objective(g_pool, obj);
    return 0;
}

/* dist_samples_fn over g_cells: the cell is a probe_cell. */
static int score_cell_samples(void *ctx, const void *spec, size_t spec_n, const attn_mask *mask, int reuse,
                              int first, int count, eval_sample_result *out, char *err, size_t errlen) {
    probe_cell cell;
    if (spec_n != sizeof cell) {
        snprintf(err, errlen, "a cell of %zu bytes, not a probe cell (%zu): another bosch build?", spec_n,
                 sizeof cell);
        return -1;
    }
    memcpy(&cell, spec, sizeof cell);
    return probe_score_cached(ctx, &cell, reuse, mask, first, count, out, err, errlen);
}

/* Rank 0: the jobs of one cell over the pool (no pool: every job here). 0 or -1. */
static int run_cell_jobs(const probe_cell *cell, dist_samples_job *jobs, int n, char *err, size_t errlen) {
    if (!g_pool) {
        snprintf(err, errlen, "no MPI workers started");
        return -1;
    }
    return dist_pool_samples(g_pool, cell, sizeof *cell, jobs, n, score_cell_samples, &g_cells, err, errlen);
}

int cli_dist_cell_masks(const probe_cell *cell, const attn_mask *const *masks, int n,
                        eval_sample_result *const *res, char *err, size_t errlen) {
    dist_samples_job *jobs = malloc(sizeof *jobs * (size_t)(n > 0 ? n : 1));
    if (!jobs) return snprintf(err, errlen, "out of memory"), -1;
    const int P = dist_size();
    for (int c = 0; c < P; c++) /* share c: [c n / P, (c + 1) n / P) */
        for (int k = (int)((long)c * n / P); k < (int)((long)(c + 1) * n / P); k++)
            jobs[k] = (dist_samples_job){c, masks[k], 1, 0, cell->n_samples, res[k]};
    int rc = run_cell_jobs(cell, jobs, n, err, errlen);
    free(jobs);
    return rc;
}

int cli_dist_cell_samples(const probe_cell *cell, const attn_mask *mask, eval_sample_result *res, char *err,
                          size_t errlen) {
    const int P = dist_size(), ns = cell->n_samples;
    dist_samples_job *jobs = malloc(sizeof *jobs * (size_t)P);
    if (!jobs) return snprintf(err, errlen, "out of memory"), -1;
    int n = 0;
    for (int c = 0; c < P; c++) { /* range c: [c ns / P, (c + 1) ns / P), when not empty */
        const int a = (int)((long)c * ns / P), b = (int)((long)(c + 1) * ns / P);
        if (b > a) jobs[n++] = (dist_samples_job){c, mask, 0, a, b - a, res + a};
    }
    int rc = run_cell_jobs(cell, jobs, n, err, errlen);
    free(jobs);
    return rc;
}

void cli_dist_describe(char *buf, size_t cap) {
    long jobs = 0, sent = 0, received = 0;
    if (!g_pool) {
        snprintf(buf, cap, "%s", "");
        return;
    }
    dist_pool_stats(g_pool, &jobs, &sent, &received);
    snprintf(buf, cap, "%d ranks, %ld jobs sent to workers, %ld bytes sent, %ld bytes received", dist_size(),
             jobs, sent, received);
}

int cli_dist_failed(void) {
    return g_pool && dist_pool_failed(g_pool);
}

void cli_dist_stop(void) {
    if (g_pool && !dist_pool_failed(g_pool)) {
        dist_pool_stop(g_pool);
        g_pool = NULL;
    }
    probe_score_cache_free(&g_cells);
}

int cli_dist_end(int rc) {
    if (!g_active) return rc;
    if (dist_rank() == 0 && (cli_dist_failed() || (rc && g_started))) {
        fflush(NULL);
        dist_abort(rc ? rc : 1); /* does not return */
    }
    if (dist_rank() == 0 && !g_started) /* workers still wait for a setup: tell them to stop */
        for (int r = 1; r < dist_size(); r++) dist_send_stop(r);
    dist_finalize();
    return rc;
}

int cli_dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen) {
    return dist_worker_setup(blob, n, err, errlen);
}

/* BOSCH_DIST_FAULT=RANK:N:hang|exit for this rank, or none. */
static dist_fault fault_from_env(void) {
    dist_fault f = {0, 0};
    const char *s = getenv("BOSCH_DIST_FAULT");
    int rank = -1;
    long after = 0;
    char kind[16] = "";
    if (s && sscanf(s, "%d:%ld:%15s", &rank, &after, kind) == 3 && rank == dist_rank())
        f = (dist_fault){after, !strcmp(kind, "exit") ? 2 : 1};
    return f;
}

int cli_dist_worker_run(const char *cmd, int rc, const char *desc, const char *msg,
                        const search_objective *obj, const model *m, const backend *be) {
    if (dist_worker_ready(rc, desc, msg) || rc) return 1;
    dist_fault f = fault_from_env();
    char err[512];
    g_cells = (probe_score_cache){m, be, NULL};
    const dist_handlers h = {obj, score_cell_samples, &g_cells};
    int status = 0;
    if (dist_worker_serve(&h, &f, err, sizeof err)) {
        fprintf(stderr, "bosch %s: %s\n", cmd, err);
        status = 1;
    }
    probe_score_cache_free(&g_cells);
    return status;
}

#else /* no MPI: one rank */

int cli_dist_init(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (n && atoi(n) > 1) { /* N copies would each run the whole command on the same files */
        fprintf(stderr,
                "bosch: started by mpirun with %s ranks, but this bosch was built without MPI "
                "(install libopenmpi-dev and rebuild; docs/distributed.md)\n",
                n);
        return 1;
    }
    return 0;
}
int cli_dist_active(void) {
    return 0;
}
int cli_dist_rank(void) {
    return 0;
}
int cli_dist_size(void) {
    return 1;
}
int cli_dist_local_rank(void) {
    return 0;
}
int cli_dist_end(int rc) {
    return rc;
}
int cli_dist_start(const model *m, const backend *be, const search_objective *local, const void *setup,
                   size_t n, double timeout_s, search_objective *obj, char *err, size_t errlen) {
    (void)m, (void)be, (void)local, (void)setup, (void)n, (void)timeout_s, (void)obj;
    snprintf(err, errlen, "this bosch was built without MPI");
    return -1;
}
int cli_dist_cell_masks(const probe_cell *cell, const attn_mask *const *masks, int n,
                        eval_sample_result *const *res, char *err, size_t errlen) {
    (void)cell, (void)masks, (void)n, (void)res;
    snprintf(err, errlen, "this bosch was built without MPI");
    return -1;
}
int cli_dist_cell_samples(const probe_cell *cell, const attn_mask *mask, eval_sample_result *res, char *err,
                          size_t errlen) {
    (void)cell, (void)mask, (void)res;
    snprintf(err, errlen, "this bosch was built without MPI");
    return -1;
}
void cli_dist_describe(char *buf, size_t cap) {
    snprintf(buf, cap, "%s", "");
}
int cli_dist_failed(void) {
    return 0;
}
void cli_dist_stop(void) {}
int cli_dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen) {
    *blob = NULL, *n = 0;
    snprintf(err, errlen, "this bosch was built without MPI");
    return -1;
}
int cli_dist_worker_run(const char *cmd, int rc, const char *desc, const char *msg,
                        const search_objective *obj, const model *m, const backend *be) {
    (void)cmd, (void)rc, (void)desc, (void)msg, (void)obj, (void)m, (void)be;
    return 1;
}
#endif
