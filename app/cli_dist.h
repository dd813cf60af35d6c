/* cli_dist.h — the commands' side of the MPI mode (mpi/dist.h; docs/distributed.md). Compiled
 * always: without MPI (BOSCH_MPI undefined) every rank is rank 0 of 1 and nothing is distributed.
 * Only this file's .c reads the environment for the MPI mode (the libraries read none).
 *
 * Under mpirun, rank 0 runs the command and writes every file; the other ranks are workers:
 *   search, compare  the setup is the search_config of the calibration split; workers score
 *                    calibration masks (batches) and, for compare, masks on probe cells;
 *   eval             workers score the mask on their share of each cell's samples.
 */
#ifndef BOSCH_CLI_DIST_H
#define BOSCH_CLI_DIST_H

#include <stddef.h>

#include "backend.h"
#include "eval.h"
#include "model.h"
#include "probe_score.h"
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

/* The run options of the MPI mode: --batch B (search and compare) and --worker-timeout S. */
typedef struct {
    int batch;             /* --batch (0: the number of ranks under mpirun, else 1) */
    double worker_timeout; /* --worker-timeout, seconds (default 600) */
} cli_dist_opts;

void cli_dist_opts_init(cli_dist_opts *o);
/* Option a with value v (NULL: missing) for command cmd; with_batch 0 refuses --batch as unknown.
 * command.h's CMD_OPT_VALUE, CMD_OPT_BAD (message printed) or CMD_OPT_UNKNOWN. */
int cli_dist_option(const char *cmd, int with_batch, cli_dist_opts *o, const char *a, const char *v);
/* The usage lines of those options. */
extern const char cli_dist_usage_batch[], cli_dist_usage_timeout[];
/* The batch a search uses: --batch, else the number of ranks. */
int cli_dist_batch(const cli_dist_opts *o);

/* Rank 0: start the workers with `setup` (n bytes, the command's settings) and, when local is not
 * NULL, make *obj the pool objective over `local` (rank 0's own share). m and be: rank 0's share
 * of sample jobs (cli_dist_cell_*). timeout_s: seconds a worker may take per answer. 0, or -1 with
 * a message (naming the rank and host of a worker that failed). */
int cli_dist_start(const model *m, const backend *be, const search_objective *local, const void *setup,
                   size_t n, double timeout_s, search_objective *obj, char *err, size_t errlen);
/* Rank 0: "R ranks, J jobs, S bytes sent, B bytes received" (empty without a pool). */
void cli_dist_describe(char *buf, size_t cap);
/* Rank 0: 1 when a worker failed. */
int cli_dist_failed(void);
/* Rank 0: stop the workers (unless one failed) and free the pool. */
void cli_dist_stop(void);

/* Rank 0, after cli_dist_start: masks[0..n) on every sample of the cell, reuse scorers (compare's
 * splits): the list cut into cli_dist_size() contiguous shares in its order, share c on rank c,
 * share 0 here; res[k][0..cell.n_samples). 0, or -1 with a message. */
int cli_dist_cell_masks(const probe_cell *cell, const attn_mask *const *masks, int n,
                        eval_sample_result *const *res, char *err, size_t errlen);
/* Rank 0, after cli_dist_start: one mask on the cell's samples (eval): the samples cut into
 * cli_dist_size() contiguous ranges, range c on rank c, range 0 here, no reuse; res[0..n_samples).
 * 0, or -1 with a message. */
int cli_dist_cell_samples(const probe_cell *cell, const attn_mask *mask, eval_sample_result *res, char *err,
                          size_t errlen);

/* Workers: wait for the setup blob (*blob malloc'd). 0, 1 (told to stop first), -1 (message). */
int cli_dist_worker_setup(void **blob, size_t *n, char *err, size_t errlen);
/* Workers: report ready (rc 0, desc the device) or failed (rc -1, msg), then (rc 0) serve
 * calibration masks with obj (may be NULL) and probe-cell jobs on (m, be) until told to stop;
 * BOSCH_DIST_FAULT=RANK:N:hang|exit injects a fault in rank RANK after N jobs (tests/mpi_*.sh). The
 * exit status (0 stopped, 1 error, printed). */
int cli_dist_worker_run(const char *cmd, int rc, const char *desc, const char *msg,
                        const search_objective *obj, const model *m, const backend *be);
/* A whole worker of search and compare: the setup is rank 0's search_config; the same
 * calibration split and objective, then cli_dist_worker_run. Writes no file. The exit status. */
int cli_dist_worker_calib(const char *cmd, const model *m, const backend *be);
/* A whole worker of eval: any setup; probe-cell jobs only. The exit status. */
int cli_dist_worker_samples(const char *cmd, const model *m, const backend *be);

#endif
