/* scores.c — the static rankings' per-head scores as CSV and Retrieval-Head JSON (see scores.h). */
#include "scores.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csvio.h"
#include "jsonio.h"

const char *const scores_names[SCORES_N] = {"ablation", "fisher", "locality", "echo"};

void scores_rank(const double *score, int n, int *rank) {
    for (int i = 0; i < n; i++) {
        int r = 1;
        for (int j = 0; j < n; j++) r += score[j] > score[i] || (score[j] == score[i] && j < i);
        rank[i] = r;
    }
}

int scores_write_csv(const char *path, int n_layer, int n_head_kv, const double *const score[SCORES_N],
                     char *err, size_t errlen) {
    static const char *const header[] = {"layer",         "kv_head",  "ablation",      "fisher",
                                         "locality",      "echo",     "rank_ablation", "rank_fisher",
                                         "rank_locality", "rank_echo"};
    int n = n_layer * n_head_kv;
    int *rank = calloc((size_t)n * SCORES_N, sizeof *rank);
    if (!rank) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int k = 0; k < SCORES_N; k++)
        if (score[k]) scores_rank(score[k], n, rank + (size_t)k * n);
    csv_out *w = csv_out_open(path, header, 10, err, errlen);
    int bad = !w;
    for (int i = 0; i < n && !bad; i++) {
        char cell[2 + 2 * SCORES_N][32];
        const char *f[2 + 2 * SCORES_N];
        snprintf(cell[0], 32, "%d", i / n_head_kv);
        snprintf(cell[1], 32, "%d", i % n_head_kv);
        for (int k = 0; k < SCORES_N; k++) {
            cell[2 + k][0] = cell[2 + SCORES_N + k][0] = '\0';
            if (!score[k]) continue;
            snprintf(cell[2 + k], 32, "%.10g", score[k][i]);
            snprintf(cell[2 + SCORES_N + k], 32, "%d", rank[(size_t)k * n + i]);
        }
        for (int c = 0; c < 2 + 2 * SCORES_N; c++) f[c] = cell[c];
        bad = csv_out_row(w, f) != 0;
    }
    free(rank);
    if (bad) {
        if (w) csv_out_abort(w);
        if (w) snprintf(err, errlen, "%s: cannot write a row", path);
        return -1;
    }
    return csv_out_commit(w, err, errlen);
}

int scores_write_json(const char *path, int n_layer, int n_head_kv, const double *score, char *err,
                      size_t errlen) {
    struct json_object *o = json_object_new_object();
    int bad = !o;
    for (int l = 0; l < n_layer && !bad; l++)
        for (int h = 0; h < n_head_kv && !bad; h++) {
            char key[32];
            snprintf(key, sizeof key, "%d-%d", l, h);
            bad = json_object_object_add(o, key, json_number(score[(size_t)l * n_head_kv + h])) != 0;
        }
    return json_write_put(path, o, !bad, err, errlen);
}

int scores_write_folder(const char *dir, int n_layer, int n_head_kv, const double *const score[SCORES_N],
                        char *err, size_t errlen) {
    char path[4096];
    if (mkdir(dir, 0777) && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create the folder: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/scores.csv", dir);
    int rc = scores_write_csv(path, n_layer, n_head_kv, score, err, errlen);
    for (int k = 0; k < SCORES_N && !rc; k++) {
        if (!score[k]) continue;
        snprintf(path, sizeof path, "%s/%s.json", dir, scores_names[k]);
        rc = scores_write_json(path, n_layer, n_head_kv, score[k], err, errlen);
    }
    return rc;
}
