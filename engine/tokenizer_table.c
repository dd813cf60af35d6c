/* tokenizer_table.c — the tokenizer's open-addressing hash tables (see tokenizer_internal.h): token
 * text → id and merge pair → rank. Below the loader (tokenizer.c), the encoder (tokenizer_bpe.c)
 * and the chat template (tokenizer_chat.c), which all look things up here. */
#include <string.h>

#include "tokenizer_internal.h"

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t key) {
    key ^= key >> 31; /* splitmix64 finalizer */
    key *= 0x7fb5d329728ea185ull;
    key ^= key >> 27;
    key *= 0x81dadef4bc2dd44dull;
    return key ^ (key >> 33);
}

uint32_t tokenizer_table_size(uint64_t n) {
    uint32_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    return cap;
}

int32_t tokenizer_lookup_text(const struct tokenizer *t, const char *s, size_t n) {
    uint32_t i = (uint32_t)hash_bytes(s, n) & t->tok_mask;
    for (;; i = (i + 1) & t->tok_mask) {
        int32_t id = t->tok_slots[i];
        if (id < 0) return -1;
        if (t->text_len[id] == n && memcmp(tok_text(t, id), s, n) == 0) return id;
    }
}

void tokenizer_insert_text(struct tokenizer *t, int32_t id) {
    uint32_t n = t->text_len[id];
    uint32_t i = (uint32_t)hash_bytes(tok_text(t, id), n) & t->tok_mask;
    for (;; i = (i + 1) & t->tok_mask) {
        int32_t other = t->tok_slots[i];
        if (other < 0 || (t->text_len[other] == n && memcmp(tok_text(t, other), tok_text(t, id), n) == 0)) {
            t->tok_slots[i] = id;
            return;
        }
    }
}

const merge_slot *tokenizer_lookup_merge(const struct tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint32_t i = (uint32_t)hash_pair(key) & t->merge_mask;
    for (;; i = (i + 1) & t->merge_mask) {
        const merge_slot *s = &t->merge_slots[i];
        if (s->rank < 0) return NULL;
        if (s->key == key) return s;
    }
}

void tokenizer_insert_merge(struct tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t result) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint32_t i = (uint32_t)hash_pair(key) & t->merge_mask;
    for (;; i = (i + 1) & t->merge_mask) {
        merge_slot *s = &t->merge_slots[i];
        if (s->rank < 0) {
            s->key = key, s->rank = rank, s->result = result;
            return;
        }
        if (s->key == key) return;
    }
}
