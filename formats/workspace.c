/* workspace.c — DIR/workspace.txt, the explorer's part of a workspace (workspace.h). */
#define _GNU_SOURCE
#include "workspace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "err.h"
#include "mask.h"
#include "infile.h"

/* A mask as mask_to_string writes it, z[L*H]. */
static void put_mask(FILE *f, const uint8_t *z, int L, int H) {
    for (int l = 0; l < L; l++) {
        if (l) fputc('/', f);
        for (int h = 0; h < H; h++) fputc(z[l * H + h] == ATTN_FULL ? '1' : '0', f);
    }
}

int workspace_write(const char *path, const workspace_info *ws, char *err, size_t errlen) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) {
        base_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    fprintf(f,
            "bosch-workspace 1\nmodel %s\nshape %d %d\nwindow %d\nsinks %d\ncursor %d %d\nfollow %d\n"
            "edited %d\n",
            ws->model[0] ? ws->model : "-", ws->n_layer, ws->n_head_kv, ws->window, ws->sinks, ws->cur_layer,
            ws->cur_head, ws->follow != 0, ws->edited != 0);
    if (ws->search_done) fputs("done 1\n", f);
    if (ws->have_heldout)
        fprintf(f, "heldout %016" PRIx64 " %.17g %.17g %.17g %d %d\n", ws->heldout_hash, ws->heldout_score,
                ws->heldout_accuracy, ws->heldout_seconds, ws->heldout_samples, ws->heldout_tokens);
    const size_t cells = (size_t)ws->n_layer * ws->n_head_kv;
    for (int i = 0; i < ws->n_undo; i++) {
        fputs("undo ", f);
        put_mask(f, ws->undo + i * cells, ws->n_layer, ws->n_head_kv);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || !text) {
        free(text);
        base_seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = csv_write_text(path, text, err, errlen);
    free(text);
    return rc;
}

/* Parse a mask string into z[L*H]. 0 or -1. */
static int parse_mask(const char *s, uint8_t *z, int L, int H) {
    for (int l = 0; l < L; l++) {
        if (l && *s++ != '/') return -1;
        for (int h = 0; h < H; h++, s++) {
            if (*s != '0' && *s != '1') return -1;
            z[l * H + h] = *s == '1' ? ATTN_FULL : ATTN_SWA;
        }
    }
    return *s ? -1 : 0;
}

/* One "key value" line into ws. 0, or -1 with the field's message in err (no file or line). */
static int parse_line(workspace_info *ws, const char *key, const char *v, char *err, size_t errlen) {
    const int L = ws->n_layer, H = ws->n_head_kv;
    int a = 0, b = 0, k = 0;
    if (!strcmp(key, "model")) {
        snprintf(ws->model, sizeof ws->model, "%s", v);
        return 0;
    }
    if (!strcmp(key, "shape")) {
        if (sscanf(v, "%d %d%n", &a, &b, &k) == 2 && !v[k] && a == L && b == H) return 0;
        base_seterr(err, errlen, "shape: bad value '%s' (the model has %d layers x %d KV heads)", v, L, H);
        return -1;
    }
    if (!strcmp(key, "window") || !strcmp(key, "sinks")) {
        int lo = !strcmp(key, "window");
        if (sscanf(v, "%d%n", &a, &k) == 1 && !v[k] && a >= lo && a <= (1 << 24)) {
            *(lo ? &ws->window : &ws->sinks) = a;
            return 0;
        }
        base_seterr(err, errlen, "%s: bad value '%s' (need tokens in [%d, 2^24])", key, v, lo);
        return -1;
    }
    if (!strcmp(key, "cursor")) {
        if (sscanf(v, "%d %d%n", &a, &b, &k) == 2 && !v[k] && a >= 0 && a < L && b >= 0 && b < H) {
            ws->cur_layer = a, ws->cur_head = b;
            return 0;
        }
        base_seterr(err, errlen, "cursor: bad value '%s' (need a layer < %d and a KV head < %d)", v, L, H);
        return -1;
    }
    if (!strcmp(key, "follow") || !strcmp(key, "edited") || !strcmp(key, "done")) {
        if ((v[0] == '0' || v[0] == '1') && !v[1]) {
            *(!strcmp(key, "follow")   ? &ws->follow
              : !strcmp(key, "edited") ? &ws->edited
                                       : &ws->search_done) = v[0] == '1';
            return 0;
        }
        base_seterr(err, errlen, "%s: bad value '%s' (need 0 or 1)", key, v);
        return -1;
    }
    if (!strcmp(key, "heldout")) {
        if (sscanf(v, "%" SCNx64 " %lf %lf %lf %d %d%n", &ws->heldout_hash, &ws->heldout_score,
                   &ws->heldout_accuracy, &ws->heldout_seconds, &ws->heldout_samples, &ws->heldout_tokens,
                   &k) == 6 &&
            !v[k]) {
            ws->have_heldout = 1;
            return 0;
        }
        base_seterr(err, errlen, "heldout: bad value '%s' (need HASH SCORE ACCURACY SECONDS N T)", v);
        return -1;
    }
    if (!strcmp(key, "undo")) {
        const size_t cells = (size_t)L * H;
        if (ws->n_undo >= WORKSPACE_UNDO_MAX) {
            base_seterr(err, errlen, "undo: more than %d masks", WORKSPACE_UNDO_MAX);
            return -1;
        }
        if (!ws->undo && !(ws->undo = malloc(cells * WORKSPACE_UNDO_MAX))) {
            base_seterr(err, errlen, "out of memory");
            return -1;
        }
        if (parse_mask(v, ws->undo + ws->n_undo * cells, L, H) == 0) {
            ws->n_undo++;
            return 0;
        }
        base_seterr(err, errlen, "undo: bad mask '%.40s' (need %d layers of %d '0'/'1', split by '/')", v, L,
                    H);
        return -1;
    }
    base_seterr(err, errlen, "unknown key '%s'", key);
    return -1;
}

int workspace_read(const char *path, workspace_info *ws, int n_layer, int n_head_kv, char *err,
                   size_t errlen) {
    memset(ws, 0, sizeof *ws);
    ws->n_layer = n_layer, ws->n_head_kv = n_head_kv, ws->follow = 1;
    FILE *f = infile_fopen(path, err, errlen); /* a FIFO is refused, not waited on (infile.h) */
    if (!f) return -1;
    char *line = NULL, why[256] = "";
    size_t cap = 0;
    int rc = 0, no = 0;
    ssize_t len;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        char *sp = strchr(line, ' ');
        if (no == 1) {
            if (strcmp(line, "bosch-workspace 1")) {
                base_seterr(why, sizeof why, "not a workspace file (need 'bosch-workspace 1' first)");
                rc = -1;
            }
            continue;
        }
        if (!sp) {
            base_seterr(why, sizeof why, "bad line '%.40s' (need 'key value')", line);
            rc = -1;
            continue;
        }
        *sp = '\0';
        rc = parse_line(ws, line, sp + 1, why, sizeof why);
    }
    if (rc == 0 && no == 0) base_seterr(why, sizeof why, "empty file"), rc = -1, no = 1;
    free(line);
    fclose(f);
    if (rc) {
        base_seterr(err, errlen, "%s: line %d: %s", path, no, why);
        workspace_info_free(ws);
    }
    return rc;
}

void workspace_info_free(workspace_info *ws) {
    free(ws->undo);
    ws->undo = NULL;
    ws->n_undo = 0;
}
