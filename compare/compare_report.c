/* compare_report.c — the files and the table of a finished comparison (compare.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"
#include "csvio.h"
#include "kv_cache.h"
#include "results.h"
#include "stats.h"

/* compare.h; turnover.csv and the A' masks (compare.c) use it. */
double compare_turnover(const attn_mask *lo, const attn_mask *hi, int *t_raw) {
    int t = 0, n_swa_lo = 0, n_full_hi = 0, n = lo->n_layer * lo->n_head_kv;
    for (int i = 0; i < n; i++) {
        t += lo->z[i] == ATTN_SWA && hi->z[i] == ATTN_FULL;
        n_swa_lo += lo->z[i] == ATTN_SWA;
        n_full_hi += hi->z[i] == ATTN_FULL;
    }
    if (t_raw) *t_raw = t;
    return n_swa_lo && n_full_hi ? t / sqrt((double)n_swa_lo * n_full_hi) : 0.0;
}

static const compare_cell *split_cells(const compare_plan *p, int split, int *n) {
    return compare_split_cells(p, split, n);
}

void compare_hits(const compare_result *r, int split, int cell, int k, long *hits, long *n, double *score) {
    int n_cells;
    split_cells(&r->plan, split, &n_cells);
    *hits = 0, *n = 0;
    double ps = 0;
    for (int c = 0; c < n_cells; c++) {
        if (cell >= 0 && c != cell) continue;
        const cell_scores *cs = &r->scores[split][c][k];
        for (int s = 0; s < cs->n; s++) *hits += cs->exact[s], ps += cs->p[s];
        *n += cs->n;
    }
    *score = *n ? ps / *n : 0.0;
}

/* Per-sample exact matches of mask k over every cell of a split, concatenated into buf. */
static long all_exact(const compare_result *r, int split, int k, uint8_t *buf, long cap) {
    int n_cells;
    split_cells(&r->plan, split, &n_cells);
    long n = 0;
    for (int c = 0; c < n_cells; c++) {
        const cell_scores *cs = &r->scores[split][c][k];
        for (int s = 0; s < cs->n && n < cap; s++) buf[n++] = cs->exact[s];
    }
    return n;
}

/* BOSCH (method "bosch") against the best other method (not a BOSCH variant) at ratio ri on a
 * split: the other's mask index, discordant counts, p-value. -1 when the plan has no "bosch" or no
 * other method scored there. */
typedef struct {
    int other; /* mask index of the best other method */
    long b, c; /* BOSCH right & other wrong, the reverse */
    double p;
} paired_test;

static int best_other_test(const compare_result *r, int split, int ri, paired_test *t) {
    const compare_plan *p = &r->plan;
    const int bi = compare_method_index(p, "bosch"), nr = p->n_ratios;
    if (bi < 0) return -1;
    long best_hits = -1;
    t->other = -1;
    for (int mi = 0; mi < p->n_methods; mi++) {
        if (!strncmp(p->methods[mi], "bosch", 5)) continue; /* the best other *method*, not a variant */
        if (!r->scores[split][0][mi * nr + ri].n) continue; /* not scored on this split */
        long h, n;
        double sc, best_sc = 0;
        compare_hits(r, split, -1, mi * nr + ri, &h, &n, &sc);
        if (t->other >= 0) {
            long bh, bn;
            compare_hits(r, split, -1, t->other, &bh, &bn, &best_sc);
        }
        if (h > best_hits || (h == best_hits && sc > best_sc)) best_hits = h, t->other = mi * nr + ri;
    }
    if (t->other < 0) return -1;
    long cap = 0;
    int n_cells;
    const compare_cell *cells = split_cells(p, split, &n_cells);
    for (int c = 0; c < n_cells; c++) cap += cells[c].n_samples;
    uint8_t *a = malloc((size_t)(cap > 0 ? cap : 1)), *b = malloc((size_t)(cap > 0 ? cap : 1));
    long na = a && b ? all_exact(r, split, bi * nr + ri, a, cap) : -1;
    long nb = a && b ? all_exact(r, split, t->other, b, cap) : -2;
    int rc = -1;
    if (na == nb && na > 0) {
        stats_discordant(a, b, na, &t->b, &t->c);
        t->p = stats_mcnemar_exact(t->b, t->c);
        rc = 0;
    }
    free(a), free(b);
    return rc;
}

static const char *split_name(int split) {
    return compare_split_name(split);
}

/* DIR/results.csv (formats/results.h, the comparison layout): per split, mask and cell, then the
 * cells pooled (task all). */
