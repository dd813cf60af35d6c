/* search_layer_patterns.c — the layer heuristics of the method registry (search_methods.h,
 * docs/design.md §7): whole layers go SWA; n = round(ratio * n_layer) SWA layers, so the achieved head
 * ratio is n / n_layer, which can differ from ratio by < 1/(2 n_layer).
 *  - rand: n layers drawn uniformly without replacement (xoshiro256** seeded with the seed); the
 *    usual random-placement control of layer-level hybrid studies.
 *  - bme (begin-middle-end): the F = n_layer - n full layers are split into three blocks of
 *    ceil/round/floor(F/3) layers placed at the beginning, the centre and the end of the stack;
 *    every other layer is SWA. A fixed pattern keeping global attention at the input, the middle
 *    and the output.
 *  - intr (interleaved): the F full layers evenly spaced, layer floor((j + 0.5) * n_layer / F) for
 *    j < F; the periodic local/global interleaving of hybrid models such as Gemma 2/3.
 *  - nll (Tang et al. 2026, "NLL-Guided Full-Attention Layer Selection for Training-Free
 *    Sliding-Window Adaptation", arXiv:2606.27791): for each layer l, the mean answer-token NLL on
 *    the calibration split when layer l alone is SWA, minus the all-full NLL (search_probe_nll);
 *    the n layers with the smallest increase go SWA, ties to the lower layer (search_pattern_lowest).
 * Each pattern: swa_layer[n_layer] = 1 for the SWA layers; 0, or -1 (out of memory, no importance).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "search_methods.h"

int search_pattern_rand(int L, double ratio, uint64_t seed, const double *importance, uint8_t *swa_layer) {
    (void)importance;
    const int n = (int)lround(ratio * L);
    memset(swa_layer, 0, (size_t)L);
    int *perm = malloc(sizeof(int) * (size_t)L);
    if (!perm) return -1;
    for (int i = 0; i < L; i++) perm[i] = i;
    rng_state r;
    rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        int j = i + (int)rng_below(&r, (uint64_t)(L - i));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        swa_layer[perm[i]] = 1;
    }
    free(perm);
    return 0;
}

int search_pattern_bme(int L, double ratio, uint64_t seed, const double *importance, uint8_t *swa_layer) {
    (void)seed, (void)importance;
    const int F = L - (int)lround(ratio * L);
    memset(swa_layer, 1, (size_t)L);
    int fb = (F + 2) / 3, fm = (F + 1) / 3, fe = F / 3;
    for (int i = 0; i < fb; i++) swa_layer[i] = 0;
    for (int i = 0; i < fe; i++) swa_layer[L - 1 - i] = 0;
    int m0 = (L - fm) / 2;
    for (int i = 0; i < fm; i++) swa_layer[m0 + i] = 0;
    /* blocks can touch when F is close to L: top up from the centre outwards */
    int full = 0;
    for (int i = 0; i < L; i++) full += !swa_layer[i];
    for (int d = 0; full < F && d < L; d++)
        for (int s = -1; s <= 1 && full < F; s += 2) {
            int i = L / 2 + s * d;
            if (i >= 0 && i < L && swa_layer[i]) swa_layer[i] = 0, full++;
        }
    return 0;
}

int search_pattern_intr(int L, double ratio, uint64_t seed, const double *importance, uint8_t *swa_layer) {
    (void)seed, (void)importance;
    const int F = L - (int)lround(ratio * L);
    memset(swa_layer, 1, (size_t)L);
    for (int j = 0; j < F; j++) swa_layer[(int)floor((j + 0.5) * L / F)] = 0;
    return 0;
}

int search_pattern_lowest(int L, double ratio, uint64_t seed, const double *importance, uint8_t *swa_layer) {
    (void)seed;
    if (!importance) return -1;
    const int n = (int)lround(ratio * L);
    memset(swa_layer, 0, (size_t)L);
    /* selection by repeated minimum keeps ties on the lower layer */
    for (int c = 0; c < n; c++) {
        int best = -1;
        for (int l = 0; l < L; l++)
            if (!swa_layer[l] && (best < 0 || importance[l] < importance[best])) best = l;
        swa_layer[best] = 1;
    }
    return 0;
}

double search_probe_nll(const search_rank_input *in, const search_eval *e) {
    return e->nll - in->nll_full;
}
