/* fuzz_mask.c — libFuzzer target for the mask CSV reader (formats/csvio_mask.c, formats/csvio.c).
 *
 * Each input is parsed as a mask file twice: against a fixed model shape (SmolLM2-135M: 30 layers,
 * 9 query heads over 3 KV heads, context 8192), as `bosch eval --mask` does, and without a shape.
 * An accepted mask is checked against what the reader promises (shape, values, ratio); a broken
 * promise aborts, so it is reported like a crash. Build and run: see tests/fuzz/CMakeLists.txt.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csvio.h"

static const model_hparams smol = {
    .n_layer = 30, .n_head = 9, .n_head_kv = 3, .head_dim = 64, .n_embd = 576, .n_ctx_train = 8192};

static void check(const attn_mask *m, const model_hparams *hp) {
    if (!m->z || m->n_layer < 1 || m->n_head_kv < 1 || m->window < 1 || m->sinks < 0) abort();
    if (hp && (m->n_layer != hp->n_layer || m->n_head_kv != hp->n_head_kv || m->sinks > hp->n_ctx_train))
        abort();
    int n_swa = 0;
    for (int l = 0; l < m->n_layer; l++)
        for (int h = 0; h < m->n_head_kv; h++) {
            uint8_t v = mask_get(m, l, h);
            if (v != ATTN_FULL && v != ATTN_SWA) abort();
            n_swa += v == ATTN_SWA;
        }
    double r = mask_ratio(m);
    if (!(r >= 0 && r <= 1) || fabs(r - (double)n_swa / (m->n_layer * m->n_head_kv)) > 1e-12) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512], warn[512];
    attn_mask m;
    if (csv_mask_parse("fuzz.csv", (const char *)data, size, &m, &smol, "SmolLM2 135M Instruct", warn,
                       sizeof warn, err, sizeof err) == 0) {
        check(&m, &smol);
        mask_free(&m);
    } else if (m.z || !err[0]) {
        abort(); /* a refusal frees the mask and says why */
    }
    if (csv_mask_parse("fuzz.csv", (const char *)data, size, &m, NULL, NULL, NULL, 0, err, sizeof err) == 0) {
        check(&m, NULL);
        mask_free(&m);
    }
    return 0;
}
