/* pretokenize.c — regex-equivalent pre-tokenizer splits (see pretokenize.h for the regexes). */
#include "pretokenize.h"

#include <string.h>

#include "unicode.h"

int pretok_kind_from_name(const char *name, pretok_kind *out) {
    static const char *const smollm_like[] = {"smollm",    "starcoder", "refact", "command-r",
                                              "codeshell", "exaone",    "minerva"};
    if (strcmp(name, "gpt2") == 0) {
        *out = PRETOK_GPT2;
        return 0;
    }
    for (size_t i = 0; i < sizeof(smollm_like) / sizeof(smollm_like[0]); i++) {
        if (strcmp(name, smollm_like[i]) == 0) {
            *out = PRETOK_SMOLLM;
            return 0;
        }
    }
    if (strcmp(name, "qwen2") == 0 || strcmp(name, "deepseek-r1-qwen") == 0) {
        *out = PRETOK_QWEN2;
        return 0;
    }
    return -1;
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
