/* dist.c — the workers' serve loop (dist.h). MPI's start and end are dist_comm.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"
#include "dist_internal.h"

/* ---- workers ----------------------------------------------------------------------------------- */

/* Wait for any message from rank 0: its tag and size. Workers poll too (a short nap between
 * probes, so an idle worker leaves its core to rank 0's share of the work). 0, or -1. */
static int wait_rank0(MPI_Status *st, int *bytes, char *err, size_t errlen) {
    for (;;) {
        int flag = 0, rc = MPI_Iprobe(0, MPI_ANY_TAG, dist_comm, &flag, st);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            snprintf(err, errlen, "worker rank %d: rank 0 lost: %s", dist_rank(),
                     dist_errstr(rc, msg, sizeof msg));
            return -1;
        }
        if (flag) return MPI_Get_count(st, MPI_BYTE, bytes) == MPI_SUCCESS ? 0 : -1;
        dist_nap(200);
    }
}

int dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen) {
    MPI_Status st;
    int bytes = 0;
    *blob = NULL, *n = 0;
    if (wait_rank0(&st, &bytes, err, errlen)) return -1;
    char *b = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!b) {
        snprintf(err, errlen, "worker rank %d: out of memory", dist_rank());
        return -1;
    }
    MPI_Recv(b, bytes, MPI_BYTE, 0, st.MPI_TAG, dist_comm, MPI_STATUS_IGNORE);
    if (st.MPI_TAG == TAG_STOP) {
        free(b);
        return 1;
    }
    *blob = b, *n = (size_t)bytes;
    return 0;
}

int dist_worker_ready(int rc, const char *desc, const char *msg) {
    dist_ready r;
    memset(&r, 0, sizeof r);
    r.rc = rc;
    snprintf(r.host, sizeof r.host, "%s", dist_host());
    snprintf(r.desc, sizeof r.desc, "%s", desc ? desc : "");
    snprintf(r.err, sizeof r.err, "%s", msg ? msg : "");
    return MPI_Send(&r, (int)sizeof r, MPI_BYTE, 0, TAG_READY, dist_comm) == MPI_SUCCESS ? 0 : -1;
}

static void inject_fault(const dist_fault *f, long answered) {
    if (!f || f->kind == 0 || answered < f->after) return;
    fprintf(stderr, "worker rank %d: fault injected after %ld jobs (%s)\n", dist_rank(), answered,
            f->kind == 1 ? "no more answers" : "exit");
    if (f->kind == 2) _exit(3);
    for (;;) dist_nap(1000000);
}

/* Score one job (its message of `bytes` bytes in buf) and send the result. 0 or -1. */
static int serve_job(const search_objective *obj, const char *buf, int bytes, char *err, size_t errlen) {
    if ((size_t)bytes < sizeof(dist_job_head)) {
        snprintf(err, errlen, "worker rank %d: a job of %d bytes", dist_rank(), bytes);
        return -1;
    }
    dist_job_head h;
    memcpy(&h, buf, sizeof h);
    attn_mask m = {h.n_layer, h.n_head_kv, h.window, h.sinks, (uint8_t *)(buf + sizeof h)};
    search_eval e;
    char why[512] = "";
    dist_result_head r = {h.id, 0, 0, 0, 0, 0, 0, 0};
    if ((size_t)bytes != sizeof h + (size_t)h.n_layer * h.n_head_kv) {
        snprintf(why, sizeof why, "a job of %d bytes for a %d x %d mask", bytes, h.n_layer, h.n_head_kv);
        r.rc = -1;
    } else if (!obj) {
        snprintf(why, sizeof why, "this command's workers score no calibration masks");
        r.rc = -1;
    } else if (obj->score(obj->ctx, &m, h.make_base, &e, why, sizeof why)) {
        r.rc = -1;
    }
    size_t tail = r.rc ? strlen(why) + 1 : (size_t)(e.sample_nll ? e.n_samples : 0) * sizeof(double);
    char *out = malloc(sizeof r + tail);
    if (!out) {
        snprintf(err, errlen, "worker rank %d: out of memory", dist_rank());
        return -1;
    }
    if (!r.rc) {
        r.n_samples = e.sample_nll ? e.n_samples : 0;
        r.score = e.score, r.accuracy = e.accuracy, r.nll = e.nll, r.seconds = e.seconds;
        if (tail) memcpy(out + sizeof r, e.sample_nll, tail);
    } else {
        memcpy(out + sizeof r, why, tail);
    }
    memcpy(out, &r, sizeof r);
    int rc = MPI_Send(out, (int)(sizeof r + tail), MPI_BYTE, 0, TAG_RESULT, dist_comm);
    free(out);
    return rc == MPI_SUCCESS ? 0 : -1;
}

int dist_worker_serve(const dist_handlers *h, const dist_fault *fault, char *err, size_t errlen) {
    long answered = 0;
    char *buf = NULL;
    int cap = 0;
    for (;;) {
        MPI_Status st;
        int bytes = 0;
        if (wait_rank0(&st, &bytes, err, errlen)) break;
        if (bytes > cap) {
            char *p = realloc(buf, (size_t)bytes);
            if (!p) {
                snprintf(err, errlen, "worker rank %d: out of memory", dist_rank());
                break;
            }
            buf = p, cap = bytes;
        }
        MPI_Recv(buf, bytes, MPI_BYTE, 0, st.MPI_TAG, dist_comm, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == TAG_STOP) {
            free(buf);
            return 0;
        }
        if (st.MPI_TAG != TAG_JOB && st.MPI_TAG != TAG_SAMPLES) continue;
        inject_fault(fault, answered);
        if (st.MPI_TAG == TAG_JOB ? serve_job(h->obj, buf, bytes, err, errlen)
                                  : dist_serve_samples(h, dist_rank(), buf, bytes, err, errlen))
            break;
        answered++;
    }
    free(buf);
    return -1;
}
