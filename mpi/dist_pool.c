/* dist_pool.c — rank 0's side of dist.h: the workers' start, the batched objective, the stop
 * (sample jobs: dist_samples.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "dist_internal.h"

int dist_send_by(const dist_pool *p, const void *buf, int n, int dest, int tag, double deadline, char *err,
                 size_t errlen) {
    MPI_Request rq;
    char msg[MPI_MAX_ERROR_STRING];
    int rc = MPI_Isend(buf, n, MPI_BYTE, dest, tag, dist_comm, &rq), done = 0;
    while (rc == MPI_SUCCESS && !(rc = MPI_Test(&rq, &done, MPI_STATUS_IGNORE)) && !done) {
        if (dist_now() > deadline || (p->stop && *p->stop)) {
            MPI_Cancel(&rq);
            snprintf(err, errlen, "worker rank %d on host %s did not take a message within %g s", dest,
                     p->host[dest], p->timeout);
            return -1;
        }
        dist_nap(100);
    }
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "worker rank %d on host %s: %s", dest, p->host[dest],
                 dist_errstr(rc, msg, sizeof msg));
        return -1;
    }
    return 0;
}

/* The message of a wait ended by a signal. mpirun without --enable-recovery ends the whole job
 * when a rank dies (SIGTERM to the others), so the rank that died is among those waited for. -1. */
static int stopped_waiting(const dist_pool *p, const double *deadline, char *err, size_t errlen) {
    int k = snprintf(err, errlen, "stopped by a signal while waiting for worker");
    for (int r = 1; r <= p->W && k > 0 && (size_t)k < errlen; r++)
        if (deadline[r] > 0)
            k += snprintf(err + k, errlen - (size_t)k, " rank %d on host %s,", r, p->host[r]);
    if (k > 0 && (size_t)k < errlen)
        snprintf(err + k - 1, errlen - (size_t)k + 1,
                 " (mpirun ends the job when a rank dies; its message names the rank)");
    return -1;
}

/* Wait for one message of `tag` from any rank whose deadline[] has not passed; a rank with
 * deadline[r] == 0 is not waited for. 0 (*st filled, message still to receive), or -1 with a
 * message naming the first rank past its deadline. */
static int probe_by(const dist_pool *p, int tag, const double *deadline, MPI_Status *st, char *err,
                    size_t errlen) {
    char msg[MPI_MAX_ERROR_STRING];
    for (;;) {
        int flag = 0, rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, dist_comm, &flag, st);
        if (rc != MPI_SUCCESS) {
            snprintf(err, errlen, "waiting for the workers: %s", dist_errstr(rc, msg, sizeof msg));
            return -1;
        }
        if (flag) return 0;
        double now = dist_now();
        for (int r = 1; r <= p->W; r++)
            if (deadline[r] > 0 && now > deadline[r]) {
                snprintf(err, errlen,
                         "worker rank %d on host %s did not answer within %g s (--worker-timeout)", r,
                         p->host[r], p->timeout);
                return -1;
            }
        if (p->stop && *p->stop) return stopped_waiting(p, deadline, err, errlen);
        dist_nap(100);
    }
}

static int wait_ready(dist_pool *p, double deadline_all, char *err, size_t errlen) {
    double *deadline = calloc((size_t)p->W + 1, sizeof(double));
    if (!deadline) return snprintf(err, errlen, "out of memory"), -1;
    for (int r = 1; r <= p->W; r++) deadline[r] = deadline_all;
    int rc = 0;
    for (int left = p->W; left > 0 && !rc; left--) {
        MPI_Status st;
        dist_ready rd;
        if ((rc = probe_by(p, TAG_READY, deadline, &st, err, errlen))) break;
        MPI_Recv(&rd, (int)sizeof rd, MPI_BYTE, st.MPI_SOURCE, TAG_READY, dist_comm, MPI_STATUS_IGNORE);
        rd.host[sizeof rd.host - 1] = rd.err[sizeof rd.err - 1] = rd.desc[sizeof rd.desc - 1] = 0;
        snprintf(p->host[st.MPI_SOURCE], sizeof p->host[0], "%s", rd.host);
        deadline[st.MPI_SOURCE] = 0;
        if (rd.rc) {
            snprintf(err, errlen, "worker rank %d on host %s could not start: %s", st.MPI_SOURCE, rd.host,
                     rd.err);
            rc = -1;
        } else {
            fprintf(stderr, "worker rank %d on host %s ready (%s)\n", st.MPI_SOURCE, rd.host, rd.desc);
        }
    }
    free(deadline);
    return rc;
}

