/* rng.h — the one PRNG of the program (the search, the model maker, the GPU KV fill):
 * xoshiro256** (Blackman & Vigna 2018, "Scrambled linear pseudorandom number generators"), seeded
 * by splitmix64 (Steele, Lea & Flood 2014). Never rand(): searches and made models must be
 * reproducible from their seed on every platform.
 */
#ifndef BOSCH_RNG_H
#define BOSCH_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} rng_state;

/* splitmix64 step: advances *x and returns the next output (also a good 64-bit mixer). */
uint64_t rng_splitmix64(uint64_t *x);
/* Seed the four words from splitmix64(seed) (never all zero). */
void rng_seed(rng_state *r, uint64_t seed);
uint64_t rng_next(rng_state *r);
/* Uniform integer in [0, n) without modulo bias (rejects the top partial range); n >= 1. */
uint64_t rng_below(rng_state *r, uint64_t n);
/* Derive an independent seed for sub-search `index` of a search seeded with `seed`. */
uint64_t rng_derive(uint64_t seed, uint64_t index);

#endif
