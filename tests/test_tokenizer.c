/* test_tokenizer.c — the byte-level BPE tokenizer on the real SmolLM2 GGUF against Hugging Face
 * `tokenizers` (fixtures made by scripts/fixtures/make_tokenizer_fixtures.py):
 *  - tokenizer_cases.txt: a corpus of hard strings (digit runs, runs of spaces and newlines, tabs,
 *    contractions, non-ASCII letters, emoji, code, special-token text) with the reference ids for
 *    the file's pre-tokenizer (smollm) and for the same vocabulary with pre-tokenizer qwen2, each
 *    with special-token parsing off and on;
 *  - tokenizer_chat.txt: chat prompts rendered by Jinja2 from the file's own chat template.
 *  - tokenizer_tiny.gguf / tokenizer_tiny.txt: a hand-made vocabulary (control and overlapping
 *    user-defined tokens, a byte without a token, pre-tokenizer qwen2 from the file, a non-ChatML
 *    template) with reference ids; this part needs no model.
 * Also: decode(encode(x)) == x, metadata-derived ids, errors, and the encode speed (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gguf.h"
#include "pretokenize.h"
#include "tokenizer.h"
#include "tokenizer_internal.h" /* tokenizer_chat_setup, to install test chat templates */
#include "unicode.h"

typedef struct {
    gguf_file *g;
    tokenizer *smollm; /* pre-tokenizer from the file ("smollm") */
    tokenizer *qwen2;  /* same vocabulary, pre-tokenizer "qwen2" */
} fixture;

static const char *model_path(void) {
    const char *p = getenv("BOSCH_MODEL");
    return p && *p ? p : BOSCH_DEFAULT_MODEL;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

/* Fixture escapes: \\ \n \t \r \xHH. Writes into out (capacity >= strlen(s) + 1), returns length. */
static size_t unescape(const char *s, char *out) {
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] != '\\') {
            out[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 'n')
            out[o++] = '\n';
        else if (c == 't')
            out[o++] = '\t';
        else if (c == 'r')
            out[o++] = '\r';
        else if (c == 'x') {
            unsigned v;
            sscanf(s + i + 1, "%2x", &v);
            out[o++] = (char)v;
            i += 2;
        } else
            out[o++] = c;
    }
    out[o] = 0;
    return o;
}

