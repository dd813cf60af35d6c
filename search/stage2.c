/* stage2.c — BOSCH stage 2 (adaptive per-layer ratios) and cutting a static head ranking.
 *
 * Two stage-2 rules; the default (search_config.stage2_ranks = 0) is the proportional one below,
 * the rank ladder is search_stage2_assign_ranks (its comment in search.h).
 * Stage 2 proportional rule (project choice; the paper fixes only: delta, min-max weights, ratio levels that
 * are multiples of 1/H, most tolerant layers highest, exact total), documented in docs/search.md:
 *  1. T = round(ratio * L * H) SWA KV heads in total (C round(): halves away from zero).
 *  2. w_l = (delta_l - min delta) / (max delta - min delta); when every delta is equal (spread
 *     <= 1e-12 * max(1, |max delta|)) all w_l = 0 (no layer is known to be more sensitive).
 *  3. Tolerance t_l = 1 - w_l + 1e-6 (the epsilon keeps the most sensitive layer eligible when
 *     the total cannot be reached otherwise). Proportional water-filling: find c with
 *     sum_l min(H, c * H * t_l) = T (bisection); x_l = min(H, c * H * t_l) SWA heads, continuous.
 *  4. Levels: n_l = floor(x_l) (a multiple-of-1/H ratio level); the R = T - sum n_l missing heads
 *     move R layers up one adjacent level, in order of largest fractional part x_l - n_l, then
 *     smaller w, then lower layer index (largest-remainder rounding). The sum is exactly T, and a
 *     more tolerant layer never gets fewer SWA heads than a less tolerant one.
 *  5. Buckets: the distinct levels in use, highest first, get bucket 0, 1, ...; when more than
 *     n_buckets levels are in use, adjacent levels merge: bucket = floor(j * n_buckets / u) for the
 *     j-th of u levels.
 */
#include <math.h>
#include <stdlib.h>

#include "search.h"

typedef struct {
    int layer;
    double frac, w;
} s2_order;

static int cmp_remainder(const void *pa, const void *pb) {
    const s2_order *a = pa, *b = pb;
    if (a->frac != b->frac) return a->frac > b->frac ? -1 : 1;
    if (a->w != b->w) return a->w < b->w ? -1 : 1;
    return a->layer - b->layer;
}

static double fill_total(const double *t, int L, int H, double c) {
    double s = 0;
    for (int l = 0; l < L; l++) s += fmin((double)H, c * H * t[l]);
    return s;
}

/* Step 5: buckets from the distinct levels in use, highest first (merged when more than
 * n_buckets). */
static void assign_buckets(const int *n_swa, int L, int H, int n_buckets, int *bucket) {
    int used[65] = {0}, u = 0, rank[65];
    for (int l = 0; l < L; l++) used[n_swa[l] <= 64 ? n_swa[l] : 64] = 1;
    for (int n = H; n >= 0; n--)
        if (n <= 64 && used[n]) rank[n] = u++;
    for (int l = 0; l < L; l++) {
        int j = rank[n_swa[l]];
        bucket[l] = u <= n_buckets ? j : (int)((long)j * n_buckets / u);
    }
}

/* Step 2: min-max weights (all 0 when the drops are all equal). */
static void minmax_weights(const double *delta, int L, double *w) {
    double dmin = delta[0], dmax = delta[0];
    for (int l = 1; l < L; l++) dmin = fmin(dmin, delta[l]), dmax = fmax(dmax, delta[l]);
    int flat = (dmax - dmin) <= 1e-12 * fmax(1.0, fabs(dmax));
    for (int l = 0; l < L; l++) w[l] = flat ? 0.0 : (delta[l] - dmin) / (dmax - dmin);
}

int search_stage2_assign(const double *delta, int n_layer, int n_head_kv, double ratio, int n_buckets,
                         double *weight, int *n_swa, int *bucket) {
    int L = n_layer, H = n_head_kv;
    if (L < 1 || H < 1 || !delta || !n_swa || !(ratio >= 0 && ratio <= 1) || n_buckets < 1) return -1;
    long T = lround(ratio * L * H);
    if (T < 0) T = 0;
    if (T > (long)L * H) T = (long)L * H;
    double *w = malloc(sizeof(double) * L), *t = malloc(sizeof(double) * L);
    s2_order *ord = malloc(sizeof(s2_order) * L);
    if (!w || !t || !ord) {
        free(w), free(t), free(ord);
        return -1;
    }
    minmax_weights(delta, L, w);
    for (int l = 0; l < L; l++) t[l] = 1.0 - w[l] + 1e-6;
    /* water-filling: f(c) increases from 0 to L*H; bisection on c */
    double lo = 0, hi = 1;
    while (fill_total(t, L, H, hi) < (double)T && hi < 1e15) hi *= 2;
    for (int it = 0; it < 200; it++) {
        double mid = 0.5 * (lo + hi);
        if (fill_total(t, L, H, mid) < (double)T)
            lo = mid;
        else
            hi = mid;
    }
    long sum = 0;
    for (int l = 0; l < L; l++) {
        double x = fmin((double)H, hi * H * t[l]);
        int n = (int)floor(x + 1e-9);
        if (n > H) n = H;
        n_swa[l] = n;
        ord[l] = (s2_order){l, x - n, w[l]};
        sum += n;
    }
    qsort(ord, (size_t)L, sizeof *ord, cmp_remainder);
    /* move layers up (or, after numerical overshoot, down) one adjacent level until exact */
    for (int pass = 0; sum < T && pass < H; pass++)
        for (int j = 0; j < L && sum < T; j++)
            if (n_swa[ord[j].layer] < H) n_swa[ord[j].layer]++, sum++;
    for (int pass = 0; sum > T && pass < H; pass++)
        for (int j = L - 1; j >= 0 && sum > T; j--)
            if (n_swa[ord[j].layer] > 0) n_swa[ord[j].layer]--, sum--;
    if (bucket) assign_buckets(n_swa, L, H, n_buckets, bucket);
    if (weight)
        for (int l = 0; l < L; l++) weight[l] = w[l];
    free(w), free(t), free(ord);
    return 0;
}

