/* hf_config.c — the Hugging Face config.json patch (see hf_config.h). */
#include "hf_config.h"

#include <stdio.h>
#include <stdlib.h>

#include "jsonio.h"

int hf_config_save(const char *path, const attn_mask *m, const char *model_type, int *n_swa_layers, char *err,
                   size_t errlen) {
    uint8_t *swa = malloc((size_t)m->n_layer);
    int n = swa ? mask_servable_layers(m, swa) : -1;
    struct json_object *o = n >= 0 ? json_object_new_object() : NULL;
    struct json_object *types = o ? json_object_new_array() : NULL;
    int bad = !types;
    if (!bad) {
        json_object_object_add(o, "model_type", json_object_new_string(model_type));
        json_object_object_add(o, "num_hidden_layers", json_object_new_int(m->n_layer));
        json_object_object_add(o, "num_key_value_heads", json_object_new_int(m->n_head_kv));
        for (int l = 0; l < m->n_layer && !bad; l++)
            bad = json_object_array_add(
                types, json_object_new_string(swa[l] ? "sliding_attention" : "full_attention"));
        json_object_object_add(o, "layer_types", types);
        json_object_object_add(o, "sliding_window", n > 0 ? json_object_new_int(m->window) : NULL);
        json_object_object_add(o, "use_sliding_window", json_object_new_boolean(n > 0));
        json_object_object_add(o, "max_window_layers", json_object_new_int(0));
    }
    free(swa);
    int rc = json_write_put(path, o, !bad, err, errlen);
    if (rc == 0 && n_swa_layers) *n_swa_layers = n;
    return rc;
}
