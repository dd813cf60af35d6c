/* compare.c — the comparison protocol (compare.h): the memoized calibration objective, every
 * method's masks, the A' masks, then the splits' scores (compare_eval.c) and the reports
 * (compare_report.c). The plans (presets, checks) are compare_plan.c's. */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "compare_internal.h"
#include "search_methods.h"
#include "rng.h"
#include "clock.h"

static void say(compare_progress progress, void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(compare_progress progress, void *user, const char *fmt, ...) {
    if (!progress) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    progress(line, user);
}

/* ---- the memoized calibration objective ------------------------------------------------------ */

typedef struct {
    const search_objective *inner;
    compare_cache *cache;
    volatile int *stop;
    long misses;
} memo;

/* The memo's cache in front of one evaluation under key: 0 with *out when the cache has it
 * (a hit: seconds 0), -1 with err "stopped" when a stop was asked for, 1 when the caller must
 * evaluate. */
static int memo_cached(memo *mo, uint64_t key, search_eval *out, char *err, size_t errlen) {
    const cache_calib *c = cache_get_calib(mo->cache, key);
    if (c) {
        mo->cache->calib_hits++;
        *out = c->e;
        out->seconds = 0;
        return 0;
    }
    if (mo->stop && *mo->stop) {
        snprintf(err, errlen, "stopped");
        return -1;
    }
    return 1;
}

static int memo_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                      size_t errlen) {
    memo *mo = ctx;
    const uint64_t h = mask_hash(mask);
    const int got = memo_cached(mo, h, out, err, errlen);
    if (got != 1) return got;
    if (mo->inner->score(mo->inner->ctx, mask, make_base, out, err, errlen)) return -1;
    mo->cache->calib_misses++;
    mo->misses++;
    return cache_put_calib(mo->cache, h, out, err, errlen);
}

/* score_batch of the memo: the cache answers what it knows; the other masks (each once) go to the
 * inner objective's score_batch together, then into the cache. Same answers as memo_score's. */
static int memo_batch(void *ctx, const attn_mask *const *masks, const int *make_base, int n, search_eval *out,
                      char *err, size_t errlen) {
    memo *mo = ctx;
    const attn_mask **miss = malloc(sizeof *miss * (size_t)n);
    int *mb = malloc(sizeof(int) * (size_t)n), *at = malloc(sizeof(int) * (size_t)n), nm = 0, rc = 0;
    uint64_t *hs = malloc(sizeof *hs * (size_t)n), *mh = malloc(sizeof *mh * (size_t)n); /* masks', misses' */
    search_eval *mout = malloc(sizeof *mout * (size_t)n);
    if (!miss || !mb || !at || !hs || !mh || !mout) {
        snprintf(err, errlen, "compare: out of memory");
        rc = -1;
        goto out;
    }
    for (int j = 0; j < n; j++) { /* at[j]: its miss index, or -1 (the cache knows it) */
        const uint64_t h = hs[j] = mask_hash(masks[j]);
        at[j] = -1;
        for (int k = 0; k < nm && at[j] < 0; k++)
            if (mh[k] == h) at[j] = k;
        if (at[j] < 0 && !cache_get_calib(mo->cache, h))
            miss[nm] = masks[j], mb[nm] = make_base[j], mh[nm] = h, at[j] = nm++;
    }
    if (nm && mo->stop && *mo->stop) {
        snprintf(err, errlen, "stopped");
        rc = -1;
        goto out;
    }
    if (nm && (rc = mo->inner->score_batch(mo->inner->ctx, miss, mb, nm, mout, err, errlen))) goto out;
    for (int k = 0; k < nm && !rc; k++) {
        rc = cache_put_calib(mo->cache, mh[k], &mout[k], err, errlen);
        mo->cache->calib_misses++, mo->misses++;
    }
    for (int j = 0; j < n && !rc; j++) {
        if (at[j] >= 0) {
            out[j] = mout[at[j]];
            continue;
        }
        mo->cache->calib_hits++;
        out[j] = cache_get_calib(mo->cache, hs[j])->e;
        out[j].seconds = 0;
    }
out:
    free(miss), free(mb), free(at), free(hs), free(mh), free(mout);
    return rc;
}

/* The cache key of round `part` of a mask's race: a calibration record ("C", compare_cache.h)
 * under the mask hash mixed with the round, so a rerun answers the rounds too. */