static size_t parse_ids(const char *s, int32_t *ids, size_t cap) {
    size_t n = 0;
    char *end;
    for (;;) {
        long v = strtol(s, &end, 10);
        if (end == s) break;
        assert_true(n < cap);
        ids[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

/* Escaped text for failure messages. */
static void print_case(const char *text, size_t len) {
    fprintf(stderr, "  text: \"");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            fprintf(stderr, "\\x%02X", c);
        else
            fputc(c, stderr);
    }
    fprintf(stderr, "\"\n");
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    char err[512];
    if (gguf_open(&f->g, model_path(), err, sizeof(err)) != 0) fail_msg("%s", err);
    if (tokenizer_load(&f->smollm, f->g, err, sizeof(err)) != 0) fail_msg("%s", err);
    if (tokenizer_load_pre(&f->qwen2, f->g, "qwen2", err, sizeof(err)) != 0) fail_msg("%s", err);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tokenizer_free(f->smollm);
    tokenizer_free(f->qwen2);
    gguf_close(f->g);
    free(f);
    return 0;
}

/* Pre-tokenize text with our split; piece byte lengths into lens (capacity len), returns count. */
static size_t our_pieces(pretok_kind kind, const char *text, size_t len, int32_t *lens) {
    uint32_t *cps = malloc((len + 1) * sizeof(uint32_t)), *ends = malloc((len + 1) * sizeof(uint32_t));
    size_t *off = malloc((len + 1) * sizeof(size_t));
    uint8_t *flags = malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        off[n] = i;
        i += unicode_utf8_decode(text + i, len - i, &cps[n]);
        flags[n] = (uint8_t)unicode_cpt_flags(cps[n]);
    }
    off[n] = len;
    size_t n_pieces = pretok_split(kind, cps, flags, n, ends), start = 0;
    for (size_t p = 0; p < n_pieces; p++) {
        lens[p] = (int32_t)(off[ends[p]] - off[start]);
        start = ends[p];
    }
    free(cps);
    free(ends);
    free(off);
    free(flags);
    return n_pieces;
}

/* Every corpus string: our pre-tokenizer pieces equal HF's; both pre-tokenizers and both special
 * modes give the reference ids. */
static void test_corpus_matches_reference(void **state) {
    fixture *f = *state;
    size_t flen;
    char *file = read_file(BOSCH_SOURCE_DIR "/tests/fixtures/tokenizer_cases.txt", &flen);
    assert_non_null(file);
    char *text = malloc(flen + 1);
    int32_t *want = malloc(flen * sizeof(int32_t));
    size_t len = 0;
    int n_cases = 0, n_checked = 0, n_bad = 0;
    for (char *line = strtok(file, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        if (strncmp(line, "text ", 5) == 0) {
            len = unescape(line + 5, text);
            n_cases++;
            continue;
        }
        char *sp = strchr(line, ' ');
        assert_non_null(sp);
        *sp = 0;
        size_t n_want = parse_ids(sp + 1, want, flen);
        if (strstr(line, "_pieces")) {
            int32_t *lens = malloc((len + 1) * sizeof(int32_t));
            size_t n_lens =
                our_pieces(strncmp(line, "smollm", 6) == 0 ? PRETOK_SMOLLM : PRETOK_QWEN2, text, len, lens);
            if (n_lens != n_want || memcmp(lens, want, n_lens * sizeof(int32_t)) != 0) {
                fprintf(stderr, "pieces differ (%s):\n", line);
                print_case(text, len);
                print_ids("want", want, n_want);
                print_ids("got ", lens, n_lens);
                n_bad++;
            }
            free(lens);
            n_checked++;
            continue;
        }
        const tokenizer *t = strncmp(line, "smollm", 6) == 0 ? f->smollm : f->qwen2;
        int special = strstr(line, "_special") != NULL;
        int32_t *got;
        size_t n_got;
        assert_int_equal(tokenizer_encode(t, text, len, special, &got, &n_got), 0);
        if (n_got != n_want || memcmp(got, want, n_got * sizeof(int32_t)) != 0) {
            fprintf(stderr, "mismatch (%s):\n", line);
            print_case(text, len);
            print_ids("want", want, n_want);
            print_ids("got ", got, n_got);
            n_bad++;
        }
        free(got);
        n_checked++;
    }
    fprintf(stderr, "tokenizer corpus: %d cases, %d splits and encodings, %d mismatches\n", n_cases,
            n_checked, n_bad);
    assert_true(n_cases >= 100);
    assert_int_equal(n_checked, 6 * n_cases);
    assert_int_equal(n_bad, 0);
    free(text);
    free(want);
    free(file);
}

/* 1 when every byte of text has a token (SmolLM2 has none for e.g. 0x1D or 0xFF). */
static int representable(const tokenizer *t, const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char s[8];
        size_t n = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)text[i]), s);
        s[n] = 0;
        if (tokenizer_find(t, s) < 0) return 0;
    }
    return 1;
}

static void check_roundtrip(const tokenizer *t, const char *text, size_t len, int special) {
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(t, text, len, special, &ids, &n), 0);
    char *back = tokenizer_decode(t, ids, n, 1);
    assert_non_null(back);
    size_t back_len = 0; /* the text may hold NUL bytes: sum the token lengths */
    for (size_t i = 0; i < n; i++) back_len += tokenizer_token_bytes(t, ids[i], 1, NULL, 0);
    if (back_len != len || memcmp(back, text, len) != 0 || back[len] != 0) {
        fprintf(stderr, "round trip failed (special=%d):\n", special);
        print_case(text, len);
        fail();
    }
    free(back);
    free(ids);
}

/* decode(encode(x)) == x for every representable corpus string, both modes, both pre-tokenizers;
 * and for byte strings that are not valid UTF-8. */
