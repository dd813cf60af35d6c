/* search_pins.c — pinned KV heads (search.h: search_config.pins; docs/search.md "Pinned heads"):
 * parsing the lists and the pin file, the checks against a shape and a target, the pinned cut of a
 * static ranking, and what the search's stages need (search_internal.h: the per-head pin map, the
 * stage-2 allocation within each layer's bounds, the layer heuristics over the layers that can go
 * SWA).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Index of (layer, kv_head) in pins[n], or -1. */
static int pin_at(const search_pin *pins, int n, int layer, int kv_head) {
    for (int i = 0; i < n; i++)
        if (pins[i].layer == layer && pins[i].kv_head == kv_head) return i;
    return -1;
}

static int pin_find(const search_config *cfg, int layer, int kv_head) {
    return pin_at(cfg->pins, cfg->n_pins, layer, kv_head);
}

/* One "L.H" item of length n at s into *layer, *kv_head. 0 or -1. */
static int parse_head(const char *s, size_t n, int *layer, int *kv_head) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long l = strtol(buf, &end, 10);
    if (end == buf || *end != '.' || errno || l < 0 || l > 32767 || !isdigit((unsigned char)buf[0]))
        return -1;
    const char *p = end + 1;
    long h = strtol(p, &end, 10);
    if (end == p || *end || errno || h < 0 || h > 32767 || !isdigit((unsigned char)p[0])) return -1;
    *layer = (int)l, *kv_head = (int)h;
    return 0;
}

static int add_list(search_pin *pins, int *n_pins, const char *list, int swa, char *err, size_t errlen);

int search_pins_add_list(search_pin *pins, int *n_pins, const char *list, int swa, char *err, size_t errlen) {
    const int n0 = *n_pins; /* all or nothing: a bad item adds none of the list */
    if (add_list(pins, n_pins, list, swa, err, errlen) == 0) return 0;
    *n_pins = n0;
    return -1;
}

static int add_list(search_pin *pins, int *n_pins, const char *list, int swa, char *err, size_t errlen) {
    if (!list || !*list) {
        snprintf(err, errlen, "bad value '' (need a list of heads LAYER.KV_HEAD, e.g. 3.1,12.0)");
        return -1;
    }
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, ",");
        size_t t = n;
        while (t > 0 && p[t - 1] == ' ') t--;
        int layer, head;
        if (parse_head(p, t, &layer, &head)) {
            snprintf(err, errlen, "bad value '%.*s' in '%s' (need LAYER.KV_HEAD, e.g. 3.1)",
                     (int)(t < 40 ? t : 40), p, list);
            return -1;
        }
        const int at = pin_at(pins, *n_pins, layer, head);
        if (at >= 0 && pins[at].swa != (swa != 0)) {
            snprintf(err, errlen, "bad value '%d.%d': that head is already pinned %s", layer, head,
                     pins[at].swa ? "SWA" : "full");
            return -1;
        }
        if (at < 0) {
            if (*n_pins >= SEARCH_PINS_MAX) {
                snprintf(err, errlen, "bad value '%s': more than %d pinned heads", list, SEARCH_PINS_MAX);
                return -1;
            }
            pins[(*n_pins)++] = (search_pin){(int16_t)layer, (int16_t)head, (uint8_t)(swa != 0)};
        }
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(err, errlen, "bad value '%s' (a comma ends the list)", list);
                return -1;
            }
        }
    }
    return 0;
}

