/* tokenizer_internal.h — the tokenizer's data and hash tables, shared by the tokenizer's own files
 * (tokenizer.c, tokenizer_bpe.c, tokenizer_chat.c, tokenizer_table.c) only. */
#ifndef BOSCH_TOKENIZER_INTERNAL_H
#define BOSCH_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pretokenize.h"

/* Merge pair (left id << 32 | right id) → rank (its index in tokenizer.ggml.merges; -1 = empty
 * slot) and the id of the merged token. */
typedef struct {
    uint64_t key;
    int32_t rank;
    int32_t result;
} merge_slot;

struct tokenizer {
    int32_t n_vocab;
    char *text;          /* token texts as stored in the GGUF, each NUL-terminated */
    uint32_t *text_off;  /* [n_vocab] offset of each text in `text` */
    uint32_t *text_len;  /* [n_vocab] bytes, without the NUL */
    char *piece;         /* the bytes each token decodes to (byte mapping undone) */
    uint32_t *piece_off; /* [n_vocab] */
    uint32_t *piece_len; /* [n_vocab] */
    uint8_t *type;       /* [n_vocab] tokenizer.ggml.token_type (0 read as 1, normal) */
    uint8_t *eog;        /* [n_vocab] 1 = end of generation */

    int32_t *tok_slots; /* open-addressing table text → id, -1 = empty; size tok_mask + 1 */
    uint32_t tok_mask;
    merge_slot *merge_slots; /* open-addressing table pair → merge; size merge_mask + 1 */
    uint32_t merge_mask;
    uint64_t n_merges_skipped; /* merges whose parts or result are not in the vocabulary */

    int32_t byte_token[256]; /* token of each single byte (its GPT-2 code point), -1 none */
    pretok_kind pre;
    char pre_name[32];

    int32_t *special; /* control and user-defined token ids, longest text first */
    size_t n_special;
    uint8_t special_first[256]; /* 1 when some special token text starts with this byte */

    int32_t bos, eos; /* -1 when absent */

    int chat_chatml;           /* tokenizer.chat_template is ChatML (<|im_start|>role\n...<|im_end|>) */
    char *chat_default_system; /* default system prompt parsed from the template, or NULL */
    char chat_problem[160];    /* why chat is unavailable, when !chat_chatml */
};

/* tokenizer.ggml.token_type values. */
enum {
    TOKEN_NORMAL = 1,
    TOKEN_UNKNOWN = 2,
    TOKEN_CONTROL = 3,
    TOKEN_USER = 4,
    TOKEN_UNUSED = 5,
    TOKEN_BYTE = 6
};

/* Text of token id as stored in the GGUF (NUL-terminated). */
static inline const char *tok_text(const struct tokenizer *t, int32_t id) {
    return t->text + t->text_off[id];
}

/* ---- the hash tables (tokenizer_table.c) ---- */

/* Slots for n entries: the smallest power of two >= 2n (at least 16). */
uint32_t tokenizer_table_size(uint64_t n);
/* The id whose text is s[0..n), or -1. */
int32_t tokenizer_lookup_text(const struct tokenizer *t, const char *s, size_t n);
/* Insert id under its text; a later token with the same text replaces the earlier (llama.cpp). */
void tokenizer_insert_text(struct tokenizer *t, int32_t id);
/* The merge of pair (a, b), or NULL. */
const merge_slot *tokenizer_lookup_merge(const struct tokenizer *t, int32_t a, int32_t b);
/* Insert unless the pair is already there (the first, lowest rank wins, as in llama.cpp). */
void tokenizer_insert_merge(struct tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t result);

/* Parse tokenizer.chat_template (may be NULL) into the chat_* fields, replacing what was there
 * (tokenizer_chat.c; tests use it to install other templates). Returns 0, or -1 when out of
 * memory. */
int tokenizer_chat_setup(struct tokenizer *t, const char *template_text);

#endif
