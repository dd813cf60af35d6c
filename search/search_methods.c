/* search_methods.c — the queries of the method registry (search_methods.h) and the method names,
 * parsing and variants of search.h, all read from method_table.c's table. */
#include "search_methods.h"

#include <string.h>
#include <strings.h>

extern const search_method_info search_method_table[];
extern const int search_method_table_n;

int search_methods_count(void) {
    return search_method_table_n < SEARCH_METHODS_MAX ? search_method_table_n : SEARCH_METHODS_MAX;
}

const search_method_info *search_method_row(int i) {
    return i >= 0 && i < search_methods_count() ? &search_method_table[i] : NULL;
}

int search_method_find(const char *name) {
    for (int i = 0; name && i < search_methods_count(); i++)
        if (!strcasecmp(name, search_method_table[i].name)) return i;
    return -1;
}

/* Picker order key: the kind, then (head rankings) the ones with evaluations after the others. */
static int pick_key(const search_method_info *m) {
    return 2 * (int)m->kind + (m->kind == SEARCH_KIND_HEAD_RANKING && m->probes != SEARCH_PROBES_NONE);
}

int search_method_pick(int i) {
    if (i < 0) return -1;
    for (int key = 0; key < 2 * (SEARCH_KIND_HEAD_RANKING + 1); key++)
        for (int r = 0; r < search_methods_count(); r++)
            if (pick_key(&search_method_table[r]) == key && i-- == 0) return r;
    return -1;
}

int search_method_of_kind(search_kind k, int i) {
    for (int r = 0; i >= 0 && r < search_methods_count(); r++)
        if (search_method_table[r].kind == k && i-- == 0) return r;
    return -1;
}

int search_methods_count_kind(search_kind k) {
    int n = 0;
    while (search_method_of_kind(k, n) >= 0) n++;
    return n;
}

char *search_methods_list(char *buf, size_t buflen, int (*want)(const search_method_info *m)) {
    size_t at = 0;
    if (buflen) buf[0] = '\0';
    for (int i = 0, r; (r = search_method_pick(i)) >= 0; i++) {
        const search_method_info *m = &search_method_table[r];
        if (want && !want(m)) continue;
        int n = snprintf(buf + at, at < buflen ? buflen - at : 0, "%s%s", at ? ", " : "", m->name);
        if (n > 0) at += (size_t)n;
    }
    return buf;
}

void search_methods_usage(FILE *f, const char *indent) {
    for (int i = 0, r; (r = search_method_pick(i)) >= 0; i++)
        fprintf(f, "%s%-15s%s\n", indent, search_method_table[r].name, search_method_table[r].help);
}

/* ---- search.h: methods (the algorithms: bosch and every row that is not a search) ------------- */

static int is_algorithm(const search_method_info *m) {
    return m->kind != SEARCH_KIND_SEARCH || m == &search_method_table[SEARCH_METHOD_BOSCH];
}

static int is_search(const search_method_info *m) {
    return m->kind == SEARCH_KIND_SEARCH;
}

const char *search_method_name(search_method m) {
    const search_method_info *row = search_method_row(m);
    return row && is_algorithm(row) ? row->name : "?";
}

int search_method_valid(search_method m) {
    const search_method_info *row = search_method_row(m);
    return row && is_algorithm(row);
}

int search_method_parse(const char *name, search_method *out, char *err, size_t errlen) {
    const int r = search_method_find(name);
    if (r >= 0 && is_algorithm(&search_method_table[r])) {
        *out = r;
        return 0;
    }
    char names[512];
    if (err)
        snprintf(err, errlen, "unknown method '%s' (valid: %s)", name ? name : "",
                 search_methods_list(names, sizeof names, is_algorithm));
    return -1;
}

int search_method_needs_model(search_method m) {
    const search_method_info *row = search_method_row(m);
    return row && row->rank != NULL;
}

int search_variant_apply(search_config *cfg, const char *name, char *err, size_t errlen) {
    const int r = search_method_find(name);
    char names[512];
    if (r < 0) {
        int bosch = name && strncasecmp(name, "bosch", 5) == 0;
        snprintf(err, errlen, "unknown %s '%s' (valid: %s)", bosch ? "BOSCH variant" : "method",
                 name ? name : "", search_methods_list(names, sizeof names, bosch ? is_search : NULL));
        return -1;
    }
    const search_method_info *m = &search_method_table[r];
    if (m->kind != SEARCH_KIND_SEARCH) {
        cfg->method = r;
        return 0;
    }
    cfg->method = SEARCH_METHOD_BOSCH;
    cfg->granularity = SEARCH_GRANULARITY_HEAD;
    m->configure(cfg);
    return 0;
}

const char *search_variant_name(int i) {
    const search_method_info *m = search_method_row(search_method_pick(i));
    return m ? m->name : NULL;
}

int search_layer_pattern(search_method method, int n_layer, double ratio, uint64_t seed,
                         const double *importance, uint8_t *swa_layer) {
    const search_method_info *m = search_method_row(method);
    if (!m || m->kind != SEARCH_KIND_LAYER_HEURISTIC || n_layer < 1 || !(ratio >= 0 && ratio <= 1) ||
        !swa_layer || (m->probes != SEARCH_PROBES_NONE && !importance))
        return -1;
    return m->pattern(n_layer, ratio, seed, importance, swa_layer);
}
