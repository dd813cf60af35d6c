/* backend_cuda_kv.c — the hybrid KV cache on the GPU (see backend_cuda.h): its storage, the prefill's
 * store, the random fill, and the decode step's store and attention (the step itself, the block's
 * recipe: backend_cuda_forward.c).
 * Layout as kern_attn_decode wants it: per (layer, kv_head) one [n_seq][cap][head_dim] block,
 * cap = n_ctx for a full head and min(n_ctx, sinks + window) for an SWA head (ring slots). */
#ifdef BOSCH_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

#include "backend_cuda_internal.h"
#include "kv_cache.h"
#include "rng.h"

struct cuda_kv {
    int n_layer, n_head_kv, head_dim, n_seq, n_ctx, n_past;
    attn_mask mask;   /* copy of the mask (z, window, sinks) */
    float *store;     /* one device block: every head's keys, then every head's values */
    float **d_k;      /* [n_layer*n_head_kv] device array of device pointers into store */
    float **d_v;      /* same for values */
    int *d_cap;       /* [n_layer*n_head_kv] slots per head and sequence */
    uint8_t *d_z;     /* [n_layer*n_head_kv] */
    uint64_t bytes;   /* bytes of keys and values */
    float *d_scratch; /* kern_attn_decode_split's chunk partials (NULL: GQA group > 8, plain kernel) */
    size_t scratch_n; /* floats of d_scratch */
};

int cuda_kv_create(cuda_kv **out, const cuda_model *g, const attn_mask *mask, int n_seq, int n_ctx, char *err,
                   size_t errlen) {
    const model_hparams *hp = &g->hp;
    *out = NULL;
    if (mask->n_layer != hp->n_layer || mask->n_head_kv != hp->n_head_kv || mask->window < 1 ||
        mask->sinks < 0 || n_seq < 1 || n_ctx < 1) {
        base_seterr(err, errlen,
                    "cuda: KV cache: mask %d x %d (window %d, sinks %d), n_seq %d, n_ctx %d do not fit "
                    "the model (%d x %d)",
                    mask->n_layer, mask->n_head_kv, mask->window, mask->sinks, n_seq, n_ctx, hp->n_layer,
                    hp->n_head_kv);
        return -1;
    }
    int units = hp->n_layer * hp->n_head_kv;
    cuda_kv *kv = calloc(1, sizeof *kv);
    int *cap = malloc(sizeof(int) * units);
    float **hk = malloc(sizeof(float *) * units), **hv = malloc(sizeof(float *) * units);
    int rc = -1;
    if (!kv || !cap || !hk || !hv || mask_copy(&kv->mask, mask)) {
        base_seterr(err, errlen, "cuda: out of host memory");
        goto done;
    }
    kv->n_layer = hp->n_layer, kv->n_head_kv = hp->n_head_kv, kv->head_dim = hp->head_dim;
    kv->n_seq = n_seq, kv->n_ctx = n_ctx;
    uint64_t slots = 0; /* per sequence, over all heads */
    for (int u = 0; u < units; u++) {
        int swa_cap = mask->sinks + mask->window < n_ctx ? mask->sinks + mask->window : n_ctx;
        cap[u] = mask->z[u] == ATTN_FULL ? n_ctx : swa_cap;
        slots += (uint64_t)cap[u];
    }
    uint64_t per_kind = slots * (uint64_t)n_seq * hp->head_dim; /* floats of keys (= of values) */
    kv->bytes = 2 * per_kind * sizeof(float);
    if (kern_malloc((void **)&kv->store, kv->bytes, err, errlen)) goto done;
    uint64_t off = 0;
    for (int u = 0; u < units; u++) {
        hk[u] = kv->store + off;
        hv[u] = kv->store + per_kind + off;
        off += (uint64_t)n_seq * cap[u] * hp->head_dim;
    }
    if (kern_malloc((void **)&kv->d_k, sizeof(float *) * units, err, errlen) ||
        kern_malloc((void **)&kv->d_v, sizeof(float *) * units, err, errlen) ||
        kern_malloc((void **)&kv->d_cap, sizeof(int) * units, err, errlen) ||
        kern_malloc((void **)&kv->d_z, (size_t)units, err, errlen) ||
        kern_upload(kv->d_k, hk, sizeof(float *) * units, err, errlen) ||
        kern_upload(kv->d_v, hv, sizeof(float *) * units, err, errlen) ||
        kern_upload(kv->d_cap, cap, sizeof(int) * units, err, errlen) ||
        kern_upload(kv->d_z, mask->z, (size_t)units, err, errlen))
        goto done;
    if (hp->n_head / hp->n_head_kv <= 8) { /* the split decode kernel's GQA limit */
        kv->scratch_n = kern_attn_decode_scratch_floats(n_seq, hp->n_head, hp->head_dim, n_ctx - 1, 0);
        if (kern_malloc((void **)&kv->d_scratch, sizeof(float) * kv->scratch_n, err, errlen)) goto done;
    }
    rc = 0;
done:
    free(cap);
    free(hk);
    free(hv);
    if (rc) {
        cuda_kv_free(kv);
        return -1;
    }
    *out = kv;
    return 0;
}

