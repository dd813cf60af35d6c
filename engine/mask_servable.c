/* mask_servable.c — the servable projection of a head mask (see mask.h): what a serving engine
 * with one attention window per layer (llama.cpp, vLLM, SGLang, TensorRT-LLM) can run. */
#include <string.h>

#include "mask.h"

/* 1 when every KV head of `layer` is SWA. */
static int layer_all_swa(const attn_mask *m, int layer) {
    for (int h = 0; h < m->n_head_kv; h++)
        if (mask_get(m, layer, h) != ATTN_SWA) return 0;
    return 1;
}

int mask_servable(attn_mask *dst, const attn_mask *src) {
    if (!dst || !src || !src->z) return -1;
    if (mask_init(dst, src->n_layer, src->n_head_kv, src->window, src->sinks, ATTN_FULL)) return -1;
    for (int l = 0; l < src->n_layer; l++)
        if (layer_all_swa(src, l))
            memset(dst->z + (size_t)l * src->n_head_kv, ATTN_SWA, (size_t)src->n_head_kv);
    return 0;
}

int mask_servable_layers(const attn_mask *m, uint8_t *swa_layer) {
    if (!m || !m->z) return -1;
    int n = 0;
    for (int l = 0; l < m->n_layer; l++) {
        int all = layer_all_swa(m, l);
        if (swa_layer) swa_layer[l] = (uint8_t)all;
        n += all;
    }
    return n;
}

int mask_count_swa_layers(const attn_mask *m) {
    return mask_servable_layers(m, NULL);
}
