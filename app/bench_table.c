/* bench_table.c — the speed table of `bosch bench` (cmd_bench_internal.h: bench_table).
 *
 * Interleaved: a round measures every context length's GEMM ceiling (CPU) and every (length,
 * batch, ratio) once, in that order; the rounds repeat (--rounds). A machine that gets busier or
 * quieter during the run so slows every cell of a round alike, and each ratio between two cells
 * (a ratio's prefill speed-up over full attention, decode's, the share of the GEMM ceiling) is
 * taken within one round and reported as the median over the rounds with its range. The load
 * average (getloadavg: what `uptime` prints) is printed before the first and after the last round.
 *
 * GEMM ceiling: the model's own GEMMs at a T-token prefill's shapes (gemm.h in the model's
 * precision): Q|K|V and Wo at M = T, gate|up and down at M = 512 per FFN chunk, best of 3 runs of
 * each per round, as GFLOP/s per shape and as the tokens/s a prefill would reach if it did nothing
 * but those GEMMs.
 */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "clock.h"
#include "cmd_bench_internal.h"
#include "gemm.h"
#include "kv_cache.h"

enum { N_SHAPES = 4 };

typedef struct {
    double *pf_s, *dc_s, *cpu_s; /* [rounds]: prefill wall s (0: random fill), decode wall s, prefill CPU s */
    uint64_t kv_bytes, gpu_peak;
    int n_swa;
    double rho; /* the mask's actual ratio */
} cell;

typedef struct {
    const model *m;
    const bench_opts *o;
    backend *gpu;
    csv_out *csv;
    const int32_t *toks, *dec_toks; /* prefill [max_b][max_t] (+ CPU decode), GPU decode [n_decode][max_b] */
    cell *cells;                    /* [length][batch][ratio] */
    double *ceil_s;                 /* [length][round][N_SHAPES + 1]: seconds per shape, total (0: none) */
    double load[2][3];              /* load average before and after */
} table;

/* "med (lo-hi)" with prec decimals, or "-" when med is not positive. */
static void fmt_range(char *buf, size_t cap, double med, double lo, double hi, int prec, const char *unit) {
    if (!(med > 0.0))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.*f%s (%.*f-%.*f)", prec, med, unit, prec, lo, prec, hi);
}

static cell *cell_at(const table *t, int li, int bi, int ri) {
    const bench_opts *o = t->o;
    return &t->cells[((size_t)li * o->n_batches + bi) * o->n_ratios + ri];
}

/* One prefill of T tokens (B sequences) into a fresh cache on b, then n_decode decode steps. */
static int measure_on(backend *b, const table *t, const attn_mask *mask, int T, int B, cell *c, int r) {
    const bench_opts *o = t->o;
    char err[512] = "";
    float *logits = malloc(sizeof(float) * (size_t)t->m->hp.n_vocab * B);
    int rc = logits ? backend_start(b, mask, B, T + o->n_decode + 1, err, sizeof err) : -1;
    double c0 = base_cpu_s(), t0 = base_now_s();
    if (rc == 0)
        rc = o->fill_random ? backend_fill_random(b, T, 0x5eedull + (uint64_t)r, err, sizeof err)
                            : backend_prefill(b, t->toks, T, logits, err, sizeof err);
    double t1 = base_now_s(), c1 = base_cpu_s();
    for (int d = 0; d < o->n_decode && rc == 0; d++)
        rc = backend_decode(b, t->dec_toks + (size_t)d * B, logits, err, sizeof err);
    double t2 = base_now_s();
    c->pf_s[r] = o->fill_random ? 0.0 : t1 - t0;
    c->cpu_s[r] = b->device == BACKEND_CPU ? c1 - c0 : 0.0;
    c->dc_s[r] = t2 - t1;
    c->gpu_peak = backend_peak_bytes(b);
    if (rc && err[0]) fprintf(stderr, "bosch bench: %s\n", err);
    free(logits);
    return rc;
}