static int write_results(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    const int cap = N_SPLITS * r->n_masks * (1 + COMPARE_MAX_CELLS);
    results_row *rows = malloc(sizeof *rows * (size_t)(cap > 0 ? cap : 1));
    if (!rows) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int n_rows = 0;
    for (int split = 0; split < N_SPLITS; split++) {
        int n_cells;
        const compare_cell *cells = split_cells(p, split, &n_cells);
        for (int k = 0; k < r->n_masks; k++)
            for (int c = -1; c < n_cells; c++) {
                long h, n;
                double sc, lo, hi;
                compare_hits(r, split, c, k, &h, &n, &sc);
                if (n == 0) continue; /* not scored on this split (validation: BOSCH variants only) */
                stats_wilson95(h, n, &lo, &hi);
                const int len = c >= 0 ? cells[c].length : 0;
                const int kv_len = c >= 0 ? len : (n_cells ? cells[n_cells - 1].length : 0);
                rows[n_rows++] =
                    (results_row){.split = split_name(split),
                                  .method = p->methods[k / p->n_ratios],
                                  .ratio = p->ratios[k % p->n_ratios],
                                  .task = c >= 0 ? probe_task_name(cells[c].task) : "all",
                                  .haystack = c >= 0 ? haystack_kind_name(cells[c].haystack) : "all",
                                  .length = len,
                                  .n = n,
                                  .hits = h,
                                  .accuracy = (double)h / n,
                                  .ci_lo = lo,
                                  .ci_hi = hi,
                                  .score = sc,
                                  .kv_bytes = kv_cache_bytes(&r->hp, &r->masks[k], kv_len, r->kv_elem)};
            }
    }
    int rc = results_write(path, RESULTS_COMPARE, rows, n_rows, err, errlen);
    free(rows);
    return rc;
}

/* The window check of the protocol (docs/search.md): the full model at least 90 % exact, all-SWA
 * at most 10 %, per cell. */
#define CHECK_FULL_MIN 0.90
#define CHECK_SWA_MAX 0.10
static const char *ref_check(int j, long hits, long n) {
    if (!n) return "-";
    const double a = (double)hits / n;
    if (j == REF_FULL) return a >= CHECK_FULL_MIN - 1e-12 ? "ok" : "full below 0.90";
    return a <= CHECK_SWA_MAX + 1e-12 ? "ok" : "all-SWA above 0.10";
}