int dist_pool_start(dist_pool **out, const search_objective *local, const void *setup, size_t n,
                    double timeout_s, volatile sig_atomic_t *stop, char *err, size_t errlen) {
    *out = NULL;
    dist_pool *p = calloc(1, sizeof *p);
    if (p) p->host = calloc((size_t)dist_size(), sizeof *p->host);
    if (!p || !p->host) {
        free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->local = local, p->W = dist_size() - 1, p->timeout = timeout_s, p->stop = stop;
    snprintf(p->host[0], sizeof p->host[0], "%s", dist_host());
    for (int r = 1; r <= p->W; r++) snprintf(p->host[r], sizeof p->host[r], "(unknown: not answered yet)");
    /* starting takes a model load and a calibration split: at least two minutes */
    const double deadline = dist_now() + (timeout_s > 120 ? timeout_s : 120);
    int rc = 0;
    for (int r = 1; r <= p->W && !rc; r++)
        rc = dist_send_by(p, setup, (int)n, r, TAG_SETUP, deadline, err, errlen);
    if (!rc) rc = wait_ready(p, deadline, err, errlen);
    if (rc) {
        p->failed = 1;
        *out = p; /* the caller reports and aborts; dist_pool_stop frees */
        return -1;
    }
    *out = p;
    return 0;
}

/* Room for n results of up to ns samples each. 0 or -1. */
static int nll_room(dist_pool *p, size_t need) {
    if (need <= p->cap_nll) return 0;
    double *q = realloc(p->nll, sizeof(double) * need);
    if (!q) return -1;
    p->nll = q, p->cap_nll = need;
    return 0;
}

/* First layer whose row differs from the row most masks of the batch share (for moves from one
 * solution: the layer the move changes). Masks with the same key go to the same rank. */
static int batch_key(const attn_mask *const *masks, int n, int j) {
    const attn_mask *m = masks[j];
    for (int l = 0; l < m->n_layer; l++) {
        const uint8_t *row = m->z + (size_t)l * m->n_head_kv;
        int same = 0;
        for (int i = 0; i < n; i++)
            same += !memcmp(row, masks[i]->z + (size_t)l * m->n_head_kv, (size_t)m->n_head_kv);
        if (2 * same <= n) return l;
    }
    return m->n_layer;
}

int dist_answer_head(const dist_pool *p, int r, const char *buf, int bytes, void *head, size_t head_n,
                     char *err, size_t errlen) {
    if (bytes < 0 || (size_t)bytes < head_n) {
        snprintf(err, errlen, "worker rank %d on host %s: a short answer (%d bytes)", r, p->host[r], bytes);
        return -1;
    }
    memcpy(head, buf, head_n);
    int32_t rc;
    memcpy(&rc, buf + sizeof(int32_t), sizeof rc);
    if (rc) {
        snprintf(err, errlen, "worker rank %d on host %s: %.*s", r, p->host[r], bytes - (int)head_n,
                 buf + head_n);
        return -1;
    }
    return 0;
}

/* out[j] from a result message (buf, bytes) of worker r. 0, or -1 with a message. */
static int take_result(dist_pool *p, int r, const char *buf, int bytes, int n, int ns, search_eval *out,
                       char *err, size_t errlen) {
    dist_result_head h;
    if (dist_answer_head(p, r, buf, bytes, &h, sizeof h, err, errlen)) return -1;
    if (h.id < 0 || h.id >= n || h.n_samples < 0 || h.n_samples > ns ||
        (size_t)bytes != sizeof h + sizeof(double) * (size_t)h.n_samples) {
        snprintf(err, errlen, "worker rank %d on host %s: a malformed answer (%d bytes)", r, p->host[r],
                 bytes);
        return -1;
    }
    double *d = p->nll + (size_t)h.id * ns;
    memcpy(d, buf + sizeof h, sizeof(double) * (size_t)h.n_samples);
    out[h.id] = (search_eval){h.score, h.accuracy, h.nll, h.seconds, h.n_samples, h.n_samples ? d : NULL};
    return 0;
}

/* Score masks[j] on rank 0 into out[j] (its NLLs copied: the local objective reuses its buffer). */
static int score_here(dist_pool *p, const attn_mask *m, int make_base, int j, int ns, search_eval *out,
                      char *err, size_t errlen) {
    int rc = p->local->score(p->local->ctx, m, make_base, &out[j], err, errlen);
    if (rc) return rc;
    if (out[j].sample_nll && out[j].n_samples > 0) {
        if (out[j].n_samples > ns) return snprintf(err, errlen, "rank 0: %d samples", out[j].n_samples), -1;
        memcpy(p->nll + (size_t)j * ns, out[j].sample_nll, sizeof(double) * (size_t)out[j].n_samples);
        out[j].sample_nll = p->nll + (size_t)j * ns;
    }
    return 0;
}

/* Send job j (masks[j]) to worker r. 0 or -1. */
static int send_job(dist_pool *p, const attn_mask *m, int make_base, int j, int r, char *err, size_t errlen) {
    const size_t body = (size_t)m->n_layer * m->n_head_kv;
    char *buf = malloc(sizeof(dist_job_head) + body);
    if (!buf) return snprintf(err, errlen, "out of memory"), -1;
    dist_job_head h = {j, make_base, m->n_layer, m->n_head_kv, m->window, m->sinks};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, m->z, body);
    int rc = dist_send_by(p, buf, (int)(sizeof h + body), r, TAG_JOB, dist_now() + p->timeout, err, errlen);
    free(buf);
    p->jobs++, p->sent += (long)(sizeof h + body);
    return rc;
}

