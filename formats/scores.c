/* scores.c — the static rankings' per-head scores as CSV and Retrieval-Head JSON (see scores.h). */
#include "scores.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csvio.h"
#include "jsonio.h"

void scores_rank(const double *score, int n, int *rank) {
    for (int i = 0; i < n; i++) {
        int r = 1;
        for (int j = 0; j < n; j++) r += score[j] > score[i] || (score[j] == score[i] && j < i);
        rank[i] = r;
    }
}

int scores_write_csv(const char *path, int n_layer, int n_head_kv, int n_rank, const char *const *name,
                     const double *const *score, char *err, size_t errlen) {
    if (n_rank < 1 || n_rank > SCORES_MAX) {
        snprintf(err, errlen, "%s: %d rankings (1..%d)", path, n_rank, SCORES_MAX);
        return -1;
    }
    const int n = n_layer * n_head_kv, n_col = 2 + 2 * n_rank;
    char head[2 + 2 * SCORES_MAX][48];
    const char *header[2 + 2 * SCORES_MAX] = {"layer", "kv_head"};
    for (int k = 0; k < n_rank; k++) {
        snprintf(head[2 + k], sizeof head[0], "%s", name[k]);
        snprintf(head[2 + n_rank + k], sizeof head[0], "rank_%s", name[k]);
        header[2 + k] = head[2 + k], header[2 + n_rank + k] = head[2 + n_rank + k];
    }
    int *rank = calloc((size_t)n * n_rank, sizeof *rank);
    if (!rank) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int k = 0; k < n_rank; k++)
        if (score[k]) scores_rank(score[k], n, rank + (size_t)k * n);
    csv_out *w = csv_out_open(path, header, n_col, err, errlen);
    int bad = !w;
    for (int i = 0; i < n && !bad; i++) {
        char cell[2 + 2 * SCORES_MAX][32];
        const char *f[2 + 2 * SCORES_MAX];
        snprintf(cell[0], 32, "%d", i / n_head_kv);
        snprintf(cell[1], 32, "%d", i % n_head_kv);
        for (int k = 0; k < n_rank; k++) {
            cell[2 + k][0] = cell[2 + n_rank + k][0] = '\0';
            if (!score[k]) continue;
            snprintf(cell[2 + k], 32, "%.10g", score[k][i]);
            snprintf(cell[2 + n_rank + k], 32, "%d", rank[(size_t)k * n + i]);
        }
        for (int c = 0; c < n_col; c++) f[c] = cell[c];
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

int scores_write_folder(const char *dir, int n_layer, int n_head_kv, int n, const char *const *name,
                        const double *const *score, char *err, size_t errlen) {
    char path[4096];
    if (mkdir(dir, 0777) && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create the folder: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/scores.csv", dir);
    int rc = scores_write_csv(path, n_layer, n_head_kv, n, name, score, err, errlen);
    for (int k = 0; k < n && !rc; k++) {
        if (!score[k]) continue;
        snprintf(path, sizeof path, "%s/%s.json", dir, name[k]);
        rc = scores_write_json(path, n_layer, n_head_kv, score[k], err, errlen);
    }
    return rc;
}