int search_pins_read(search_pin *pins, int *n_pins, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[8192];
    int ln = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        ln++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            snprintf(err, errlen, "%s: line %d: longer than %zu bytes", path, ln, sizeof line - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        n = strlen(line);
        while (n > 0 && isspace((unsigned char)line[n - 1])) line[--n] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        int swa;
        if (!strncmp(p, "full ", 5))
            swa = 0, p += 5;
        else if (!strncmp(p, "swa ", 4))
            swa = 1, p += 4;
        else {
            snprintf(err, errlen, "%s: line %d: need 'full L.H,...' or 'swa L.H,...', not '%.40s'", path, ln,
                     p);
            rc = -1;
            break;
        }
        char why[256];
        if (search_pins_add_list(pins, n_pins, p, swa, why, sizeof why)) {
            snprintf(err, errlen, "%s: line %d: %s", path, ln, why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

char *search_pins_format(const search_config *cfg, int swa, char *buf, size_t cap) {
    size_t at = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < cfg->n_pins; i++) {
        if (cfg->pins[i].swa != (swa != 0)) continue;
        int n = snprintf(buf + at, at < cap ? cap - at : 0, "%s%d.%d", at ? "," : "", cfg->pins[i].layer,
                         cfg->pins[i].kv_head);
        if (n > 0) at += (size_t)n;
    }
    return buf;
}

int search_pins_equal(const search_config *a, const search_config *b) {
    if (a->n_pins != b->n_pins) return 0;
    for (int i = 0; i < a->n_pins; i++) {
        const int j = pin_find(b, a->pins[i].layer, a->pins[i].kv_head);
        if (j < 0 || b->pins[j].swa != a->pins[i].swa) return 0;
    }
    return 1;
}

/* Heads forced SWA and forced full. */
static void pin_counts(const search_config *cfg, long *n_swa, long *n_full) {
    *n_swa = *n_full = 0;
    for (int i = 0; i < cfg->n_pins; i++) *(cfg->pins[i].swa ? n_swa : n_full) += 1;
}

int search_pins_check(const search_config *cfg, int L, int H, char *err, size_t errlen) {
    if (cfg->n_pins == 0) return 0;
    if (cfg->n_pins < 0 || cfg->n_pins > SEARCH_PINS_MAX) {
        snprintf(err, errlen, "search: bad number of pinned heads %d", cfg->n_pins);
        return -1;
    }
    for (int i = 0; i < cfg->n_pins; i++) {
        const search_pin *p = &cfg->pins[i];
        if (p->layer < 0 || p->layer >= L || p->kv_head < 0 || p->kv_head >= H) {
            snprintf(err, errlen, "search: pinned head %d.%d is outside the model's %d layers x %d KV heads",
                     p->layer, p->kv_head, L, H);
            return -1;
        }
        if (pin_find(cfg, p->layer, p->kv_head) != i) {
            snprintf(err, errlen, "search: head %d.%d is pinned twice", p->layer, p->kv_head);
            return -1;
        }
    }
    if (cfg->method == SEARCH_METHOD_BOSCH && cfg->granularity == SEARCH_GRANULARITY_LAYER) {
        snprintf(err, errlen,
                 "search: bosch_layer (layer granularity) chooses whole layers and cannot keep pinned single "
                 "heads; use a head-level method (bosch, ...) or a layer heuristic");
        return -1;
    }
    long fs, ff;
    pin_counts(cfg, &fs, &ff);
    if (fs + ff >= (long)L * H) {
        snprintf(err, errlen, "search: every one of the %d KV heads is pinned: nothing is left to choose",
                 L * H);
        return -1;
    }
    const search_method_info *m = search_method_row(cfg->method);
    if (m && m->kind == SEARCH_KIND_LAYER_HEURISTIC) return 0; /* the nearest whole-layer count */
    const long T = search_target_swa(cfg, L, H);
    if (T < fs || T > (long)L * H - ff) {
        snprintf(err, errlen,
                 "search: ratio %g makes %ld SWA KV heads of %d, %s the %ld heads pinned %s: pin fewer heads "
                 "or choose a ratio that makes between %ld and %ld SWA heads",
                 cfg->ratio, T, L * H, T < fs ? "fewer than" : "more than the heads not pinned full, but",
                 T < fs ? fs : ff, T < fs ? "SWA" : "full", fs, (long)L * H - ff);
        return -1;
    }
    return 0;
}

int search_cut_heads_pinned(const search_config *cfg, const double *importance, attn_mask *mask) {
    const int n = mask->n_layer * mask->n_head_kv;
    double *imp = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!imp) return -1;
    for (int i = 0; i < n; i++) imp[i] = isnan(importance[i]) ? INFINITY : importance[i];
    for (int i = 0; i < cfg->n_pins; i++) {
        const search_pin *p = &cfg->pins[i];
        if (p->layer < mask->n_layer && p->kv_head < mask->n_head_kv)
            imp[p->layer * mask->n_head_kv + p->kv_head] = p->swa ? -INFINITY : INFINITY;
    }
    int rc = search_cut_heads(imp, cfg->ratio, mask);
    free(imp);
    return rc;
}

/* ---- what the stages use (search_internal.h) ------------------------------------------------- */

int search_pins_build(search_state *st) {
    const int L = st->L, H = st->H;
    if (st->cfg.n_pins == 0) return 0;
    st->pin = calloc((size_t)L * H, 1);
    st->pin_fs = calloc((size_t)L, sizeof(int));
    st->pin_ff = calloc((size_t)L, sizeof(int));
    if (!st->pin || !st->pin_fs || !st->pin_ff) return -1;
    for (int i = 0; i < st->cfg.n_pins; i++) {
        const search_pin *p = &st->cfg.pins[i];
        st->pin[p->layer * H + p->kv_head] = p->swa ? SEARCH_PIN_SWA : SEARCH_PIN_FULL;
        (p->swa ? st->pin_fs : st->pin_ff)[p->layer]++;
    }
    return 0;
}

void search_pins_apply(const search_state *st, uint8_t *z) {
    for (int u = 0; st->pin && u < st->L * st->H; u++)
        if (st->pin[u]) z[u] = st->pin[u] == SEARCH_PIN_SWA ? ATTN_SWA : ATTN_FULL;
}

void search_pins_bound_alloc(search_state *st) {
    if (!st->pin) return;
    const int L = st->L, H = st->H;
    long sum = 0;
    for (int l = 0; l < L; l++) {
        const int lo = st->pin_fs[l], hi = H - st->pin_ff[l];
        st->n_swa[l] = st->n_swa[l] < lo ? lo : st->n_swa[l] > hi ? hi : st->n_swa[l];
        sum += st->n_swa[l];
    }
    /* back to the exact total: a head more to the most tolerant layer with room (smallest w, then
     * the lower layer), a head less from the least tolerant one above its bound (largest w, then the
     * higher layer) */
    while (sum != st->target_swa) {
        int best = -1;
        for (int l = 0; l < L; l++) {
            const int room =
                sum < st->target_swa ? st->n_swa[l] < H - st->pin_ff[l] : st->n_swa[l] > st->pin_fs[l];
            if (!room) continue;
            if (best < 0) {
                best = l;
                continue;
            }
            const double w = isnan(st->weight[l]) ? 0 : st->weight[l],
                         wb = isnan(st->weight[best]) ? 0 : st->weight[best];
            if (sum < st->target_swa ? w < wb : w >= wb) best = l;
        }
        if (best < 0) break; /* cannot happen: search_pins_check bounds the target */
        st->n_swa[best] += sum < st->target_swa ? 1 : -1;
        sum += sum < st->target_swa ? 1 : -1;
    }
    search_stage2_buckets(st->n_swa, L, H, st->cfg.n_buckets, st->bucket);
}

int search_pins_layer_pattern(search_state *st, const search_method_info *m, const double *importance,
                              char *err, size_t errlen) {
    const int L = st->L, H = st->H;
    int *elig = malloc(sizeof(int) * (size_t)L);
    double *imp = malloc(sizeof(double) * (size_t)L);
    uint8_t *swa = malloc((size_t)L), *best = calloc((size_t)L, 1);
    int rc = -1;
    if (!elig || !imp || !swa || !best) {
        snprintf(err, errlen, "search: out of memory");
        goto out;
    }
    int ne = 0;
    for (int l = 0; l < L; l++)
        if (st->pin_ff[l] == 0) imp[ne] = importance ? importance[l] : 0, elig[ne++] = l;
    /* the target in heads: the method's whole layers, round(ratio * L) of them */
    const long target = lround(st->cfg.ratio * L) * H;
    long best_diff = -1;
    for (int n = 0; n <= ne; n++) { /* n whole layers of the eligible ones, as the pattern picks them */
        memset(swa, 0, (size_t)L);
        if (n > 0 && m->pattern(ne, (double)n / ne, st->cfg.seed, importance ? imp : NULL, swa)) {
            snprintf(err, errlen, "search: baseline %s: cannot build the layer pattern", m->name);
            goto out;
        }
        long count = 0;
        for (int i = 0, j = 0; i < L; i++) {
            const int chosen = j < ne && elig[j] == i ? swa[j++] : 0;
            count += chosen ? H : st->pin_fs[i];
        }
        const long diff = labs(count - target);
        if (best_diff < 0 || diff < best_diff) {
            best_diff = diff;
            memset(best, 0, (size_t)L);
            for (int j = 0; j < ne; j++) best[elig[j]] = swa[j];
        }
    }
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) mask_set(&st->result, l, h, best[l] ? ATTN_SWA : ATTN_FULL);
    search_pins_apply(st, st->result.z);
    rc = 0;
out:
    free(elig), free(imp), free(swa), free(best);
    return rc;
}
