/* gemm.c — Y = X·Wᵀ (+ Y) through oneDNN's matmul primitive (see gemm.h).
 *
 * oneDNN's matmul computes dst[M][N] = src[M][K] · weights[K][N]. Our W is [N][K] row-major, which is
 * weights[K][N] with strides {1, K} (oneDNN's tag "ba"); it is reordered once into the layout the
 * primitive asks for (format_tag any). The layout depends on K, N, the data type and the ISA but not
 * on M (checked here: M = 1..2048 all pick the same blocking), so one reordered copy serves every M;
 * a primitive for a new M is created with that exact weights descriptor.
 *
 * Primitives are cached per (M, K, N, ldx, ldy, accumulate) in the context; oneDNN's "user"
 * scratchpad mode lets several threads run the same primitive, each with its own scratch.
 */
#include "gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Beyond this many cached primitives a new shape is created, run and destroyed (never evicted, so a
 * primitive another thread is running stays valid). */
#define GEMM_CACHE_CAP 512

typedef struct {
    int M, K, N, ldx, ldy, acc;
    dnnl_primitive_t prim;
    size_t scratch_bytes;
} gemm_entry;

struct gemm_ctx {
    gemm_precision prec;
    dnnl_engine_t eng;
    pthread_mutex_t mu;
    gemm_entry *cache;
    int n_cache;
};

struct gemm_weight {
    gemm_ctx *ctx;
    int n_out, n_in;
    dnnl_memory_desc_t md; /* the reordered layout, [K = n_in][N = n_out] */
    dnnl_memory_t mem;     /* owns the reordered data */
};

struct gemm_scratch {
    gemm_ctx *ctx;
    dnnl_stream_t stream;
    uint16_t *xb; /* bf16 copy of X, [T][n_in] contiguous */
    size_t xb_cap;
    void *xf; /* dense fp32 copy of a strided X */
    size_t xf_cap;
    void *pad; /* oneDNN scratchpad */
    size_t pad_cap;
};

static int fail(char *err, size_t errlen, const char *what, dnnl_status_t s) {
    if (err && errlen) snprintf(err, errlen, "gemm: %s: oneDNN says %s", what, dnnl_status2str(s));
    return -1;
}

int gemm_precision_parse(const char *s, engine_precision *out) {
    if (!s) return -1;
    if (!strcmp(s, "fp32"))
        *out = PRECISION_FP32;
    else if (!strcmp(s, "bf16"))
        *out = PRECISION_BF16;
    else if (!strcmp(s, "auto"))
        *out = PRECISION_AUTO;
    else
        return -1;
    return 0;
}

const char *gemm_precision_name(gemm_precision p) {
    return p == GEMM_BF16 ? "bf16" : "fp32";
}

static int isa_has(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) {
    return ((unsigned)isa & (unsigned)want) == (unsigned)want;
}

int gemm_cpu_has_bf16(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa_has(isa, dnnl_cpu_isa_avx512_core_bf16) || isa_has(isa, dnnl_cpu_isa_avx512_core_amx);
}

static const char *isa_words(dnnl_cpu_isa_t isa) {
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx (AMX tiles, bf16 and int8)";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16 (AVX-512 with BF16)";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni (AVX-512 with VNNI, no BF16)";
    if (isa_has(isa, dnnl_cpu_isa_avx512_core)) return "avx512_core (AVX-512, no BF16)";
    if (isa_has(isa, dnnl_cpu_isa_avx2_vnni)) return "avx2_vnni (AVX2 with VNNI)";
    if (isa_has(isa, dnnl_cpu_isa_avx2)) return "avx2 (AVX2, FMA)";
    if (isa_has(isa, dnnl_cpu_isa_avx)) return "avx";
    if (isa_has(isa, dnnl_cpu_isa_sse41)) return "sse41";
    return "generic";
}

void gemm_describe(char *buf, size_t cap) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, cap, "oneDNN %d.%d.%d, ISA %s", v->major, v->minor, v->patch,
             isa_words(dnnl_get_effective_cpu_isa()));
}

int gemm_precision_resolve(engine_precision req, gemm_precision *out, char *err, size_t errlen) {
    int hw = gemm_cpu_has_bf16();
    if (req == PRECISION_FP32 || (req == PRECISION_AUTO && !hw)) {
        *out = GEMM_FP32;
        return 0;
    }
    /* oneDNN 2.x has bf16 matmul from avx512_core up (emulated without BF16 hardware) */
    if (!isa_has(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx512_core)) {
        snprintf(err, errlen,
                 "gemm: --precision bf16: this CPU's best oneDNN ISA is %s, which has no bf16 matmul "
                 "(needs AVX-512); use --precision fp32 or auto",
                 isa_words(dnnl_get_effective_cpu_isa()));
        return -1;
    }
    *out = GEMM_BF16;
    return 0;
}

