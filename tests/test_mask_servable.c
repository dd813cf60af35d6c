/* test_mask_servable.c — the servable projection (engine/mask_servable.c) on hand-made masks, each
 * with the projection written out by hand from the rule "a layer stays SWA only if every one of its
 * KV heads is SWA", and the KV bytes a per-layer engine keeps with it, computed by hand for
 * SmolLM2-135M's shape (30 layers, 3 KV heads, head_dim 64, fp32 cache: 64 x 2 x 4 = 512 bytes
 * per slot) against kv_cache_bytes of the projection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kv_cache.h"
#include "mask.h"

/* Build a mask from rows of '1' (full) / '0' (SWA), one string per layer. */
static void mask_from_rows(attn_mask *m, const char *const *rows, int L, int H, int window, int sinks) {
    assert_int_equal(mask_init(m, L, H, window, sinks, ATTN_FULL), 0);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) mask_set(m, l, h, rows[l][h] == '1' ? ATTN_FULL : ATTN_SWA);
}

static void assert_rows(const attn_mask *m, const char *const *rows) {
    for (int l = 0; l < m->n_layer; l++)
        for (int h = 0; h < m->n_head_kv; h++) {
            if (mask_get(m, l, h) != (rows[l][h] == '1' ? ATTN_FULL : ATTN_SWA))
                fail_msg("layer %d head %d: got %d, want %c", l, h, mask_get(m, l, h), rows[l][h]);
        }
}

static void test_projection_by_hand(void **state) {
    (void)state;
    static const char *const in[] = {"000", "001", "100", "111", "000", "010"};
    static const char *const want[] = {"000", "111", "111", "111", "000", "111"};
    attn_mask m, p;
    mask_from_rows(&m, in, 6, 3, 32, 4);
    assert_int_equal(mask_servable(&p, &m), 0);
    assert_int_equal(p.n_layer, 6);
    assert_int_equal(p.n_head_kv, 3);
    assert_int_equal(p.window, 32);
    assert_int_equal(p.sinks, 4);
    assert_rows(&p, want);
    assert_int_equal(mask_count_swa_layers(&m), 2);
    assert_int_equal(mask_count_swa_layers(&p), 2);
    assert_int_equal(mask_count_swa(&p), 6);
    /* the source is left as it was */
    assert_rows(&m, in);
    /* idempotent: a layer-level mask is its own projection */
    attn_mask q;
    assert_int_equal(mask_servable(&q, &p), 0);
    assert_memory_equal(q.z, p.z, 18);
    mask_free(&q);
    mask_free(&p);
    mask_free(&m);
}

static void test_projection_ends(void **state) {
    (void)state;
    attn_mask m, p;
    /* all SWA stays all SWA; all full stays all full; one SWA head per layer becomes all full */
    assert_int_equal(mask_init(&m, 4, 2, 8, 0, ATTN_SWA), 0);
    assert_int_equal(mask_servable(&p, &m), 0);
    assert_int_equal(mask_count_swa(&p), 8);
    mask_free(&p);
    for (int l = 0; l < 4; l++) mask_set(&m, l, l % 2, ATTN_FULL);
    assert_int_equal(mask_servable(&p, &m), 0);
    assert_int_equal(mask_count_swa(&p), 0);
    assert_int_equal(mask_count_swa_layers(&m), 0);
    mask_free(&p);
    mask_free(&m);
    /* one KV head per layer (multi-head attention without GQA sharing of 1): projection = identity */
    static const char *const one[] = {"0", "1", "0"};
    mask_from_rows(&m, one, 3, 1, 8, 0);
    assert_int_equal(mask_servable(&p, &m), 0);
    assert_rows(&p, one);
    mask_free(&p);
    mask_free(&m);
    assert_int_equal(mask_servable(&p, NULL), -1);
}

/* SmolLM2's shape, context 1024, W 64, S 4: a full head keeps 1024 slots, an SWA head 68. Layers
 * 0-9 all SWA, layers 10-19 two SWA heads of three, the rest full. Head level: 30 + 20 = 50 SWA
 * heads and 40 full; servable: 30 SWA (layers 0-9), 60 full. */
static void test_servable_kv_bytes_by_hand(void **state) {
    (void)state;
    model_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_layer = 30, hp.n_head = 9, hp.n_head_kv = 3, hp.head_dim = 64, hp.n_embd = 576;
    attn_mask m, p;
    assert_int_equal(mask_init(&m, 30, 3, 64, 4, ATTN_FULL), 0);
    for (int l = 0; l < 10; l++)
        for (int h = 0; h < 3; h++) mask_set(&m, l, h, ATTN_SWA);
    for (int l = 10; l < 20; l++) mask_set(&m, l, 0, ATTN_SWA), mask_set(&m, l, 2, ATTN_SWA);
    assert_int_equal(mask_servable(&p, &m), 0);
    const uint64_t slot = 64 * 2 * 4;
    assert_int_equal(kv_cache_bytes(&hp, &m, 1024, 4), (50 * 68 + 40 * 1024) * slot);
    assert_int_equal(kv_cache_bytes(&hp, &p, 1024, 4), (30 * 68 + 60 * 1024) * slot);
    assert_int_equal(kv_cache_bytes(&hp, &p, 1024, 4), 32501760u); /* (2040 + 61440) * 512 */
    mask_free(&p);
    mask_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_projection_by_hand),
        cmocka_unit_test(test_projection_ends),
        cmocka_unit_test(test_servable_kv_bytes_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