static void test_decode_inverts_encode(void **state) {
    fixture *f = *state;
    size_t flen;
    char *file = read_file(BOSCH_SOURCE_DIR "/tests/fixtures/tokenizer_cases.txt", &flen);
    assert_non_null(file);
    char *text = malloc(flen + 1);
    int n = 0;
    for (char *line = strtok(file, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "text ", 5) != 0) continue;
        size_t len = unescape(line + 5, text);
        if (!representable(f->smollm, text, len)) continue;
        for (int special = 0; special < 2; special++) {
            check_roundtrip(f->smollm, text, len, special);
            check_roundtrip(f->qwen2, text, len, special);
        }
        n++;
    }
    assert_true(n >= 100);
    /* truncated and stray UTF-8 (bytes that do have tokens in this vocabulary) */
    static const char *bad[] = {"abc\xC3",         "\xE2\x82 x", "\x80\x81\x82",
                                "caf\xC3\xA9\xE2", "\xC3(",      "12\xF0\x9F\x98 34"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_true(representable(f->smollm, bad[i], strlen(bad[i])));
        check_roundtrip(f->smollm, bad[i], strlen(bad[i]), 1);
        check_roundtrip(f->qwen2, bad[i], strlen(bad[i]), 0);
    }
    free(text);
    free(file);
}

/* Control tokens are hidden unless show_special; bytes without a token are dropped. */
static void test_decode_special_and_dropped(void **state) {
    fixture *f = *state;
    const char *s = "<|im_start|>user\nHi<|im_end|>\n";
    int32_t *ids;
    size_t n;
    assert_int_equal(tokenizer_encode(f->smollm, s, strlen(s), 1, &ids, &n), 0);
    char *hidden = tokenizer_decode(f->smollm, ids, n, 0);
    assert_string_equal(hidden, "user\nHi\n");
    free(hidden);
    free(ids);
    /* 0x1D has no token in SmolLM2 (checked by the fixture script too): dropped, like llama.cpp */
    assert_false(representable(f->smollm, "\x1d", 1));
    assert_int_equal(tokenizer_encode(f->smollm, "a\x1d", 2, 0, &ids, &n), 0);
    char *back = tokenizer_decode(f->smollm, ids, n, 1);
    assert_string_equal(back, "a");
    free(back);
    free(ids);
}

/* Values read from the GGUF metadata by the Python gguf package: 49152 tokens, bos 1
 * (<|im_start|>), eos 2 (<|im_end|>), 17 control tokens (ids 0..16), pre "smollm". */
static void test_metadata(void **state) {
    fixture *f = *state;
    assert_int_equal(tokenizer_n_vocab(f->smollm), 49152);
    assert_int_equal(tokenizer_bos(f->smollm), 1);
    assert_int_equal(tokenizer_eos(f->smollm), 2);
    assert_string_equal(tokenizer_pre_name(f->smollm), "smollm");
    assert_string_equal(tokenizer_pre_name(f->qwen2), "qwen2");
    assert_int_equal(tokenizer_find(f->smollm, "<|im_start|>"), 1);
    assert_int_equal(tokenizer_find(f->smollm, "<|endoftext|>"), 0);
    assert_int_equal(tokenizer_find(f->smollm, "no such token text"), -1);
    assert_true(tokenizer_is_eog(f->smollm, 2));
    assert_true(tokenizer_is_eog(f->smollm, 0));
    assert_false(tokenizer_is_eog(f->smollm, 1));
    assert_false(tokenizer_is_eog(f->smollm, -1));
    assert_false(tokenizer_is_eog(f->smollm, 49152));
    for (int32_t id = 0; id < 17; id++) assert_int_equal(tokenizer_token_type(f->smollm, id), 3);
    assert_int_equal(tokenizer_token_type(f->smollm, 17), 1);
    assert_string_equal(tokenizer_token_text(f->smollm, 17), "!");
    /* token_bytes: full length even when the buffer is short; control text only with show */
    char buf[4];
    assert_int_equal(tokenizer_token_bytes(f->smollm, 1, 0, buf, sizeof(buf)), 0);
    assert_int_equal(tokenizer_token_bytes(f->smollm, 1, 1, buf, sizeof(buf)), 12);
    assert_memory_equal(buf, "<|im", 4);
    int32_t the = tokenizer_find(f->smollm, "\xC4\xA0the"); /* "Ġthe" */
    assert_true(the > 0);
    assert_int_equal(tokenizer_token_bytes(f->smollm, the, 0, buf, sizeof(buf)), 4);
    assert_memory_equal(buf, " the", 4);
}

/* Chat prompts equal the Jinja2 rendering of the file's template (ids equal the reference) and of
 * ChatML templates written for the test (installed with the internal tokenizer_chat_setup). */
