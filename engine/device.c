/* device.c — --device parsing and the batched GPU path (see device.h). */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BOSCH_HAVE_CUDA
#include "backend_cuda.h"
#include "kernels.h"
#include "kv_cache.h"
#endif

int device_cuda_count(void) {
#ifdef BOSCH_HAVE_CUDA
    return kern_device_count();
#else
    return 0;
#endif
}

bosch_device device_default(void) {
    return device_cuda_count() > 0 ? DEVICE_CUDA : DEVICE_CPU;
}

const char *device_name(bosch_device d) {
    return d == DEVICE_CUDA ? "cuda" : "cpu";
}

int device_no_cuda(char *err, size_t errlen) {
#ifdef BOSCH_HAVE_CUDA
    snprintf(err, errlen, "--device cuda: no CUDA GPU is visible (driver missing or no device)");
#else
    snprintf(err, errlen,
             "--device cuda: this build has no CUDA backend (nvcc was not found at configure time)");
#endif
    return -1;
}

int device_parse(const char *s, bosch_device *out, char *err, size_t errlen) {
    if (!strcmp(s, "auto")) {
        *out = device_default();
    } else if (!strcmp(s, "cpu")) {
        *out = DEVICE_CPU;
    } else if (!strcmp(s, "cuda")) {
        if (device_cuda_count() == 0) return device_no_cuda(err, errlen);
        *out = DEVICE_CUDA;
    } else {
        snprintf(err, errlen, "--device must be cpu, cuda or auto, got '%s'", s);
        return -1;
    }
    return 0;
}

#ifdef BOSCH_HAVE_CUDA

struct device_gpu {
    const model *m;
    cuda_model *gm;
    cuda_kv *kv;    /* the current batch's cache */
    attn_mask mask; /* its mask (z NULL before device_gpu_start) */
    int n_seq;      /* sequences of the current batch (0 before device_gpu_start) */
};

/* One short prefill and decode: loads every kernel and sets cuBLAS up before anything is timed. */
static int warm_up(device_gpu *g, char *err, size_t errlen) {
    int32_t toks[16] = {0};
    int rc = 0;
    if (device_gpu_start(g, NULL, 1, 17, err, errlen) || device_gpu_prefill(g, toks, 16, NULL, err, errlen) ||
        device_gpu_decode(g, toks, NULL, err, errlen))
        rc = -1;
    cuda_kv_free(g->kv); /* no batch is started after device_gpu_create */
    g->kv = NULL;
    g->n_seq = 0;
    return rc;
}

