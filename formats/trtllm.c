/* trtllm.c — TensorRT-LLM's KvCacheConfig as JSON (see trtllm.h). */
#include "trtllm.h"

#include <stdio.h>
#include <stdlib.h>

#include "jsonio.h"

int trtllm_save(const char *path, const attn_mask *m, int max_seq, int *n_swa_layers, char *err,
                size_t errlen) {
    if (max_seq < m->window) {
        snprintf(err, errlen, "%s: the full-layer window %d is below the SWA window %d", path, max_seq,
                 m->window);
        return -1;
    }
    uint8_t *swa = malloc((size_t)m->n_layer);
    int n = swa ? mask_servable_layers(m, swa) : -1;
    struct json_object *o = n >= 0 ? json_object_new_object() : NULL;
    struct json_object *kv = o ? json_object_new_object() : NULL;
    struct json_object *win = kv ? json_object_new_array() : NULL;
    int bad = !win;
    for (int l = 0; l < m->n_layer && !bad; l++)
        bad = json_object_array_add(win, json_object_new_int(swa[l] ? m->window : max_seq));
    free(swa);
    if (!bad) {
        json_object_object_add(kv, "max_attention_window", win);
        json_object_object_add(kv, "sink_token_length", json_object_new_int(m->sinks));
        json_object_object_add(o, "kv_cache_config", kv);
        win = kv = NULL;
    }
    json_object_put(win); /* NULL once added to o */
    json_object_put(kv);
    int rc = json_write_put(path, o, !bad, err, errlen);
    if (rc == 0 && n_swa_layers) *n_swa_layers = n;
    return rc;
}
