/* generate.h — greedy generation: prefill a prompt, then decode the argmax token one at a time
 * until an end-of-generation token (tokenizer_is_eog) or max_new tokens. One loop for
 * `bosch generate` and the explorer's "ask the model"; where the forward runs is a pair of steps
 * (generate_steps): the CPU forward of forward.h (generate_cpu_*) or any other backend.
 */
#ifndef BOSCH_GENERATE_H
#define BOSCH_GENERATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "mask.h"
#include "model.h"

/* Where a generation runs. Both steps write the next-token logits [n_vocab] into `logits` and
 * return 0, FORWARD_CANCELLED (forward.h) or -1 with a message in err[errlen]. */
typedef struct {
    void *ctx;
    /* the prompt tokens [n_tokens] at positions 0..n_tokens-1 of a fresh cache */
    int (*prefill)(void *ctx, const int32_t *tokens, int n_tokens, char *err, size_t errlen);
    /* one token at the next position */
    int (*decode)(void *ctx, int32_t token, char *err, size_t errlen);
    float *logits; /* [n_vocab], owned by whoever made the steps */
} generate_steps;

/* The CPU forward as generate_steps: a KV cache of n_ctx positions shaped by `mask` (borrowed;
 * NULL = all heads full), a forward workspace for a prompt of up to max_prompt tokens, and the
 * logits. cancel (borrowed; NULL = never) is read before each layer of the prefill
 * (forward_ws_set_cancel). Returns 0, or -1 with "cannot allocate the KV cache for N tokens" or
 * "out of memory" in err[errlen]. */
typedef struct generate_cpu generate_cpu;
int generate_cpu_create(generate_cpu **out, const model *m, const attn_mask *mask, int max_prompt, int n_ctx,
                        const atomic_int *cancel, char *err, size_t errlen);
void generate_cpu_free(generate_cpu *g);
/* The steps of g (valid while g lives): prefill is forward_prefill with the logits of the last
 * prompt position, its error forward_ws_error; decode is forward_decode. */
generate_steps generate_cpu_steps(generate_cpu *g);

/* What a generation did up to its return. */
typedef enum {
    GENERATE_SETUP = 0, /* the CPU steps could not be made (generate_greedy with steps NULL) */
    GENERATE_PREFILL,   /* the prefill */
    GENERATE_DECODE,    /* the token loop */
    GENERATE_DONE       /* finished: an end-of-generation token or max_new tokens */
} generate_stage;

typedef struct {
    generate_stage stage; /* where it stopped (on -1 or FORWARD_CANCELLED: where it failed) */
    int n_gen;            /* tokens generated (a failed decode: including the token it decoded) */
    double prefill_s;     /* wall seconds of the prefill step */
    double decode_s;      /* wall seconds from after on_prefilled to the end of the loop */
} generate_result;

typedef struct {
    const attn_mask *mask;            /* head mask when steps is NULL (borrowed; NULL = all heads full) */
    int max_new;                      /* tokens to generate at most, >= 0 */
    const atomic_int *cancel;         /* read before each token (and each prefill layer on the CPU) */
    const generate_steps *steps;      /* NULL: the CPU forward (generate_cpu_* of n_prompt + max_new) */
    void (*on_prefilled)(void *user); /* after a successful prefill (may be NULL) */
    void (*on_token)(void *user, int32_t token); /* each generated token, in order (may be NULL) */
    void *user;
} generate_opts;

/* Greedy generation after prompt [n_prompt >= 1]: prefill, then per new token: the argmax of the
 * logits (ops_argmax: the first of equal maxima), stop when it is an end-of-generation token,
 * else report it (on_token, out[n_gen] when out is not NULL; out holds max_new tokens) and decode
 * it unless it is the max_new-th. r (may be NULL) says how far it got. Returns 0;
 * FORWARD_CANCELLED when *cancel became non-zero; -1 with the failing step's message in
 * err[errlen] (on GENERATE_SETUP that of generate_cpu_create). */
int generate_greedy(const model *m, const int32_t *prompt, int n_prompt, const generate_opts *o, int32_t *out,
                    generate_result *r, char *err, size_t errlen);

#endif
