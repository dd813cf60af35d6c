/* worker_pin.c — the pinned-vs-working comparison on the worker thread (ex_state.h ex_pin; the job
 * of requests.h's PIN row, the background steps of worker.c's loop).
 *
 * A job names the working mask and the pinned one, or a baseline of the method registry and a
 * ratio: its mask is then made first, exactly as `bosch search --method M --ratio R` makes it with
 * the same calibration configuration (search_create / search_step on this file's objective, one
 * evaluation per step), or cut at once from its ranking when one is known (made before by this
 * file, or a head ranking the search already has: search_head_ranking). Then, one evaluation per step, each
 * mask is scored
 *   - on the held-out split `v` scores (worker_heldout_score), per sample, for the accuracy, its
 *     Wilson interval and the paired McNemar test;
 *   - on the calibration split (the search's, else the tiny preset's: worker_calib_config), with
 *     the all-full and all-SWA masks of its window and sinks, for S-hat (pin_compare.h).
 * Every evaluation is cached by (mask, window, sinks, split), so pinning or editing back to a mask
 * already scored costs nothing. The steps alternate with the search's; the UI never waits. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pin_compare.h"
#include "search_methods.h"
#include "worker_internal.h"

#define PIN_CACHE 64 /* evaluations kept (a ring) */

typedef enum { PIN_HELDOUT = 0, PIN_CALIB = 1 } pin_split;
typedef enum { PIN_MASK = 0, PIN_ALL_FULL, PIN_ALL_SWA } pin_which;

typedef struct {
    uint64_t key; /* eval_key */
    double score; /* raw S: mean p_answer over the split's samples */
    int n;        /* held-out: samples in exact[] */
    uint8_t exact[EX_PIN_SAMPLES];
} pin_entry;

struct worker_pin {
    search_config cfg; /* the calibration configuration (cs, obj; the baseline's options) */
    int have_obj;
    calib_set *cs;
    search_objective obj; /* the calibration objective: S of a mask, and the baseline's search */
    search_state *st;     /* the baseline being made (NULL between) */
    ex_mask pinned, working;
    int have_pinned, have_working;
    pin_entry cache[PIN_CACHE];
    int cache_n, cache_next;
    /* the baselines' rankings once made (search_importance), per registry row: another ratio of the
       same baseline is then a cut, without an evaluation */
    double *imp[SEARCH_METHODS_MAX]; /* [imp_n[row]]: L * H (a head ranking) or L (nll) */
    int imp_n[SEARCH_METHODS_MAX];
    search_config imp_cfg[SEARCH_METHODS_MAX]; /* the configuration it was made with */
    search_config st_cfg;                      /* the configuration of st */
    ex_pin out;                                /* what is published in snap.pin */
};

/* ------------------------------------------------------------------ keys and the cache */

