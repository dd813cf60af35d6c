/* gguf_swa.h — which GGUF architectures llama.cpp gives per-layer sliding windows, for
 * `bosch export --format gguf`. Source: llama.cpp's loader (src/llama-model.cpp and
 * src/models/<arch>.cpp, load_arch_hparams): `{arch}.attention.sliding_window` (the window) and
 * `{arch}.attention.sliding_window_pattern` (a period, or a per-layer bool array) are read only by
 * the architectures with an interleaved-SWA KV cache (llama_kv_cache_iswa): gemma2, gemma3,
 * gemma3n, cohere2, exaone4 and gpt-oss among others. Its `llama` and `qwen3` loaders read
 * neither key and build a plain KV cache, so SWA keys written into such a file are silently
 * ignored: for those architectures the export refuses, naming the ones that would honour them.
 */
#ifndef BOSCH_GGUF_SWA_H
#define BOSCH_GGUF_SWA_H

#include <stddef.h>

/* The architectures above, comma-separated, for messages. */
extern const char *const GGUF_SWA_ARCHES;

/* 1 when llama.cpp reads the SWA keys for GGUF architecture `arch` (general.architecture). */
int gguf_swa_honoured(const char *arch);

/* The refusal for an architecture that does not honour them: "llama.cpp ignores ... for
 * architecture 'llama' ...". Returns err. */
const char *gguf_swa_refusal(const char *arch, char *err, size_t errlen);

#endif
