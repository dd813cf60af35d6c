/* hf_config.h — a Hugging Face config.json patch for the servable projection of a mask
 * (mask_servable, mask_servable_layers: engine/mask.h): the keys that transformers' configuration classes read
 * for per-layer sliding windows (transformers Qwen3Config / Qwen2Config / MistralConfig:
 * `layer_types`, a list of "full_attention" / "sliding_attention" with one entry per layer,
 * checked by configuration_utils.layer_type_validation; `sliding_window`, the window in tokens;
 * Qwen's `use_sliding_window`, without which Qwen3Config sets sliding_window to None). vLLM and
 * SGLang take the same keys from the model's config.json.
 *
 * The file is a JSON object to merge into the model's own config.json:
 *   model_type           the GGUF architecture's Hugging Face name (engine/arch.h hf_model_type:
 *                        "llama", "qwen3"; a check, not a change)
 *   num_hidden_layers    L, num_key_value_heads H (checks)
 *   layer_types          [L] "sliding_attention" for a layer whose every KV head is SWA, else
 *                        "full_attention"
 *   sliding_window       W tokens (a query sees itself and the W-1 keys before it, as our SWA), or
 *                        null when no layer is SWA
 *   use_sliding_window   true when some layer is SWA
 *   max_window_layers    0 (Qwen: layers from this index on may slide; layer_types decides)
 * Sinks do not exist in these configs: a mask with S > 0 sinks is served without them (the
 * caller warns).
 */
#ifndef BOSCH_HF_CONFIG_H
#define BOSCH_HF_CONFIG_H

#include <stddef.h>

#include "mask.h"

/* Write the patch for m's servable projection to path (atomic). model_type as above.
 * *n_swa_layers (may be NULL) gets the projection's SWA layers. 0, or -1 with a message. */
int hf_config_save(const char *path, const attn_mask *m, const char *model_type, int *n_swa_layers, char *err,
                   size_t errlen);

#endif
