/* haystack.h — internal to datasets/: haystack token streams for the probe generators.
 * A haystack is a run of whole "units" (sentences, each encoded separately with its leading
 * separator) so that needles can be inserted at unit boundaries; the last unit is cut at token
 * level so the stream has exactly the requested length.
 */
#ifndef BOSCH_HAYSTACK_H
#define BOSCH_HAYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "probes.h"
#include "tokenizer.h"

/* Jane Austen, "Persuasion" (public domain), one paragraph per string (haystack_text.c, generated
 * by scripts/make_haystack_text.py). */
extern const char *const haystack_text_paragraphs[];
extern const int haystack_text_n_paragraphs;

/* Deterministic PRNG: rng_splitmix64 (base/rng.h; Steele et al. 2014): state advances by the golden-ratio
 * increment; output is the state mixed by two xor-shift-multiply rounds. */
uint64_t probe_rng_next(uint64_t *state);
/* Uniform integer in [0, n) (n >= 1), by rejection so there is no modulo bias. */
uint64_t probe_rng_below(uint64_t *state, uint64_t n);

typedef struct {
    int32_t *tokens; /* [n] */
    int n, cap;
    int *bound; /* [n_bound] token indices where a unit starts (0 included), increasing */
    int n_bound, cap_bound;
} tok_stream;

void tok_stream_free(tok_stream *s);
/* Append tokens; starts_unit != 0 records a boundary at the current end. 0 or -1 (OOM). */
int tok_stream_push(tok_stream *s, const int32_t *tok, int n, int starts_unit);

/* Build exactly n_tokens of haystack of `kind` (noise: the task's filler sentences cycled from a
 * random phase; text: consecutive sentences of the prose from a random paragraph, wrapping).
 * `task` picks the noise sentences. Returns 0, or -1 with a message. */
int haystack_build(const tokenizer *t, haystack_kind kind, probe_task task, uint64_t *rng, int n_tokens,
                   tok_stream *out, char *err, size_t errlen);

#endif