static int write_references(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/references.csv", dir);
    const char *hdr[] = {"split", "reference", "task",  "haystack", "length", "n",
                         "hits",  "accuracy",  "ci_lo", "ci_hi",    "score",  "check"};
    csv_out *w = csv_out_open(path, hdr, 12, err, errlen);
    if (!w) return -1;
    static const char *const names[N_REFS] = {"full", "all_swa"};
    int bad = 0;
    for (int split = 0; split < N_SPLITS; split++) {
        int n_cells;
        const compare_cell *cells = split_cells(p, split, &n_cells);
        for (int j = 0; j < N_REFS; j++)
            for (int c = -1; c < n_cells; c++) {
                long h, n;
                double sc, lo, hi;
                compare_hits(r, split, c, compare_ref_index(r, j), &h, &n, &sc);
                if (!n) continue;
                stats_wilson95(h, n, &lo, &hi);
                bad |= csv_out_rowf(
                    w, "%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%ld\x1f%ld\x1f%.4f\x1f%.4f\x1f%.4f\x1f%.6f\x1f%s",
                    split_name(split), names[j], c >= 0 ? probe_task_name(cells[c].task) : "all",
                    c >= 0 ? haystack_kind_name(cells[c].haystack) : "all", c >= 0 ? cells[c].length : 0, n,
                    h, (double)h / n, lo, hi, sc, ref_check(j, h, n));
            }
    }
    if (bad) {
        csv_out_abort(w);
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return csv_out_commit(w, err, errlen);
}

static int write_tests(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/tests.csv", dir);
    const char *hdr[] = {"split",      "ratio",  "method_a", "method_b", "accuracy_a",
                         "accuracy_b", "a_only", "b_only",   "n",        "p_mcnemar"};
    csv_out *w = csv_out_open(path, hdr, 10, err, errlen);
    if (!w) return -1;
    const int bi = compare_method_index(p, "bosch");
    for (int split = 0; bi >= 0 && split < N_SPLITS; split++)
        for (int ri = 0; ri < p->n_ratios; ri++) {
            paired_test t;
            if (best_other_test(r, split, ri, &t)) continue;
            long ha, hb, n;
            double sa, sb;
            compare_hits(r, split, -1, bi * p->n_ratios + ri, &ha, &n, &sa);
            compare_hits(r, split, -1, t.other, &hb, &n, &sb);
            if (n == 0) continue;
            (void)csv_out_rowf(w, "%s\x1f%.4f\x1f%s\x1f%s\x1f%.4f\x1f%.4f\x1f%ld\x1f%ld\x1f%ld\x1f%.6g",
                               split_name(split), p->ratios[ri], "bosch", p->methods[t.other / p->n_ratios],
                               (double)ha / n, (double)hb / n, t.b, t.c, n, t.p);
        }
    return csv_out_commit(w, err, errlen);
}

static int write_calibration(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/calibration.csv", dir);
    const char *hdr[] = {"method",
                         "ratio",
                         "n_swa",
                         "calib_score_norm",
                         "evaluations",
                         "raced",
                         "samples_per_raced",
                         "calib_samples",
                         "dropped",
                         "dropped_sure",
                         "wrong_drops",
                         "accepted",
                         "noise_rejected",
                         "confirm_finalists",
                         "confirm_kept"};
    csv_out *w = csv_out_open(path, hdr, 15, err, errlen);
    if (!w) return -1;
    for (int k = 0; k < r->n_masks; k++) {
        /* racing (search.h search_race_stats): candidates of the swap searches raced against their
         * incumbent, mean samples each was scored on, drops; wrong drops only in check mode */
        const search_race_stats *rs = &r->race[k];
        char spc[32] = "", wrong[32] = "";
        if (rs->raced > 0) snprintf(spc, sizeof spc, "%.3f", (double)rs->samples / rs->raced);
        if (rs->checked > 0 || (rs->raced > 0 && r->plan.cfg.race == 2))
            snprintf(wrong, sizeof wrong, "%ld", rs->wrong);
        /* the confirmation (search.h search_confirm_stats): finalists scored, the one kept */
        const search_confirm_stats *cs = &r->confirm[k];
        char nfin[16] = "";
        if (cs->n_finalists > 0) snprintf(nfin, sizeof nfin, "%d", cs->n_finalists);
        const char *kept =
            cs->n_finalists > 0 && cs->kept >= 0 ? (cs->kept == 0 ? "refined" : cs->what[cs->kept]) : "";
        csv_out_rowf(w,
                     "%s\x1f%.4f\x1f%d\x1f%.6f\x1f%ld\x1f%ld\x1f%s\x1f%d\x1f%ld\x1f%ld\x1f%s\x1f%ld\x1f%"
                     "ld\x1f%s\x1f%s",
                     p->methods[k / p->n_ratios], p->ratios[k % p->n_ratios], mask_count_swa(&r->masks[k]),
                     r->calib_norm[k], r->evals[k], rs->raced, spc, rs->n_calib, rs->dropped,
                     rs->dropped_sure, wrong, rs->accepted, rs->noise, nfin, kept);
    }
    return csv_out_commit(w, err, errlen);
}

static int write_turnover(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/turnover.csv", dir);
    const char *hdr[] = {"method", "ratio_from", "ratio_to", "heads_leaving_swa", "fraction", "t_norm"};
    csv_out *w = csv_out_open(path, hdr, 6, err, errlen);
    if (!w) return -1;
    for (int mi = 0; mi < p->n_methods; mi++)
        for (int ri = 0; ri + 1 < p->n_ratios; ri++) {
            const attn_mask *lo = &r->masks[mi * p->n_ratios + ri],
                            *hi = &r->masks[mi * p->n_ratios + ri + 1];
            int t = 0, nlo = mask_count_swa(lo);
            double tn = compare_turnover(lo, hi, &t);
            csv_out_rowf(w, "%s\x1f%.4f\x1f%.4f\x1f%d\x1f%.4f\x1f%.4f", p->methods[mi], p->ratios[ri],
                         p->ratios[ri + 1], t, nlo ? (double)t / nlo : 0.0, tn);
        }
    return csv_out_commit(w, err, errlen);
}

static int write_aprime(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    snprintf(path, sizeof path, "%s/aprime.csv", dir);
    const char *hdr[] = {"ratio_from",        "ratio_to",           "seed",
                         "heads_traded",      "calib_norm_bosch",   "calib_norm_aprime",
                         "heldout_acc_bosch", "heldout_acc_aprime", "heldout_drop"};
    csv_out *w = csv_out_open(path, hdr, 9, err, errlen);
    if (!w) return -1;
    const int bi = compare_method_index(p, "bosch");
    for (int i = 0; bi >= 0 && i < r->n_aprime; i++) {
        const aprime_mask *a = &r->aprime[i];
        const int kb = bi * p->n_ratios + a->ri + 1;
        long hb, ha, n;
        double sb, sa;
        compare_hits(r, SPLIT_HELDOUT, -1, kb, &hb, &n, &sb);
        compare_hits(r, SPLIT_HELDOUT, -1, r->n_masks + i, &ha, &n, &sa);
        if (!n) continue;
        csv_out_rowf(w, "%.4f\x1f%.4f\x1f%d\x1f%d\x1f%.6f\x1f%.6f\x1f%.4f\x1f%.4f\x1f%.4f", p->ratios[a->ri],
                     p->ratios[a->ri + 1], a->seed, a->n_traded, r->calib_norm[kb], a->calib_norm,
                     (double)hb / n, (double)ha / n, (double)(hb - ha) / n);
    }
    return csv_out_commit(w, err, errlen);
}

static double jaccard_distance(const attn_mask *a, const attn_mask *b) {
    int inter = 0, uni = 0, n = a->n_layer * a->n_head_kv;
    for (int i = 0; i < n; i++) {
        int x = a->z[i] == ATTN_SWA, y = b->z[i] == ATTN_SWA;
        inter += x && y;
        uni += x || y;
    }
    return uni ? 1.0 - (double)inter / uni : 0.0;
}

static int write_masks_jaccard(const compare_result *r, const char *dir, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    char path[4200];
    for (int k = 0; k < r->n_masks; k++) {
        snprintf(path, sizeof path, "%s/mask_%s_%.3f.csv", dir, p->methods[k / p->n_ratios],
                 p->ratios[k % p->n_ratios]);
        if (csv_mask_save(path, &r->masks[k], r->model_name, r->hp.n_head, err, errlen)) return -1;
    }
    snprintf(path, sizeof path, "%s/jaccard.csv", dir);
    const char *jh[] = {"ratio", "method_a", "method_b", "jaccard_distance"};
    csv_out *w = csv_out_open(path, jh, 4, err, errlen);
    if (!w) return -1;
    for (int ri = 0; ri < p->n_ratios; ri++)
        for (int a = 0; a < p->n_methods; a++)
            for (int b = a + 1; b < p->n_methods; b++)
                csv_out_rowf(
                    w, "%.4f\x1f%s\x1f%s\x1f%.4f", p->ratios[ri], p->methods[a], p->methods[b],
                    jaccard_distance(&r->masks[a * p->n_ratios + ri], &r->masks[b * p->n_ratios + ri]));
    return csv_out_commit(w, err, errlen);
}

/* ---- the table -------------------------------------------------------------------------------- */

static size_t cat(char *buf, size_t cap, size_t o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t cat(char *buf, size_t cap, size_t o, const char *fmt, ...) {
    if (o >= cap) return o;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + o, cap - o, fmt, ap);
    va_end(ap);
    return n > 0 ? o + (size_t)n : o;
}

static size_t split_table(const compare_result *r, int split, char *buf, size_t cap, size_t o) {
    const compare_plan *p = &r->plan;
    int n_cells;
    split_cells(p, split, &n_cells);
    if (!n_cells) return o;
    long n0 = 0, h0;
    double s0;
    for (int k = 0; k < r->n_masks && n0 == 0; k++) compare_hits(r, split, -1, k, &h0, &n0, &s0);
    o = cat(buf, cap, o,
            "\n%s split: exact-match accuracy over %d cells (%ld samples per mask) [95%% Wilson "
            "interval], mean answer probability in parentheses; calibration S^ below each cell\n\n| method |",
            split_name(split), n_cells, n0);
    for (int ri = 0; ri < p->n_ratios; ri++) o = cat(buf, cap, o, " rho=%.3g |", p->ratios[ri]);
    o = cat(buf, cap, o, "\n|---|");
    for (int ri = 0; ri < p->n_ratios; ri++) o = cat(buf, cap, o, "---|");
    o = cat(buf, cap, o, "\n");
    for (int mi = 0; mi < p->n_methods; mi++) {
        if (!r->scores[split][0][mi * p->n_ratios].n) continue;
        o = cat(buf, cap, o, "| %s |", p->methods[mi]);
        for (int ri = 0; ri < p->n_ratios; ri++) {
            const int k = mi * p->n_ratios + ri;
            long h, n;
            double sc, lo, hi;
            compare_hits(r, split, -1, k, &h, &n, &sc);
            stats_wilson95(h, n, &lo, &hi);
            o = cat(buf, cap, o, " %.3f [%.2f, %.2f] (%.3f) S^ %.3f |", n ? (double)h / n : 0.0, lo, hi, sc,
                    r->calib_norm[k]);
        }
        o = cat(buf, cap, o, "\n");
    }
    if (compare_method_index(p, "bosch") >= 0) {
        o = cat(buf, cap, o, "| bosch vs best other (exact McNemar) |");
        for (int ri = 0; ri < p->n_ratios; ri++) {
            paired_test t;
            if (best_other_test(r, split, ri, &t)) {
                o = cat(buf, cap, o, " - |");
                continue;
            }
            o = cat(buf, cap, o, " vs %s: %ld/%ld, p = %.3g |", p->methods[t.other / p->n_ratios], t.b, t.c,
                    t.p);
        }
        o = cat(buf, cap, o, "\n");
    }
    /* the window check: the references on every cell */
    const compare_cell *cells = split_cells(p, split, &n_cells);
    o = cat(buf, cap, o,
            "\nwindow check (%s, window %d): full model >= %.2f and all-SWA <= %.2f exact per cell\n\n"
            "| cell | full | all-SWA | check |\n|---|---|---|---|\n",
            split_name(split), p->cfg.window, CHECK_FULL_MIN, CHECK_SWA_MAX);
    for (int c = -1; c < n_cells; c++) {
        long hf, nf, hs, ns;
        double sf, ss;
        compare_hits(r, split, c, compare_ref_index(r, REF_FULL), &hf, &nf, &sf);
        compare_hits(r, split, c, compare_ref_index(r, REF_SWA), &hs, &ns, &ss);
        if (!nf || !ns) continue;
        const char *cf = ref_check(REF_FULL, hf, nf), *cw = ref_check(REF_SWA, hs, ns);
        char name[96];
        if (c >= 0)
            snprintf(name, sizeof name, "%s (%s) %d", probe_task_name(cells[c].task),
                     haystack_kind_name(cells[c].haystack), cells[c].length);
        else
            snprintf(name, sizeof name, "all");
        char check[64];
        if (!strcmp(cf, "ok") && !strcmp(cw, "ok"))
            snprintf(check, sizeof check, "ok");
        else if (strcmp(cf, "ok") && strcmp(cw, "ok"))
            snprintf(check, sizeof check, "%s, %s", cf, cw);
        else
            snprintf(check, sizeof check, "%s", strcmp(cf, "ok") ? cf : cw);
        o = cat(buf, cap, o, "| %s | %.3f (%.3f) | %.3f (%.3f) | %s |\n", name, (double)hf / nf, sf,
                (double)hs / ns, ss, check);
    }
    return o;
}

void compare_result_table(const compare_result *r, char *buf, size_t cap) {
    size_t o = 0;
    if (cap) buf[0] = 0;
    char len2[32] = "";
    if (r->plan.cfg.calib_tokens2 > 0) snprintf(len2, sizeof len2, " and %d", r->plan.cfg.calib_tokens2);
    o = cat(buf, cap, o,
            "comparison '%s' on %s: %d calibration samples x %d%s tokens, window %d, sinks %d (%.0f s)\n",
            r->plan.preset, r->model_name, r->plan.cfg.calib_samples, r->plan.cfg.calib_tokens, len2,
            r->plan.cfg.window, r->plan.cfg.sinks, r->seconds);
    o = split_table(r, SPLIT_HELDOUT, buf, cap, o);
    o = split_table(r, SPLIT_TRANSFER, buf, cap, o);
    o = split_table(r, SPLIT_VALID, buf, cap, o);
}

int compare_write_reports(const compare_result *r, const char *dir, char *err, size_t errlen) {
    if (write_results(r, dir, err, errlen) || write_references(r, dir, err, errlen) ||
        write_tests(r, dir, err, errlen) || write_calibration(r, dir, err, errlen) ||
        write_turnover(r, dir, err, errlen) || write_aprime(r, dir, err, errlen) ||
        write_masks_jaccard(r, dir, err, errlen))
        return -1;
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "compare: out of memory");
        return -1;
    }
    compare_result_table(r, buf, cap);
    char path[4200];
    snprintf(path, sizeof path, "%s/table.md", dir);
    int rc = csv_write_text(path, buf, err, errlen);
    free(buf);
    return rc;
}
