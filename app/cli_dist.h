/* cli_dist.h — the commands' side of the MPI mode (dist/dist.h; docs/distributed.md). Compiled
 * always: without MPI (BOSCH_MPI undefined) every rank is rank 0 of 1 and nothing is distributed.
 * Only this file's .c reads the environment for the MPI mode (the libraries read none). */
#ifndef BOSCH_CLI_DIST_H
#define BOSCH_CLI_DIST_H

#include <stddef.h>

#include "search.h"

/* MPI_Init when the program was started by mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK is set)
 * and built with MPI. Built without MPI, more than one rank is refused (each would run the whole
 * command on the same files). 0, or 1 (message printed). */
int cli_dist_init(int *argc, char ***argv);
/* 1 when running under mpirun with the MPI mode (even with one rank). */
int cli_dist_active(void);
int cli_dist_rank(void);       /* 0 without MPI */
int cli_dist_size(void);       /* 1 without MPI */
int cli_dist_local_rank(void); /* the GPU a rank uses: its index among the ranks on its host */
/* End of main with exit status rc: after a worker fault every rank is aborted (MPI_Abort, so a
 * silent worker cannot hold the job); rank 0 tells workers that never got a setup to stop; then
 * MPI_Finalize. Returns rc. */
int cli_dist_end(int rc);

/* Rank 0: start the workers with `setup` (n bytes, the command's settings) and make *obj the pool
 * objective over `local` (rank 0's own share). timeout_s: seconds a worker may take per answer.
 * 0, or -1 with a message (naming the rank and host of a worker that failed). */
int cli_dist_start(const search_objective *local, const void *setup, size_t n, double timeout_s,
                   search_objective *obj, char *err, size_t errlen);
/* Rank 0: "R ranks, J jobs, S bytes sent, B bytes received" (empty without a pool). */
void cli_dist_describe(char *buf, size_t cap);
/* Rank 0: 1 when a worker failed. */
int cli_dist_failed(void);
/* Rank 0: stop the workers (unless one failed) and free the pool. */
void cli_dist_stop(void);

/* Workers: wait for the setup blob (*blob malloc'd). 0, 1 (told to stop first), -1 (message). */
int cli_dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen);
/* Workers: report ready (rc 0, desc the device) or failed (rc -1, msg), then (rc 0) serve obj
 * until told to stop; BOSCH_DIST_FAULT=RANK:N:hang|exit injects a fault in rank RANK after N
 * jobs (tests/mpi_search.sh). The exit status (0 stopped, 1 error, printed). */
int cli_dist_worker_run(const char *cmd, int rc, const char *desc, const char *msg,
                        const search_objective *obj);

#endif
