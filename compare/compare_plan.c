/* compare_plan.c — the comparison's plans (compare.h): the presets, the check of a plan, a method's
 * row in it. */
#include <stdio.h>
#include <string.h>

#include "compare_internal.h"
#include "search_methods.h"

/* ---- presets ------------------------------------------------------------------------------- */

static void set_cells(compare_cell *cells, int *n, const probe_task *tasks, const haystack_kind *hay,
                      int n_tasks, const int *lengths, int n_lengths, int samples) {
    *n = 0;
    for (int t = 0; t < n_tasks; t++)
        for (int l = 0; l < n_lengths; l++)
            cells[(*n)++] = (compare_cell){tasks[t], hay[t], lengths[l], samples};
}

int compare_plan_preset(compare_plan *p, const char *preset, const model *m, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    search_config_default(&p->cfg);
    /* budgets below are totals; each method's variant takes its split of them (search_variant_apply) */
    search_config_paper_options(&p->cfg);
    const int n_ctx = m ? m->hp.n_ctx_train : 0;
    static const probe_task tasks3[] = {PROBE_NIAH_SINGLE, PROBE_NIAH_MULTIKEY, PROBE_PASSKEY};
    /* niah_multikey on prose: the haystack where the full model finds the key (docs/probes.md) */
    static const haystack_kind hay3[] = {HAYSTACK_NOISE, HAYSTACK_TEXT, HAYSTACK_NOISE};
    const double ratios[] = {0.25, 0.5, 0.75, 0.875};
    if (!strcmp(preset, "bench")) {
        if (search_preset_apply(&p->cfg, "tiny", n_ctx, err, errlen)) return -1;
        p->cfg.calib_samples = 9; /* 3 of each held-out task */
        p->cfg.calib_tokens = 256;
        p->cfg.calib_mix = 1;
        p->cfg.window = 32;
        p->cfg.stage1_budget_per_layer = 3;
        p->cfg.stage3_budget_per_group = 16;
        p->cfg.restarts = 1;
        /* the confirmation of the refinement's finalists (docs/search.md "Confirming the finalists"):
         * 36 samples, 18 x 256 and 18 x 1024 tokens; chosen on the validation split (issue 31) */
        search_config_confirm_options(&p->cfg);
        const int lengths[] = {256, 512};
        set_cells(p->heldout, &p->n_heldout, tasks3, hay3, 3, lengths, 2, 16);
        set_cells(p->valid, &p->n_valid, tasks3, hay3, 3, lengths, 1, 16);
        /* length transfer: 16 x 3 tasks = 48 samples per mask and length, BOSCH and the two best
         * other methods on validation at each ratio (issue 31: the time a bench run can afford) */
        const int long_lengths[] = {2048, 4096};
        set_cells(p->transfer, &p->n_transfer, tasks3, hay3, 3, long_lengths, 2, 16);
        p->transfer_others = 2;
        p->aprime_seeds = 3;
    } else if (!strcmp(preset, "ci")) {
        if (search_preset_apply(&p->cfg, "tiny", n_ctx, err, errlen)) return -1;
        p->cfg.calib_samples = 3;
        p->cfg.calib_tokens = 192;
        p->cfg.calib_mix = 1;
        p->cfg.window = 16;
        /* one stage-1 probe per layer (bench: 3): the CI's longest test, tests/test_compare_cli.sh,
         * runs this preset (its times: docs/testing.md, "Wall time") */
        p->cfg.stage1_budget_per_layer = 1;
        p->cfg.stage3_budget_per_group = 4;
        p->cfg.restarts = 0;
        const int lengths[] = {192, 256};
        set_cells(p->heldout, &p->n_heldout, tasks3, hay3, 3, lengths, 2, 2);
        set_cells(p->valid, &p->n_valid, tasks3, hay3, 1, lengths, 1, 2);
        /* transfer at twice the calibration length, BOSCH and the best other method on validation */
        const int long_lengths[] = {384};
        set_cells(p->transfer, &p->n_transfer, tasks3, hay3, 3, long_lengths, 1, 2);
        p->transfer_others = 1;
        p->aprime_seeds = 1;
        static const char *const ci_methods[] = {"bosch", "bosch_paper", "intr", "ablation"};
        for (int i = 0; i < 4; i++) snprintf(p->methods[i], sizeof p->methods[i], "%s", ci_methods[i]);
        p->n_methods = 4;
        p->ratios[0] = 0.5, p->ratios[1] = 0.875;
        p->n_ratios = 2;
        snprintf(p->preset, sizeof p->preset, "%s", preset);
        return 0;
    } else if (!strcmp(preset, "quick")) {
        if (search_preset_apply(&p->cfg, "tiny", n_ctx, err, errlen)) return -1;
        p->cfg.calib_samples = 2;
        p->cfg.calib_tokens = 256;
        p->cfg.window = 32;
        p->cfg.stage3_budget_per_group = 8;
        static const probe_task t2[] = {PROBE_NIAH_SINGLE, PROBE_PASSKEY};
        static const haystack_kind h2[] = {HAYSTACK_NOISE, HAYSTACK_NOISE};
        const int lengths[] = {256};
        set_cells(p->heldout, &p->n_heldout, t2, h2, 2, lengths, 1, 4);
    } else {
        snprintf(err, errlen, "unknown comparison preset '%s' (valid: bench, ci, quick)", preset);
        return -1;
    }
    /* every method of the registry marked for comparisons, in its table order */
    p->n_methods = 0;
    for (int r = 0; r < search_methods_count() && p->n_methods < COMPARE_MAX_METHODS; r++)
        if (search_method_row(r)->in_compare)
            snprintf(p->methods[p->n_methods++], sizeof p->methods[0], "%s", search_method_row(r)->name);
    memcpy(p->ratios, ratios, sizeof ratios);
    p->n_ratios = 4;
    snprintf(p->preset, sizeof p->preset, "%s", preset);
    return 0;
}

