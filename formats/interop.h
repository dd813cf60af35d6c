/* interop.h — masks that leave the program or come in from another tool: one entry point per
 * direction for `bosch export` / `bosch import` and the explorer's export menu and load prompt,
 * so both write and read the same files. The formats: duo.h (DuoAttention), hf_config.h (Hugging
 * Face config.json patch: vLLM, SGLang, transformers), trtllm.h (TensorRT-LLM KvCacheConfig),
 * gguf_swa.h (llama.cpp; refused for the architectures this program loads), scores.h (the static
 * rankings' scores; computed by search/search_scores.h, so not exported here). docs/interop.md.
 */
#ifndef BOSCH_INTEROP_H
#define BOSCH_INTEROP_H

#include <stddef.h>

#include "duo.h"
#include "mask.h"
#include "model.h"

typedef enum {
    INTEROP_DUO = 0,
    INTEROP_HF,
    INTEROP_TRTLLM,
    INTEROP_GGUF,
    INTEROP_SCORES,
    INTEROP_COUNT
} interop_format;

/* "duo", "hf", "trtllm", "gguf", "scores". */
const char *interop_format_name(interop_format f);
/* Parse a name as above. 0, or -1 with "unknown format 'X' (valid: duo, hf, trtllm, gguf, scores)". */
int interop_format_parse(const char *s, interop_format *out, char *err, size_t errlen);
/* 1 when the format's PATH is a folder (duo, scores), 0 when a file. */
int interop_format_is_dir(interop_format f);

/* Export m (a mask of md's shape) in format f (not INTEROP_SCORES) to path: duo a folder (created
 * if missing, one level), hf / trtllm a file. gguf always fails for the architectures md can be
 * (gguf_swa.h). note[notelen] gets one line for the user: what was written, e.g. "8 of 30 layers
 * SWA in the servable projection (W 64; the 4 sinks are dropped: Hugging Face configs have
 * none)". 0, or -1 with a message naming the file. */
int interop_export_mask(interop_format f, const char *path, const attn_mask *m, const model *md, char *note,
                        size_t notelen, char *err, size_t errlen);

/* Import a DuoAttention pattern (a folder or its .tsv file; duo_load) as a mask of md's shape
 * into *out (allocated; free with mask_free). have_cut 0: the gates must all be 0 or 1 (else -1
 * asking for a ratio or threshold); otherwise cut as duo_to_mask(cut, value). note gets e.g.
 * "45 of 90 KV heads SWA (ratio 0.500), W 64, S 4". 0, or -1 with a message. */
int interop_import_duo(const char *path, const model *md, int have_cut, duo_cut cut, double value,
                       attn_mask *out, char *note, size_t notelen, char *err, size_t errlen);

#endif
