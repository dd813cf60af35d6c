/* pretokenize.c — regex-equivalent pre-tokenizer splits (see pretokenize.h for the regexes). */
#include "pretokenize.h"

#include <stdio.h>
#include <string.h>

#include "unicode.h"

/* tokenizer.ggml.pre values and the split each stands for: llama.cpp's names (src/llama-vocab.cpp,
 * the tokenizer_pre -> LLAMA_VOCAB_PRE_TYPE_* mapping) of every pre-tokenizer type whose regex is
 * one of ours, plus "gpt2" (the Hugging Face name) and "minerva" (accepted before llama.cpp
 * settled on "minerva-7b"). */
static const struct {
    const char *name;
    pretok_kind kind;
} pretok_names[] = {
    /* LLAMA_VOCAB_PRE_TYPE_GPT2 and the types that share its regex (MPT, OLMO, JAIS, TRILLION,
     * GRANITE_DOCLING) */
    {"gpt2", PRETOK_GPT2},
    {"gpt-2", PRETOK_GPT2},
    {"phi-2", PRETOK_GPT2},
    {"jina-es", PRETOK_GPT2},
    {"jina-de", PRETOK_GPT2},
    {"jina-v1-en", PRETOK_GPT2},
    {"jina-v2-es", PRETOK_GPT2},
    {"jina-v2-de", PRETOK_GPT2},
    {"jina-v2-code", PRETOK_GPT2},
    {"roberta-bpe", PRETOK_GPT2},
    {"gigachat", PRETOK_GPT2},
    {"a.x-4.0", PRETOK_GPT2},
    {"mellum", PRETOK_GPT2},
    {"modern-bert", PRETOK_GPT2},
    {"exaone4", PRETOK_GPT2},
    {"mpt", PRETOK_GPT2},
    {"olmo", PRETOK_GPT2},
    {"jais", PRETOK_GPT2},
    {"trillion", PRETOK_GPT2},
    {"granite-docling", PRETOK_GPT2},
    /* STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA, MELLUM2: digits one by
     * one, then the GPT-2 split */
    {"smollm", PRETOK_SMOLLM},
    {"starcoder", PRETOK_SMOLLM},
    {"refact", PRETOK_SMOLLM},
    {"command-r", PRETOK_SMOLLM},
    {"codeshell", PRETOK_SMOLLM},
    {"exaone", PRETOK_SMOLLM},
    {"minerva", PRETOK_SMOLLM},
    {"minerva-7b", PRETOK_SMOLLM},
    {"mellum2", PRETOK_SMOLLM},
    /* QWEN2 and the types sharing its regex (STABLELM2, HUNYUAN, SOLAR_OPEN) */
    {"qwen2", PRETOK_QWEN2},
    {"deepseek-r1-qwen", PRETOK_QWEN2},
    {"kormo", PRETOK_QWEN2},
    {"f2llmv2", PRETOK_QWEN2},
    {"megrez", PRETOK_QWEN2},
    {"stablelm2", PRETOK_QWEN2},
    {"hunyuan", PRETOK_QWEN2},
    {"solar-open", PRETOK_QWEN2},
};

int pretok_kind_from_name(const char *name, pretok_kind *out) {
    for (size_t i = 0; i < sizeof(pretok_names) / sizeof(pretok_names[0]); i++) {
        if (strcmp(name, pretok_names[i].name) == 0) {
            *out = pretok_names[i].kind;
            return 0;
        }
    }
    return -1;
}

const char *pretok_known_names(void) {
    static char buf[1024];
    if (!buf[0]) {
        size_t off = 0;
        for (size_t i = 0; i < sizeof(pretok_names) / sizeof(pretok_names[0]) && off < sizeof buf; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? ", " : "", pretok_names[i].name);
    }
    return buf;
}

#define IS_L(i) (flags[i] & UNICODE_LETTER)
#define IS_N(i) (flags[i] & UNICODE_NUMBER)
#define IS_S(i) (flags[i] & UNICODE_SPACE)
#define IS_OTHER(i) (!(flags[i] & (UNICODE_LETTER | UNICODE_NUMBER | UNICODE_SPACE)))

