/* rank_probes.c — the static head rankings of the method registry measured on the calibration
 * objective (search_methods.h: probes EACH_HEAD), from the evaluation of the mask with one KV head
 * alone SWA (all others full):
 *  - ablation: importance = S_full - S(only this KV head SWA), raw scores on the calibration split
 *    (single-head ablation drop, as in head-pruning studies, Michel et al. 2019).
 *  - fisher: importance = mean over calibration samples of (NLL_s(gate 0) - NLL_s(gate 1))^2, the
 *    squared finite difference of the per-sample answer NLL with respect to a head's full/SWA gate
 *    (gate 1 = full, 0 = SWA, step 1: the engine has no fractional gate), i.e. the empirical Fisher
 *    information of the gate (Molchanov et al. 2019 use the same squared-gradient score). Without
 *    per-sample NLLs, the square of the mean NLL difference.
 * BOSCH's head scores (stage1_singles, search_heads.c) are these two on the same masks.
 */
#include "search_methods.h"

double search_rank_ablation(const search_rank_input *in, const search_eval *e) {
    return in->s_full - e->score;
}

double search_rank_fisher(const search_rank_input *in, const search_eval *e) {
    if (e->sample_nll && in->sample_nll_full && e->n_samples == in->n_sample_nll && e->n_samples > 0) {
        double f = 0;
        for (int s = 0; s < e->n_samples; s++) {
            double d = e->sample_nll[s] - in->sample_nll_full[s];
            f += d * d;
        }
        return f / e->n_samples;
    }
    return (e->nll - in->nll_full) * (e->nll - in->nll_full);
}
