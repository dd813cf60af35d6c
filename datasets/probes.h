/* probes.h — synthetic long-context probe tasks (docs/design.md §5): NIAH single / multi-key and the
 * passkey test, over a "noise" (repeated short filler sentences) or "text" (public-domain prose,
 * see docs/probes.md) haystack. Generated offline, deterministically from a seed, in tokens of the
 * model's own tokenizer; lengths are exact.
 *
 * Layout of one sample (all token ids of the model's tokenizer):
 *   [chat head][haystack with needle(s)][question + chat tail + assistant prefix][answer]
 *   |<------------------------------- n_tokens == cfg.length_tokens ------------------------->|
 * The answer (the needle's value, one token per digit with SmolLM2's tokenizer) occupies
 * tokens[answer_start .. answer_start + n_answer), so a sample is directly an eval_sample
 * (engine/eval.h): teacher forcing scores the answer.
 *
 * Splits: the calibration split (used by the search) and the held-out split (used only to report)
 * are generated from different effective seeds (the split is mixed into the seed) and from
 * disjoint needle-depth grids, so they never share a sample. The search API takes only a
 * `const calib_set *`, an opaque type that can be made only by probe_calib_generate, which always
 * generates the calibration split: held-out samples cannot reach a search.
 */
#ifndef BOSCH_PROBES_H
#define BOSCH_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "eval.h"
#include "tokenizer.h"

typedef enum {
    PROBE_NIAH_SINGLE = 0,   /* one key -> value needle; the question asks for its value */
    PROBE_NIAH_MULTIKEY = 1, /* n_keys needles with different keys; the question asks for one */
    PROBE_PASSKEY = 2,       /* a pass key hidden in filler; the question asks for it */
    PROBE_TASK_COUNT
} probe_task;

typedef enum {
    HAYSTACK_NOISE = 0, /* short filler sentences repeated */
    HAYSTACK_TEXT = 1,  /* natural prose (datasets/text/, public domain) */
    HAYSTACK_KIND_COUNT
} haystack_kind;

/* calibration: the only data a search sees; validation: what one looks at to choose options and
 * defaults; held-out: only reported. Each has its own seed mix and depth grid. */
typedef enum { PROBE_SPLIT_CALIBRATION = 0, PROBE_SPLIT_HELDOUT = 1, PROBE_SPLIT_VALIDATION = 2 } probe_split;

#define PROBE_MAX_NEEDLES 8
#define PROBE_KEY_CAP 48     /* bytes of a key string, NUL included */
#define PROBE_VALUE_CAP 16   /* bytes of a value string, NUL included */
#define PROBE_MIN_LENGTH 128 /* shortest length_tokens accepted */

/* Defaults chosen so that the calibration probe discriminates on the default model (full attention
 * >= 80 % and all-SWA <= 20 % exact match; measured in docs/probes.md). The search uses these. */
#define PROBE_DEFAULT_TASK PROBE_NIAH_SINGLE
#define PROBE_DEFAULT_HAYSTACK HAYSTACK_NOISE
#define PROBE_DEFAULT_LENGTH 1024 /* tokens */
#define PROBE_DEFAULT_WINDOW 128  /* tokens, SWA window for the search and eval defaults */
#define PROBE_DEFAULT_SINKS 0     /* tokens */
#define PROBE_DEFAULT_SAMPLES 8   /* calibration samples */
#define PROBE_DEFAULT_CALIB_SEED 1234u
#define PROBE_DEFAULT_HELDOUT_SEED 5678u
#define PROBE_DEFAULT_VALID_SEED 9012u

/* Needle depth grids (fraction of the haystack before the needle's first token, in [0,1]).
 * Sample i of a split uses grid[i % n]. The three grids share no value (tested). */
extern const double probe_calib_depths[];
extern const int probe_n_calib_depths;
extern const double probe_heldout_depths[];
extern const int probe_n_heldout_depths;
extern const double probe_valid_depths[];
extern const int probe_n_valid_depths;

typedef struct {
    probe_task task;
    haystack_kind haystack;
    int length_tokens; /* exact n_tokens of every sample (prompt + answer), >= PROBE_MIN_LENGTH */
    int n_samples;     /* >= 1 */
    int n_keys;        /* needles for PROBE_NIAH_MULTIKEY (2..PROBE_MAX_NEEDLES); ignored otherwise */
    int use_chat;      /* 1: wrap in the model's chat template (instruct models); 0: plain text */
    /* Optional depth override (held-out split only; NULL = the split's grid). Values in [0,1]; a
     * value equal to a calibration depth is rejected, so held-out never reuses calibration depths. */
    const double *depths;
    int n_depths;
} probe_config;