static void test_chat_prompt(void **state) {
    fixture *f = *state;
    size_t flen;
    char *file = read_file(BOSCH_SOURCE_DIR "/tests/fixtures/tokenizer_chat.txt", &flen);
    assert_non_null(file);
    char *sys = malloc(flen + 1), *user = malloc(flen + 1), *prompt = malloc(flen + 1);
    char *tmpl = malloc(flen + 1);
    int32_t *want = malloc(flen * sizeof(int32_t));
    int have_sys = 0, n = 0, n_templates = 0;
    char err[256];
    tokenizer *own = NULL, *t = f->smollm; /* `own`: a fresh tokenizer carrying a test template */
    for (char *line = strtok(file, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "template ", 9) == 0) {
            n_templates++;
            tokenizer_free(own);
            own = NULL;
            t = f->smollm;
            if (strcmp(line + 9, "-") != 0) {
                unescape(line + 9, tmpl);
                assert_int_equal(tokenizer_load(&own, f->g, err, sizeof(err)), 0);
                assert_int_equal(tokenizer_chat_setup(own, tmpl), 0);
                t = own;
            }
        } else if (strncmp(line, "system ", 7) == 0) {
            have_sys = line[7] == '=';
            if (have_sys) unescape(line + 8, sys);
        } else if (strncmp(line, "user ", 5) == 0) {
            unescape(line + 5, user);
        } else if (strncmp(line, "prompt ", 7) == 0) {
            unescape(line + 7, prompt);
            char *got;
            assert_int_equal(tokenizer_chat_prompt(t, have_sys ? sys : NULL, user, &got, err, sizeof(err)),
                             0);
            assert_string_equal(got, prompt);
            free(got);
            n++;
        } else if (strncmp(line, "ids ", 4) == 0) {
            size_t n_want = parse_ids(line + 4, want, flen);
            int32_t *ids;
            size_t n_ids;
            assert_int_equal(tokenizer_encode(t, prompt, strlen(prompt), 1, &ids, &n_ids), 0);
            assert_int_equal(n_ids, n_want);
            assert_memory_equal(ids, want, n_ids * sizeof(int32_t));
            free(ids);
        }
    }
    assert_int_equal(n_templates, 3);
    assert_int_equal(n, 12);
    assert_string_equal(tokenizer_chat_default_system(f->smollm),
                        "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    tokenizer_free(own);
    free(sys);
    free(user);
    free(prompt);
    free(tmpl);
    free(want);
    free(file);
}

static void test_errors(void **state) {
    fixture *f = *state;
    char err[512] = "";
    tokenizer *t = (tokenizer *)1;
    assert_int_equal(tokenizer_load_pre(&t, f->g, "klingon", err, sizeof(err)), -1);
    assert_null(t);
    assert_non_null(strstr(err, "tokenizer.ggml.pre"));
    assert_non_null(strstr(err, "'klingon'"));
    assert_non_null(strstr(err, model_path()));
    /* empty text: zero tokens, a valid pointer */
    int32_t *ids = NULL;
    size_t n = 99;
    assert_int_equal(tokenizer_encode(f->smollm, "", 0, 1, &ids, &n), 0);
    assert_non_null(ids);
    assert_int_equal(n, 0);
    free(ids);
    char *s = tokenizer_decode(f->smollm, NULL, 0, 1);
    assert_string_equal(s, "");
    free(s);
}

/* Encode speed on an ~8k-token text made of the corpus' prose cases (printed, not asserted), and
 * the long text still round-trips. */
