/* trtllm.h — TensorRT-LLM KV-cache options for the servable projection of a mask
 * (mask_servable, mask_servable_layers: engine/mask.h). Source: tensorrt_llm.llmapi.KvCacheConfig, whose
 * `max_attention_window` is a per-layer list of attention windows in tokens (List[int], at least
 * one entry; a shorter list repeats over the layers) and `sink_token_length` the number of sink
 * tokens kept (int).
 *
 * The file is JSON (so also YAML, for `trtllm-serve --extra_llm_api_options FILE`):
 *   {"kv_cache_config": {"max_attention_window": [L integers], "sink_token_length": S}}
 * where entry l is W for a layer whose every KV head is SWA and max_seq (the model's context
 * length, i.e. no window) for a full layer. In Python: KvCacheConfig(**d["kv_cache_config"]).
 */
#ifndef BOSCH_TRTLLM_H
#define BOSCH_TRTLLM_H

#include <stddef.h>

#include "mask.h"

/* Write the options for m's servable projection to path (atomic); max_seq >= m->window is the
 * window of a full layer. *n_swa_layers (may be NULL) gets the SWA layers. 0, or -1. */
int trtllm_save(const char *path, const attn_mask *m, int max_seq, int *n_swa_layers, char *err,
                size_t errlen);

#endif