int compare_method_index(const compare_plan *p, const char *name) {
    for (int i = 0; i < p->n_methods; i++)
        if (!strcmp(p->methods[i], name)) return i;
    return -1;
}

int compare_plan_check(const compare_plan *p, char *err, size_t errlen) {
    if (p->n_methods < 1 || p->n_methods > COMPARE_MAX_METHODS || p->n_ratios < 1 ||
        p->n_ratios > COMPARE_MAX_RATIOS || p->n_heldout < 1 || p->n_heldout > COMPARE_MAX_CELLS ||
        p->n_valid < 0 || p->n_valid > COMPARE_MAX_CELLS || p->n_transfer < 0 ||
        p->n_transfer > COMPARE_MAX_CELLS || p->transfer_others < 0) {
        snprintf(err, errlen,
                 "compare: a plan needs 1..%d methods, 1..%d ratios, 1..%d held-out cells, 0..%d validation "
                 "and transfer cells",
                 COMPARE_MAX_METHODS, COMPARE_MAX_RATIOS, COMPARE_MAX_CELLS, COMPARE_MAX_CELLS);
        return -1;
    }
    if (p->n_transfer > 0 && p->transfer_others > 0 && p->n_valid == 0) {
        snprintf(
            err, errlen,
            "compare: the transfer split scores the %d best other methods on validation, but the plan has "
            "no validation split (--valid 0 needs --transfer 0)",
            p->transfer_others);
        return -1;
    }
    for (int i = 1; i < p->n_ratios; i++)
        if (!(p->ratios[i] > p->ratios[i - 1])) {
            snprintf(err, errlen, "compare: ratios must increase (%g after %g)", p->ratios[i],
                     p->ratios[i - 1]);
            return -1;
        }
    for (int i = 0; i < p->n_methods; i++) {
        search_config c = p->cfg;
        if (search_variant_apply(&c, p->methods[i], err, errlen)) return -1;
        for (const char *q = p->methods[i]; *q; q++)
            if (*q >= 'A' && *q <= 'Z') {
                snprintf(err, errlen, "compare: method '%s': names are lower case", p->methods[i]);
                return -1;
            }
        for (int j = 0; j < i; j++)
            if (!strcmp(p->methods[i], p->methods[j])) {
                snprintf(err, errlen, "compare: method '%s' is listed twice", p->methods[i]);
                return -1;
            }
    }
    if (p->aprime_seeds < 0 || (long)(p->n_ratios - 1) * p->aprime_seeds > COMPARE_MAX_RATIOS * 8 ||
        p->aprime_seeds > 16) {
        snprintf(err, errlen, "compare: %d A' seeds at %d ratios is more than %d masks (at most 16 seeds)",
                 p->aprime_seeds, p->n_ratios, COMPARE_MAX_RATIOS * 8);
        return -1;
    }
    return search_config_check(&p->cfg, err, errlen);
}