static void test_encode_speed(void **state) {
    fixture *f = *state;
    static const char *parts[] = {
        "The quick brown fox jumps over the lazy dog. The secret passkey is 7315942. Remember it! ",
        "In 1776, 13 colonies declared independence; by 1789 the U.S. Constitution (7 articles) took "
        "effect.\n\nQ: What is the value of key 'alpha-3'?\nA: 4821977\n",
        "def foo(x):\n    return x**2 + 1\n",
        "Caf\xC3\xA9 na\xC3\xAFve fa\xC3\xA7"
        "ade r\xC3\xA9sum\xC3\xA9. ",
        "I'm don't we're they've she'll he'd it's   \n\n\t"};
    size_t len = 0;
    char *text = malloc(24000);
    for (int i = 0; len < 22000; i++) {
        const char *p = parts[i % 5];
        memcpy(text + len, p, strlen(p));
        len += strlen(p);
    }
    int32_t *ids;
    size_t n = 0;
    struct timespec t0, t1;
    int reps = 20;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++) {
        assert_int_equal(tokenizer_encode(f->smollm, text, len, 1, &ids, &n), 0);
        if (r + 1 < reps) free(ids);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "tokenizer encode: %zu bytes -> %zu tokens, %.3f ms per encode, %.0f tokens/s\n", len, n,
            1e3 * s / reps, (double)n * reps / s);
    assert_true(n > 7000 && n < 9000);
    char *back = tokenizer_decode(f->smollm, ids, n, 1);
    assert_int_equal(strlen(back), len);
    assert_memory_equal(back, text, len);
    free(back);
    free(ids);
    free(text);
}

/* ---- the hand-made vocabulary (no model needed) ---- */

static const char *tiny_path(void) {
    return BOSCH_SOURCE_DIR "/tests/fixtures/tokenizer_tiny.gguf";
}

