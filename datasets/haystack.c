/* haystack.c — haystack token streams (noise filler or public-domain prose) for the probes. */
#include "haystack.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Our own filler sentences (docs/design.md §5: no benchmark text). Each starts with its separator. */
static const char *const niah_noise[] = {
    " The hills are quiet and the fields are wide.",
    " A light wind moves over the water.",
    " The path goes on and the day goes by.",
    " Nothing much happens in the small town.",
};
static const char *const passkey_noise[] = {
    " The clouds drift slowly across the sky.",
    " The stream runs on past the old stones.",
    " Morning comes and evening follows.",
    " The travellers keep walking along the road.",
};
#define N_NOISE 4

uint64_t probe_rng_next(uint64_t *state) {
    return rng_splitmix64(state);
}

uint64_t probe_rng_below(uint64_t *state, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* accept r < limit: a multiple of n values */
    uint64_t r;
    do r = probe_rng_next(state);
    while (r >= limit);
    return r % n;
}

void tok_stream_free(tok_stream *s) {
    free(s->tokens);
    free(s->bound);
    memset(s, 0, sizeof *s);
}

int tok_stream_push(tok_stream *s, const int32_t *tok, int n, int starts_unit) {
    if (s->n + n > s->cap) {
        int cap = s->cap ? s->cap : 256;
        while (cap < s->n + n) cap *= 2;
        int32_t *p = realloc(s->tokens, (size_t)cap * sizeof *p);
        if (!p) return -1;
        s->tokens = p;
        s->cap = cap;
    }
    if (starts_unit) {
        if (s->n_bound == s->cap_bound) {
            int cap = s->cap_bound ? 2 * s->cap_bound : 64;
            int *p = realloc(s->bound, (size_t)cap * sizeof *p);
            if (!p) return -1;
            s->bound = p;
            s->cap_bound = cap;
        }
        s->bound[s->n_bound++] = s->n;
    }
    if (n > 0) memcpy(s->tokens + s->n, tok, (size_t)n * sizeof *tok);
    s->n += n;
    return 0;
}

/* Append one unit of text, cut so the stream never exceeds `limit` tokens. */
static int push_text(const tokenizer *t, tok_stream *s, const char *text, size_t len, int limit, char *err,
                     size_t errlen) {
    int32_t *tok = NULL;
    size_t n = 0;
    if (tokenizer_encode(t, text, len, 0, &tok, &n) != 0) {
        snprintf(err, errlen, "haystack: cannot encode filler text '%.40s'", text);
        return -1;
    }
    int take = (int)n;
    if (s->n + take > limit) take = limit - s->n;
    int rc = take > 0 ? tok_stream_push(s, tok, take, 1) : 0;
    free(tok);
    if (rc) snprintf(err, errlen, "haystack: out of memory");
    return rc;
}

static int is_abbrev(const char *p, size_t end) {
    static const char *const ab[] = {"Mr", "Mrs", "Dr", "St", "Esq", "Col", "Capt", "Adm"};
    for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) {
        size_t l = strlen(ab[i]);
        if (end >= l && !strncmp(p + end - l, ab[i], l) && (end == l || p[end - l - 1] == ' ')) return 1;
    }
    return 0;
}

/* Length of the first sentence of p (through its closing punctuation and quote). */
static size_t sentence_len(const char *p) {
    size_t i = 0;
    for (; p[i]; i++) {
        if (p[i] != '.' && p[i] != '?' && p[i] != '!') continue;
        size_t e = i + 1;
        while (p[e] == '"' || p[e] == '\'') e++;
        if (p[e] == ' ' && !(p[i] == '.' && is_abbrev(p, i))) return e;
    }
    return i;
}

static int build_text(const tokenizer *t, uint64_t *rng, int n_tokens, tok_stream *out, char *err,
                      size_t errlen) {
    int para = (int)probe_rng_below(rng, (uint64_t)haystack_text_n_paragraphs);
    char *buf = NULL;
    size_t cap = 0;
    int first = 1; /* the first unit gets a space, like every unit of the noise haystack */
    while (out->n < n_tokens) {
        const char *p = haystack_text_paragraphs[para];
        int para_start = 1;
        while (*p && out->n < n_tokens) {
            size_t l = sentence_len(p);
            if (l + 2 > cap) {
                cap = 2 * (l + 2);
                char *nb = realloc(buf, cap);
                if (!nb) {
                    free(buf);
                    snprintf(err, errlen, "haystack: out of memory");
                    return -1;
                }
                buf = nb;
            }
            size_t k = 0;
            buf[k++] = para_start && !first ? '\n' : ' ';
            memcpy(buf + k, p, l);
            k += l;
            if (push_text(t, out, buf, k, n_tokens, err, errlen)) {
                free(buf);
                return -1;
            }
            first = para_start = 0;
            p += l;
            while (*p == ' ') p++;
        }
        para = (para + 1) % haystack_text_n_paragraphs;
    }
    free(buf);
    return 0;
}

int haystack_build(const tokenizer *t, haystack_kind kind, probe_task task, uint64_t *rng, int n_tokens,
                   tok_stream *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (n_tokens <= 0) return 0;
    int rc = 0;
    if (kind == HAYSTACK_TEXT) {
        rc = build_text(t, rng, n_tokens, out, err, errlen);
    } else if (kind == HAYSTACK_NOISE) {
        const char *const *noise = task == PROBE_PASSKEY ? passkey_noise : niah_noise;
        int32_t *enc[N_NOISE] = {0};
        size_t n_enc[N_NOISE] = {0};
        for (int i = 0; i < N_NOISE && !rc; i++)
            if (tokenizer_encode(t, noise[i], strlen(noise[i]), 0, &enc[i], &n_enc[i]) != 0 ||
                n_enc[i] == 0) {
                snprintf(err, errlen, "haystack: cannot encode filler sentence '%s'", noise[i]);
                rc = -1;
            }
        int phase = (int)probe_rng_below(rng, N_NOISE);
        while (!rc && out->n < n_tokens) {
            int take = (int)n_enc[phase];
            if (out->n + take > n_tokens) take = n_tokens - out->n;
            if (tok_stream_push(out, enc[phase], take, 1)) {
                snprintf(err, errlen, "haystack: out of memory");
                rc = -1;
            }
            phase = (phase + 1) % N_NOISE;
        }
        for (int i = 0; i < N_NOISE; i++) free(enc[i]);
    } else {
        snprintf(err, errlen, "haystack: unknown haystack kind %d", (int)kind);
        rc = -1;
    }
    if (rc) tok_stream_free(out);
    return rc;
}