/* Cell (li, bi, ri) once, in round r: on the GPU backend, or on a CPU backend made for it. */
static int measure_cell(table *t, int li, int bi, int ri, int r) {
    const bench_opts *o = t->o;
    const int T = o->lengths[li], B = o->batches[bi];
    cell *c = cell_at(t, li, bi, ri);
    attn_mask mask;
    if (bench_mask_for_ratio(&mask, &t->m->hp, o->ratios[ri], o->window, o->sinks)) return -1;
    fprintf(stderr, "bench: round %d/%d T=%d batch=%d rho=%.3f ...\n", r + 1, o->rounds, T, B,
            mask_ratio(&mask));
    const int elem = t->gpu ? 4 : attn_kv_elem_bytes(t->m->kv_type);       /* the CUDA cache is fp32 */
    c->kv_bytes = (uint64_t)B * kv_cache_bytes(&t->m->hp, &mask, T, elem); /* at context T exactly */
    c->n_swa = mask_count_swa(&mask);
    c->rho = mask_ratio(&mask);
    int rc;
    if (t->gpu) {
        rc = measure_on(t->gpu, t, &mask, T, B, c, r);
    } else {
        backend *cpu;
        char err[256];
        rc = backend_cpu_create(&cpu, t->m, err, sizeof err);
        if (rc)
            fprintf(stderr, "bosch bench: %s\n", err);
        else
            rc = measure_on(cpu, t, &mask, T, B, c, r);
        backend_free(cpu);
    }
    if (rc) fprintf(stderr, "bosch bench: T=%d batch=%d: out of memory or forward failure\n", T, B);
    mask_free(&mask);
    return rc;
}

/* The GEMM ceiling of a T-token prefill in round r into out[N_SHAPES + 1] (seconds of each shape's
 * products for one layer, best of 3 runs; then the whole prefill's GEMM seconds). 0 or -1. */
static int gemm_ceiling(const model *m, int T, double *out) {
    const model_hparams *hp = &m->hp;
    const model_layer *L = &m->layers[0];
    const int chunk = T < 512 ? T : 512, n_chunks = (T + 511) / 512;
    const gemm_weight *w[N_SHAPES] = {L->g_qkv, L->g_o, L->g_gate_up, L->g_down};
    const int M[N_SHAPES] = {T, T, chunk, chunk}, times[N_SHAPES] = {1, 1, n_chunks, n_chunks};
    int maxk = 0, maxn = 0;
    for (int k = 0; k < N_SHAPES; k++) {
        maxk = gemm_weight_cols(w[k]) > maxk ? gemm_weight_cols(w[k]) : maxk;
        maxn = gemm_weight_rows(w[k]) > maxn ? gemm_weight_rows(w[k]) : maxn;
    }
    float *X = malloc(sizeof(float) * (size_t)T * maxk), *Y = malloc(sizeof(float) * (size_t)T * maxn);
    gemm_scratch *gs = gemm_scratch_create(m->gemm);
    char err[256] = "";
    int rc = -1;
    if (!X || !Y || !gs) goto out;
    for (size_t i = 0; i < (size_t)T * maxk; i++) X[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    out[N_SHAPES] = 0.0;
    for (int k = 0; k < N_SHAPES; k++) {
        const int K = gemm_weight_cols(w[k]), N = gemm_weight_rows(w[k]);
        double best = INFINITY;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = base_now_s();
            if (gemm_run(gs, w[k], Y, N, X, K, M[k], 0, err, sizeof err)) goto out;
            double dt = base_now_s() - t0;
            best = dt < best ? dt : best;
        }
        out[k] = best;
        out[N_SHAPES] += best * times[k] * hp->n_layer;
    }
    rc = 0;
out:
    if (err[0]) fprintf(stderr, "bosch bench: GEMM ceiling: %s\n", err);
    if (!X || !Y || !gs) fprintf(stderr, "bosch bench: GEMM ceiling: out of memory\n");
    gemm_scratch_free(gs);
    free(X);
    free(Y);
    return rc;
}

