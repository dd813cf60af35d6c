/* dist_internal.h — the message layouts and helpers shared by dist.c (init, workers) and
 * dist_pool.c (rank 0). Not a public API. */
#ifndef BOSCH_DIST_INTERNAL_H
#define BOSCH_DIST_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

enum { TAG_SETUP = 1, TAG_READY, TAG_JOB, TAG_RESULT, TAG_STOP };

typedef struct {
    int32_t rc; /* 0 ready, -1 failed (err says why) */
    char host[MPI_MAX_PROCESSOR_NAME];
    char desc[160];
    char err[512];
} dist_ready;

typedef struct {
    int32_t id, make_base, n_layer, n_head_kv, window, sinks;
} dist_job_head; /* followed by n_layer * n_head_kv bytes */

typedef struct {
    int32_t id, rc, n_samples, pad;
    double score, accuracy, nll, seconds;
} dist_result_head; /* followed by n_samples doubles, or (rc != 0) an error text */

/* The error-returning duplicate of MPI_COMM_WORLD (dist.c). */
extern MPI_Comm dist_comm;

/* Seconds on a monotonic clock. */
double dist_now(void);
/* Sleep about us microseconds (the polling interval). */
void dist_nap(long us);
/* The text of an MPI error code. */
const char *dist_errstr(int code, char *buf, int cap);

#endif
