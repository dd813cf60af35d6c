/* tokenizer.c — byte-level BPE from tokenizer.ggml.* (see tokenizer.h).
 *
 * Loading (vocabulary, merges, special and end-of-generation tokens), lookups and decoding;
 * encoding is in tokenizer_bpe.c, the chat template in tokenizer_chat.c, the hash tables (token
 * text → id, merge pair → rank) in tokenizer_table.c.
 */
#include "tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretokenize.h"
#include "tokenizer_internal.h"
#include "unicode.h"
#include "err.h"

/* ---- loading -------------------------------------------------------------------------------- */

/* Bytes a normal token stands for: its text with the GPT-2 byte mapping undone (code points
 * outside the mapping are kept as UTF-8). Writes into out (capacity >= n), returns the length. */
static size_t unmap_bytes(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = unicode_utf8_decode(s + i, n - i, &cp);
        int b = unicode_cpt_to_byte(cp);
        if (b >= 0) {
            out[o++] = (char)b;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
        }
        i += k;
    }
    return o;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* "<0xAB>" → 0xAB, else -1. */
static int byte_token_value(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int hi = hexval(s[3]), lo = hexval(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* Offset of the first byte of s[0..n) that is not valid UTF-8, or -1 when it all is. */
static long first_invalid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = unicode_utf8_decode(s + i, n - i, &cp);
        if (cp >= UNICODE_INVALID_BASE) return (long)i;
        i += k;
    }
    return -1;
}

/* Byte-level BPE text is UTF-8 (the GPT-2 byte mapping makes every byte a code point), so a token
 * or merge that is not can never be produced by the encoder: refuse it naming the key and index.
 * (llama.cpp loads such text unchecked and decodes it to "[UNK_BYTE_0x...]".) */
static int check_utf8(const gguf_file *g, const char *key, uint64_t i, const char *s, size_t n, char *err,
                      size_t errlen) {
    long at = first_invalid_utf8(s, n);
    if (at < 0) return 0;
    base_seterr(
        err, errlen,
        "tokenizer: %s: %s[%llu]: byte %ld (0x%02x) is not valid UTF-8 (byte-level BPE text is UTF-8)",
        g->path, key, (unsigned long long)i, at, (unsigned)(unsigned char)s[at]);
    return -1;
}

/* tokenizer.ggml.token_type, if present: an array of i32, one per token, into *types (malloc'd;
 * NULL when the key is absent). 0, or -1 with the message. */
static int load_token_types(const gguf_file *g, uint64_t n, int32_t **types, char *err, size_t errlen) {
    *types = NULL;
    const gguf_kv *tkv = gguf_find_kv(g, "tokenizer.ggml.token_type");
    if (!tkv) return 0;
    /* llama.cpp reads this key only as an array of i32 and refuses any other type */
    if (tkv->type == GGUF_TYPE_ARRAY && tkv->arr_type != GGUF_TYPE_INT32) {
        base_seterr(err, errlen,
                    "tokenizer: %s: offset %llu: tokenizer.ggml.token_type is an array of %s; it must be an "
                    "array of i32 (as llama.cpp reads it)",
                    g->path, (unsigned long long)tkv->offset, gguf_type_name(tkv->arr_type));
        return -1;
    }
    uint64_t n_types = 0;
    if (gguf_get_i32_array(g, "tokenizer.ggml.token_type", types, &n_types, err, errlen) != 0) return -1;
    if (n_types != n) {
        base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.token_type has %llu entries, tokens %llu",
                    g->path, (unsigned long long)n_types, (unsigned long long)n);
        free(*types);
        *types = NULL;
        return -1;
    }
    return 0;
}

/* The vocabulary arrays of t for n tokens of `total` bytes of text in all. 0, or -1. */
static int alloc_vocab(tokenizer *t, const gguf_file *g, uint64_t n, uint64_t total, char *err,
                       size_t errlen) {
    t->n_vocab = (int32_t)n;
    t->text = malloc(total);
    t->piece = malloc(total);
    t->text_off = malloc(n * sizeof(uint32_t));
    t->text_len = malloc(n * sizeof(uint32_t));
    t->piece_off = malloc(n * sizeof(uint32_t));
    t->piece_len = malloc(n * sizeof(uint32_t));
    t->type = malloc(n);
    t->tok_mask = tokenizer_table_size(n) - 1;
    t->tok_slots = malloc(((size_t)t->tok_mask + 1) * sizeof(int32_t));
    if (!t->text || !t->piece || !t->text_off || !t->text_len || !t->piece_off || !t->piece_len || !t->type ||
        !t->tok_slots) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory for %llu tokens", g->path,
                    (unsigned long long)n);
        return -1;
    }
    memset(t->tok_slots, 0xff, ((size_t)t->tok_mask + 1) * sizeof(int32_t));
    return 0;
}