/* Per-round values of f over the rounds, summarised. */
typedef double (*round_fn)(const table *t, int li, int bi, int ri, int r);

static void summarise(const table *t, round_fn f, int li, int bi, int ri, double s[3]) {
    double x[100];
    int n = 0;
    for (int r = 0; r < t->o->rounds; r++) {
        double v = f(t, li, bi, ri, r);
        if (v > 0.0 && isfinite(v)) x[n++] = v;
    }
    if (n == 0)
        s[0] = s[1] = s[2] = 0.0;
    else
        bench_median_range(x, n, &s[0], &s[1], &s[2]);
}

static double r_prefill(const table *t, int li, int bi, int ri, int r) {
    const cell *c = cell_at(t, li, bi, ri);
    return c->pf_s[r] > 0.0 ? (double)t->o->batches[bi] * t->o->lengths[li] / c->pf_s[r] : 0.0;
}
static double r_decode(const table *t, int li, int bi, int ri, int r) {
    const cell *c = cell_at(t, li, bi, ri);
    return t->o->n_decode > 0 && c->dc_s[r] > 0.0 ? (double)t->o->batches[bi] * t->o->n_decode / c->dc_s[r]
                                                  : 0.0;
}
static double r_cpu(const table *t, int li, int bi, int ri, int r) {
    return cell_at(t, li, bi, ri)->cpu_s[r];
}
static int full_index(const table *t) { /* the ratio-0 column, or -1 */
    for (int ri = 0; ri < t->o->n_ratios; ri++)
        if (t->o->ratios[ri] == 0.0) return ri;
    return -1;
}
static double r_vs_full(const table *t, int li, int bi, int ri, int r) {
    int f = full_index(t);
    return f < 0 ? 0.0 : r_prefill(t, li, bi, ri, r) / r_prefill(t, li, bi, f, r);
}
static double r_dec_vs_0(const table *t, int li, int bi, int ri, int r) {
    int f = full_index(t);
    return f < 0 ? 0.0 : r_decode(t, li, bi, ri, r) / r_decode(t, li, bi, f, r);
}
static double r_ceiling(const table *t, int li, int bi, int ri, int r) {
    (void)bi, (void)ri;
    const double s = t->ceil_s[((size_t)li * t->o->rounds + r) * (N_SHAPES + 1) + N_SHAPES];
    return s > 0.0 ? t->o->lengths[li] / s : 0.0;
}
static double r_of_ceil(const table *t, int li, int bi, int ri, int r) {
    const double c = r_ceiling(t, li, bi, ri, r);
    return c > 0.0 ? 100.0 * r_prefill(t, li, bi, ri, r) / c : 0.0;
}

/* The ceiling lines: per length, each shape's median GFLOP/s and the ceiling's median (range). */
static int print_ceilings(const table *t) {
    static const char *const names[N_SHAPES] = {"qkv", "o", "gate_up", "down"};
    const model_layer *L = &t->m->layers[0];
    const gemm_weight *w[N_SHAPES] = {L->g_qkv, L->g_o, L->g_gate_up, L->g_down};
    for (int li = 0; li < t->o->n_lengths; li++) {
        const int T = t->o->lengths[li], chunk = T < 512 ? T : 512, M[N_SHAPES] = {T, T, chunk, chunk};
        printf("GEMM ceiling at T=%d (%s, median of %d rounds, best of 3 runs each):", T,
               gemm_precision_name(t->m->precision), t->o->rounds);
        for (int k = 0; k < N_SHAPES; k++) {
            double g[100], s[3];
            const double flop = 2.0 * M[k] * gemm_weight_cols(w[k]) * gemm_weight_rows(w[k]);
            for (int r = 0; r < t->o->rounds; r++)
                g[r] = flop / t->ceil_s[((size_t)li * t->o->rounds + r) * (N_SHAPES + 1) + k] / 1e9;
            bench_median_range(g, t->o->rounds, &s[0], &s[1], &s[2]);
            printf(" %s %dx%dx%d %.0f GFLOP/s;", names[k], M[k], gemm_weight_cols(w[k]),
                   gemm_weight_rows(w[k]), s[0]);
        }
        double s[3];
        char buf[64];
        summarise(t, r_ceiling, li, 0, 0, s);
        fmt_range(buf, sizeof buf, s[0], s[1], s[2], 1, "");
        printf(" ceiling %s tok/s\n", buf);
        bench_row f = {.measure = "gemm_ceiling",
                       .length = T,
                       .prefill_tok_s = s[0],
                       .prefill_min = s[1],
                       .prefill_max = s[2],
                       .seconds = s[0] > 0.0 ? T / s[0] : 0.0,
                       .rounds = t->o->rounds,
                       .device = backend_device_name(BACKEND_CPU)};
        if (bench_csv_put(t->csv, t->o, f)) return 1;
    }
    return 0;
}

