/* compare.h — the comparison protocol behind `bosch compare` (and the explorer's comparison view):
 * every method's masks at several ratios from the calibration split, scored on a validation split
 * (to choose options and defaults) and a held-out split (only reported), with 95 % Wilson intervals
 * and exact McNemar tests between BOSCH and the best other method on the same samples.
 *
 * Splits (datasets/probes.h): calibration (the only thing a search sees: search_calib_generate),
 * validation (PROBE_SPLIT_VALIDATION) and held-out (PROBE_SPLIT_HELDOUT), each with its own seed
 * and depth grid, and transfer (the held-out generator at longer lengths: length transfer). A
 * split is a list of cells (task, haystack, length, samples).
 *
 * Resumable: every calibration evaluation and every (cell, mask) score is appended to
 * DIR/cache.tsv as it is made, keyed by mask hash; a run stopped half-way and started again with
 * the same plan answers everything it has from the cache (the searches replay through it) and
 * continues. The cache's first line holds a fingerprint of the plan and the model; another plan in
 * the same folder is refused with a message rather than mixed in.
 *
 * Outputs (all written atomically, formats/csvio.h; columns in docs/search.md):
 *   results.csv   split,method,ratio,task,haystack,length,n,hits,accuracy,ci_lo,ci_hi,score,kv_bytes
 *                 per cell and "all" (task/haystack "all", length 0) per split, method and ratio;
 *   references.csv  all full and all SWA on every cell of each split, with the window check (full
 *                 >= 0.9 and all-SWA <= 0.1 exact: "ok", else what fails; docs/search.md);
 *   tests.csv     per split and ratio: BOSCH against the best other method (highest accuracy on that
 *                 split among those scored there), discordant counts and the exact McNemar p-value;
 *   (results.csv, references.csv, tests.csv and table.md have split "transfer" rows when the plan
 *                 has a transfer split)
 *   calibration.csv  every final mask's normalized calibration score S^ and evaluations spent, its
 *                 search's racing and confirmation (finalists scored, the one kept: refined, or the
 *                 start it came from: stage3, drop, fisher, locality, echo, start);
 *   turnover.csv  per method and adjacent ratios: T (SWA heads at the lower ratio that are full at
 *                 the higher one) and T~ = T / sqrt(|SWA_lo| * |FULL_hi|) (docs/search.md);
 *   aprime.csv    the A' experiment (docs/search.md): BOSCH's mask at the higher ratio with a random
 *                 subset of its SWA heads traded for heads it kept full at the lower ratio;
 *   jaccard.csv, mask_<method>_<ratio>.csv, table.md (the markdown table also printed).
 */
#ifndef BOSCH_COMPARE_H
#define BOSCH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "eval.h"
#include "mask.h"
#include "model.h"
#include "probe_score.h"
#include "probes.h"
#include "search.h"

#define COMPARE_MAX_METHODS 24
#define COMPARE_MAX_RATIOS 8
#define COMPARE_MAX_CELLS 16

typedef struct {
    probe_task task;
    haystack_kind haystack;
    int length;    /* tokens */
    int n_samples; /* per cell */
} compare_cell;

typedef struct {
    search_config cfg;                     /* calibration size, window, sinks, budgets, seed */
    char methods[COMPARE_MAX_METHODS][32]; /* search_variant_apply names */
    int n_methods;
    double ratios[COMPARE_MAX_RATIOS];
    int n_ratios;
    compare_cell valid[COMPARE_MAX_CELLS]; /* n_valid 0: no validation split */
    int n_valid;
    compare_cell heldout[COMPARE_MAX_CELLS];
    int n_heldout;
    /* The transfer split (n_transfer 0: none): the held-out tasks at the lengths a mask is deployed
     * for, longer than the calibration's (held-out generator and seed, same window), where each
     * final mask's accuracy is measured again. transfer_others 0: every method is scored there;
     * k > 0: at each ratio only "bosch" and the k best other methods on the validation split (exact
     * matches, then mean answer probability, then plan order), which are then scored on validation
     * too; never chosen on held-out. */
    compare_cell transfer[COMPARE_MAX_CELLS];
    int n_transfer;
    int transfer_others;
    int aprime_seeds; /* seeds of the A' experiment (0: none) */
    char preset[16];  /* informational */
} compare_plan;

