/* tokenizer_bpe.c — encoding (see tokenizer.h): (1) split the text on special-token text
 * (leftmost position, longest token there); (2) decode each raw fragment to code points and
 * pre-tokenize it (pretokenize.c); (3) run BPE on each piece's bytes: start from one symbol per
 * byte (the token whose text is the byte's GPT-2 code point) and repeatedly merge the adjacent
 * pair with the lowest merge rank, leftmost first (the order of GPT-2's `bpe`, llama.cpp and
 * Hugging Face `tokenizers`), using a binary heap of candidate pairs and a linked list of
 * symbols; stale heap entries are skipped, so a piece of m bytes costs O(m log m). A byte without
 * a token (byte_token -1) is a symbol that never merges and is dropped, as in llama.cpp.
 */
#include <stdlib.h>
#include <string.h>

#include "pretokenize.h"
#include "tokenizer.h"
#include "tokenizer_internal.h"
#include "unicode.h"

typedef struct {
    int32_t rank, left, right, lid, rid, result;
} bpe_cand;

/* Scratch for one encode call, sized once for the whole text (a fragment or piece is never
 * longer), so the tokenizer itself stays read-only and several threads may share it. */
typedef struct {
    uint32_t *cps;                         /* [len] code points of the fragment */
    uint32_t *cp_off;                      /* [len + 1] byte offset of each code point in the fragment */
    uint8_t *flags;                        /* [len] unicode_cpt_flags */
    uint32_t *ends;                        /* [len] pre-token ends */
    int32_t *sym_id, *sym_prev, *sym_next; /* [len] BPE symbols of one piece */
    bpe_cand *heap;                        /* candidate pairs, grown as needed */
    size_t cap_heap;
    int32_t *out; /* result, grown as needed */
    size_t n_out, cap_out;
} enc_state;

static int enc_state_init(enc_state *s, size_t len) {
    memset(s, 0, sizeof(*s));
    size_t n = len + 1;
    s->cps = malloc(n * sizeof(uint32_t));
    s->cp_off = malloc(n * sizeof(uint32_t));
    s->flags = malloc(n);
    s->ends = malloc(n * sizeof(uint32_t));
    s->sym_id = malloc(n * sizeof(int32_t));
    s->sym_prev = malloc(n * sizeof(int32_t));
    s->sym_next = malloc(n * sizeof(int32_t));
    return s->cps && s->cp_off && s->flags && s->ends && s->sym_id && s->sym_prev && s->sym_next ? 0 : -1;
}