/* One row of the table and its CSV rows (the medians; then one per round). 0 or 1. */
static int print_row(const table *t, int li, int bi, int ri, const double *load_pair) {
    const bench_opts *o = t->o;
    const cell *c = cell_at(t, li, bi, ri);
    double pf[3], dc[3], vs[3], dvs[3], oc[3], cpu[3];
    summarise(t, r_prefill, li, bi, ri, pf);
    summarise(t, r_decode, li, bi, ri, dc);
    summarise(t, r_vs_full, li, bi, ri, vs);
    summarise(t, r_dec_vs_0, li, bi, ri, dvs);
    summarise(t, r_of_ceil, li, bi, ri, oc);
    summarise(t, r_cpu, li, bi, ri, cpu);
    char spf[48], sdc[48], svs[40], sdvs[40], soc[32], peak[24] = "-";
    fmt_range(spf, sizeof spf, pf[0], pf[1], pf[2], 1, "");
    fmt_range(sdc, sizeof sdc, dc[0], dc[1], dc[2], 2, "");
    fmt_range(svs, sizeof svs, vs[0], vs[1], vs[2], 2, "x");
    fmt_range(sdvs, sizeof sdvs, dvs[0], dvs[1], dvs[2], 2, "x");
    fmt_range(soc, sizeof soc, oc[0], oc[1], oc[2], 0, "%");
    if (t->gpu) snprintf(peak, sizeof peak, "%.1f", c->gpu_peak / 1048576.0);
    const int T = o->lengths[li], B = o->batches[bi];
    printf("%7d %5d %6.3f %5d %12llu %24s %22s %16s %22s %20s %8.2f %10s\n", T, B, c->rho, c->n_swa,
           (unsigned long long)c->kv_bytes, spf, svs, soc, sdc, sdvs, cpu[0], peak);
    const char *kv = t->gpu ? "fp32" : attn_kv_type_name(t->m->kv_type);
    bench_row f = {.measure = "speed",
                   .length = T,
                   .batch = B,
                   .n_swa = c->n_swa,
                   .ratio = c->rho,
                   .prefill_tok_s = pf[0],
                   .decode_tok_s = dc[0],
                   .seconds = pf[0] > 0.0 ? (double)B * T / pf[0] : 0.0,
                   .cpu_s = cpu[0],
                   .kv_bytes = c->kv_bytes,
                   .gpu_peak_bytes = c->gpu_peak,
                   .device = backend_device_name(o->device),
                   .rounds = o->rounds,
                   .prefill_min = pf[1],
                   .prefill_max = pf[2],
                   .decode_min = dc[1],
                   .decode_max = dc[2],
                   .prefill_vs_full = vs[0],
                   .decode_vs_full = dvs[0],
                   .kv_type = kv,
                   .load_before = load_pair[0],
                   .load_after = load_pair[1]};
    if (bench_csv_put(t->csv, o, f)) return 1;
    for (int r = 0; r < o->rounds && o->rounds > 1; r++) { /* one round: the medians are its values */
        bench_row g = f;
        g.measure = "speed_round";
        g.round = r + 1;
        g.prefill_tok_s = g.prefill_min = g.prefill_max = r_prefill(t, li, bi, ri, r);
        g.decode_tok_s = g.decode_min = g.decode_max = r_decode(t, li, bi, ri, r);
        g.seconds = c->pf_s[r], g.cpu_s = c->cpu_s[r];
        g.prefill_vs_full = r_vs_full(t, li, bi, ri, r);
        g.decode_vs_full = r_dec_vs_0(t, li, bi, ri, r);
        if (bench_csv_put(t->csv, o, g)) return 1;
    }
    return 0;
}