/* Token i of type ty (already checked): its text at *off, its decoded bytes at *poff (both advanced),
 * and its entry in the text hash table. 0, or -1 when the text is not UTF-8. */
static int add_token(tokenizer *t, const gguf_file *g, uint64_t i, int ty, const gguf_str *tok, uint32_t *off,
                     uint32_t *poff, char *err, size_t errlen) {
    t->type[i] = (uint8_t)ty;
    const char *s = tok->ptr;
    size_t len = tok->len;
    if (check_utf8(g, "tokenizer.ggml.tokens", i, s, len, err, errlen)) return -1;
    memcpy(t->text + *off, s, len);
    t->text[*off + len] = 0;
    t->text_off[i] = *off, t->text_len[i] = (uint32_t)len;
    *off += (uint32_t)len + 1;
    /* decoded bytes */
    size_t plen = 0;
    int bv = byte_token_value(s, len);
    if (ty == TOKEN_NORMAL) {
        plen = unmap_bytes(s, len, t->piece + *poff);
    } else if (ty == TOKEN_BYTE && bv >= 0) {
        t->piece[*poff] = (char)bv;
        plen = 1;
    } else if (ty == TOKEN_CONTROL || ty == TOKEN_USER) {
        memcpy(t->piece + *poff, s, len);
        plen = len;
    }
    t->piece_off[i] = *poff, t->piece_len[i] = (uint32_t)plen;
    *poff += (uint32_t)plen;
    tokenizer_insert_text(t, (int32_t)i);
    return 0;
}

static int load_vocab(tokenizer *t, const gguf_file *g, char *err, size_t errlen) {
    gguf_str *tokens = NULL;
    int32_t *types = NULL;
    uint64_t n = 0;
    if (gguf_get_str_array(g, "tokenizer.ggml.tokens", &tokens, &n, err, errlen) != 0) return -1;
    int rc = -1;
    if (n == 0 || n > INT32_MAX / 2) {
        base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.tokens: bad count %llu", g->path,
                    (unsigned long long)n);
        goto done;
    }
    if (load_token_types(g, n, &types, err, errlen)) goto done;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) total += tokens[i].len + 1;
    if (total > UINT32_MAX) {
        base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.tokens: %llu bytes of text", g->path,
                    (unsigned long long)total);
        goto done;
    }
    if (alloc_vocab(t, g, n, total, err, errlen)) goto done;
    uint32_t off = 0, poff = 0;
    for (uint64_t i = 0; i < n; i++) {
        int ty = types ? types[i] : TOKEN_NORMAL;
        if (ty < 0 || ty > TOKEN_BYTE) {
            base_seterr(err, errlen,
                        "tokenizer: %s: tokenizer.ggml.token_type[%llu] = %d is not a known type", g->path,
                        (unsigned long long)i, ty);
            goto done;
        }
        if (ty == 0) ty = TOKEN_NORMAL; /* undefined: treat as normal */
        if (add_token(t, g, i, ty, &tokens[i], &off, &poff, err, errlen)) goto done;
    }
    rc = 0;
done:
    free(tokens);
    free(types);
    return rc;
}