int device_gpu_create(device_gpu **out, const model *m, char *err, size_t errlen) {
    *out = NULL;
    if (device_cuda_count() == 0) return device_no_cuda(err, errlen);
    device_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->m = m;
    if (cuda_model_create(&g->gm, m, 0, err, errlen) || warm_up(g, err, errlen)) {
        device_gpu_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

void device_gpu_free(device_gpu *g) {
    if (!g) return;
    cuda_kv_free(g->kv);
    cuda_model_free(g->gm);
    if (g->mask.z) mask_free(&g->mask);
    free(g);
}

void device_gpu_describe(const device_gpu *g, char *buf, size_t cap) {
    char name[256] = "?", err[256];
    uint64_t total = 0;
    kern_device_info(0, name, sizeof name, &total, err, sizeof err);
    snprintf(buf, cap, "%s (%.1f GiB), %.1f MiB of bf16 weights", name, total / 1073741824.0,
             cuda_model_weight_bytes(g->gm) / 1048576.0);
}

int device_gpu_start(device_gpu *g, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    if (n_seq < 1 || n_ctx < 1) {
        snprintf(err, errlen, "device_gpu_start: n_seq %d and n_ctx %d must be >= 1", n_seq, n_ctx);
        return -1;
    }
    attn_mask full = {0};
    char msg[512];
    if (!mask) {
        if (mask_init(&full, g->m->hp.n_layer, g->m->hp.n_head_kv, 1, 0, ATTN_FULL)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        mask = &full;
    }
    cuda_kv_free(g->kv);
    g->kv = NULL;
    g->n_seq = 0;
    if (g->mask.z) mask_free(&g->mask);
    int rc = mask_copy(&g->mask, mask) ? -1 : 0;
    if (rc) snprintf(err, errlen, "out of memory");
    if (!rc && cuda_kv_create(&g->kv, g->gm, mask, n_seq, n_ctx, msg, sizeof msg)) {
        snprintf(err, errlen, "GPU KV cache of %d sequences x %d positions (%.1f MiB): %s", n_seq, n_ctx,
                 (double)n_seq * kv_cache_bytes(&g->m->hp, mask, n_ctx, 4) / 1048576.0, msg);
        rc = -1;
    }
    if (!rc) g->n_seq = n_seq;
    if (full.z) mask_free(&full);
    return rc;
}

int device_gpu_prefill(device_gpu *g, const int32_t *tokens, int n_tokens, float *logits, char *err,
                       size_t errlen) {
    if (!g->kv) {
        snprintf(err, errlen, "prefill before device_gpu_start");
        return -1;
    }
    if (n_tokens < 1) {
        snprintf(err, errlen, "prefill of %d tokens", n_tokens);
        return -1;
    }
    int n = g->n_seq, *last = malloc(sizeof(int) * (size_t)n);
    const attn_mask **masks = malloc(sizeof *masks * (size_t)n);
    int rc = -1;
    if (!last || !masks) {
        snprintf(err, errlen, "out of memory");
    } else {
        for (int s = 0; s < n; s++) last[s] = s * n_tokens + n_tokens - 1, masks[s] = &g->mask;
        cuda_kv_clear(g->kv);
        rc = cuda_forward_prefill(g->gm, masks, n, tokens, n_tokens, g->kv, last, logits ? n : 0, logits, err,
                                  errlen);
    }
    free(last);
    free(masks);
    return rc;
}

int device_gpu_fill_random(device_gpu *g, int n_past, uint64_t seed, char *err, size_t errlen) {
    if (!g->kv) {
        snprintf(err, errlen, "fill before device_gpu_start");
        return -1;
    }
    return cuda_kv_fill_random(g->kv, n_past, seed, err, errlen);
}

int device_gpu_decode(device_gpu *g, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    if (!g->kv) {
        snprintf(err, errlen, "decode before device_gpu_start");
        return -1;
    }
    return cuda_decode(g->gm, g->kv, tokens, logits, err, errlen);
}

int device_gpu_n_seq(const device_gpu *g) {
    return g->n_seq;
}

int device_gpu_n_past(const device_gpu *g) {
    return g->kv ? cuda_kv_n_past(g->kv) : 0;
}

uint64_t device_gpu_kv_bytes(const device_gpu *g) {
    return g->kv ? cuda_kv_bytes(g->kv) : 0;
}

uint64_t device_gpu_peak_bytes(void) {
    return cuda_peak_bytes();
}

#else /* no CUDA in this build: every GPU call reports it */

struct device_gpu {
    int unused;
};

int device_gpu_create(device_gpu **out, const model *m, char *err, size_t errlen) {
    (void)m;
    *out = NULL;
    return device_no_cuda(err, errlen);
}
void device_gpu_free(device_gpu *g) {
    free(g);
}
void device_gpu_describe(const device_gpu *g, char *buf, size_t cap) {
    (void)g;
    snprintf(buf, cap, "no CUDA");
}
int device_gpu_start(device_gpu *g, const attn_mask *mask, int n_seq, int n_ctx, char *err, size_t errlen) {
    (void)g, (void)mask, (void)n_seq, (void)n_ctx;
    return device_no_cuda(err, errlen);
}
int device_gpu_prefill(device_gpu *g, const int32_t *tokens, int n_tokens, float *logits, char *err,
                       size_t errlen) {
    (void)g, (void)tokens, (void)n_tokens, (void)logits;
    return device_no_cuda(err, errlen);
}
int device_gpu_fill_random(device_gpu *g, int n_past, uint64_t seed, char *err, size_t errlen) {
    (void)g, (void)n_past, (void)seed;
    return device_no_cuda(err, errlen);
}
int device_gpu_decode(device_gpu *g, const int32_t *tokens, float *logits, char *err, size_t errlen) {
    (void)g, (void)tokens, (void)logits;
    return device_no_cuda(err, errlen);
}
int device_gpu_n_seq(const device_gpu *g) {
    (void)g;
    return 0;
}
int device_gpu_n_past(const device_gpu *g) {
    (void)g;
    return 0;
}
uint64_t device_gpu_kv_bytes(const device_gpu *g) {
    (void)g;
    return 0;
}
uint64_t device_gpu_peak_bytes(void) {
    return 0;
}

#endif