/* probe_config with the defaults above (chat on, 1 key, default task/haystack/length/samples). */
probe_config probe_config_default(void);

typedef struct {
    probe_task task;
    haystack_kind haystack;
    int32_t *tokens;  /* [n_tokens] prompt followed by the answer (malloc'd) */
    int n_tokens;     /* == length_tokens */
    int answer_start; /* first answer token; answer = tokens[answer_start .. +n_answer) */
    int n_answer;
    int n_needles;                                  /* 1, or n_keys for multikey */
    int query;                                      /* index of the needle the question asks for */
    int needle_pos[PROBE_MAX_NEEDLES];              /* token index of each needle's first token */
    int needle_len[PROBE_MAX_NEEDLES];              /* tokens of each needle sentence */
    double depth[PROBE_MAX_NEEDLES];                /* achieved depth of each needle in [0,1] (token position
                                                       within the haystack region / haystack tokens) */
    double depth_target;                            /* grid depth requested for the queried needle */
    int haystack_start, haystack_len;               /* haystack region (needles included), tokens */
    char key[PROBE_MAX_NEEDLES][PROBE_KEY_CAP];     /* e.g. "amber lantern"; "" for passkey */
    char value[PROBE_MAX_NEEDLES][PROBE_VALUE_CAP]; /* decimal digits, e.g. "4829175" */
} probe_sample;

typedef struct {
    probe_split split;
    uint64_t seed; /* the caller's seed (the split is mixed in before use) */
    probe_config cfg;
    int n;
    probe_sample *samples; /* [n] */
} probe_set;

/* Generate cfg->n_samples samples of `split` from `seed` with tokenizer `tok`. Deterministic:
 * same (tokenizer, cfg, split, seed) -> same tokens. Returns 0, or -1 with a message naming the
 * field and value (length too short for the template and needles, bad n_keys, depth override on
 * the calibration split, OOM). Free with probe_set_free (safe on a zeroed set). */
int probe_set_generate(probe_set *set, const tokenizer *tok, const probe_config *cfg, probe_split split,
                       uint64_t seed, char *err, size_t errlen);
void probe_set_free(probe_set *set);

/* View the samples as evaluator samples: out[set->n] points into set (valid while set lives). */
void probe_set_eval_samples(const probe_set *set, eval_sample *out);

/* --- calibration split: the only data a search may see ---------------------------------------- */

typedef struct calib_set calib_set; /* opaque; made only by probe_calib_generate */

/* Generate the calibration split (cfg->depths must be NULL). Returns 0 and *out, or -1 with a
 * message. Free with calib_set_free. */
int probe_calib_generate(calib_set **out, const tokenizer *tok, const probe_config *cfg, uint64_t seed,
                         char *err, size_t errlen);
/* A calibration set of several tasks: cfgs[i] (depths NULL) gives task i's samples (its n_samples,
 * the calibration split from `seed`), concatenated in order. The set's config is cfgs[0]'s. 0, or
 * -1 with a message (as probe_calib_generate). */
int probe_calib_generate_mix(calib_set **out, const tokenizer *tok, const probe_config *cfgs, int n_cfgs,
                             uint64_t seed, char *err, size_t errlen);
void calib_set_free(calib_set *cs);
int calib_set_n(const calib_set *cs);
const probe_config *calib_set_config(const calib_set *cs);
const probe_sample *calib_set_sample(const calib_set *cs, int i);
/* out[calib_set_n(cs)] points into cs (valid while cs lives). */
void calib_set_eval_samples(const calib_set *cs, eval_sample *out);
/* Always PROBE_SPLIT_CALIBRATION for a set made by probe_calib_generate (checked by searches). */
probe_split calib_set_split(const calib_set *cs);

/* --- names -------------------------------------------------------------------------------------- */

const char *probe_task_name(probe_task t);       /* "niah_single", "niah_multikey", "passkey" */
const char *haystack_kind_name(haystack_kind h); /* "noise", "text" */
const char *probe_split_name(probe_split s);     /* "calibration", "heldout" */
/* Parse a name (also accepts "single", "multikey", "mk"). 0 on success, -1 unknown. */
int probe_task_parse(const char *s, probe_task *out);
int haystack_kind_parse(const char *s, haystack_kind *out);
/* "512" -> 512, "1k" -> 1024, "8K" -> 8192. Returns the length, or -1 on a malformed value. */
int probe_parse_length(const char *s);
/* Length label: 1024 -> "1k", 1536 -> "1536". */
void probe_length_label(int n_tokens, char *buf, size_t cap);

#endif