void cuda_kv_free(cuda_kv *kv) {
    if (!kv) return;
    kern_free(kv->store);
    kern_free(kv->d_k);
    kern_free(kv->d_v);
    kern_free(kv->d_cap);
    kern_free(kv->d_z);
    kern_free(kv->d_scratch);
    if (kv->mask.z) mask_free(&kv->mask);
    free(kv);
}

int cuda_kv_n_past(const cuda_kv *kv) {
    return kv->n_past;
}
int cuda_kv_n_seq(const cuda_kv *kv) {
    return kv->n_seq;
}
int cuda_kv_n_ctx(const cuda_kv *kv) {
    return kv->n_ctx;
}
uint64_t cuda_kv_bytes(const cuda_kv *kv) {
    return kv->bytes;
}
void cuda_kv_clear(cuda_kv *kv) {
    kv->n_past = 0;
}
void cuda_kv_set_n_past(cuda_kv *kv, int n_past) {
    kv->n_past = n_past;
}

static int same_mask(const attn_mask *a, const attn_mask *b) {
    size_t n = (size_t)a->n_layer * a->n_head_kv;
    return a->window == b->window && a->sinks == b->sinks && !memcmp(a->z, b->z, n);
}

int cuda_kv_check(const cuda_kv *kv, const attn_mask *const *masks, int n_seq, int n_tokens, char *err,
                  size_t errlen) {
    if (kv->n_past != 0 || n_seq != kv->n_seq || n_tokens > kv->n_ctx) {
        base_seterr(err, errlen,
                    "cuda: KV cache: prefill of %d x %d tokens needs an empty cache of %d sequences "
                    "x >= %d positions (it has n_past %d, %d x %d)",
                    n_seq, n_tokens, n_seq, n_tokens, kv->n_past, kv->n_seq, kv->n_ctx);
        return -1;
    }
    for (int s = 0; s < n_seq; s++) {
        int ok = masks ? same_mask(masks[s], &kv->mask) : mask_count_swa(&kv->mask) == 0;
        if (!ok) {
            base_seterr(err, errlen, "cuda: KV cache: the mask of sequence %d differs from the cache's", s);
            return -1;
        }
    }
    return 0;
}

int cuda_kv_store_prefill(cuda_kv *kv, int l, const float *d_k, const float *d_v, int n_tokens, char *err,
                          size_t errlen) {
    size_t u = (size_t)l * kv->n_head_kv;
    return kern_kv_store_block(d_k, d_v, kv->d_k + u, kv->d_v + u, kv->d_cap + u, kv->d_z + u, kv->n_seq, 0,
                               n_tokens, kv->n_head_kv, kv->head_dim, kv->mask.window, kv->mask.sinks, NULL,
                               err, errlen);
}

#define FILL_ROW 1024            /* floats per copied row (4 KiB) */
#define FILL_POOL_ROWS 4096      /* rows of the random pool (16 MiB) */
#define FILL_CALL_ROWS (1 << 22) /* rows per kern_gather_rows call (blocks of one launch) */

