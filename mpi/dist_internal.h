/* dist_internal.h — the message layouts and helpers shared by dist_comm.c (init, the clock),
 * dist.c (workers), dist_pool.c (rank 0, batches) and dist_samples.c (sample jobs, both sides).
 * Not a public API. */
#ifndef BOSCH_DIST_INTERNAL_H
#define BOSCH_DIST_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

#include "dist.h"

enum { TAG_SETUP = 1, TAG_READY, TAG_JOB, TAG_RESULT, TAG_STOP, TAG_SAMPLES, TAG_SRESULT };

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

typedef struct {
    int32_t id, reuse, first, count, n_layer, n_head_kv, window, sinks, spec_n, pad;
} dist_samples_head; /* followed by spec_n bytes (the cell) and n_layer * n_head_kv bytes */

typedef struct {
    int32_t id, rc, count, pad;
} dist_sresult_head; /* followed by count eval_sample_result, or (rc != 0) an error text */

struct dist_pool {
    const search_objective *local; /* NULL: a pool for sample jobs only */
    int W;                         /* workers: ranks 1..W */
    double timeout;
    volatile sig_atomic_t *stop;
    char (*host)[MPI_MAX_PROCESSOR_NAME]; /* [W + 1] */
    int failed;
    long jobs, sent, received;
    double *nll; /* [cap_nll] the batch's per-sample NLLs (out[i].sample_nll point here) */
    size_t cap_nll;
};

/* Post a send to `dest` and complete it before `deadline` (dist_now() seconds). 0, or -1 with a
 * message naming the worker. */
int dist_send_by(const dist_pool *p, const void *buf, int n, int dest, int tag, double deadline, char *err,
                 size_t errlen);

/* The head (head_n bytes: dist_result_head or dist_sresult_head, both starting with int32 id, rc)
 * of an answer of worker r into *head. 0, or -1 with a message naming the rank and host: a short
 * answer, or a failed job (rc != 0) with the worker's error text. */
int dist_answer_head(const dist_pool *p, int r, const char *buf, int bytes, void *head, size_t head_n,
                     char *err, size_t errlen);

/* What dist_collect does with one answer of worker r (buf, bytes). 0, or -1 with a message. */
typedef int (*dist_take_fn)(dist_pool *p, int r, const char *buf, int bytes, void *ctx, char *err,
                            size_t errlen);
/* Receive one `tag` answer for every job sent (pending[r] per worker, counted down), each worker
 * given the pool's timeout per answer from now on; take() each. 0, or -1 with a message naming the
 * rank and host of a worker past its deadline. */
int dist_collect(dist_pool *p, int *pending, int tag, dist_take_fn take, void *ctx, char *err, size_t errlen);

/* Worker: score one sample job (its message in buf) with h->samples and send the answer. 0 or -1. */
int dist_serve_samples(const dist_handlers *h, int rank, const char *buf, int bytes, char *err,
                       size_t errlen);

/* The error-returning duplicate of MPI_COMM_WORLD (dist_comm.c, as the three below). */
extern MPI_Comm dist_comm;

/* Seconds on a monotonic clock. */
double dist_now(void);
/* Sleep about us microseconds (the polling interval). */
void dist_nap(long us);
/* The text of an MPI error code. */
const char *dist_errstr(int code, char *buf, int cap);

#endif