/* For each (length, batch) with rows at rho 0 and BENCH_TARGET_RHO: the medians of the per-round
 * decode ratios and the KV bytes ratio (issue 7: at batch 16 and 32k, >= 2x and <= 0.2x). */
static void print_targets(const table *t) {
    const bench_opts *o = t->o;
    const int f = full_index(t);
    int header = 0;
    for (int ri = 0; ri < o->n_ratios && f >= 0; ri++) {
        if (fabs(o->ratios[ri] - BENCH_TARGET_RHO) > 1e-9) continue;
        for (int li = 0; li < o->n_lengths; li++)
            for (int bi = 0; bi < o->n_batches; bi++) {
                const cell *c = cell_at(t, li, bi, ri), *full = cell_at(t, li, bi, f);
                if (!header) printf("\n"), header = 1;
                double kv = full->kv_bytes ? (double)c->kv_bytes / (double)full->kv_bytes : 0.0, d[3];
                printf("target T=%d batch=%d (%d of %d KV heads SWA): ", o->lengths[li], o->batches[bi],
                       c->n_swa, t->m->hp.n_layer * t->m->hp.n_head_kv);
                summarise(t, r_dec_vs_0, li, bi, ri, d);
                if (o->n_decode > 0 && d[0] > 0.0)
                    printf(
                        "decode tok/s rho %.3f / rho 0 = %.2fx (%.2f-%.2f over %d rounds; goal >= 2: %s), ",
                        BENCH_TARGET_RHO, d[0], d[1], d[2], o->rounds, d[0] >= 2.0 ? "met" : "NOT met");
                else
                    printf("decode not timed, ");
                printf("KV bytes rho %.3f / rho 0 = %.3fx (goal <= 0.2: %s)\n", BENCH_TARGET_RHO, kv,
                       kv <= 0.2 ? "met" : "NOT met");
            }
    }
}

static void print_head(const table *t) {
    const bench_opts *o = t->o;
    const model *m = t->m;
    printf("model %s: %d layers x %d KV heads, window %d, sinks %d, %d decode steps, on %s%s\n", m->name,
           m->hp.n_layer, m->hp.n_head_kv, o->window, o->sinks, o->n_decode, backend_device_name(o->device),
           o->fill_random ? ", decode after a random KV fill (no prefill)" : "");
    printf("interleaved: %d rounds, each measuring every length and ratio once; medians (min-max over the "
           "rounds); ratios taken within a round\n",
           o->rounds);
    printf("load average before: %.2f, %.2f, %.2f; after: %.2f, %.2f, %.2f\n", t->load[0][0], t->load[0][1],
           t->load[0][2], t->load[1][0], t->load[1][1], t->load[1][2]);
    if (!t->gpu) {
        char gd[160];
        gemm_describe(gd, sizeof gd);
        printf("GEMMs: %s; decode %s; KV cache %s (attention %s)\n", gd,
               m->decode_blocks ? "from the file's blocks" : "through the GEMM weights",
               attn_kv_type_name(m->kv_type),
               m->kv_type == ATTN_KV_BF16 ? attn_isa_name(attn_isa_current()) : "fp32 kernels");
    } else {
        printf("KV cache fp32 (the CUDA backend's)\n");
    }
}

