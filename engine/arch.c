/* arch.c — the architecture registry (see arch.h): the key and tensor name tables and one row per
 * architecture. To add an architecture whose block differs only in these fields, add its row to
 * ARCHES (with its own key or tensor table if its names differ from the standard ones). */
#include "arch.h"

#include <stdio.h>
#include <string.h>

/* The `{arch}.*` keys llama.cpp's converter writes for llama-like architectures (gguf-py
 * constants.py, Keys.LLM / Keys.Attention / Keys.Rope). */
static const char *const KEYS_STD[ARCH_KEY_COUNT] = {
    [ARCH_KEY_BLOCK_COUNT] = "%s.block_count",
    [ARCH_KEY_CONTEXT_LENGTH] = "%s.context_length",
    [ARCH_KEY_EMBEDDING_LENGTH] = "%s.embedding_length",
    [ARCH_KEY_FEED_FORWARD_LENGTH] = "%s.feed_forward_length",
    [ARCH_KEY_HEAD_COUNT] = "%s.attention.head_count",
    [ARCH_KEY_HEAD_COUNT_KV] = "%s.attention.head_count_kv",
    [ARCH_KEY_KEY_LENGTH] = "%s.attention.key_length",
    [ARCH_KEY_VALUE_LENGTH] = "%s.attention.value_length",
    [ARCH_KEY_ROPE_DIMENSION_COUNT] = "%s.rope.dimension_count",
    [ARCH_KEY_ROPE_FREQ_BASE] = "%s.rope.freq_base",
    [ARCH_KEY_ROPE_SCALING_TYPE] = "%s.rope.scaling.type",
    [ARCH_KEY_RMS_EPS] = "%s.attention.layer_norm_rms_epsilon",
    [ARCH_KEY_VOCAB_SIZE] = "%s.vocab_size",
};

/* The tensor names of llama-like architectures (gguf-py constants.py, TENSOR_NAMES). */
static const char *const TENSORS_STD[ARCH_T_COUNT] = {
    [ARCH_T_TOKEN_EMBD] = "token_embd",
    [ARCH_T_OUTPUT_NORM] = "output_norm",
    [ARCH_T_OUTPUT] = "output",
    [ARCH_T_ROPE_FREQS] = "rope_freqs",
    [ARCH_T_ATTN_NORM] = "blk.%d.attn_norm",
    [ARCH_T_ATTN_Q] = "blk.%d.attn_q",
    [ARCH_T_ATTN_K] = "blk.%d.attn_k",
    [ARCH_T_ATTN_V] = "blk.%d.attn_v",
    [ARCH_T_ATTN_OUT] = "blk.%d.attn_output",
    [ARCH_T_ATTN_Q_NORM] = "blk.%d.attn_q_norm",
    [ARCH_T_ATTN_K_NORM] = "blk.%d.attn_k_norm",
    [ARCH_T_FFN_NORM] = "blk.%d.ffn_norm",
    [ARCH_T_FFN_GATE] = "blk.%d.ffn_gate",
    [ARCH_T_FFN_UP] = "blk.%d.ffn_up",
    [ARCH_T_FFN_DOWN] = "blk.%d.ffn_down",
};

static const model_arch ARCHES[] = {
    {
        .name = "llama",
        .models = "Llama 2/3, SmolLM2 and other llama-architecture models",
        .hf_model_type = "llama",
        .qk_norm = 0,
        .rope = ARCH_ROPE_ADJACENT,
        .tied_output = 1,
        .keys = KEYS_STD,
        .tensors = TENSORS_STD,
    },
    {
        .name = "qwen3",
        .models = "Qwen3 (dense)",
        .hf_model_type = "qwen3",
        .qk_norm = 1,
        .rope = ARCH_ROPE_NEOX,
        .tied_output = 1,
        .keys = KEYS_STD,
        .tensors = TENSORS_STD,
    },
};

#define N_ARCHES ((int)(sizeof ARCHES / sizeof ARCHES[0]))

const model_arch *arch_list(int *n) {
    *n = N_ARCHES;
    return ARCHES;
}

const model_arch *arch_find(const char *name) {
    for (int i = 0; name && i < N_ARCHES; i++)
        if (!strcmp(ARCHES[i].name, name)) return &ARCHES[i];
    return NULL;
}

const char *arch_names(char *buf, size_t cap) {
    size_t o = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < N_ARCHES && o < cap; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", ARCHES[i].name);
        if (w < 0) break;
        o += (size_t)w;
    }
    return buf;
}

const char *arch_key_name(const model_arch *a, arch_key k, char *buf, size_t cap) {
    snprintf(buf, cap, a->keys[k], a->name);
    return buf;
}

const char *arch_tensor_name(const model_arch *a, arch_tensor t, int layer, char *buf, size_t cap) {
    char base[96];
    if (t >= ARCH_T_FIRST_LAYER)
        snprintf(base, sizeof base, a->tensors[t], layer);
    else
        snprintf(base, sizeof base, "%s", a->tensors[t]);
    snprintf(buf, cap, "%s.weight", base);
    return buf;
}

arch_use arch_tensor_use(const model_arch *a, arch_tensor t) {
    switch (t) {
    case ARCH_T_OUTPUT:
        return a->tied_output ? ARCH_USE_OPTIONAL : ARCH_USE_REQUIRED;
    case ARCH_T_ROPE_FREQS:
        return ARCH_USE_REFUSED;
    case ARCH_T_ATTN_Q_NORM:
    case ARCH_T_ATTN_K_NORM:
        return a->qk_norm ? ARCH_USE_REQUIRED : ARCH_USE_NONE;
    default:
        return ARCH_USE_REQUIRED;
    }
}

void arch_tensor_shape(const arch_dims *d, arch_tensor t, uint64_t ne[2]) {
    uint64_t E = (uint64_t)d->n_embd, F = (uint64_t)d->n_ff, V = (uint64_t)d->n_vocab;
    uint64_t hd = (uint64_t)d->head_dim, Q = (uint64_t)d->n_head * hd, KV = (uint64_t)d->n_head_kv * hd;
    uint64_t s[ARCH_T_COUNT][2] = {
        [ARCH_T_TOKEN_EMBD] = {E, V},      [ARCH_T_OUTPUT_NORM] = {E, 1},  [ARCH_T_OUTPUT] = {E, V},
        [ARCH_T_ROPE_FREQS] = {hd / 2, 1}, [ARCH_T_ATTN_NORM] = {E, 1},    [ARCH_T_ATTN_Q] = {E, Q},
        [ARCH_T_ATTN_K] = {E, KV},         [ARCH_T_ATTN_V] = {E, KV},      [ARCH_T_ATTN_OUT] = {Q, E},
        [ARCH_T_ATTN_Q_NORM] = {hd, 1},    [ARCH_T_ATTN_K_NORM] = {hd, 1}, [ARCH_T_FFN_NORM] = {E, 1},
        [ARCH_T_FFN_GATE] = {E, F},        [ARCH_T_FFN_UP] = {E, F},       [ARCH_T_FFN_DOWN] = {F, E},
    };
    ne[0] = s[t][0];
    ne[1] = s[t][1];
}