int gemm_ctx_create(gemm_ctx **out, gemm_precision p, char *err, size_t errlen) {
    *out = NULL;
    gemm_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "gemm: out of memory");
        return -1;
    }
    c->prec = p;
    dnnl_status_t s = dnnl_engine_create(&c->eng, dnnl_cpu, 0);
    if (s != dnnl_success) {
        free(c);
        return fail(err, errlen, "creating the CPU engine", s);
    }
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return 0;
}

void gemm_ctx_free(gemm_ctx *c) {
    if (!c) return;
    for (int i = 0; i < c->n_cache; i++) dnnl_primitive_destroy(c->cache[i].prim);
    free(c->cache);
    pthread_mutex_destroy(&c->mu);
    dnnl_engine_destroy(c->eng);
    free(c);
}

gemm_precision gemm_ctx_precision(const gemm_ctx *c) {
    return c->prec;
}

void gemm_round_bf16(unsigned short *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, src + i, sizeof x); /* the bits, without breaking aliasing rules */
        uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        dst[i] = (unsigned short)((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u : r);
    }
}

static dnnl_data_type_t ctx_dt(const gemm_ctx *c) {
    return c->prec == GEMM_BF16 ? dnnl_bf16 : dnnl_f32;
}

/* A matmul primitive descriptor for M rows; wmd NULL = let oneDNN choose the weights layout. */
static dnnl_status_t make_pd(const gemm_ctx *c, int M, int K, int N, int ldx, int ldy, int acc,
                             const dnnl_memory_desc_t *wmd, dnnl_primitive_desc_t *pd) {
    dnnl_dims_t sd = {M, K}, ss = {ldx, 1}, wd = {K, N}, dd = {M, N}, ds = {ldy, 1};
    dnnl_memory_desc_t smd, wany, dmd;
    dnnl_status_t s;
    if ((s = dnnl_memory_desc_init_by_strides(&smd, 2, sd, ctx_dt(c), ss)) != dnnl_success) return s;
    if (!wmd) {
        if ((s = dnnl_memory_desc_init_by_tag(&wany, 2, wd, ctx_dt(c), dnnl_format_tag_any)) != dnnl_success)
            return s;
        wmd = &wany;
    }
    if ((s = dnnl_memory_desc_init_by_strides(&dmd, 2, dd, dnnl_f32, ds)) != dnnl_success) return s;
    dnnl_matmul_desc_t md;
    if ((s = dnnl_matmul_desc_init(&md, &smd, wmd, NULL, &dmd)) != dnnl_success) return s;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success) return s;
    s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && acc) {
        if ((s = dnnl_post_ops_create(&po)) == dnnl_success &&
            (s = dnnl_post_ops_append_sum(po, 1.0f)) == dnnl_success)
            s = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &md, attr, c->eng, NULL);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* Reorder the plain [n_out][n_in] matrix at src (fp32 or, for bf16, already rounded) into w. */
static dnnl_status_t reorder_into(gemm_weight *w, const void *src) {
    gemm_ctx *c = w->ctx;
    dnnl_dims_t wd = {w->n_in, w->n_out}, st = {1, w->n_in};
    dnnl_memory_desc_t plain;
    dnnl_memory_t from = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&plain, 2, wd, ctx_dt(c), st);
    if (s == dnnl_success) s = dnnl_memory_create(&from, &plain, c->eng, (void *)src);
    if (s == dnnl_success) s = dnnl_reorder_primitive_desc_create(&rpd, &plain, c->eng, &w->md, c->eng, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&r, rpd);
    if (s == dnnl_success) s = dnnl_stream_create(&stream, c->eng, dnnl_stream_default_flags);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, w->mem}};
        s = dnnl_primitive_execute(r, stream, 2, args);
        if (s == dnnl_success) s = dnnl_stream_wait(stream);
    }
    if (stream) dnnl_stream_destroy(stream);
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (from) dnnl_memory_destroy(from);
    return s;
}

