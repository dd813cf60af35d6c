/* tokenizer.h — byte-level BPE tokenizer built from a GGUF's tokenizer.ggml.* metadata.
 *
 * Sources: GPT-2 byte-level BPE (bytes_to_unicode mapping, merges ranked by order); the
 * pre-tokenizer regexes of the Hugging Face `tokenizers` configs that llama.cpp names in
 * `tokenizer.ggml.pre` ("smollm": GPT-2 split with every digit its own pre-token; "qwen2":
 * the Qwen2 regex with single-digit numbers). Token types (tokenizer.ggml.token_type):
 * 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. Where the two public
 * implementations differ (llama.cpp, Hugging Face `tokenizers`) the choice is stated below; both
 * agree with this one on the test corpus (tests/test_tokenizer.c).
 * Implementation: tokenizer.c (loading, decoding), tokenizer_bpe.c (encoding), tokenizer_chat.c
 * (chat template), pretokenize.c (pre-tokenizers), unicode.c (classes, UTF-8, byte mapping).
 */
#ifndef BOSCH_TOKENIZER_H
#define BOSCH_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct tokenizer tokenizer;

/* Build from the GGUF's tokenizer metadata (model must be "gpt2"; pre-tokenizer must be a known
 * one). Returns 0, or -1 with a message naming the file and key. Free with tokenizer_free. */
int tokenizer_load(tokenizer **out, const gguf_file *g, char *err, size_t errlen);
/* Same, with the pre-tokenizer named explicitly (overriding tokenizer.ggml.pre), e.g. "qwen2";
 * NULL reads it from the file. Known names: see pretokenize.h. */
int tokenizer_load_pre(tokenizer **out, const gguf_file *g, const char *pre, char *err, size_t errlen);
/* Free a tokenizer (NULL is fine). */
void tokenizer_free(tokenizer *t);

/* Number of tokens (tokenizer.ggml.tokens). */
int tokenizer_n_vocab(const tokenizer *t);
/* tokenizer.ggml.bos_token_id / eos_token_id, or -1 when the file has none. */
int32_t tokenizer_bos(const tokenizer *t);
int32_t tokenizer_eos(const tokenizer *t);
/* 1 when generation should stop at this token (eos, <|im_end|>, <|endoftext|>, ...). */
int tokenizer_is_eog(const tokenizer *t, int32_t id);

/* Encode UTF-8 `text` (len bytes). With parse_special != 0, the text of control tokens (e.g.
 * "<|im_start|>") becomes that token; otherwise it is encoded as plain text. User-defined tokens
 * (type 4) are always matched, as llama.cpp and Hugging Face do for non-special added tokens.
 * Special text is matched at the leftmost position, the longest enabled token there (as Hugging
 * Face does; llama.cpp instead splits on the longest token text first, which differs only when
 * special texts overlap). A byte that is not valid UTF-8 is its own code point of no class. A
 * byte whose GPT-2 code point is not a token is dropped, as llama.cpp does (SmolLM2 has none for
 * 0x04 0x06 0x13 0x14 0x16 0x1D 0xC0 0xC1 0xF1 0xF2 0xF5..0xFF). No BOS is added. On success returns 0 and a
 * malloc'd array in *tokens (count in *n_tokens; never NULL, even for no tokens); -1 when out of memory.
 * Thread-safe for one tokenizer. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int parse_special, int32_t **tokens,
                     size_t *n_tokens);

/* Bytes of one token: normal tokens with the byte-level mapping undone, byte tokens "<0xXX>" their
 * byte, user-defined tokens their text, control tokens their text when show_special (else
 * nothing), unknown/unused nothing (llama.cpp's rules). Writes min(full, cap) bytes into buf
 * (buf may be NULL when cap is 0) and returns the full length. */
size_t tokenizer_token_bytes(const tokenizer *t, int32_t id, int show_special, char *buf, size_t cap);

/* Decode a token array to a malloc'd NUL-terminated string (concatenated tokenizer_token_bytes;
 * it may hold NUL bytes when the text did). Decoding inverts encoding for any text whose bytes
 * all have tokens: with show_special, for either parse_special; without, for text without
 * control-token text. NULL when out of memory. */
char *tokenizer_decode(const tokenizer *t, const int32_t *tokens, size_t n_tokens, int show_special);

/* The pre-tokenizer in use ("smollm", "qwen2", ...). */
const char *tokenizer_pre_name(const tokenizer *t);

/* tokenizer.ggml.token_type of id (1 normal, 3 control, 4 user-defined, 6 byte; 0 is read as 1),
 * or -1 when id is out of range. */
int tokenizer_token_type(const tokenizer *t, int32_t id);

/* Token text exactly as stored in the GGUF (byte-level mapped, e.g. "Ġthe"), or NULL when id is
 * out of range. Owned by the tokenizer. */
const char *tokenizer_token_text(const tokenizer *t, int32_t id);

/* Token id of an exact token text (as stored, e.g. "<|im_end|>" or "Ġthe"), or -1. */
int32_t tokenizer_find(const tokenizer *t, const char *text);

/* Apply the model's chat template to one user message (optional system message; NULL uses the
 * template's default system prompt, if any) and append the assistant turn opener. Supports the
 * ChatML family (<|im_start|>role\n...<|im_end|>\n) used by SmolLM2 and Qwen; returns -1 with a
 * message when the file's tokenizer.chat_template is another kind or missing. A non-NULL
 * system (even "") is always written as a system turn. Result is malloc'd (encode it with
 * parse_special = 1). */
int tokenizer_chat_prompt(const tokenizer *t, const char *system, const char *user, char **out, char *err,
                          size_t errlen);

/* The default system prompt parsed from tokenizer.chat_template (a literal
 * '<|im_start|>system\n...<|im_end|>' in it), or NULL when the template has none. */
const char *tokenizer_chat_default_system(const tokenizer *t);

#endif