/* A named protocol:
 *   bench  the documented comparison (docs/search.md: its command, size and wall time);
 *   ci     the same protocol scaled down to run in CI in minutes;
 *   quick  the old small table (2 x 256 calibration, 4 held-out samples per cell; no validation).
 * Sets everything of *p (the model gives the context length for the search preset). 0, or -1 with
 * a message naming the presets. */
int compare_plan_preset(compare_plan *p, const char *preset, const model *m, char *err, size_t errlen);

/* Check a plan without the model (counts, increasing ratios, known lower-case method names listed
 * once, the A' seeds' room, the search config). 0, or -1 with a message. compare_run checks it too. */
int compare_plan_check(const compare_plan *p, char *err, size_t errlen);

/* Progress lines for the caller to show ("bosch_paper@0.75: stage 3 done, 212 evaluations"). */
typedef void (*compare_progress)(const char *line, void *user);

/* What a finished run holds (also written to the folder). */
typedef struct compare_result compare_result;

/* Where a comparison's evaluations run besides this process: `bosch compare` under mpirun
 * (app/cli_dist.h, docs/distributed.md). Every hook must give exactly what the local path gives
 * for the same masks (each answer a function of its mask alone), so the files do not depend on it.
 * A NULL compare_exec, or NULL hooks: everything here. */
typedef struct {
    /* Once, with this process's calibration objective (plan.cfg's split): make *out an objective
     * whose score_batch spreads a batch (its score() may stay local); it must outlive the run.
     * 0, or -1 with a message. */
    int (*calib)(void *user, const search_objective *local, search_objective *out, char *err, size_t errlen);
    int batch; /* the searches' batch with calib (search_set_batch; below 2: none) */
    /* Score masks[0..n) on every sample of the cell (a reuse scorer's results, probe_score.h), the
     * masks in the order given (lexicographic rows: prefix reuse), into res[k][0..cell.n_samples).
     * 0, 1 (stopped), or -1 with a message. */
    int (*cell)(void *user, const probe_cell *cell, const attn_mask *const *masks, int n,
                eval_sample_result *const *res, char *err, size_t errlen);
    void *user;
} compare_exec;

/* Run the plan into out_dir (created if missing): masks, validation and held-out scores, reports.
 * be: the evaluators' backend (engine/backend.h; NULL = a CPU one per evaluator), part of the cache
 * fingerprint together with the model's GEMM precision. ex (may be NULL): other processes' share
 * of the evaluations. stop (may be NULL): checked between evaluations; a stopped run returns 1 with
 * everything so far in the cache. 0 done, 1 stopped, -1 error with a message. */
int compare_run(const compare_plan *p, const model *m, const backend *be, const compare_exec *ex,
                const char *out_dir, volatile int *stop, compare_progress progress, void *user,
                compare_result **out, char *err, size_t errlen);
void compare_result_free(compare_result *r);

/* The markdown table of a result (held-out accuracy [Wilson interval] per method and ratio, the
 * McNemar p-values of BOSCH against the best other method), into buf. */
void compare_result_table(const compare_result *r, char *buf, size_t cap);

/* A finished comparison's mask of one method at one ratio (NULL if absent). */
const attn_mask *compare_result_mask(const compare_result *r, const char *method, double ratio);

/* T~ of the turnover from a mask at a lower ratio to one at a higher ratio (see above); 0 when
 * either set is empty. *t_raw gets T. */
double compare_turnover(const attn_mask *lo, const attn_mask *hi, int *t_raw);

/* One method's held-out line of a finished comparison folder (results.csv, split heldout, task all). */
typedef struct {
    char method[32];
    double ratio, accuracy, ci_lo, ci_hi, score;
    long n, hits;
    char mask_path[4200]; /* DIR/mask_<method>_<ratio>.csv */
} compare_row;

/* The held-out rows of DIR/results.csv at the folder's ratio closest to `ratio` (*ratio_used),
 * one per method, in file order, at most cap. For the explorer's comparison view. 0, or -1 with a
 * message naming the file (missing, too large, not a results file of this program). */
int compare_folder_rows(const char *dir, double ratio, compare_row *rows, int cap, int *n_rows,
                        double *ratio_used, char *err, size_t errlen);
/* compare_folder_rows on the text of a results.csv already in memory (buf[0..n); dir names the
 * folder in messages and mask paths). Bounds of both: 16 MiB, 100000 rows, lines of 4096 bytes. */
int compare_folder_rows_memory(const char *dir, const char *buf, size_t n, double ratio, compare_row *rows,
                               int cap, int *n_rows, double *ratio_used, char *err, size_t errlen);

#endif
