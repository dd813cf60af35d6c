/* scores.h — per-KV-head scores of the static head rankings (higher = keep full), for other
 * tools. The rankings and their order are the caller's (the method registry's head rankings,
 * search/search_methods.h: ablation, fisher, locality, echo, then any row added).
 *
 * CSV (one row per KV head, layer then kv_head order), columns:
 *   layer, kv_head                     0-based
 *   <name> for each ranking            the ranking's importance, 10 significant digits ("%.10g");
 *                                      empty when that ranking was not computed
 *   rank_<name> for each ranking       1 = the most important head of that ranking (ties: lower
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

#define SCORES_MAX 32 /* rankings a file holds at most */

/* Write the CSV to path (atomic). n rankings (1..SCORES_MAX) named name[k] (lower case, no comma),
 * in column order; score[k] is ranking k's [n_layer][n_head_kv] scores or NULL (not computed).
 * 0, or -1 with a message. */
int scores_write_csv(const char *path, int n_layer, int n_head_kv, int n, const char *const *name,
                     const double *const *score, char *err, size_t errlen);

/* The whole scores folder: DIR/scores.csv and DIR/<name>.json for each ranking computed (score[k]
 * not NULL; the CSV leaves the others' cells empty), DIR created if missing (one level). n, name,
 * score as scores_write_csv. 0, or -1 with a message naming the file. */
int scores_write_folder(const char *dir, int n_layer, int n_head_kv, int n, const char *const *name,
                        const double *const *score, char *err, size_t errlen);

/* Write one ranking's scores [n_layer][n_head_kv] as Retrieval-Head JSON to path (atomic).
 * 0, or -1. */
int scores_write_json(const char *path, int n_layer, int n_head_kv, const double *score, char *err,
                      size_t errlen);

/* rank[i] = 1 + the number of heads ranked before head i (higher score first; ties by index). */
void scores_rank(const double *score, int n, int *rank);

#endif
