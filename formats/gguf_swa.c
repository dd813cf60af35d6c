/* gguf_swa.c — llama.cpp's SWA-honouring architectures (see gguf_swa.h). */
#include "gguf_swa.h"

#include <stdio.h>
#include <string.h>

/* general.architecture names (llama.cpp's LLM_ARCH_NAMES) whose loader reads
 * {arch}.attention.sliding_window and sets an interleaved-SWA pattern. */
static const char *const honoured[] = {"gemma2", "gemma3", "gemma3n", "cohere2", "exaone4", "gpt-oss"};

const char *const GGUF_SWA_ARCHES = "gemma2, gemma3, gemma3n, cohere2, exaone4, gpt-oss";

int gguf_swa_honoured(const char *arch) {
    for (size_t i = 0; i < sizeof honoured / sizeof honoured[0]; i++)
        if (arch && !strcmp(arch, honoured[i])) return 1;
    return 0;
}

const char *gguf_swa_refusal(const char *arch, char *err, size_t errlen) {
    snprintf(err, errlen,
             "llama.cpp does not read %s.attention.sliding_window or .sliding_window_pattern for "
             "architecture '%s' (its loader builds a plain KV cache), so a GGUF with them would silently "
             "run every layer full; llama.cpp honours per-layer SWA only for %s. Serve this mask with "
             "--format hf (vLLM, SGLang) or --format trtllm instead",
             arch, arch, GGUF_SWA_ARCHES);
    return err;
}