static uint64_t fnv(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++, v >>= 8) {
        h ^= v & 0xff;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t z_hash(const ex_mask *m) {
    attn_mask am = {.n_layer = m->n_layer, .n_head_kv = m->n_head_kv, .z = (uint8_t *)m->z};
    return mask_hash(&am);
}

/* Side s's mask (0 pinned, 1 working), or the all-full / all-SWA mask of its shape, window and
 * sinks, into out. */
static void side_mask(const struct worker_pin *P, int s, pin_which which, ex_mask *out) {
    *out = s == 0 ? P->pinned : P->working;
    if (which != PIN_MASK)
        memset(out->z, which == PIN_ALL_FULL ? ATTN_FULL : ATTN_SWA, (size_t)out->n_layer * out->n_head_kv);
}

/* The cache key of mask m on split sp: its bits, window and sinks, and what makes the split. */
static uint64_t eval_key(const worker *w, const struct worker_pin *P, pin_split sp, const ex_mask *m) {
    uint64_t h =
        fnv(fnv(fnv(fnv(1469598103934665603ull, z_hash(m)), (uint64_t)m->window), (uint64_t)m->sinks), sp);
    if (sp == PIN_HELDOUT) return fnv(fnv(h, (uint64_t)w->heldout_len), (uint64_t)w->heldout.n);
    const search_config *c = &P->cfg;
    h = fnv(fnv(h, (uint64_t)c->calib_samples), (uint64_t)c->calib_tokens);
    return fnv(fnv(fnv(h, (uint64_t)c->calib_mix), (uint64_t)c->calib_tokens2), c->seed);
}

static const pin_entry *cache_find(const struct worker_pin *P, uint64_t key) {
    for (int i = 0; i < P->cache_n; i++)
        if (P->cache[i].key == key) return &P->cache[i];
    return NULL;
}

static void cache_put(struct worker_pin *P, const pin_entry *e) {
    P->cache[P->cache_next] = *e;
    P->cache_next = (P->cache_next + 1) % PIN_CACHE;
    if (P->cache_n < PIN_CACHE) P->cache_n++;
}

/* ------------------------------------------------------------------ what the comparison needs */

/* The evaluations of the comparison, in the order they are made: the held-out results first (the
 * panel's headline), then the calibration scores and their normalizers. */
typedef struct {
    pin_split split;
    int side;
    pin_which which;
    const char *what; /* the busy line while it runs */
} pin_item;
static const pin_item items[] = {
    {PIN_HELDOUT, 1, PIN_MASK, "held-out: the working mask"},
    {PIN_HELDOUT, 0, PIN_MASK, "held-out: the pinned mask"},
    {PIN_CALIB, 1, PIN_MASK, "calibration: the working mask"},
    {PIN_CALIB, 0, PIN_MASK, "calibration: the pinned mask"},
    {PIN_CALIB, 1, PIN_ALL_FULL, "calibration: all full"},
    {PIN_CALIB, 1, PIN_ALL_SWA, "calibration: all SWA"},
    {PIN_CALIB, 0, PIN_ALL_FULL, "calibration: all full (the pinned mask's window)"},
    {PIN_CALIB, 0, PIN_ALL_SWA, "calibration: all SWA (the pinned mask's window)"},
};
#define N_ITEMS ((int)(sizeof items / sizeof items[0]))

/* The key of item i (0 when it does not apply: no pinned mask yet). */
static uint64_t item_key(const worker *w, const struct worker_pin *P, int i, ex_mask *scratch) {
    if (items[i].side == 0 ? !P->have_pinned : !P->have_working) return 0;
    side_mask(P, items[i].side, items[i].which, scratch);
    return eval_key(w, P, items[i].split, scratch);
}

/* One side's numbers from the cache. */
static void compose_side(const worker *w, const struct worker_pin *P, int s, ex_pin_side *d,
                         ex_mask *scratch) {
    memset(d, 0, sizeof *d);
    d->hits = d->n = -1;
    d->calib_raw = d->calib_norm = d->heldout_score = d->wilson_lo = d->wilson_hi = NAN;
    if (s == 0 ? !P->have_pinned : !P->have_working) return;
    const ex_mask *m = s == 0 ? &P->pinned : &P->working;
    d->hash = z_hash(m), d->window = m->window, d->sinks = m->sinks, d->n_swa = ex_mask_count_swa(m);
    double v[3];
    for (int which = PIN_MASK; which <= PIN_ALL_SWA; which++) {
        side_mask(P, s, (pin_which)which, scratch);
        const pin_entry *e = cache_find(P, eval_key(w, P, PIN_CALIB, scratch));
        v[which] = e ? e->score : NAN;
    }
    d->calib_raw = v[PIN_MASK];
    d->calib_norm = pin_norm_score(v[PIN_MASK], v[PIN_ALL_FULL], v[PIN_ALL_SWA]);
    const pin_entry *h = cache_find(P, eval_key(w, P, PIN_HELDOUT, m));
    if (h) pin_side_heldout(d, h->exact, h->n, h->score);
}

/* P->out from the cache: the sides, the test, the normalizers, the state and the counts. */
static void compose(const worker *w, struct worker_pin *P) {
    ex_pin *o = &P->out;
    ex_mask *scratch = malloc(sizeof *scratch);
    if (!scratch) return;
    uint64_t seen[N_ITEMS];
    int n_seen = 0;
    o->done = o->total = 0;
    for (int i = 0; i < N_ITEMS; i++) {
        uint64_t k = item_key(w, P, i, scratch);
        int dup = k == 0;
        for (int j = 0; j < n_seen && !dup; j++) dup = seen[j] == k;
        if (dup) continue;
        seen[n_seen++] = k;
        o->total++;
        o->done += cache_find(P, k) != NULL;
    }
    for (int s = 0; s < 2; s++) compose_side(w, P, s, &o->side[s], scratch);
    free(scratch);
    o->s_full = o->s_swa = NAN;
    if (P->have_working) { /* the working mask's normalizers, the ones S-hat of its side uses */
        ex_mask *m = malloc(sizeof *m);
        for (int which = PIN_ALL_FULL; m && which <= PIN_ALL_SWA; which++) {
            side_mask(P, 1, (pin_which)which, m);
            const pin_entry *e = cache_find(P, eval_key(w, P, PIN_CALIB, m));
            *(which == PIN_ALL_FULL ? &o->s_full : &o->s_swa) = e ? e->score : NAN;
        }
        free(m);
    }
    pin_mcnemar(&o->side[0], &o->side[1], &o->mc_b, &o->mc_c, &o->mc_p);
    o->calib_samples = P->cfg.calib_samples, o->calib_tokens = P->cfg.calib_tokens;
    o->heldout_samples = w->heldout.n, o->heldout_tokens = w->heldout_len;
    if (o->state != EX_PIN_FAILED)
        o->state = P->st                                 ? EX_PIN_MAKING
                   : !P->have_pinned || !P->have_working ? EX_PIN_IDLE
                   : o->done == o->total                 ? EX_PIN_READY
                                                         : EX_PIN_COMPUTING;
    if (o->state == EX_PIN_COMPUTING)
        snprintf(o->msg, sizeof o->msg, "computing: %d of %d evaluations done", o->done, o->total);
    else if (o->state == EX_PIN_MAKING)
        snprintf(o->msg, sizeof o->msg, "making the %s mask at rho %.3f: evaluation %ld of %ld", o->name,
                 o->ratio, o->method_evals, o->method_budget);
}

/* Compose and hand P->out to the UI (snap.pin); log `log` when not NULL. */
static void publish(worker *w, struct worker_pin *P, const char *log) {
    compose(w, P);
    pthread_mutex_lock(&w->mu);
    P->out.seq = w->snap.pin.seq + 1;
    w->snap.pin = P->out;
    if (log) worker_log_locked(w, "%s", log);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

static void fail(worker *w, struct worker_pin *P, const char *err) {
    search_free(P->st);
    P->st = NULL;
    P->out.state = EX_PIN_FAILED;
    snprintf(P->out.msg, sizeof P->out.msg, "%s", err);
    char line[EX_LINE];
    snprintf(line, sizeof line, "pin: %s", err);
    publish(w, P, line);
}

/* ------------------------------------------------------------------ the objective */

/* The calibration objective of cfg, made again only when its split changes. 0 or -1. */
static int ensure_objective(worker *w, struct worker_pin *P, const search_config *cfg, char *err,
                            size_t errlen) {
    const search_config *o = &P->cfg;
    const int same = P->have_obj && o->calib_samples == cfg->calib_samples &&
                     o->calib_tokens == cfg->calib_tokens && o->calib_mix == cfg->calib_mix &&
                     o->calib_tokens2 == cfg->calib_tokens2 && o->seed == cfg->seed;
    P->cfg = *cfg;
    if (same) return 0;
    search_free(P->st);
    P->st = NULL;
    if (P->have_obj) search_objective_free(&P->obj);
    P->have_obj = 0;
    calib_set_free(P->cs);
    P->cs = NULL;
    if (search_calib_generate(&P->cs, w->m, cfg, err, errlen) ||
        search_objective_calib_on(&P->obj, w->m, w->dev, P->cs, err, errlen))
        return -1;
    search_objective_set_cancel(&P->obj, &w->cancel);
    P->have_obj = 1;
    return 0;
}

/* ------------------------------------------------------------------ the baselines' rankings */

/* Keep the ranking of the baseline search st (finished; NULL: it has none, e.g. bme) by its row. */
static void keep_ranking(struct worker_pin *P, const search_state *st) {
    int n = 0, row = search_method_find(P->out.name);
    const double *imp = st ? search_importance(st, &n) : NULL;
    if (!imp || row < 0 || row >= SEARCH_METHODS_MAX) return;
    free(P->imp[row]);
    if (!(P->imp[row] = malloc(sizeof(double) * (size_t)n))) return;
    memcpy(P->imp[row], imp, sizeof(double) * (size_t)n);
    P->imp_n[row] = n;
    P->imp_cfg[row] = P->st_cfg;
}

/* A head ranking the search already has (search_head_ranking: BOSCH's head scores are ablation's
 * and fisher's, its refinement's locality and echo; a baseline search its own), taken when its
 * calibration split, window and sinks are bc's and every head has a score (as the attention view
 * and the heat map take them). */
static void ranking_from_search(worker *w, struct worker_pin *P, const search_config *bc, int row) {
    const int n = w->m->hp.n_layer * w->m->hp.n_head_kv;
    const double *v = w->search ? search_head_ranking(w->search, row) : NULL;
    if (!v || !worker_same_calib(&w->cfg, bc)) return;
    for (int u = 0; u < n; u++)
        if (!isfinite(v[u])) return;
    free(P->imp[row]);
    if (!(P->imp[row] = malloc(sizeof(double) * (size_t)n))) return;
    memcpy(P->imp[row], v, sizeof(double) * (size_t)n);
    P->imp_n[row] = n;
    P->imp_cfg[row] = *bc;
}

/* The baseline `name` at bc's ratio cut from its ranking when one was made with the same split,
 * window and sinks (search_cut_heads, search_layer_pattern: what its search ends with): it becomes
 * the pinned mask at once. 1 when done so. */
static int pin_from_ranking(worker *w, struct worker_pin *P, const search_config *bc, const char *name) {
    const int row = search_method_find(name), L = w->m->hp.n_layer, H = w->m->hp.n_head_kv;
    if (row < 0 || row >= SEARCH_METHODS_MAX) return 0;
    if (!P->imp[row] || !worker_same_calib(&P->imp_cfg[row], bc)) ranking_from_search(w, P, bc, row);
    if (!P->imp[row] || !worker_same_calib(&P->imp_cfg[row], bc)) return 0;
    attn_mask am = {0};
    uint8_t swa_layer[EX_MAX_LAYERS];
    int rc = mask_init(&am, L, H, bc->window, bc->sinks, ATTN_FULL);
    if (rc == 0 && P->imp_n[row] == L * H) {
        rc = search_cut_heads(P->imp[row], bc->ratio, &am);
    } else if (rc == 0 && P->imp_n[row] == L && L <= EX_MAX_LAYERS) {
        rc = search_layer_pattern(bc->method, L, bc->ratio, bc->seed, P->imp[row], swa_layer);
        for (int l = 0; rc == 0 && l < L; l++)
            for (int h = 0; h < H; h++) mask_set(&am, l, h, swa_layer[l] ? ATTN_SWA : ATTN_FULL);
    } else {
        rc = -1;
    }
    rc = rc == 0 ? ex_mask_from(&P->pinned, &am) : rc;
    mask_free(&am);
    if (rc) return 0;
    P->have_pinned = 1;
    P->out.pinned = P->pinned;
    P->out.mask_seq++;
    char line[EX_LINE];
    snprintf(line, sizeof line,
             "pin: the %s mask at rho %.3f cut from its ranking (no evaluation): %d SWA KV heads",
             P->out.name, bc->ratio, ex_mask_count_swa(&P->pinned));
    publish(w, P, line);
    return 1;
}

/* ------------------------------------------------------------------ the job and the steps */

void worker_job_pin(worker *w, const wcmd *c) {
    if (!w->pin && !(w->pin = calloc(1, sizeof *w->pin))) {
        worker_log(w, "pin: out of memory");
        return;
    }
    struct worker_pin *P = w->pin;
    char err[512] = "", line[EX_LINE];
    search_config cfg;
    P->out.state = EX_PIN_IDLE;
    P->out.msg[0] = '\0';
    int rc = worker_calib_config(w, &c->mask, &cfg, err, sizeof err);
    if (rc == 0) rc = worker_ensure_heldout(w, err, sizeof err);
    if (rc == 0) rc = ensure_objective(w, P, &cfg, err, sizeof err);
    if (rc) {
        fail(w, P, err);
        return;
    }
    P->working = c->mask;
    P->have_working = 1;
    search_free(P->st); /* a new pin replaces a baseline still being made */
    P->st = NULL;
    if (!c->pin_method) {
        P->pinned = c->pinned;
        P->have_pinned = c->pinned.n_layer > 0;
        publish(w, P, NULL);
        return;
    }
    /* the plain baseline, as `bosch search --method M` makes it: without the search's pinned heads */
    search_config bc = cfg;
    bc.n_pins = 0;
    P->have_pinned = 0;
    snprintf(P->out.name, sizeof P->out.name, "%.31s", c->path);
    P->out.ratio = c->ratio;
    rc = search_variant_apply(&bc, c->path, err, sizeof err);
    bc.ratio = c->ratio;
    if (rc == 0 && pin_from_ranking(w, P, &bc, c->path)) return;
    P->st_cfg = bc;
    if (rc == 0)
        rc = search_create(&P->st, &bc, w->m->hp.n_layer, w->m->hp.n_head_kv, &P->obj, w->m, NULL, NULL, err,
                           sizeof err);
    if (rc) {
        fail(w, P, err);
        return;
    }
    P->out.method_evals = 0;
    P->out.method_budget = search_eval_budget(P->st);
    snprintf(
        line, sizeof line,
        "pin: making the %s mask at rho %.3f as bosch search --method %s does (%d x %d-token calibration, "
        "W %d)",
        P->out.name, c->ratio, P->out.name, bc.calib_samples, bc.calib_tokens, bc.window);
    publish(w, P, line);
}

int worker_pin_pending(const worker *w) {
    const struct worker_pin *P = w->pin;
    return P && (P->st || (P->have_pinned && P->have_working &&
                           (P->out.state == EX_PIN_COMPUTING || P->out.state == EX_PIN_IDLE)));
}

/* One step of the baseline's search; its mask becomes the pinned one when it is done. */
static void step_baseline(worker *w, struct worker_pin *P) {
    char err[512] = "", line[EX_LINE];
    const int rc = search_step(P->st, err, sizeof err);
    if (rc == SEARCH_CANCELLED) return; /* quitting */
    if (rc < 0) {
        fail(w, P, err);
        return;
    }
    P->out.method_evals = search_n_evals(P->st);
    P->out.method_budget = search_eval_budget(P->st);
    if (rc == 0) {
        publish(w, P, NULL);
        return;
    }
    if (ex_mask_from(&P->pinned, search_result_mask(P->st))) {
        fail(w, P, "the baseline's mask does not fit the explorer");
        return;
    }
    keep_ranking(P, P->st);
    search_free(P->st);
    P->st = NULL;
    P->have_pinned = 1;
    P->out.pinned = P->pinned;
    P->out.mask_seq++;
    snprintf(line, sizeof line, "pin: the %s mask at rho %.3f: %d SWA KV heads (%ld evaluations)",
             P->out.name, P->out.ratio, ex_mask_count_swa(&P->pinned), P->out.method_evals);
    publish(w, P, line);
}

/* Score item i's mask into e: held-out per sample, or the calibration objective. 0, -1 or a cancel. */
static int score_item(worker *w, struct worker_pin *P, int i, pin_entry *e, char *err, size_t errlen) {
    ex_mask *m = malloc(sizeof *m);
    eval_sample_result *ps = calloc((size_t)(w->heldout.n > 0 ? w->heldout.n : 1), sizeof *ps);
    int rc = m && ps ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory");
    if (rc == 0) {
        side_mask(P, items[i].side, items[i].which, m);
        e->key = eval_key(w, P, items[i].split, m);
        attn_mask am;
        ex_mask_view(m, &am);
        if (items[i].split == PIN_HELDOUT) {
            eval_result r;
            rc = worker_heldout_score(w, &am, &r, ps, err, errlen);
            e->score = r.score;
            e->n = w->heldout.n < EX_PIN_SAMPLES ? w->heldout.n : EX_PIN_SAMPLES;
            for (int k = 0; rc == 0 && k < e->n; k++) e->exact[k] = ps[k].exact != 0;
        } else {
            search_eval out;
            rc = P->obj.score(P->obj.ctx, &am, 0, &out, err, errlen);
            e->score = out.score;
            e->n = 0;
        }
    }
    free(m);
    free(ps);
    return rc;
}

void worker_pin_step(worker *w) {
    struct worker_pin *P = w->pin;
    if (P->st) {
        step_baseline(w, P);
        return;
    }
    char err[512] = "";
    if (worker_ensure_heldout(w, err, sizeof err)) { /* a new search may change its length */
        fail(w, P, err);
        return;
    }
    ex_mask *scratch = malloc(sizeof *scratch);
    int next = -1;
    for (int i = 0; scratch && i < N_ITEMS && next < 0; i++) {
        uint64_t k = item_key(w, P, i, scratch);
        if (k && !cache_find(P, k)) next = i;
    }
    free(scratch);
    if (next < 0) { /* everything known (or out of memory): the state becomes READY */
        publish(w, P, NULL);
        return;
    }
    char busy[EX_LINE];
    snprintf(busy, sizeof busy, "pinned vs working, %s", items[next].what);
    worker_set_busy(w, busy);
    pin_entry e;
    memset(&e, 0, sizeof e);
    const int rc = score_item(w, P, next, &e, err, sizeof err);
    worker_set_busy(w, NULL);
    if (rc == EVAL_CANCELLED) return; /* quitting */
    if (rc) {
        fail(w, P, err);
        return;
    }
    cache_put(P, &e);
    compose(w, P);
    char line[EX_LINE];
    const ex_pin *o = &P->out;
    if (o->state == EX_PIN_READY)
        snprintf(line, sizeof line,
                 "pin: held-out %d/%d pinned vs %d/%d working, McNemar p %.3f; S-hat %.3f vs %.3f",
                 o->side[0].hits, o->side[0].n, o->side[1].hits, o->side[1].n, o->mc_p, o->side[0].calib_norm,
                 o->side[1].calib_norm);
    publish(w, P, o->state == EX_PIN_READY ? line : NULL);
}

void worker_pin_free(worker *w) {
    struct worker_pin *P = w->pin;
    if (!P) return;
    search_free(P->st);
    if (P->have_obj) search_objective_free(&P->obj);
    calib_set_free(P->cs);
    for (int i = 0; i < SEARCH_METHODS_MAX; i++) free(P->imp[i]);
    free(P);
    w->pin = NULL;
}
