/* gguf_write.h — write a random-weight GGUF of a registered architecture (`bosch mkmodel`).
 *
 * Purpose: a model file of a real model's shape that can be made anywhere (the GPU machine
 * cannot receive the 98 MB default model), so the GPU forward can be checked against the CPU
 * forward on the same file, and speed measured at the real shape. The text it produces is noise.
 *
 * File (GGUF v3, format spec: ggml/docs/gguf.md): the architecture's `{arch}.*` hyper-parameters
 * and every tensor its row in the registry requires (engine/arch.h), named as the row says, in
 * arch_tensor order: for llama token_embd, output_norm and per layer attn_norm, attn_q, attn_k,
 * attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down (qwen3 adds attn_q_norm and
 * attn_k_norm after attn_output); the output embedding is tied (no output.weight, as SmolLM2) where
 * the row allows it; matrices F16, or Q4_1 with a
 * Q8_0 token embedding (the default model's mix); norms F32. Weights are uniform in
 * [-a, a] with a = std·sqrt(3) (standard deviation `std`), norms 1 + uniform(±0.1), from a
 * splitmix64 stream seeded per tensor, so a seed gives the same file on every machine.
 * Tokenizer (byte-level BPE our tokenizer_load accepts: model gpt2, pre smollm): ids 0..2 the
 * control tokens <|endoftext|> (eos), <|im_start|> (bos), <|im_end|>; then the 256 GPT-2 byte
 * characters; then two-byte tokens for byte pairs (0,0), (0,1), ... in that order, each with the
 * merge "a b" ranked in the same order; plus a ChatML chat template.
 */
#ifndef BOSCH_MKMODEL_H
#define BOSCH_MKMODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab;
    int n_ctx;       /* llama.context_length, tokens */
    float rope_base; /* llama.rope.freq_base */
    float rms_eps;   /* llama.attention.layer_norm_rms_epsilon */
    uint32_t wtype;  /* GGML_TYPE_F16 or GGML_TYPE_Q4_1 (quant.h) for the matrices */
    float std;       /* standard deviation of the weights */
    uint64_t seed;
    const char *arch; /* general.architecture, a name arch_find knows; NULL: "llama" */
} mkmodel_shape;

/* Presets: "smollm2" (SmolLM2-135M: 30 layers, n_embd 576, 9/3 heads, n_ff 1536, vocab 49152,
 * context 8192, RoPE base 100000, eps 1e-5) and "tiny" (2 layers, n_embd 128, 4/2 heads, n_ff 256,
 * vocab 512; for tests). Both Q4_1, std 0.02, seed 1. Returns 0, or -1 for an unknown name. */
int mkmodel_preset(const char *name, mkmodel_shape *out);

/* Write the file (to path.tmp, then renamed). Checks: a registered architecture, every count >= 1,
 * n_head a multiple of
 * n_head_kv, n_embd a multiple of n_head and of 32 (Q4_1/Q8_0 blocks), n_ff a multiple of 32,
 * 259 <= n_vocab <= 259 + 65536, wtype F16 or Q4_1. Returns 0, or -1 with a message naming the
 * file or the bad field. */
int mkmodel_write(const char *path, const mkmodel_shape *s, char *err, size_t errlen);

#endif