/* Length of a contraction 's 't 're 've 'm 'll 'd at i (0 if none); fold: also upper case. */
static size_t match_contraction(const uint32_t *cps, size_t i, size_t n, int fold) {
    if (cps[i] != '\'' || i + 1 >= n) return 0;
    uint32_t a = cps[i + 1], b = i + 2 < n ? cps[i + 2] : 0;
    if (fold) {
        if (a >= 'A' && a <= 'Z') a += 32;
        if (b >= 'A' && b <= 'Z') b += 32;
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ at i (cps[i] is a space): the run minus its last space when a non-space follows
 * and the run is longer than one, else the whole run. */
static size_t match_spaces(const uint8_t *flags, size_t i, size_t n) {
    size_t k = i;
    while (k < n && IS_S(k)) k++;
    if (k < n && k - i > 1) return k - 1 - i;
    return k - i;
}

/* One GPT-2 match at i within [i, n). */
static size_t gpt2_match(const uint32_t *cps, const uint8_t *flags, size_t i, size_t n) {
    size_t len = match_contraction(cps, i, n, 0);
    if (len) return len;
    size_t j = i + (cps[i] == ' ' && i + 1 < n);
    if (j > i && IS_S(j)) j = i; /* " " then a space: none of the ' ?' alternatives can use the space */
    size_t k = j;
    if (IS_L(j)) {
        while (k < n && IS_L(k)) k++;
        return k - i;
    }
    if (IS_N(j)) {
        while (k < n && IS_N(k)) k++;
        return k - i;
    }
    if (IS_OTHER(j)) {
        while (k < n && IS_OTHER(k)) k++;
        return k - i;
    }
    return match_spaces(flags, i, n); /* cps[i] is a space */
}

static size_t split_gpt2(const uint32_t *cps, const uint8_t *flags, size_t begin, size_t end, uint32_t *ends,
                         size_t n_pieces) {
    for (size_t i = begin; i < end;) {
        i += gpt2_match(cps, flags, i, end);
        ends[n_pieces++] = (uint32_t)i;
    }
    return n_pieces;
}

/* One Qwen2 match at i within [i, n). */
static size_t qwen2_match(const uint32_t *cps, const uint8_t *flags, size_t i, size_t n) {
    size_t len = match_contraction(cps, i, n, 1);
    if (len) return len;
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    size_t j = i;
    if (!IS_L(i) && !IS_N(i) && cps[i] != '\r' && cps[i] != '\n' && i + 1 < n && IS_L(i + 1)) j = i + 1;
    if (IS_L(j)) {
        while (j < n && IS_L(j)) j++;
        return j - i;
    }
    /* \p{N} */
    if (IS_N(i)) return 1;
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    j = i + (cps[i] == ' ' && i + 1 < n && IS_OTHER(i + 1));
    if (IS_OTHER(j)) {
        while (j < n && IS_OTHER(j)) j++;
        while (j < n && (cps[j] == '\r' || cps[j] == '\n')) j++;
        return j - i;
    }
    /* cps[i] is a space. \s*[\r\n]+ : up to the last \r or \n of the space run. */
    size_t k = i, last_nl = 0;
    while (k < n && IS_S(k)) {
        if (cps[k] == '\r' || cps[k] == '\n') last_nl = k + 1;
        k++;
    }
    if (last_nl) return last_nl - i;
    return match_spaces(flags, i, n);
}

size_t pretok_split(pretok_kind kind, const uint32_t *cps, const uint8_t *flags, size_t n, uint32_t *ends) {
    size_t n_pieces = 0;
    switch (kind) {
    case PRETOK_GPT2:
        n_pieces = split_gpt2(cps, flags, 0, n, ends, 0);
        break;
    case PRETOK_SMOLLM: {
        size_t run = 0;
        for (size_t i = 0; i < n; i++) {
            if (IS_N(i)) {
                n_pieces = split_gpt2(cps, flags, run, i, ends, n_pieces);
                ends[n_pieces++] = (uint32_t)(i + 1);
                run = i + 1;
            }
        }
        n_pieces = split_gpt2(cps, flags, run, n, ends, n_pieces);
        break;
    }
    case PRETOK_QWEN2:
        for (size_t i = 0; i < n;) {
            i += qwen2_match(cps, flags, i, n);
            ends[n_pieces++] = (uint32_t)i;
        }
        break;
    }
    return n_pieces;
}