static int load_merges(tokenizer *t, const gguf_file *g, char *err, size_t errlen) {
    gguf_str *merges = NULL;
    uint64_t n = 0;
    if (gguf_get_str_array(g, "tokenizer.ggml.merges", &merges, &n, err, errlen) != 0) return -1;
    if (n > INT32_MAX / 4) {
        base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.merges: bad count %llu", g->path,
                    (unsigned long long)n);
        free(merges);
        return -1;
    }
    t->merge_mask = tokenizer_table_size(n) - 1;
    t->merge_slots = malloc(((size_t)t->merge_mask + 1) * sizeof(merge_slot));
    size_t maxlen = 0;
    for (uint64_t i = 0; i < n; i++) maxlen = merges[i].len > maxlen ? merges[i].len : maxlen;
    char *buf = malloc(maxlen + 1);
    if (!t->merge_slots || !buf) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory for %llu merges", g->path,
                    (unsigned long long)n);
        free(merges);
        free(buf);
        return -1;
    }
    for (size_t i = 0; i <= t->merge_mask; i++) t->merge_slots[i].rank = -1;
    for (uint64_t i = 0; i < n; i++) {
        const char *s = merges[i].ptr;
        size_t len = merges[i].len;
        if (check_utf8(g, "tokenizer.ggml.merges", i, s, len, err, errlen)) {
            free(merges);
            free(buf);
            return -1;
        }
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
        if (!sp) {
            base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.merges[%llu] = '%.*s' is not 'a b'",
                        g->path, (unsigned long long)i, (int)(len > 64 ? 64 : len), s);
            free(merges);
            free(buf);
            return -1;
        }
        size_t la = (size_t)(sp - s), lb = len - la - 1;
        int32_t a = tokenizer_lookup_text(t, s, la), b = tokenizer_lookup_text(t, sp + 1, lb);
        memcpy(buf, s, la);
        memcpy(buf + la, sp + 1, lb);
        int32_t r = tokenizer_lookup_text(t, buf, la + lb);
        if (a < 0 || b < 0 || r < 0) {
            t->n_merges_skipped++; /* a merge that cannot produce a vocabulary token */
            continue;
        }
        tokenizer_insert_merge(t, a, b, (int32_t)i, r);
    }
    free(merges);
    free(buf);
    return 0;
}

/* Optional token id key: -1 when absent; error when present but out of range. */
static int load_token_id(const gguf_file *g, const char *key, int32_t n_vocab, int32_t *out, char *err,
                         size_t errlen) {
    *out = -1;
    if (!gguf_find_kv(g, key)) return 0;
    uint32_t v;
    if (gguf_get_u32(g, key, &v, err, errlen) != 0) return -1;
    if (v >= (uint32_t)n_vocab) {
        base_seterr(err, errlen, "tokenizer: %s: %s = %u is outside the vocabulary (%d tokens)", g->path, key,
                    v, n_vocab);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

typedef struct {
    uint32_t len;
    int32_t id;
} special_key;

/* Longest text first, then lower id. */
static int cmp_special(const void *pa, const void *pb) {
    const special_key *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int setup_specials(tokenizer *t) {
    size_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        n += (t->type[i] == TOKEN_CONTROL || t->type[i] == TOKEN_USER) && t->text_len[i] > 0;
    special_key *keys = malloc((n ? n : 1) * sizeof(special_key));
    t->special = malloc((n ? n : 1) * sizeof(int32_t));
    if (!keys || !t->special) {
        free(keys);
        return -1;
    }
    t->n_special = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if ((t->type[i] == TOKEN_CONTROL || t->type[i] == TOKEN_USER) && t->text_len[i] > 0) {
            keys[t->n_special].len = t->text_len[i];
            keys[t->n_special++].id = i;
            t->special_first[(unsigned char)tok_text(t, i)[0]] = 1;
        }
    }
    qsort(keys, t->n_special, sizeof(special_key), cmp_special);
    for (size_t i = 0; i < t->n_special; i++) t->special[i] = keys[i].id;
    free(keys);
    return 0;
}

/* End-of-generation tokens: eos, eot/eom ids, and control tokens with the usual end texts. */
static int setup_eog(tokenizer *t, const gguf_file *g, char *err, size_t errlen) {
    static const char *const end_texts[] = {"<|endoftext|>", "<|im_end|>",    "<|eot_id|>",      "<|eom_id|>",
                                            "<|end|>",       "<end_of_turn>", "<|end_of_text|>", "<EOT>"};
    t->eog = calloc((size_t)t->n_vocab, 1);
    if (!t->eog) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory", g->path);
        return -1;
    }
    if (t->eos >= 0) t->eog[t->eos] = 1;
    static const char *const keys[] = {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"};
    for (size_t k = 0; k < 2; k++) {
        int32_t id;
        if (load_token_id(g, keys[k], t->n_vocab, &id, err, errlen) != 0) return -1;
        if (id >= 0) t->eog[id] = 1;
    }
    for (size_t k = 0; k < sizeof(end_texts) / sizeof(end_texts[0]); k++) {
        int32_t id = tokenizer_lookup_text(t, end_texts[k], strlen(end_texts[k]));
        if (id >= 0 && t->type[id] == TOKEN_CONTROL) t->eog[id] = 1;
    }
    return 0;
}

int tokenizer_load_pre(tokenizer **out, const gguf_file *g, const char *pre, char *err, size_t errlen) {
    *out = NULL;
    tokenizer *t = calloc(1, sizeof(*t));
    char *model = NULL, *pre_file = NULL, *tmpl = NULL;
    int rc = -1;
    if (!t) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory", g->path);
        return -1;
    }
    if (gguf_get_str(g, "tokenizer.ggml.model", &model, err, errlen) != 0) goto done;
    if (strcmp(model, "gpt2") != 0) {
        base_seterr(err, errlen,
                    "tokenizer: %s: tokenizer.ggml.model is '%s'; only 'gpt2' (byte-level BPE) is supported",
                    g->path, model);
        goto done;
    }
    if (!pre) {
        if (gguf_get_str(g, "tokenizer.ggml.pre", &pre_file, err, errlen) != 0) goto done;
        pre = pre_file;
    }
    if (pretok_kind_from_name(pre, &t->pre) != 0) {
        base_seterr(err, errlen, "tokenizer: %s: tokenizer.ggml.pre is '%s'; known: %s", g->path, pre,
                    pretok_known_names());
        goto done;
    }
    snprintf(t->pre_name, sizeof(t->pre_name), "%s", pre);
    if (load_vocab(t, g, err, errlen) != 0 || load_merges(t, g, err, errlen) != 0) goto done;
    if (load_token_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err, errlen) != 0 ||
        load_token_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err, errlen) != 0)
        goto done;
    /* A byte whose code point is not a token is dropped when encoded, as llama.cpp does (and
     * Hugging Face's BPE without unk_token); SmolLM2 lacks e.g. 0x04, 0x1D, 0xC0, 0xF5..0xFF.
     * Byte tokens "<0xXX>" (type 6) are decoded but, as in llama.cpp's BPE, not used to encode. */
    for (int b = 0; b < 256; b++) {
        char s[4];
        size_t n = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)b), s);
        t->byte_token[b] = tokenizer_lookup_text(t, s, n);
    }
    if (setup_specials(t) != 0) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory", g->path);
        goto done;
    }
    if (setup_eog(t, g, err, errlen) != 0) goto done;
    if (gguf_find_kv(g, "tokenizer.chat_template") &&
        gguf_get_str(g, "tokenizer.chat_template", &tmpl, err, errlen) != 0)
        goto done;
    if (tokenizer_chat_setup(t, tmpl) != 0) {
        base_seterr(err, errlen, "tokenizer: %s: out of memory", g->path);
        goto done;
    }
    rc = 0;
