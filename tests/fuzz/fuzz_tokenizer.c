/* fuzz_tokenizer.c — libFuzzer target for the tokenizer built from a GGUF's metadata
 * (engine/tokenizer*.c, pretokenize.c, unicode.c over engine/gguf.c).
 *
 * Each input is opened with gguf_open_memory; when the tokenizer loads from it, a fixed string
 * (contractions, digits, spaces, a ChatML marker, multi-byte and invalid UTF-8) and the input's
 * last 256 bytes are encoded with special-token parsing off and on, every id is checked to be in
 * the vocabulary and decoded, and the chat prompt is rendered. Build and run: see
 * tests/fuzz/CMakeLists.txt.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gguf.h"
#include "engine/tokenizer.h"

static volatile uint8_t sink;

static void encode_decode(const tokenizer *t, const char *text, size_t len) {
    for (int special = 0; special < 2; special++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (tokenizer_encode(t, text, len, special, &ids, &n) != 0) continue;
        char buf[512];
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= tokenizer_n_vocab(t)) abort();
            size_t k = tokenizer_token_bytes(t, ids[i], special, buf, sizeof buf);
            if (k) sink ^= (uint8_t)buf[0];
            sink ^= (uint8_t)tokenizer_is_eog(t, ids[i]);
        }
        free(ids);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char fixed[] =
        "Hello, world! It's 2024: 12345 apples\n\n  <|im_start|>user\xc3\xa9\xe2\x82\xac"
        "\xf0\x9f\x98\x80 \xff\xfe\x80 don't";
    char err[512];
    gguf_file *g = NULL;
    if (gguf_open_memory(&g, data, size, "fuzz.gguf", err, sizeof err) != 0) return 0;
    tokenizer *t = NULL;
    if (tokenizer_load(&t, g, err, sizeof err) == 0) {
        encode_decode(t, fixed, sizeof fixed - 1);
        size_t piece = size < 256 ? size : 256;
        encode_decode(t, (const char *)data + size - piece, piece);
        char *prompt = NULL;
        if (tokenizer_chat_prompt(t, NULL, "hi", &prompt, err, sizeof err) == 0) free(prompt);
        tokenizer_free(t);
    } else if (t) {
        abort(); /* a refusal leaves no tokenizer */
    }
    gguf_close(g);
    return 0;
}