int gemm_weight_create(gemm_weight **out, gemm_ctx *c, const float *const *parts, const int *part_rows,
                       int n_parts, int n_in, char *err, size_t errlen) {
    *out = NULL;
    long n_out = 0;
    for (int i = 0; i < n_parts; i++) {
        if (!parts[i] || part_rows[i] < 1) {
            snprintf(err, errlen, "gemm: weight part %d: %s", i, parts[i] ? "no rows" : "NULL");
            return -1;
        }
        n_out += part_rows[i];
    }
    if (n_parts < 1 || n_in < 1 || n_out > (1L << 30)) {
        snprintf(err, errlen, "gemm: bad weight shape (%d parts, %ld x %d)", n_parts, n_out, n_in);
        return -1;
    }
    gemm_weight *w = calloc(1, sizeof *w);
    if (!w) goto oom;
    w->ctx = c;
    w->n_out = (int)n_out;
    w->n_in = n_in;
    dnnl_primitive_desc_t pd;
    /* the layout oneDNN wants for a typical prefill block (it does not depend on M) */
    dnnl_status_t s = make_pd(c, 256, n_in, w->n_out, n_in, w->n_out, 0, NULL, &pd);
    if (s != dnnl_success) {
        free(w);
        return fail(err, errlen, "no matmul for this weight shape", s);
    }
    w->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    if ((s = dnnl_memory_create(&w->mem, &w->md, c->eng, DNNL_MEMORY_ALLOCATE)) != dnnl_success) {
        free(w);
        return fail(err, errlen, "allocating a reordered weight", s);
    }
    /* one plain source: the parts themselves when they are back to back in fp32, else a copy */
    size_t elems = (size_t)n_out * (size_t)n_in;
    int contiguous = 1;
    for (int i = 1; i < n_parts; i++)
        if (parts[i] != parts[i - 1] + (size_t)part_rows[i - 1] * n_in) contiguous = 0;
    void *src = NULL;
    if (c->prec == GEMM_BF16) {
        uint16_t *b = malloc(elems * sizeof *b);
        if (!b) goto oom;
        size_t off = 0;
        for (int i = 0; i < n_parts; i++) {
            size_t n = (size_t)part_rows[i] * n_in;
            gemm_round_bf16(b + off, parts[i], n);
            off += n;
        }
        src = b;
    } else if (!contiguous) {
        float *f = malloc(elems * sizeof *f);
        if (!f) goto oom;
        size_t off = 0;
        for (int i = 0; i < n_parts; i++) {
            size_t n = (size_t)part_rows[i] * n_in;
            memcpy(f + off, parts[i], n * sizeof *f);
            off += n;
        }
        src = f;
    }
    s = reorder_into(w, src ? src : parts[0]);
    free(src);
    if (s != dnnl_success) {
        gemm_weight_free(w);
        return fail(err, errlen, "reordering a weight", s);
    }
    *out = w;
    return 0;
oom:
    gemm_weight_free(w);
    snprintf(err, errlen, "gemm: out of memory preparing a %ld x %d weight", n_out, n_in);
    return -1;
}

void gemm_weight_free(gemm_weight *w) {
    if (!w) return;
    if (w->mem) dnnl_memory_destroy(w->mem);
    free(w);
}

int gemm_weight_rows(const gemm_weight *w) {
    return w->n_out;
}
int gemm_weight_cols(const gemm_weight *w) {
    return w->n_in;
}
size_t gemm_weight_bytes(const gemm_weight *w) {
    return dnnl_memory_desc_get_size(&w->md);
}

gemm_scratch *gemm_scratch_create(gemm_ctx *c) {
    gemm_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ctx = c;
    if (dnnl_stream_create(&s->stream, c->eng, dnnl_stream_default_flags) != dnnl_success) {
        free(s);
        return NULL;
    }
    return s;
}

void gemm_scratch_free(gemm_scratch *s) {
    if (!s) return;
    dnnl_stream_destroy(s->stream);
    free(s->xb);
    free(s->xf);
    free(s->pad);
    free(s);
}