static void test_tiny_matches_reference(void **state) {
    (void)state;
    char err[512];
    gguf_file *g;
    tokenizer *t;
    if (gguf_open(&g, tiny_path(), err, sizeof(err)) != 0) fail_msg("%s", err);
    if (tokenizer_load(&t, g, err, sizeof(err)) != 0) fail_msg("%s", err);
    assert_string_equal(tokenizer_pre_name(t), "qwen2");
    assert_int_equal(tokenizer_bos(t), -1);
    assert_int_equal(tokenizer_eos(t), 2);
    assert_int_equal(tokenizer_token_type(t, 4), 4);
    /* user-defined text is decoded even without show_special; control text is not */
    char buf[8];
    assert_int_equal(tokenizer_token_bytes(t, 4, 0, buf, sizeof(buf)), 4);
    assert_memory_equal(buf, "x>yz", 4);
    assert_int_equal(tokenizer_token_bytes(t, 3, 0, buf, sizeof(buf)), 0);

    size_t flen;
    char *file = read_file(BOSCH_SOURCE_DIR "/tests/fixtures/tokenizer_tiny.txt", &flen);
    assert_non_null(file);
    char *text = malloc(flen + 1);
    int32_t *want = malloc(flen * sizeof(int32_t));
    size_t len = 0;
    int n_checked = 0, n_bad = 0;
    for (char *line = strtok(file, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        if (strncmp(line, "text ", 5) == 0) {
            len = unescape(line + 5, text);
            continue;
        }
        int special = strncmp(line, "special", 7) == 0;
        size_t n_want = parse_ids(strchr(line, ' ') + 1, want, flen), n_got;
        int32_t *got;
        assert_int_equal(tokenizer_encode(t, text, len, special, &got, &n_got), 0);
        if (n_got != n_want || memcmp(got, want, n_got * sizeof(int32_t)) != 0) {
            fprintf(stderr, "tiny mismatch (%s):\n", line);
            print_case(text, len);
            print_ids("want", want, n_want);
            print_ids("got ", got, n_got);
            n_bad++;
        }
        free(got);
        n_checked++;
    }
    assert_int_equal(n_checked, 19); /* one case is documented as not compared */
    /* That case: with special parsing off, the control token "<x>" does not exist, so the
     * user-defined "x>yz" inside "<x>yz" matches (llama.cpp's rule; HF differs, see the script). */
    int32_t *ids;
    size_t n_ids;
    assert_int_equal(tokenizer_encode(t, "<x>yz", 5, 0, &ids, &n_ids), 0);
    assert_int_equal(n_ids, 2);
    assert_int_equal(ids[0], tokenizer_find(t, "<"));
    assert_int_equal(ids[1], 4);
    free(ids);
    assert_int_equal(n_bad, 0);

    /* the template is not ChatML: no chat prompt, and the message says why */
    char *prompt = (char *)1;
    assert_int_equal(tokenizer_chat_prompt(t, NULL, "hi", &prompt, err, sizeof(err)), -1);
    assert_null(prompt);
    assert_non_null(strstr(err, "ChatML"));
    free(text);
    free(want);
    free(file);
    tokenizer_free(t);
    gguf_close(g);
}

/* Load the tiny file with one metadata string changed in place (same length). */
static int load_patched(const char *from, const char *to, char *err, size_t errlen) {
    size_t len;
    char *buf = read_file(tiny_path(), &len);
    assert_non_null(buf);
    size_t n = strlen(from);
    assert_int_equal(strlen(to), n);
    char *hit = NULL;
    for (size_t i = 0; i + n <= len && !hit; i++)
        if (memcmp(buf + i, from, n) == 0) hit = buf + i;
    assert_non_null(hit);
    memcpy(hit, to, n);
    gguf_file *g;
    if (gguf_open_memory(&g, buf, len, "tiny.gguf", err, errlen) != 0) fail_msg("%s", err);
    tokenizer *t = (tokenizer *)1;
    int rc = tokenizer_load(&t, g, err, errlen);
    if (rc != 0) assert_null(t);
    tokenizer_free(t == (tokenizer *)1 ? NULL : t);
    gguf_close(g);
    free(buf);
    return rc;
}

static void test_tiny_errors(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(load_patched("gpt2", "gpt3", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.model"));
    assert_non_null(strstr(err, "'gpt3'"));
    assert_non_null(strstr(err, "tiny.gguf"));
    assert_int_equal(load_patched("qwen2", "qwenX", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.pre"));
    assert_non_null(strstr(err, "'qwenX'"));
    assert_int_equal(load_patched("tokenizer.ggml.merges", "tokenizer.ggml.mergez", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.merges"));
}

/* ---- tokenizer.ggml.pre names (llama.cpp's, src/llama-vocab.cpp) and malformed metadata ---- */

/* Every name of a group maps to the group's split and a tokenizer loaded with that name encodes a
 * mixed string exactly as with the group's canonical name. */
static void check_name_group(const char *canonical, pretok_kind kind, const char *const *names) {
    char err[512];
    gguf_file *g;
    if (gguf_open(&g, tiny_path(), err, sizeof(err)) != 0) fail_msg("%s", err);
    static const char text[] = "It's 2024: 12345 apples,  don't\n\n  stop  \xc3\xa9t\xc3\xa9 x>yz";
    tokenizer *ref;
    if (tokenizer_load_pre(&ref, g, canonical, err, sizeof(err)) != 0) fail_msg("%s", err);
    int32_t *want;
    size_t n_want;
    assert_int_equal(tokenizer_encode(ref, text, sizeof text - 1, 0, &want, &n_want), 0);
    for (int i = 0; names[i]; i++) {
        pretok_kind k = (pretok_kind)-1;
        if (pretok_kind_from_name(names[i], &k) != 0) fail_msg("tokenizer.ggml.pre '%s' refused", names[i]);
        if (k != kind) fail_msg("'%s' maps to split %d, want %d", names[i], (int)k, (int)kind);
        tokenizer *t;
        if (tokenizer_load_pre(&t, g, names[i], err, sizeof(err)) != 0) fail_msg("%s: %s", names[i], err);
        assert_string_equal(tokenizer_pre_name(t), names[i]);
        int32_t *got;
        size_t n_got;
        assert_int_equal(tokenizer_encode(t, text, sizeof text - 1, 0, &got, &n_got), 0);
        assert_int_equal(n_got, n_want);
        assert_memory_equal(got, want, n_want * sizeof(int32_t));
        free(got);
        tokenizer_free(t);
    }
    free(want);
    tokenizer_free(ref);
    gguf_close(g);
}

static void test_pre_names_gpt2(void **state) {
    (void)state;
    check_name_group(
        "gpt2", PRETOK_GPT2,
        (const char *const[]){"gpt-2",      "phi-2",      "jina-es",      "jina-de",         "jina-v1-en",
                              "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe",     "gigachat",
                              "a.x-4.0",    "mellum",     "modern-bert",  "exaone4",         "mpt",
                              "olmo",       "jais",       "trillion",     "granite-docling", NULL});
}

static void test_pre_names_smollm(void **state) {
    (void)state;
    check_name_group("smollm", PRETOK_SMOLLM,
                     (const char *const[]){"starcoder", "refact", "command-r", "codeshell", "exaone",
                                           "minerva", "minerva-7b", "mellum2", NULL});
}

static void test_pre_names_qwen2(void **state) {
    (void)state;
    check_name_group("qwen2", PRETOK_QWEN2,
                     (const char *const[]){"deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2",
                                           "hunyuan", "solar-open", NULL});
}

/* The three splits really differ on that string (a name in the wrong group would show). */
static void test_pre_splits_differ(void **state) {
    (void)state;
    static const uint32_t cps[] = {'a', ' ', '1', '2', '3', 'b'};
    uint8_t flags[6];
    for (int i = 0; i < 6; i++) flags[i] = unicode_cpt_flags(cps[i]);
    uint32_t ends[6];
    /* gpt2: "a" " 123" "b"; smollm: "a" " " "1" "2" "3" "b"; qwen2: "a" " " "1" "2" "3" "b" */
    assert_int_equal(pretok_split(PRETOK_GPT2, cps, flags, 6, ends), 3);
    assert_int_equal(ends[1], 5);
    assert_int_equal(pretok_split(PRETOK_SMOLLM, cps, flags, 6, ends), 6);
    /* qwen2 vs smollm: "A's" keeps "'s" as one piece only in qwen2 (case-insensitive) */
    static const uint32_t c2[] = {'A', '\'', 'S'};
    for (int i = 0; i < 3; i++) flags[i] = unicode_cpt_flags(c2[i]);
    assert_int_equal(pretok_split(PRETOK_QWEN2, c2, flags, 3, ends), 2);
    assert_int_equal(pretok_split(PRETOK_SMOLLM, c2, flags, 3, ends), 3);
}

static int load_fixture(const char *name, char *err, size_t errlen) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", BOSCH_SOURCE_DIR, name);
    gguf_file *g;
    if (gguf_open(&g, path, err, errlen) != 0) fail_msg("%s", err);
    tokenizer *t = (tokenizer *)1;
    int rc = tokenizer_load(&t, g, err, errlen);
    if (rc != 0) assert_null(t);
    if (rc == 0) tokenizer_free(t);
    gguf_close(g);
    return rc;
}

/* Metadata llama.cpp would misread: refused, naming the key and the index (fixtures by
 * scripts/fixtures/make_tokenizer_bad_fixtures.py). */
static void test_tiny_bad_metadata(void **state) {
    (void)state;
    char err[512] = "";
    if (load_fixture("tokenizer_min.gguf", err, sizeof err) != 0) fail_msg("%s", err); /* pre "gpt-2" */
    assert_int_equal(load_fixture("tokenizer_bad_types_u32.gguf", err, sizeof err), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.token_type"));
    assert_non_null(strstr(err, "u32"));
    assert_non_null(strstr(err, "i32"));
    assert_int_equal(load_fixture("tokenizer_bad_merge_utf8.gguf", err, sizeof err), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.merges[0]"));
    assert_non_null(strstr(err, "0xff"));
    assert_non_null(strstr(err, "UTF-8"));
    assert_int_equal(load_fixture("tokenizer_bad_token_utf8.gguf", err, sizeof err), -1);
    assert_non_null(strstr(err, "tokenizer.ggml.tokens[0]"));
    assert_non_null(strstr(err, "0xfe"));
}

int main(void) {
    const struct CMUnitTest tiny[] = {
        cmocka_unit_test(test_pre_names_gpt2),    cmocka_unit_test(test_pre_names_smollm),
        cmocka_unit_test(test_pre_names_qwen2),   cmocka_unit_test(test_pre_splits_differ),
        cmocka_unit_test(test_tiny_bad_metadata), cmocka_unit_test(test_tiny_matches_reference),
        cmocka_unit_test(test_tiny_errors),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_matches_reference),
        cmocka_unit_test(test_decode_inverts_encode),
        cmocka_unit_test(test_decode_special_and_dropped),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_chat_prompt),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_encode_speed),
    };
    int rc = cmocka_run_group_tests_name("tokenizer_tiny", tiny, NULL, NULL);
    FILE *probe = fopen(model_path(), "rb");
    if (!probe) {
        fprintf(stderr, "model %s missing: model tests skipped\n", model_path());
        return rc ? rc : 77;
    }
    fclose(probe);
    return rc + cmocka_run_group_tests_name("tokenizer_model", tests, setup, teardown);
}