done:
    free(model);
    free(pre_file);
    free(tmpl);
    if (rc == 0)
        *out = t;
    else
        tokenizer_free(t);
    return rc;
}

int tokenizer_load(tokenizer **out, const gguf_file *g, char *err, size_t errlen) {
    return tokenizer_load_pre(out, g, NULL, err, errlen);
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->text_off);
    free(t->text_len);
    free(t->piece);
    free(t->piece_off);
    free(t->piece_len);
    free(t->type);
    free(t->eog);
    free(t->tok_slots);
    free(t->merge_slots);
    free(t->special);
    free(t->chat_default_system);
    free(t);
}

int tokenizer_n_vocab(const tokenizer *t) {
    return t->n_vocab;
}

int32_t tokenizer_bos(const tokenizer *t) {
    return t->bos;
}

int32_t tokenizer_eos(const tokenizer *t) {
    return t->eos;
}

int tokenizer_is_eog(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && t->eog[id];
}

const char *tokenizer_pre_name(const tokenizer *t) {
    return t->pre_name;
}

int tokenizer_token_type(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->type[id] : -1;
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? tok_text(t, id) : NULL;
}

int32_t tokenizer_find(const tokenizer *t, const char *text) {
    return tokenizer_lookup_text(t, text, strlen(text));
}

/* ---- decoding ------------------------------------------------------------------------------- */

size_t tokenizer_token_bytes(const tokenizer *t, int32_t id, int show_special, char *buf, size_t cap) {
    if (id < 0 || id >= t->n_vocab) return 0;
    if (t->type[id] == TOKEN_CONTROL && !show_special) return 0;
    size_t n = t->piece_len[id];
    if (buf && cap) memcpy(buf, t->piece + t->piece_off[id], n < cap ? n : cap);
    return n;
}

char *tokenizer_decode(const tokenizer *t, const int32_t *tokens, size_t n_tokens, int show_special) {
    size_t total = 0;
    for (size_t i = 0; i < n_tokens; i++) total += tokenizer_token_bytes(t, tokens[i], show_special, NULL, 0);
    char *out = malloc(total + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n_tokens; i++)
        o += tokenizer_token_bytes(t, tokens[i], show_special, out + o, total - o);
    out[o] = 0;
    return out;
}
