/* cli_dist.c — the MPI mode of the commands (cli_dist.h). */
#include "cli_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifdef BOSCH_MPI
#include "dist.h"

static int g_active, g_started;
static dist_pool *g_pool;

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

int cli_dist_start(const search_objective *local, const void *setup, size_t n, double timeout_s,
                   search_objective *obj, char *err, size_t errlen) {
    g_started = 1;
    if (dist_pool_start(&g_pool, local, setup, n, timeout_s, &cli_stop, err, errlen)) return -1;
    dist_pool_objective(g_pool, obj);
    return 0;
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
                        const search_objective *obj) {
    if (dist_worker_ready(rc, desc, msg) || rc) return 1;
    dist_fault f = fault_from_env();
    char err[512];
    if (dist_worker_serve(obj, &f, err, sizeof err)) {
        fprintf(stderr, "bosch %s: %s\n", cmd, err);
        return 1;
    }
    return 0;
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
int cli_dist_start(const search_objective *local, const void *setup, size_t n, double timeout_s,
                   search_objective *obj, char *err, size_t errlen) {
    (void)local, (void)setup, (void)n, (void)timeout_s, (void)obj;
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
                        const search_objective *obj) {
    (void)cmd, (void)rc, (void)desc, (void)msg, (void)obj;
    return 1;
}
#endif