/* take() of dist_collect for TAG_RESULT: ctx = the batch's {n, ns, out}. */
typedef struct {
    int n, ns;
    search_eval *out;
} batch_out;

static int take_batch(dist_pool *p, int r, const char *buf, int bytes, void *ctx, char *err, size_t errlen) {
    batch_out *b = ctx;
    return take_result(p, r, buf, bytes, b->n, b->ns, b->out, err, errlen);
}

int dist_collect(dist_pool *p, int *pending, int tag, dist_take_fn take, void *ctx, char *err,
                 size_t errlen) {
    double *deadline = calloc((size_t)p->W + 1, sizeof(double));
    if (!deadline) return snprintf(err, errlen, "out of memory"), -1;
    int left = 0, rc = 0;
    for (int r = 1; r <= p->W; r++)
        if (pending[r]) deadline[r] = dist_now() + p->timeout, left += pending[r];
    char *buf = NULL;
    while (left > 0 && !rc) {
        MPI_Status st;
        int bytes = 0;
        if ((rc = probe_by(p, tag, deadline, &st, err, errlen))) break;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        char *q = realloc(buf, bytes > 0 ? (size_t)bytes : 1);
        if (!q) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        buf = q;
        const int r = st.MPI_SOURCE;
        MPI_Recv(buf, bytes, MPI_BYTE, r, tag, dist_comm, MPI_STATUS_IGNORE);
        p->received += bytes;
        rc = take(p, r, buf, bytes, ctx, err, errlen);
        left--;
        deadline[r] = --pending[r] ? dist_now() + p->timeout : 0;
    }
    free(buf);
    free(deadline);
    return rc;
}

static int cmp_key(const void *a, const void *b) {
    const int *x = a, *y = b; /* {key, index} pairs: by key, then by index (a stable order) */
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static int pool_batch(void *ctx, const attn_mask *const *masks, const int *make_base, int n, search_eval *out,
                      char *err, size_t errlen) {
    dist_pool *p = ctx;
    if (p->failed) return snprintf(err, errlen, "a worker failed earlier"), -1;
    if (!p->local) return snprintf(err, errlen, "a pool of sample jobs scores no batch"), -1;
    const int ns = p->local->n_samples > 0 ? p->local->n_samples : 1, P = p->W + 1;
    int *order = malloc(sizeof(int) * 2 * (size_t)n), *pending = calloc((size_t)P, sizeof(int));
    int rc = -1;
    if (!order || !pending || nll_room(p, (size_t)n * ns)) {
        snprintf(err, errlen, "out of memory for a batch of %d", n);
        goto out;
    }
    for (int j = 0; j < n; j++) order[2 * j] = batch_key(masks, n, j), order[2 * j + 1] = j;
    qsort(order, (size_t)n, 2 * sizeof(int), cmp_key);
    /* participant c (0 = rank 0 itself) takes sorted positions [c n / P, (c + 1) n / P) */
    rc = 0;
    for (int c = 1; c < P && !rc; c++)
        for (int k = c * n / P; k < (c + 1) * n / P && !rc; k++, pending[c]++)
            rc = send_job(p, masks[order[2 * k + 1]], make_base[order[2 * k + 1]], order[2 * k + 1], c, err,
                          errlen);
    for (int k = 0; k < n / P && !rc; k++) {
        const int j = order[2 * k + 1];
        rc = score_here(p, masks[j], make_base[j], j, ns, out, err, errlen);
    }
    batch_out bo = {n, ns, out};
    if (!rc) rc = dist_collect(p, pending, TAG_RESULT, take_batch, &bo, err, errlen);
out:
    if (rc && rc != SEARCH_CANCELLED) p->failed = 1;
    free(order);
    free(pending);
    return rc;
}

static int pool_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                      size_t errlen) {
    dist_pool *p = ctx;
    if (!p->local) return snprintf(err, errlen, "a pool of sample jobs has no objective"), -1;
    return p->local->score(p->local->ctx, mask, make_base, out, err, errlen);
}

void dist_pool_objective(dist_pool *p, search_objective *obj) {
    *obj = (search_objective){.score = pool_score,
                              .ctx = p,
                              .samples = p->local ? p->local->samples : NULL,
                              .n_samples = p->local ? p->local->n_samples : 0,
                              .score_batch = pool_batch};
}

int dist_pool_workers(const dist_pool *p) {
    return p->W;
}
int dist_pool_failed(const dist_pool *p) {
    return p->failed;
}
void dist_pool_stats(const dist_pool *p, long *jobs, long *bytes_sent, long *bytes_received) {
    *jobs = p->jobs, *bytes_sent = p->sent, *bytes_received = p->received;
}

void dist_pool_stop(dist_pool *p) {
    if (!p) return;
    char err[256];
    for (int r = 1; r <= p->W && !p->failed; r++)
        if (dist_send_by(p, NULL, 0, r, TAG_STOP, dist_now() + p->timeout, err, sizeof err)) p->failed = 1;
    free(p->nll);
    free(p->host);
    free(p);
}
