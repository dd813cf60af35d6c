/* dist_samples.c — sample jobs (dist.h): a mask scored on a range of a set's samples, rank 0's
 * side (dist_pool_samples) and the workers' (dist_serve_samples). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "dist_internal.h"

/* Send job j to its worker. 0 or -1. */
static int send_samples(dist_pool *p, const void *spec, size_t spec_n, const dist_samples_job *job, int j,
                        char *err, size_t errlen) {
    const attn_mask *m = job->mask;
    const size_t body = (size_t)m->n_layer * m->n_head_kv, bytes = sizeof(dist_samples_head) + spec_n + body;
    char *buf = malloc(bytes);
    if (!buf) return snprintf(err, errlen, "out of memory"), -1;
    dist_samples_head h = {j,         job->reuse, job->first,      job->count, m->n_layer, m->n_head_kv,
                           m->window, m->sinks,   (int32_t)spec_n, 0};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, spec, spec_n);
    memcpy(buf + sizeof h + spec_n, m->z, body);
    int rc = dist_send_by(p, buf, (int)bytes, job->rank, TAG_SAMPLES, dist_now() + p->timeout, err, errlen);
    free(buf);
    p->jobs++, p->sent += (long)bytes;
    return rc;
}

typedef struct {
    dist_samples_job *jobs;
    int n;
} samples_out;

/* dist_take_fn: one sresult message into its job's out. */
static int take_samples(dist_pool *p, int r, const char *buf, int bytes, void *ctx, char *err,
                        size_t errlen) {
    samples_out *so = ctx;
    dist_sresult_head h;
    if (dist_answer_head(p, r, buf, bytes, &h, sizeof h, err, errlen)) return -1;
    if (h.id < 0 || h.id >= so->n || so->jobs[h.id].rank != r || h.count != so->jobs[h.id].count ||
        (size_t)bytes != sizeof h + sizeof(eval_sample_result) * (size_t)h.count) {
        snprintf(err, errlen, "worker rank %d on host %s: a malformed answer (%d bytes)", r, p->host[r],
                 bytes);
        return -1;
    }
    memcpy(so->jobs[h.id].out, buf + sizeof h, sizeof(eval_sample_result) * (size_t)h.count);
    return 0;
}

int dist_pool_samples(dist_pool *p, const void *spec, size_t spec_n, dist_samples_job *jobs, int n,
                      dist_samples_fn local, void *local_ctx, char *err, size_t errlen) {
    if (p->failed) return snprintf(err, errlen, "a worker failed earlier"), -1;
    int *pending = calloc((size_t)p->W + 1, sizeof(int)), rc = pending ? 0 : -1;
    if (!pending) snprintf(err, errlen, "out of memory");
    for (int j = 0; j < n && !rc; j++)
        if (jobs[j].rank < 0 || jobs[j].rank > p->W) {
            snprintf(err, errlen, "sample job %d for rank %d of %d", j, jobs[j].rank, p->W + 1);
            rc = -1;
        }
    for (int j = 0; j < n && !rc; j++)
        if (jobs[j].rank > 0 && !(rc = send_samples(p, spec, spec_n, &jobs[j], j, err, errlen)))
            pending[jobs[j].rank]++;
    for (int j = 0; j < n && !rc; j++)
        if (jobs[j].rank == 0)
            rc = local(local_ctx, spec, spec_n, jobs[j].mask, jobs[j].reuse, jobs[j].first, jobs[j].count,
                       jobs[j].out, err, errlen);
    samples_out so = {jobs, n};
    if (!rc) rc = dist_collect(p, pending, TAG_SRESULT, take_samples, &so, err, errlen);
    if (rc) p->failed = 1;
    free(pending);
    return rc;
}

/* ---- workers ----------------------------------------------------------------------------------- */

int dist_serve_samples(const dist_handlers *hd, int rank, const char *buf, int bytes, char *err,
                       size_t errlen) {
    dist_samples_head h;
    char why[512] = "";
    dist_sresult_head r = {-1, -1, 0, 0};
    eval_sample_result *res = NULL;
    if ((size_t)bytes < sizeof h) {
        snprintf(why, sizeof why, "a sample job of %d bytes", bytes);
    } else {
        memcpy(&h, buf, sizeof h);
        r.id = h.id;
        const size_t body =
            (size_t)(h.n_layer > 0 ? h.n_layer : 0) * (size_t)(h.n_head_kv > 0 ? h.n_head_kv : 0);
        if (h.spec_n < 0 || h.count < 1 || (size_t)bytes != sizeof h + (size_t)h.spec_n + body || !body)
            snprintf(why, sizeof why, "a sample job of %d bytes for a %d x %d mask and %d samples", bytes,
                     h.n_layer, h.n_head_kv, h.count);
        else if (!hd->samples)
            snprintf(why, sizeof why, "this command's workers score no probe samples");
        else if (!(res = malloc(sizeof *res * (size_t)h.count)))
            snprintf(why, sizeof why, "out of memory for %d samples", h.count);
        else {
            attn_mask m = {h.n_layer, h.n_head_kv, h.window, h.sinks, (uint8_t *)(buf + sizeof h + h.spec_n)};
            if (!hd->samples(hd->samples_ctx, buf + sizeof h, (size_t)h.spec_n, &m, h.reuse, h.first, h.count,
                             res, why, sizeof why))
                r.rc = 0, r.count = h.count;
        }
    }
    size_t tail = r.rc ? strlen(why) + 1 : sizeof *res * (size_t)r.count;
    char *out = malloc(sizeof r + tail);
    if (!out) {
        free(res);
        snprintf(err, errlen, "worker rank %d: out of memory", rank);
        return -1;
    }
    memcpy(out, &r, sizeof r);
    memcpy(out + sizeof r, r.rc ? (const void *)why : (const void *)res, tail);
    int rc = MPI_Send(out, (int)(sizeof r + tail), MPI_BYTE, 0, TAG_SRESULT, dist_comm);
    free(out);
    free(res);
    return rc == MPI_SUCCESS ? 0 : -1;
}