static uint64_t part_key(uint64_t mask_hash, int part) {
    const uint64_t k = mask_hash ^ (0x9e3779b97f4a7c15ull * (uint64_t)(part + 1));
    return k ? k : 1;
}

/* score_part of the memo (racing, search.h): a round of a race, from the cache or the inner
 * objective (then into the cache under part_key). */
static int memo_part(void *ctx, const attn_mask *mask, int part, int make_base, search_eval *out, char *err,
                     size_t errlen) {
    memo *mo = ctx;
    const uint64_t key = part_key(mask_hash(mask), part);
    const int got = memo_cached(mo, key, out, err, errlen);
    if (got != 1) return got;
    if (mo->inner->score_part(mo->inner->ctx, mask, part, make_base, out, err, errlen)) return -1;
    mo->cache->part_misses++;
    return cache_put_calib(mo->cache, key, out, err, errlen);
}

/* lookup of the memo: the cached whole evaluation of mask (1), or 0. */
static int memo_lookup(void *ctx, const attn_mask *mask, search_eval *out) {
    memo *mo = ctx;
    const cache_calib *c = cache_get_calib(mo->cache, mask_hash(mask));
    if (!c) return 0;
    mo->cache->calib_hits++;
    *out = c->e;
    out->seconds = 0;
    return 1;
}

/* ---- the methods' masks ----------------------------------------------------------------------- */

/* ---- the memoized confirmation objectives ----------------------------------------------------- */

/* A confirmation split's objective (search.h search_config.confirm_samples; built at its first
 * miss, on the comparison's backend) behind the cache: its records are "C" lines under the mask
 * hash mixed with the split's size and lengths, so a comparison resumed or rerun asks none again. */
struct confirm_memo {
    compare_cache *cache;
    volatile int *stop;
    const model *m;
    const backend *be;
    search_config cfg; /* the calibration split's, with the confirmation's size */
    calib_set *cs;
    search_objective obj; /* the inner objective, once built */
    int built;
    search_objective memo_obj; /* what the searches get (search_set_confirm) */
};

static uint64_t confirm_key(const struct confirm_memo *c, const attn_mask *mask) {
    uint64_t h = mask_hash(mask) ^ 0x636f6e6669726d21ull; /* "confirm!" */
    h = (h ^ (uint64_t)c->cfg.confirm_samples) * 0x100000001b3ull;
    return (h ^ (uint64_t)c->cfg.confirm_tokens2) * 0x100000001b3ull;
}

static int confirm_memo_score(void *ctx, const attn_mask *mask, int make_base, search_eval *out, char *err,
                              size_t errlen) {
    (void)make_base;
    struct confirm_memo *c = ctx;
    const uint64_t key = confirm_key(c, mask);
    memo mo = {NULL, c->cache, c->stop, 0};
    const int got = memo_cached(&mo, key, out, err, errlen);
    if (got != 1) return got;
    if (!c->built) {
        if (search_confirm_generate(&c->cs, c->m, &c->cfg, err, errlen) ||
            search_objective_calib_on(&c->obj, c->m, c->be, c->cs, err, errlen)) {
            calib_set_free(c->cs);
            c->cs = NULL;
            return -1;
        }
        c->built = 1;
    }
    if (c->obj.score(c->obj.ctx, mask, 0, out, err, errlen)) return -1;
    c->cache->calib_misses++;
    return cache_put_calib(c->cache, key, out, err, errlen);
}

/* The memoized confirmation objective for cfg's confirmation split (made on first use), or NULL
 * (out of memory, or more splits than the result holds: the search then builds its own). */
static const search_objective *confirm_memo_for(compare_result *r, const search_config *cfg, const model *m,
                                                volatile int *stop) {
    for (int i = 0; i < r->n_confirm_memo; i++) {
        struct confirm_memo *c = r->confirm_memo[i];
        if (c->cfg.confirm_samples == cfg->confirm_samples && c->cfg.confirm_tokens2 == cfg->confirm_tokens2)
            return &c->memo_obj;
    }
    if (r->n_confirm_memo == 4) return NULL;
    struct confirm_memo *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = (struct confirm_memo){.cache = &r->cache, .stop = stop, .m = m, .be = r->be, .cfg = r->plan.cfg};
    c->cfg.confirm_samples = cfg->confirm_samples, c->cfg.confirm_tokens2 = cfg->confirm_tokens2;
    c->memo_obj = (search_objective){.score = confirm_memo_score, .ctx = c};
    r->confirm_memo[r->n_confirm_memo++] = c;
    return &c->memo_obj;
}

