/* synth_search.h — the synthetic objective and the small random model on which the search tests
 * (test_search_plan, test_progress, test_search_pins) run every method of the registry.
 *
 * The model: SYNTH_L layers x SYNTH_H KV heads, random weights (engine/gguf_write.h, seed 3, the
 * "tiny" preset's weight type), written to /tmp and loaded; it is there for the methods that read
 * weights or attention (locality, echo, the refinement's starts). The samples: SYNTH_NS fixed
 * token sequences of SYNTH_TOKENS tokens, the answer the last 6.
 * The objective: S = exp(-cost), cost = the sum of synth_weight(u) over the SWA heads u (u = layer *
 * SYNTH_H + kv_head), per-sample answer NLLs 0.5 + cost (1 + 0.2 s), all passed = cost < 1.5. */
#ifndef BOSCH_TESTS_SYNTH_SEARCH_H
#define BOSCH_TESTS_SYNTH_SEARCH_H

#include <stdint.h>

#include "model.h"
#include "search.h"

#define SYNTH_L 6
#define SYNTH_H 3
#define SYNTH_NS 3
#define SYNTH_TOKENS 96

typedef struct {
    model *m;
    char path[256];
    int32_t toks[SYNTH_NS][SYNTH_TOKENS];
    eval_sample samples[SYNTH_NS];
} synth_fixture;

/* The default cost of making KV head u SWA: layers 0-1, 2-3 and 4-5 cost about the same (so stage
 * 2 puts them in one bucket), the heads differ. */
double synth_weight(int u);

/* What a test may change in the objective (search_objective.ctx; NULL: the defaults). */
typedef struct {
    double (*weight)(int u); /* NULL: synth_weight */
    int vary_seconds;        /* 0: every evaluation 0.001 s; 1: 0.01 + 0.001 x (SWA heads mod 7) */
} synth_options;

/* The objective's score function (search_objective.score; ctx a const synth_options * or NULL).
 * out->sample_nll points at a static buffer valid until the next call. Always 0. */
int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err, size_t errlen);

/* Writes and loads the model (its file named after `tag` and the process id) and fills the
 * samples. 0, or -1 with the reason on stderr. */
int synth_fixture_open(synth_fixture *f, const char *tag);

/* Frees the model and removes its file. */
void synth_fixture_close(synth_fixture *f);

#endif
