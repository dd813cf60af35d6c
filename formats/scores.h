/* scores.h — per-KV-head scores of the static head rankings (search.h: ablation, fisher, locality,
 * echo; higher = keep full), for other tools.
 *
 * CSV (one row per KV head, layer then kv_head order), columns:
 *   layer, kv_head                     0-based
 *   ablation, fisher, locality, echo   the ranking's importance, 10 significant digits ("%.10g");
 *                                      empty when that ranking was not computed
 *   rank_ablation ... rank_echo        1 = the most important head of that ranking (ties: lower
 *                                      layer, then lower kv_head, first); empty when not computed
 * JSON, one file per ranking, in the layout of the Retrieval-Head repository
 * (nightdessert/Retrieval_Head, the .json files of its head_score folder: an object whose keys
 * are "layer-head"): here
 * {"L-G": score} with G the KV head. Retrieval-Head stores a list of per-sample scores and
 * averages it (numpy.mean), which also reads our single number.
 */
#ifndef BOSCH_SCORES_H
#define BOSCH_SCORES_H

#include <stddef.h>

#define SCORES_N 4 /* ablation, fisher, locality, echo */

/* The rankings' names, in column order. */
extern const char *const scores_names[SCORES_N];

/* Write the CSV to path (atomic). score[k] is ranking k's [n_layer][n_head_kv] scores or NULL
 * (not computed). 0, or -1 with a message. */
int scores_write_csv(const char *path, int n_layer, int n_head_kv, const double *const score[SCORES_N],
                     char *err, size_t errlen);

/* The whole scores folder: DIR/scores.csv and DIR/<ranking>.json for each ranking (scores_names)
 * computed (score[k] not NULL; the CSV leaves the others' cells empty), DIR created if missing
 * (one level). 0, or -1 with a message naming the file. */
int scores_write_folder(const char *dir, int n_layer, int n_head_kv, const double *const score[SCORES_N],
                        char *err, size_t errlen);

/* Write one ranking's scores [n_layer][n_head_kv] as Retrieval-Head JSON to path (atomic).
 * 0, or -1. */
int scores_write_json(const char *path, int n_layer, int n_head_kv, const double *score, char *err,
                      size_t errlen);

/* rank[i] = 1 + the number of heads ranked before head i (higher score first; ties by index). */
void scores_rank(const double *score, int n, int *rank);

#endif