int cuda_kv_fill_random(cuda_kv *kv, int n_past, uint64_t seed, char *err, size_t errlen) {
    if (n_past < 0 || n_past > kv->n_ctx) {
        base_seterr(err, errlen, "cuda: KV cache: fill_random n_past %d is outside 0..%d", n_past, kv->n_ctx);
        return -1;
    }
    uint64_t total = kv->bytes / sizeof(float), rows = total / FILL_ROW, tail = total % FILL_ROW;
    uint64_t pool_rows = rows < FILL_POOL_ROWS ? rows : FILL_POOL_ROWS;
    size_t pool_n = (size_t)(pool_rows ? pool_rows * FILL_ROW : tail);
    float *h_pool = malloc(sizeof(float) * (pool_n ? pool_n : 1));
    int32_t *h_idx = malloc(sizeof(int32_t) * (size_t)(rows ? rows : 1));
    float *d_pool = NULL;
    int32_t *d_idx = NULL;
    int rc = -1;
    if (!h_pool || !h_idx) {
        base_seterr(err, errlen, "cuda: KV cache: fill_random: out of host memory (%llu rows)",
                    (unsigned long long)rows);
        goto done;
    }
    uint64_t st = seed;
    for (size_t i = 0; i < pool_n; i++) /* top 24 bits -> uniform in [-1, 1) */
        h_pool[i] = (float)((double)(rng_splitmix64(&st) >> 40) / 8388608.0 - 1.0);
    if (rows > 0) {
        for (uint64_t r = 0; r < rows; r++) h_idx[r] = (int32_t)(rng_splitmix64(&st) % pool_rows);
        if (kern_malloc((void **)&d_pool, sizeof(float) * pool_n, err, errlen) ||
            kern_malloc((void **)&d_idx, sizeof(int32_t) * rows, err, errlen) ||
            kern_upload(d_pool, h_pool, sizeof(float) * pool_n, err, errlen) ||
            kern_upload(d_idx, h_idx, sizeof(int32_t) * rows, err, errlen))
            goto done;
        for (uint64_t r0 = 0; r0 < rows; r0 += FILL_CALL_ROWS) {
            uint64_t n = rows - r0 < FILL_CALL_ROWS ? rows - r0 : FILL_CALL_ROWS;
            if (kern_gather_rows(d_pool, d_idx + r0, kv->store + r0 * FILL_ROW, (int)n, FILL_ROW, NULL, err,
                                 errlen))
                goto done;
        }
    }
    if (tail > 0 && kern_upload(kv->store + rows * FILL_ROW, h_pool, sizeof(float) * tail, err, errlen))
        goto done;
    if (kern_sync(NULL, err, errlen)) goto done;
    kv->n_past = n_past;
    rc = 0;
done:
    kern_free(d_pool);
    kern_free(d_idx);
    free(h_pool);
    free(h_idx);
    return rc;
}

int cuda_kv_attend_decode(cuda_kv *kv, int l, int pos, const float *d_q, const float *d_k, const float *d_v,
                          float *d_att, int n_head, char *err, size_t errlen) {
    size_t u = (size_t)l * kv->n_head_kv;
    int n = kv->n_seq, hd = kv->head_dim;
    if (kern_kv_store(d_k, d_v, kv->d_k + u, kv->d_v + u, kv->d_cap + u, kv->d_z + u, n, pos, kv->n_head_kv,
                      hd, kv->mask.window, kv->mask.sinks, NULL, err, errlen))
        return -1;
    if (kv->d_scratch) /* GQA-aware, split over blocks */
        return kern_attn_decode_split(d_q, (const float *const *)(kv->d_k + u),
                                      (const float *const *)(kv->d_v + u), kv->d_cap + u, kv->d_z + u, d_att,
                                      n, pos, n_head, kv->n_head_kv, hd, kv->mask.window, kv->mask.sinks, 0,
                                      kv->d_scratch, kv->scratch_n, NULL, err, errlen);
    return kern_attn_decode(d_q, (const float *const *)(kv->d_k + u), (const float *const *)(kv->d_v + u),
                            kv->d_cap + u, kv->d_z + u, d_att, n, pos, n_head, kv->n_head_kv, hd,
                            kv->mask.window, kv->mask.sinks, NULL, err, errlen);
}

#endif /* BOSCH_HAVE_CUDA */