static void confirm_memo_free(compare_result *r) {
    for (int i = 0; i < r->n_confirm_memo; i++) {
        struct confirm_memo *c = r->confirm_memo[i];
        if (c->built) search_objective_free(&c->obj);
        calib_set_free(c->cs);
        free(c);
    }
    r->n_confirm_memo = 0;
}

typedef struct {
    compare_progress progress;
    void *user;
    const char *label;
} listen_ctx;

static void on_event(const search_event *ev, void *user) {
    const listen_ctx *lc = user;
    if (ev->kind == SEARCH_EV_STAGE_END && !ev->replayed)
        say(lc->progress, lc->user, "%s: stage %d done, %ld evaluations", lc->label, ev->stage,
            ev->eval_index);
    else if (ev->kind == SEARCH_EV_DONE)
        say(lc->progress, lc->user, "%s: %s", lc->label, ev->message ? ev->message : "done");
    else if (ev->kind == SEARCH_EV_GROUP_END && ev->message && ev->plan && ev->phase >= 0 &&
             ev->plan->phase[ev->phase].kind == SEARCH_PHASE_CONFIRM) /* which finalist, and why */
        say(lc->progress, lc->user, "%s: %s", lc->label, ev->message);
}

/* Run one search to the end, batch masks at a time (search_set_batch); *out owns the state. 0, 1
 * stopped, -1 error. */
static int run_search(compare_result *r, const search_config *cfg, const model *m,
                      const search_objective *obj, int batch, listen_ctx *lc, volatile int *stop,
                      search_state **out, char *err, size_t errlen) {
    if (search_create(out, cfg, m->hp.n_layer, m->hp.n_head_kv, obj, m, on_event, lc, err, errlen)) return -1;
    if (cfg->confirm_samples > 0) { /* the confirmation through the cache (NULL: the search's own) */
        const search_objective *co = confirm_memo_for(r, cfg, m, stop);
        if (co) search_set_confirm(*out, co);
    }
    if (batch > 1 && search_set_batch(*out, batch))
        return snprintf(err, errlen, "compare: out of memory"), -1;
    const int rc = search_run(*out, NULL, err, errlen);
    if (rc == 1) return 0;
    return stop && *stop ? 1 : -1;
}

/* A layer heuristic that needs no evaluation: its masks come from the ratio alone. */
static int is_layer_pattern(search_method me) {
    const search_method_info *m = search_method_row(me);
    return m->kind == SEARCH_KIND_LAYER_HEURISTIC && m->probes == SEARCH_PROBES_NONE;
}

/* Masks of method mi at every ratio into r->masks[mi * n_ratios + ri], its searches scoring batch
 * masks at a time. 0, 1 stopped, -1. */
static int method_masks(compare_result *r, int mi, const model *m, const search_objective *obj, int batch,
                        volatile int *stop, compare_progress progress, void *user, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    const int L = r->L, H = r->H, nr = p->n_ratios;
    search_config base = p->cfg;
    if (search_variant_apply(&base, p->methods[mi], err, errlen)) return -1;
    char label[64];
    if (is_layer_pattern(base.method)) {
        uint8_t swa[1024];
        for (int ri = 0; ri < nr; ri++) {
            if (search_layer_pattern(base.method, L, p->ratios[ri], base.seed, NULL, swa)) {
                snprintf(err, errlen, "compare: %s: no layer pattern", p->methods[mi]);
                return -1;
            }
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++)
                    mask_set(&r->masks[mi * nr + ri], l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
            r->evals[mi * nr + ri] = 0;
        }
        return 0;
    }
    search_state *st = NULL;
    listen_ctx lc = {progress, user, label};
    if (base.method != SEARCH_METHOD_BOSCH) { /* a static ranking: computed once, cut at each ratio */
        search_config c = base;
        c.ratio = p->ratios[0];
        snprintf(label, sizeof label, "%s", p->methods[mi]);
        int rc = run_search(r, &c, m, obj, batch, &lc, stop, &st, err, errlen);
        if (rc) {
            search_free(st);
            return rc;
        }
        int n_imp = 0;
        const double *imp = search_importance(st, &n_imp);
        uint8_t swa[1024];
        for (int ri = 0; imp && ri < nr; ri++) {
            attn_mask *mk = &r->masks[mi * nr + ri];
            if (search_method_row(base.method)->kind == SEARCH_KIND_LAYER_HEURISTIC) {
                search_layer_pattern(base.method, L, p->ratios[ri], base.seed, imp, swa);
                for (int l = 0; l < L; l++)
                    for (int h = 0; h < H; h++) mask_set(mk, l, h, swa[l] ? ATTN_SWA : ATTN_FULL);
            } else {
                search_cut_heads(imp, p->ratios[ri], mk);
            }
            r->evals[mi * nr + ri] = search_n_evals(st);
        }
        search_free(st);
        return 0;
    }
    for (int ri = 0; ri < nr; ri++) {
        search_config c = base;
        c.ratio = p->ratios[ri];
        snprintf(label, sizeof label, "%s@%.3g", p->methods[mi], p->ratios[ri]);
        int rc = run_search(r, &c, m, obj, batch, &lc, stop, &st, err, errlen);
        if (rc) {
            search_free(st);
            return rc;
        }
        memcpy(r->masks[mi * nr + ri].z, search_result_mask(st)->z, (size_t)L * H);
        r->evals[mi * nr + ri] = search_n_evals(st);
        search_get_race_stats(st, &r->race[mi * nr + ri]);
        search_get_confirm_stats(st, &r->confirm[mi * nr + ri]);
        search_free(st);
        st = NULL;
    }
    return 0;
}