/* Rank rule (search_stage2_assign_ranks; see search.h and docs/search.md). */
typedef struct {
    int layer;
    double w;
} s2_rank;

static int cmp_tolerance(const void *pa, const void *pb) {
    const s2_rank *a = pa, *b = pb;
    if (a->w != b->w) return a->w < b->w ? -1 : 1;
    return a->layer - b->layer;
}

int search_stage2_assign_ranks(const double *delta, int n_layer, int n_head_kv, double ratio, int n_buckets,
                               double *weight, int *n_swa, int *bucket) {
    int L = n_layer, H = n_head_kv;
    if (L < 1 || H < 1 || H > 64 || !delta || !n_swa || !(ratio >= 0 && ratio <= 1) || n_buckets < 2)
        return -1;
    long T = lround(ratio * L * H);
    if (T < 0) T = 0;
    if (T > (long)L * H) T = (long)L * H;
    double *w = malloc(sizeof(double) * L);
    s2_rank *ord = malloc(sizeof(s2_rank) * L);
    int *pos = malloc(sizeof(int) * L); /* pos[rank] = layer, rank 0 = most tolerant */
    if (!w || !ord || !pos) {
        free(w), free(ord), free(pos);
        return -1;
    }
    minmax_weights(delta, L, w);
    for (int l = 0; l < L; l++) ord[l] = (s2_rank){l, w[l]};
    qsort(ord, (size_t)L, sizeof *ord, cmp_tolerance);
    for (int r = 0; r < L; r++) pos[r] = ord[r].layer;
    /* initial ladder: B levels evenly spread over 0..H, equal-size rank chunks (first ones larger) */
    int B = n_buckets < H + 1 ? n_buckets : H + 1;
    long sum = 0;
    for (int r = 0; r < L; r++) {
        int j = (int)((long)r * B / L);
        int n = (int)lround((double)H * (B - 1 - j) / (B - 1));
        n_swa[pos[r]] = n;
        sum += n;
    }
    /* shift one unit (1/H) at a time: take the most populated level that can move (ties: the
     * higher level when lowering, the lower level when raising) and move its boundary layer — the
     * least tolerant one when lowering, the most tolerant one when raising */
    while (sum != T) {
        int cnt[65] = {0};
        for (int l = 0; l < L; l++) cnt[n_swa[l]]++;
        int down = sum > T, best = -1;
        for (int n = down ? H : 0; down ? n >= 1 : n <= H - 1; n += down ? -1 : 1)
            if (cnt[n] > 0 && (best < 0 || cnt[n] > cnt[best])) best = n;
        if (best < 0) break;
        if (down) {
            for (int r = L - 1; r >= 0; r--)
                if (n_swa[pos[r]] == best) {
                    n_swa[pos[r]]--;
                    break;
                }
            sum--;
        } else {
            for (int r = 0; r < L; r++)
                if (n_swa[pos[r]] == best) {
                    n_swa[pos[r]]++;
                    break;
                }
            sum++;
        }
    }
    if (bucket) assign_buckets(n_swa, L, H, n_buckets, bucket);
    if (weight)
        for (int l = 0; l < L; l++) weight[l] = w[l];
    free(w), free(ord), free(pos);
    return 0;
}

typedef struct {
    double imp;
    int idx;
} head_rank;

static int cmp_head(const void *pa, const void *pb) {
    const head_rank *a = pa, *b = pb;
    if (a->imp != b->imp) return a->imp < b->imp ? -1 : 1;
    return a->idx - b->idx;
}

int search_cut_heads(const double *importance, double ratio, attn_mask *mask) {
    int n = mask->n_layer * mask->n_head_kv;
    long T = lround(ratio * n);
    if (T < 0) T = 0;
    if (T > n) T = n;
    head_rank *r = malloc(sizeof *r * (size_t)n);
    if (!r) return -1;
    for (int i = 0; i < n; i++) r[i] = (head_rank){importance[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_head);
    for (int i = 0; i < n; i++) mask->z[r[i].idx] = i < T ? ATTN_SWA : ATTN_FULL;
    free(r);
    return 0;
}

void search_stage2_buckets(const int *n_swa, int n_layer, int n_head_kv, int n_buckets, int *bucket) {
    assign_buckets(n_swa, n_layer, n_head_kv, n_buckets, bucket);
}