/* All rounds, then the report. 0 or 1. */
static int run_rounds(table *t) {
    const bench_opts *o = t->o;
    if (getloadavg(t->load[0], 3) != 3) memset(t->load[0], 0, sizeof t->load[0]);
    for (int r = 0; r < o->rounds; r++)
        for (int li = 0; li < o->n_lengths; li++) {
            if (!t->gpu &&
                gemm_ceiling(t->m, o->lengths[li], t->ceil_s + ((size_t)li * o->rounds + r) * (N_SHAPES + 1)))
                return 1;
            for (int bi = 0; bi < o->n_batches; bi++)
                for (int ri = 0; ri < o->n_ratios; ri++)
                    if (measure_cell(t, li, bi, ri, r)) return 1;
        }
    if (getloadavg(t->load[1], 3) != 3) memset(t->load[1], 0, sizeof t->load[1]);
    print_head(t);
    if (!t->gpu && print_ceilings(t)) return 1;
    printf("%7s %5s %6s %5s %12s %24s %22s %16s %22s %20s %8s %10s\n", "length", "batch", "ratio", "n_swa",
           "kv_bytes", "prefill_tok/s", "vs_full", "of_ceil", "decode_tok/s", "dec_vs_0", "cpu_s",
           "gpu_peak_MiB");
    const double load_pair[2] = {t->load[0][0], t->load[1][0]};
    for (int li = 0; li < o->n_lengths; li++)
        for (int bi = 0; bi < o->n_batches; bi++)
            for (int ri = 0; ri < o->n_ratios; ri++)
                if (print_row(t, li, bi, ri, load_pair)) return 1;
    print_targets(t);
    if (t->gpu) printf("GPU peak memory: %.1f MiB\n", backend_peak_bytes(t->gpu) / 1048576.0);
    return 0;
}

int bench_table(const model *m, const bench_opts *o, backend *gpu, csv_out *csv) {
    int max_t = 1, max_b = 1;
    for (int i = 0; i < o->n_lengths; i++) max_t = o->lengths[i] > max_t ? o->lengths[i] : max_t;
    for (int i = 0; i < o->n_batches; i++) max_b = o->batches[i] > max_b ? o->batches[i] : max_b;
    if ((long long)max_b * max_t > 1 << 28) {
        fprintf(stderr, "bosch bench: batch %d x length %d is too many tokens\n", max_b, max_t);
        return 1;
    }
    const size_t n_pf = (size_t)max_b * max_t + (size_t)o->n_decode + 1,
                 n_dc = (size_t)o->n_decode * max_b + 1;
    const size_t n_cells = (size_t)o->n_lengths * o->n_batches * o->n_ratios, R = (size_t)o->rounds;
    table t = {m, o, gpu, csv, NULL, NULL, NULL, NULL, {{0}}};
    int32_t *toks = malloc(sizeof(int32_t) * (n_pf + n_dc));
    t.cells = calloc(n_cells, sizeof *t.cells);
    double *store = calloc(n_cells * 3 * R + (size_t)o->n_lengths * R * (N_SHAPES + 1), sizeof(double));
    int status = 1;
    if (!toks || !t.cells || !store) {
        fprintf(stderr, "bosch bench: out of memory for %zu tokens\n", n_pf + n_dc);
        goto out;
    }
    bench_fill_tokens(toks, (int)(n_pf + n_dc), m->hp.n_vocab);
    t.toks = toks, t.dec_toks = toks + n_pf;
    for (size_t i = 0; i < n_cells; i++)
        t.cells[i].pf_s = store + i * 3 * R, t.cells[i].dc_s = t.cells[i].pf_s + R,
        t.cells[i].cpu_s = t.cells[i].dc_s + R;
    t.ceil_s = store + n_cells * 3 * R;
    status = run_rounds(&t);
out:
    free(store);
    free(t.cells);
    free(toks);
    return status;
}