/* ---- A' ------------------------------------------------------------------------------------- */

/* BOSCH's mask at ratios[ri+1] with k random SWA heads made full and k random heads that were full
 * at both ratios made SWA (k = the turnover T, at least 1): the literal reading of the paper's A'
 * (docs/search.md). -1 when no such trade exists. */
static int make_aprime(const attn_mask *lo, const attn_mask *hi, uint64_t seed, attn_mask *out, int *k_out) {
    const int n = lo->n_layer * lo->n_head_kv;
    int t = 0;
    compare_turnover(lo, hi, &t);
    int swa[4096], keep[4096], n_swa = 0, n_keep = 0;
    if (n > 4096) return -1;
    for (int i = 0; i < n; i++) {
        if (hi->z[i] == ATTN_SWA)
            swa[n_swa++] = i;
        else if (lo->z[i] == ATTN_FULL)
            keep[n_keep++] = i;
    }
    int k = t > 0 ? t : 1;
    if (k > n_swa) k = n_swa;
    if (k > n_keep) k = n_keep;
    if (k < 1) return -1;
    if (mask_copy(out, hi)) return -1;
    rng_state rng;
    rng_seed(&rng, seed);
    for (int j = 0; j < k; j++) { /* partial Fisher-Yates on both lists */
        int a = j + (int)rng_below(&rng, (uint64_t)(n_swa - j)),
            b = j + (int)rng_below(&rng, (uint64_t)(n_keep - j));
        int x = swa[a];
        swa[a] = swa[j], swa[j] = x;
        x = keep[b];
        keep[b] = keep[j], keep[j] = x;
        out->z[swa[j]] = ATTN_FULL;
        out->z[keep[j]] = ATTN_SWA;
    }
    *k_out = k;
    return 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

static uint64_t fingerprint(const compare_plan *p, const model *m, const backend *be) {
    char buf[1024];
    probe_config pc = probe_config_default();
    int cpu = !be || be->device == BACKEND_CPU;
    /* the KV element type joins only when it is not the older fp32, so earlier folders still resume */
    snprintf(buf, sizeof buf, "%s|%llu|%d|%d|%s|%s%s|calib %d %d %d %d %d%s|w %d s %d", m->name,
             (unsigned long long)model_file_bytes(m), m->hp.n_layer, m->hp.n_head_kv,
             cpu ? "cpu" : be->ops->name, cpu ? gemm_precision_name(m->precision) : "bf16",
             cpu && m->kv_type == ATTN_KV_BF16 ? "|kv bf16" : "", p->cfg.calib_samples, p->cfg.calib_tokens,
             (int)pc.task, (int)pc.haystack, (int)PROBE_DEFAULT_CALIB_SEED, p->cfg.calib_mix ? " mix" : "",
             p->cfg.window, p->cfg.sinks);
    if (p->cfg.calib_tokens2 > 0) /* only then, so the folders made before it still resume */
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "|calib2 %d", p->cfg.calib_tokens2);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = buf; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int check_plan(const compare_plan *p, const model *m, char *err, size_t errlen) {
    if (compare_plan_check(p, err, errlen)) return -1;
    if (m->hp.n_layer * m->hp.n_head_kv > 4096 || m->hp.n_layer > 1024) {
        snprintf(err, errlen, "compare: %d x %d KV heads is more than this protocol handles", m->hp.n_layer,
                 m->hp.n_head_kv);
        return -1;
    }
    return 0;
}

void compare_result_free(compare_result *r) {
    if (!r) return;
    confirm_memo_free(r);
    if (r->cache_open) cache_close(&r->cache);
    for (int i = 0; i < r->n_masks; i++) mask_free(&r->masks[i]);
    for (int i = 0; i < r->n_aprime; i++) mask_free(&r->aprime[i].mask);
    for (int j = 0; r->have_ref && j < N_REFS; j++) mask_free(&r->ref[j]);
    free(r);
}

const attn_mask *compare_result_mask(const compare_result *r, const char *method, double ratio) {
    int mi = compare_method_index(&r->plan, method);
    for (int ri = 0; mi >= 0 && ri < r->plan.n_ratios; ri++)
        if (fabs(r->plan.ratios[ri] - ratio) < 1e-9) return &r->masks[mi * r->plan.n_ratios + ri];
    return NULL;
}

/* Normalized calibration score of a mask through the memo (scores it when the cache lacks it). */
static int calib_norm(const compare_result *r, const search_objective *obj, const attn_mask *mk, double *out,
                      char *err, size_t errlen) {
    search_eval e;
    if (obj->score(obj->ctx, mk, 0, &e, err, errlen)) return -1;
    double d = r->s_full - r->s_swa;
    *out = d != 0 ? (e.score - r->s_swa) / d : e.score - r->s_swa;
    return 0;
}

/* out_dir created if missing, and a folder. 0 or -1. */
static int open_out_dir(const char *out_dir, char *err, size_t errlen) {
    if (mkdir(out_dir, 0777) && errno != EEXIST) {
        snprintf(err, errlen, "compare: %s: cannot create: %s", out_dir, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (stat(out_dir, &sb) || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "compare: %s: not a directory", out_dir);
        return -1;
    }
    return 0;
}

/* A result for the plan on m, its masks all full. NULL when out of memory. */
static compare_result *result_new(const compare_plan *p, const model *m) {
    compare_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->plan = *p;
    snprintf(r->model_name, sizeof r->model_name, "%s", m->name);
    r->hp = m->hp;
    r->L = m->hp.n_layer, r->H = m->hp.n_head_kv;
    for (int i = 0; i < p->n_methods * p->n_ratios; i++, r->n_masks++)
        if (mask_init(&r->masks[i], r->L, r->H, p->cfg.window, p->cfg.sinks, ATTN_FULL)) {
            compare_result_free(r);
            return NULL;
        }
    return r;
}

/* The normalizers (all full, all SWA) and every final mask's normalized calibration score. 0 or -1. */
static int score_refs(compare_result *r, search_objective *obj, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    if (mask_init(&r->ref[REF_FULL], r->L, r->H, p->cfg.window, p->cfg.sinks, ATTN_FULL)) goto oom;
    if (mask_init(&r->ref[REF_SWA], r->L, r->H, p->cfg.window, p->cfg.sinks, ATTN_SWA)) {
        mask_free(&r->ref[REF_FULL]);
        goto oom;
    }
    r->have_ref = 1;
    search_eval ef, es;
    if (obj->score(obj->ctx, &r->ref[REF_FULL], 0, &ef, err, errlen) ||
        obj->score(obj->ctx, &r->ref[REF_SWA], 0, &es, err, errlen))
        return -1;
    r->s_full = ef.score, r->s_swa = es.score;
    for (int k = 0; k < r->n_masks; k++)
        if (calib_norm(r, obj, &r->masks[k], &r->calib_norm[k], err, errlen)) return -1;
    return 0;
oom:
    snprintf(err, errlen, "compare: out of memory");
    return -1;
}

/* A': BOSCH's masks at adjacent ratios, traded head by head, with their calibration scores. 0 or -1. */
static int make_aprimes(compare_result *r, search_objective *obj, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    const int bi = compare_method_index(p, "bosch");
    for (int ri = 0; bi >= 0 && ri + 1 < p->n_ratios; ri++)
        for (int sd = 0; sd < p->aprime_seeds && r->n_aprime < COMPARE_MAX_RATIOS * 8; sd++) {
            aprime_mask *a = &r->aprime[r->n_aprime];
            const attn_mask *lo = &r->masks[bi * p->n_ratios + ri],
                            *hi = &r->masks[bi * p->n_ratios + ri + 1];
            if (make_aprime(lo, hi, rng_derive(p->cfg.seed, 4000 + (uint64_t)(ri * 16 + sd)), &a->mask,
                            &a->n_traded))
                continue;
            a->ri = ri, a->seed = sd;
            r->n_aprime++;
            if (calib_norm(r, obj, &a->mask, &a->calib_norm, err, errlen)) return -1;
        }
    return 0;
}

/* Mask k of the plan's methods is a BOSCH variant (its method name starts with "bosch"). */
static int is_bosch_row(const compare_plan *p, int k) {
    return !strncmp(p->methods[k / p->n_ratios], "bosch", 5);
}

/* The masks the transfer split scores (compare.h transfer_others): with k > 0, at each ratio
 * "bosch" and the k best other methods on validation (hits, then mean answer probability, then plan
 * order); with 0 every method's mask. The references always (the window check); no A' mask. */
static void transfer_list(const compare_result *r, const attn_mask *const *all, int n,
                          const attn_mask **out) {
    const compare_plan *p = &r->plan;
    for (int k = 0; k < n; k++) out[k] = k >= compare_ref_index(r, 0) ? all[k] : NULL;
    const int bi = compare_method_index(p, "bosch"), nr = p->n_ratios;
    for (int ri = 0; ri < nr; ri++) {
        if (p->transfer_others <= 0) {
            for (int mi = 0; mi < p->n_methods; mi++) out[mi * nr + ri] = all[mi * nr + ri];
            continue;
        }
        if (bi >= 0) out[bi * nr + ri] = all[bi * nr + ri];
        for (int pick = 0; pick < p->transfer_others; pick++) {
            int best = -1;
            long best_h = -1;
            double best_s = 0;
            for (int mi = 0; mi < p->n_methods; mi++) {
                const int k = mi * nr + ri;
                if (is_bosch_row(p, k) || out[k]) continue;
                long h, nn;
                double sc;
                compare_hits(r, SPLIT_VALID, -1, k, &h, &nn, &sc);
                if (h > best_h || (h == best_h && sc > best_s)) best = k, best_h = h, best_s = sc;
            }
            if (best >= 0) out[best] = all[best];
        }
    }
}

/* Validation, held-out and transfer scores (validation: the BOSCH variants and the references,
 * which it chooses among, and every method when the transfer split picks its methods there;
 * transfer: transfer_list). 0, 1 stopped, -1 error. */
static int score_splits(compare_result *r, const model *m, const backend *be, const compare_exec *ex,
                        volatile int *stop, compare_progress progress, void *user, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    const attn_mask *all[COMPARE_MAX_SCORED], *valid[COMPARE_MAX_SCORED], *transfer[COMPARE_MAX_SCORED];
    int n = 0;
    for (int k = 0; k < r->n_masks; k++) all[n++] = &r->masks[k];
    for (int k = 0; k < r->n_aprime; k++) all[n++] = &r->aprime[k].mask;
    for (int j = 0; j < N_REFS; j++) all[n++] = &r->ref[j]; /* at compare_ref_index(r, j) */
    const int pick_on_valid = p->n_transfer > 0 && p->transfer_others > 0;
    for (int k = 0; k < n; k++)
        valid[k] = k >= compare_ref_index(r, 0) || (k < r->n_masks && (pick_on_valid || is_bosch_row(p, k)))
                       ? all[k]
                       : NULL;
    for (int split = 0; split < N_SPLITS; split++) {
        if (split == SPLIT_TRANSFER) {
            if (p->n_transfer == 0) break;
            transfer_list(r, all, n, transfer);
        }
        const attn_mask *const *list = split == SPLIT_VALID      ? valid
                                       : split == SPLIT_TRANSFER ? transfer
                                                                 : all;
        int s = compare_score_split(p, split, m, be, ex, &r->cache, list, n, r->scores[split], stop, progress,
                                    user, err, errlen);
        if (s) return s;
    }
    return 0;
}

/* Steps 1-3 of compare_run on an open result and its calibration objective (spread by ex->calib
 * when given). 0, 1 stopped, -1. */
static int run_steps(compare_result *r, const model *m, const backend *be, const compare_exec *ex,
                     search_objective *calib, volatile int *stop, compare_progress progress, void *user,
                     double t0, char *err, size_t errlen) {
    const compare_plan *p = &r->plan;
    search_objective spread;
    const search_objective *inner = calib;
    int batch = 1;
    if (ex && ex->calib) {
        if (ex->calib(ex->user, calib, &spread, err, errlen)) return -1;
        inner = &spread, batch = ex->batch;
    }
    memo mo = {inner, &r->cache, stop, 0};
    search_objective memo_obj = {.score = memo_score,
                                 .ctx = &mo,
                                 .samples = calib->samples,
                                 .n_samples = calib->n_samples,
                                 .score_batch = inner->score_batch ? memo_batch : NULL};
    if (inner->score_part) { /* racing (search.h): the rounds of the calibration objective */
        memo_obj.n_parts = inner->n_parts, memo_obj.part_order = inner->part_order;
        memo_obj.part_end = inner->part_end, memo_obj.score_part = memo_part, memo_obj.lookup = memo_lookup;
    }
    /* 1. masks from the calibration split */
    for (int mi = 0; mi < p->n_methods; mi++) {
        say(progress, user, "%s (%.0f s, %ld new calibration evaluations so far)", p->methods[mi],
            base_now_s() - t0, mo.misses);
        int s = method_masks(r, mi, m, &memo_obj, batch, stop, progress, user, err, errlen);
        if (s) return s;
    }
    /* normalizers and every final mask's calibration score (patterns were never scored) */
    if (score_refs(r, &memo_obj, err, errlen)) return -1;
    say(progress, user, "masks done (%.0f s; %ld calibration evaluations made, %ld answered by the cache)",
        base_now_s() - t0, r->cache.calib_misses, r->cache.calib_hits);
    /* 2. A': BOSCH's masks at adjacent ratios */
    if (make_aprimes(r, &memo_obj, err, errlen)) return -1;
    /* 3. validation and held-out scores */
    return score_splits(r, m, be, ex, stop, progress, user, err, errlen);
}

int compare_run(const compare_plan *p, const model *m, const backend *be, const compare_exec *ex,
                const char *out_dir, volatile int *stop, compare_progress progress, void *user,
                compare_result **out, char *err, size_t errlen) {
    *out = NULL;
    if (check_plan(p, m, err, errlen) || open_out_dir(out_dir, err, errlen)) return -1;
    const double t0 = base_now_s();
    compare_result *r = result_new(p, m);
    if (!r) {
        snprintf(err, errlen, "compare: out of memory");
        return -1;
    }
    /* kv_bytes count the elements of the cache the evaluator runs: the CPU's (--kv), CUDA's fp32 */
    r->kv_elem = be && be->device != BACKEND_CPU ? 4 : attn_kv_elem_bytes(m->kv_type);
    r->be = be;
    calib_set *cs = NULL;
    search_objective calib = {0};
    int rc = -1;
    if (cache_open(&r->cache, out_dir, fingerprint(p, m, be), err, errlen)) goto done;
    r->cache_open = 1;
    say(progress, user, "cache %s: %ld calibration evaluations, %ld split scores already there",
        r->cache.path, r->cache.calib_n, r->cache.cells_n);
    if (search_calib_generate(&cs, m, &p->cfg, err, errlen) ||
        search_objective_calib_on(&calib, m, be, cs, err, errlen))
        goto done;
    rc = run_steps(r, m, be, ex, &calib, stop, progress, user, t0, err, errlen);
    if (rc) goto done;
    r->seconds = base_now_s() - t0;
    rc = compare_write_reports(r, out_dir, err, errlen) ? -1 : 0;
    if (rc == 0)
        say(progress, user,
            "done in %.0f s (%ld calibration evaluations made, %ld race rounds, %ld split scores made)",
            r->seconds, r->cache.calib_misses, r->cache.part_misses, r->cache.cell_misses);
done:
    if (rc == 1) snprintf(err, errlen, "stopped; %s keeps everything so far", out_dir);
    search_objective_free(&calib);
    calib_set_free(cs);
    if (rc == 0)
        *out = r;
    else
        compare_result_free(r);
    return rc;
}
