/* dist_comm.c — MPI start and end, this rank's place, the clock and the stop message (dist.h), and
 * what every part of the MPI mode shares (dist_internal.h: the communicator, the clock, naps, MPI's
 * error texts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"
#include "dist_internal.h"

MPI_Comm dist_comm = MPI_COMM_NULL;
static int g_rank, g_size = 1, g_local;
static char g_host[MPI_MAX_PROCESSOR_NAME];

double dist_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void dist_nap(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

const char *dist_errstr(int code, char *buf, int cap) {
    int len = 0;
    if (cap < 2 || MPI_Error_string(code, buf, &len) != MPI_SUCCESS)
        snprintf(buf, (size_t)cap, "MPI error %d", code);
    return buf;
}

int dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    char msg[MPI_MAX_ERROR_STRING];
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed: %s", dist_errstr(rc, msg, sizeof msg));
        return -1;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dist_comm);
    MPI_Comm_set_errhandler(dist_comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(dist_comm, &g_rank);
    MPI_Comm_size(dist_comm, &g_size);
    MPI_Comm local;
    if (MPI_Comm_split_type(dist_comm, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &g_local);
        MPI_Comm_free(&local);
    }
    int len = 0;
    MPI_Get_processor_name(g_host, &len);
    return 0;
}

int dist_rank(void) {
    return g_rank;
}
int dist_size(void) {
    return g_size;
}
int dist_local_rank(void) {
    return g_local;
}
const char *dist_host(void) {
    return g_host;
}

void dist_finalize(void) {
    if (dist_comm != MPI_COMM_NULL) MPI_Comm_free(&dist_comm);
    MPI_Finalize();
}

void dist_abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
}

int dist_send_stop(int rank) {
    MPI_Request rq;
    if (MPI_Isend(NULL, 0, MPI_BYTE, rank, TAG_STOP, dist_comm, &rq) != MPI_SUCCESS) return -1;
    for (int i = 0, done = 0; i < 10000; i++) { /* at most about a second */
        if (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (done) return 0;
        dist_nap(100);
    }
    MPI_Cancel(&rq);
    return -1;
}
