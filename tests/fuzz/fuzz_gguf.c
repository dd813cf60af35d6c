/* fuzz_gguf.c — libFuzzer target for the GGUF reader (engine/gguf.c).
 *
 * Feeds each input to gguf_open_memory; when it is accepted, walks everything a caller would touch
 * (every kv through the typed getters, every tensor's data) so that a validation gap shows up as
 * an ASan/UBSan report. Build and run: see tests/fuzz/CMakeLists.txt.
 */
#include <stdint.h>
#include <stdlib.h>

#include "engine/gguf.h"

static volatile uint8_t sink;

static void walk(const gguf_file *g) {
    char err[256];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv *kv = &g->kv[i];
        char key[128];
        uint64_t n = kv->key.len < sizeof key - 1 ? kv->key.len : sizeof key - 1;
        for (uint64_t k = 0; k < n; k++) key[k] = kv->key.ptr[k];
        key[n] = '\0';
        uint32_t u;
        float f;
        int b;
        char *s = NULL;
        gguf_str *strs = NULL;
        int32_t *iv = NULL;
        float *fv = NULL;
        uint64_t count;
        gguf_get_u32(g, key, &u, err, sizeof err);
        gguf_get_f32(g, key, &f, err, sizeof err);
        gguf_get_bool(g, key, &b, err, sizeof err);
        if (gguf_get_str(g, key, &s, err, sizeof err) == 0) free(s);
        if (gguf_get_str_array(g, key, &strs, &count, err, sizeof err) == 0) {
            for (uint64_t k = 0; k < count; k++)
                if (strs[k].len) sink ^= (uint8_t)strs[k].ptr[strs[k].len - 1];
            free(strs);
        }
        if (gguf_get_i32_array(g, key, &iv, &count, err, sizeof err) == 0) free(iv);
        if (gguf_get_f32_array(g, key, &fv, &count, err, sizeof err) == 0) free(fv);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        const uint8_t *d = t->data;
        if (t->n_bytes) sink ^= d[0] ^ d[t->n_bytes - 1];
        if (t->name.len) sink ^= (uint8_t)t->name.ptr[t->name.len - 1];
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    gguf_file *g = NULL;
    if (gguf_open_memory(&g, data, size, "fuzz.gguf", err, sizeof err) == 0) {
        walk(g);
        gguf_close(g);
    }
    return 0;
}
