/* fuzz_duo.c — libFuzzer target for DuoAttention's full_attention_heads.tsv reader (formats/duo.c).
 *
 * Each input is parsed against SmolLM2-135M's shape (30 layers x 3 KV heads), as `bosch import`
 * does, and without a shape. An accepted pattern is checked against what the reader promises (the
 * shape, every gate in [0, 1]), then cut at a ratio and a threshold (duo_to_mask), whose masks must
 * have the promised counts; a broken promise aborts. Build and run: see tests/fuzz/CMakeLists.txt.
 */
#include <stdint.h>
#include <stdlib.h>

#include "formats/duo.h"

static const model_hparams smol = {.n_layer = 30, .n_head = 9, .n_head_kv = 3, .n_ctx_train = 8192};

static void check(const duo_pattern *p, const model_hparams *hp) {
    if (p->n_layer < 1 || p->n_head_kv < 1 || !p->gate) abort();
    if (hp && (p->n_layer != hp->n_layer || p->n_head_kv != hp->n_head_kv)) abort();
    int n = p->n_layer * p->n_head_kv;
    for (int i = 0; i < n; i++)
        if (!(p->gate[i] >= 0 && p->gate[i] <= 1)) abort();
    duo_pattern q = *p;
    q.recent_size = 64;
    attn_mask m;
    if (duo_to_mask(&q, DUO_CUT_SPARSITY, 0.5, &m)) abort();
    if (mask_count_swa(&m) != duo_sparsity_count(n, 0.5)) abort();
    mask_free(&m);
    if (duo_to_mask(&q, DUO_CUT_THRESHOLD, 0.5, &m)) abort();
    for (int i = 0; i < n; i++)
        if ((m.z[i] == ATTN_FULL) != (p->gate[i] >= 0.5)) abort();
    mask_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    duo_pattern p;
    const model_hparams *shapes[2] = {&smol, NULL};
    for (int k = 0; k < 2; k++) {
        err[0] = '\0';
        if (duo_parse_tsv("fuzz.tsv", (const char *)data, size, shapes[k], &p, err, sizeof err) == 0) {
            check(&p, shapes[k]);
            duo_pattern_free(&p);
        } else if (p.gate || !err[0]) {
            abort(); /* a refusal frees the pattern and says why */
        }
    }
    return 0;
}