/* The cached primitive for this shape, or a new one (*owned = 1: the caller destroys it). */
static int lookup(gemm_ctx *c, const gemm_weight *w, int M, int ldx, int ldy, int acc, gemm_entry *e,
                  int *owned, char *err, size_t errlen) {
    const int K = w->n_in, N = w->n_out;
    *owned = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_cache; i++) {
        gemm_entry *x = &c->cache[i];
        if (x->M == M && x->K == K && x->N == N && x->ldx == ldx && x->ldy == ldy && x->acc == acc) {
            *e = *x;
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t s = make_pd(c, M, K, N, ldx, ldy, acc, &w->md, &pd);
    if (s == dnnl_success) {
        e->M = M, e->K = K, e->N = N, e->ldx = ldx, e->ldy = ldy, e->acc = acc;
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        e->scratch_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
        s = dnnl_primitive_create(&e->prim, pd);
        dnnl_primitive_desc_destroy(pd);
    }
    if (s != dnnl_success) {
        pthread_mutex_unlock(&c->mu);
        char what[96];
        snprintf(what, sizeof what, "no matmul for M=%d K=%d N=%d with the prepared layout", M, K, N);
        return fail(err, errlen, what, s);
    }
    if (c->n_cache < GEMM_CACHE_CAP) {
        if (c->n_cache % 32 == 0) {
            gemm_entry *g = realloc(c->cache, sizeof *g * (size_t)(c->n_cache + 32));
            if (g)
                c->cache = g;
            else
                *owned = 1;
        }
        if (!*owned) c->cache[c->n_cache++] = *e;
    } else {
        *owned = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *q = aligned_alloc(64, (need + 63) / 64 * 64);
    if (!q) return -1;
    free(*p);
    *p = q;
    *cap = (need + 63) / 64 * 64;
    return 0;
}

int gemm_run(gemm_scratch *s, const gemm_weight *w, float *Y, int ldy, const float *X, int ldx, int T,
             int accumulate, char *err, size_t errlen) {
    gemm_ctx *c = s->ctx;
    const int K = w->n_in, N = w->n_out;
    if (T < 1 || ldx < K || ldy < N || w->ctx != c) {
        snprintf(err, errlen,
                 "gemm: bad call (T=%d, ldx=%d < n_in=%d or ldy=%d < n_out=%d, or another context)", T, ldx,
                 K, ldy, N);
        return -1;
    }
    const void *src = X;
    int src_ld = ldx;
    if (c->prec == GEMM_FP32 && ldx != K) {
        /* oneDNN 2.6's fast matmul kernels take a dense src only; a strided one runs its reference
         * code, 100x slower: copy the rows together instead */
        size_t need = (size_t)T * K * sizeof(float);
        if (grow(&s->xf, &s->xf_cap, need)) goto oom;
        float *xf = s->xf;
#pragma omp parallel for schedule(static) if (T >= 32)
        for (int t = 0; t < T; t++) memcpy(xf + (size_t)t * K, X + (size_t)t * ldx, sizeof(float) * K);
        src = xf;
        src_ld = K;
    } else if (c->prec == GEMM_BF16) {
        size_t need = (size_t)T * K * sizeof(uint16_t);
        if (grow((void **)&s->xb, &s->xb_cap, need)) goto oom;
#pragma omp parallel for schedule(static) if (T >= 32)
        for (int t = 0; t < T; t++) gemm_round_bf16(s->xb + (size_t)t * K, X + (size_t)t * ldx, (size_t)K);
        src = s->xb;
        src_ld = K;
    }
    gemm_entry e;
    int owned;
    if (lookup(c, w, T, src_ld, ldy, accumulate != 0, &e, &owned, err, errlen)) return -1;
    int rc = -1;
    dnnl_memory_t ms = NULL, md = NULL, mp = NULL;
    const_dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_get_primitive_desc(e.prim, &pd);
    if (st == dnnl_success && grow(&s->pad, &s->pad_cap, e.scratch_bytes ? e.scratch_bytes : 64)) {
        if (owned) dnnl_primitive_destroy(e.prim);
        goto oom;
    }
    if (st == dnnl_success)
        st = dnnl_memory_create(&ms, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), c->eng,
                                (void *)src);
    if (st == dnnl_success)
        st = dnnl_memory_create(&md, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), c->eng, Y);
    if (st == dnnl_success && e.scratch_bytes)
        st = dnnl_memory_create(&mp, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0), c->eng,
                                s->pad);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[4] = {
            {DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, w->mem}, {DNNL_ARG_DST, md}, {DNNL_ARG_SCRATCHPAD, mp}};
        st = dnnl_primitive_execute(e.prim, s->stream, mp ? 4 : 3, args);
        if (st == dnnl_success) st = dnnl_stream_wait(s->stream);
    }
    if (st == dnnl_success)
        rc = 0;
    else
        fail(err, errlen, "running a matmul", st);
    if (mp) dnnl_memory_destroy(mp);
    if (md) dnnl_memory_destroy(md);
    if (ms) dnnl_memory_destroy(ms);
    if (owned) dnnl_primitive_destroy(e.prim);
    return rc;
oom:
    snprintf(err, errlen, "gemm: out of memory for a %d x %d product", T, K);
    return -1;
}
