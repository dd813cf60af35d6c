/* pretokenize.h — the pre-tokenizers named by `tokenizer.ggml.pre`: split text (as code points)
 * into the pieces that byte-level BPE then encodes one by one. Internal to the tokenizer.
 *
 * Each split is a hand-written matcher equal to a regex of the Hugging Face tokenizer configs
 * (leftmost alternative wins, backtracking as in Oniguruma/PCRE), with \p{L}, \p{N}, \s from
 * unicode.h:
 *   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   smollm: every \p{N} code point is its own piece (HF `Digits(individual_digits=true)`), then
 *           the gpt2 split inside each remaining run (lookahead stops at the run's end).
 *   qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 *           \s*[\r\n]+|\s+(?!\S)|\s+
 */
#ifndef BOSCH_PRETOKENIZE_H
#define BOSCH_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PRETOK_GPT2,
    PRETOK_SMOLLM,
    PRETOK_QWEN2,
} pretok_kind;

/* Kind for a tokenizer.ggml.pre value: every name llama.cpp (src/llama-vocab.cpp) maps to a
 * pre-tokenizer type whose split is one of the three above, e.g. "gpt-2", "phi-2", "roberta-bpe",
 * "jina-*", "gigachat", "mpt", "olmo" (GPT-2); "smollm", "starcoder", "refact", "command-r",
 * "codeshell", "exaone", "minerva-7b" (smollm); "qwen2", "deepseek-r1-qwen", "stablelm2",
 * "megrez" (qwen2); also "gpt2". Only the split is taken: flags llama.cpp sets beside some of
 * them (add_sep for roberta-bpe / jina-v1-en / jina-v2-code, clean_spaces) act on special tokens
 * and decoding, which this program leaves to its callers. Returns 0, or -1 for an unknown name. */
int pretok_kind_from_name(const char *name, pretok_kind *out);
/* The accepted names, comma-separated, for messages (a static string). */
const char *pretok_known_names(void);

/* Split cps[0..n) into consecutive pieces; flags[i] = unicode_cpt_flags(cps[i]). Writes the end
 * index (exclusive, in code points) of each piece into ends[] (capacity n) and returns the piece
 * count; every piece is non-empty and the last one ends at n. */
size_t pretok_split(pretok_kind kind, const uint32_t *cps, const uint8_t *flags, size_t n, uint32_t *ends);

#endif