static void enc_state_free_scratch(enc_state *s) {
    free(s->cps);
    free(s->cp_off);
    free(s->flags);
    free(s->ends);
    free(s->sym_id);
    free(s->sym_prev);
    free(s->sym_next);
    free(s->heap);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int emit(enc_state *s, int32_t id) {
    if (grow((void **)&s->out, &s->cap_out, s->n_out + 1, sizeof(int32_t)) != 0) return -1;
    s->out[s->n_out++] = id;
    return 0;
}

static int cand_less(const bpe_cand *a, const bpe_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(enc_state *s, size_t *n, bpe_cand c) {
    if (grow((void **)&s->heap, &s->cap_heap, *n + 1, sizeof(bpe_cand)) != 0) return -1;
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = c;
    return 0;
}

static bpe_cand heap_pop(enc_state *s, size_t *n) {
    bpe_cand top = s->heap[0], last = s->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && cand_less(&s->heap[c + 1], &s->heap[c])) c++;
        if (!cand_less(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = last;
    return top;
}

static int try_pair(const tokenizer *t, enc_state *s, size_t *n_heap, int32_t l, int32_t r) {
    if (s->sym_id[l] < 0 || s->sym_id[r] < 0) return 0; /* a byte without a token never merges */
    const merge_slot *m = tokenizer_lookup_merge(t, s->sym_id[l], s->sym_id[r]);
    if (!m) return 0;
    bpe_cand c = {m->rank, l, r, s->sym_id[l], s->sym_id[r], m->result};
    return heap_push(s, n_heap, c);
}

/* BPE over the bytes of one pre-token; appends the token ids. */
static int bpe_piece(const tokenizer *t, enc_state *s, const unsigned char *b, size_t m) {
    if (m == 1) return t->byte_token[b[0]] >= 0 ? emit(s, t->byte_token[b[0]]) : 0;
    for (size_t k = 0; k < m; k++) {
        s->sym_id[k] = t->byte_token[b[k]];
        s->sym_prev[k] = (int32_t)k - 1;
        s->sym_next[k] = k + 1 < m ? (int32_t)k + 1 : -1;
    }
    size_t n_heap = 0;
    for (size_t k = 0; k + 1 < m; k++)
        if (try_pair(t, s, &n_heap, (int32_t)k, (int32_t)k + 1) != 0) return -1;
    while (n_heap > 0) {
        bpe_cand c = heap_pop(s, &n_heap);
        if (s->sym_id[c.left] != c.lid || s->sym_next[c.left] != c.right || s->sym_id[c.right] != c.rid)
            continue; /* stale: one side was merged since this pair was pushed */
        int32_t nx = s->sym_next[c.right];
        s->sym_id[c.left] = c.result;
        s->sym_id[c.right] = -1;
        s->sym_next[c.left] = nx;
        if (nx >= 0) s->sym_prev[nx] = c.left;
        if (s->sym_prev[c.left] >= 0 && try_pair(t, s, &n_heap, s->sym_prev[c.left], c.left) != 0) return -1;
        if (nx >= 0 && try_pair(t, s, &n_heap, c.left, nx) != 0) return -1;
    }
    for (int32_t k = 0; k >= 0; k = s->sym_next[k])
        if (s->sym_id[k] >= 0 && emit(s, s->sym_id[k]) != 0) return -1;
    return 0;
}

/* Pre-tokenize and BPE-encode a fragment without special tokens. */
static int encode_fragment(const tokenizer *t, enc_state *s, const char *text, size_t len) {
    if (len == 0) return 0;
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        s->cp_off[n] = (uint32_t)i;
        i += unicode_utf8_decode(text + i, len - i, &s->cps[n]);
        s->flags[n] = (uint8_t)unicode_cpt_flags(s->cps[n]);
    }
    s->cp_off[n] = (uint32_t)len;
    size_t n_pieces = pretok_split(t->pre, s->cps, s->flags, n, s->ends);
    size_t start = 0;
    for (size_t p = 0; p < n_pieces; p++) {
        size_t b0 = s->cp_off[start], b1 = s->cp_off[s->ends[p]];
        if (bpe_piece(t, s, (const unsigned char *)text + b0, b1 - b0) != 0) return -1;
        start = s->ends[p];
    }
    return 0;
}

/* Special token whose text starts at text[i] (longest first), or -1. */
static int32_t match_special(const tokenizer *t, const char *text, size_t len, size_t i, int parse_special) {
    if (!t->special_first[(unsigned char)text[i]]) return -1;
    for (size_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        if (!parse_special && t->type[id] != TOKEN_USER)
            continue; /* control tokens only with parse_special; user-defined always (llama.cpp) */
        uint32_t n = t->text_len[id];
        if (n <= len - i && memcmp(text + i, tok_text(t, id), n) == 0) return id;
    }
    return -1;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int parse_special, int32_t **tokens,
                     size_t *n_tokens) {
    enc_state s;
    memset(&s, 0, sizeof(s));
    int rc = len < UINT32_MAX ? enc_state_init(&s, len) : -1; /* offsets are 32-bit */
    size_t frag = 0;
    for (size_t i = 0; i < len && rc == 0;) {
        int32_t id = t->n_special ? match_special(t, text, len, i, parse_special) : -1;
        if (id < 0) {
            i++;
            continue;
        }
        rc = encode_fragment(t, &s, text + frag, i - frag);
        if (rc == 0) rc = emit(&s, id);
        i += t->text_len[id];
        frag = i;
    }
    if (rc == 0) rc = encode_fragment(t, &s, text + frag, len - frag);
    enc_state_free_scratch(&s);
    if (rc != 0) {
        free(s.out);
        *tokens = NULL;
        *n_tokens = 0;
        return -1;
    }
    if (!s.out) s.out = malloc(sizeof(int32_t)); /* a valid pointer even for no tokens */
    *tokens = s.out;
    *n_tokens = s.n_out;
    return s.out ? 0 : -1;
}
