/* progress.c — the search's progress from its plan and events, and the screen's words for it
 * (progress.h). */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

void progress_reset(ex_progress *p) {
    memset(p, 0, sizeof *p);
    p->plan.cur = -1;
    p->phase = p->unit = p->layer = p->head = p->group = -1;
    p->best_target = p->final_score = NAN;
    p->full_raw = p->swa_raw = p->last_drop = p->last_se = NAN;
    for (int l = 0; l < PROGRESS_MAX_LAYERS; l++) p->layer_drop[l] = p->layer_se[l] = NAN;
}

/* The noise of an evaluation: its drop against all full, paired over the samples (stats.h). */
static void on_eval_noise(ex_progress *p, const search_event *ev, const search_plan_phase *ph) {
    const int n =
        ev->sample_nll && ev->n_samples > 0 && ev->n_samples <= PROGRESS_MAX_SAMPLES ? ev->n_samples : 0;
    double cur[PROGRESS_MAX_SAMPLES];
    for (int i = 0; i < n; i++) cur[i] = stats_sample_score(ev->sample_nll[i]);
    if (ph && ph->kind == SEARCH_PHASE_NORMALIZE) {
        if (ev->unit == 0) {
            p->full_raw = ev->raw_score;
            p->n_full = n;
            memcpy(p->full_sample, cur, sizeof cur[0] * (size_t)n);
        } else {
            p->swa_raw = ev->raw_score;
        }
    }
    p->last_drop = p->last_se = NAN;
    if (!n || n != p->n_full || !isfinite(p->full_raw)) return;
    stats_paired_diff(p->full_sample, cur, n, &p->last_drop, &p->last_se);
    /* a stage-1 probe of one layer: the layer's drop is that of its best probe (highest S) */
    if (ph && ph->kind == SEARCH_PHASE_PROBE_LAYERS && isfinite(p->last_drop) && ev->layer >= 0 &&
        ev->layer < PROGRESS_MAX_LAYERS && !(p->layer_drop[ev->layer] <= p->last_drop))
        p->layer_drop[ev->layer] = p->last_drop, p->layer_se[ev->layer] = p->last_se;
}

double progress_score_se(const ex_progress *p) {
    const double den = p->full_raw - p->swa_raw;
    return isfinite(p->last_se) && isfinite(den) && fabs(den) > 1e-12 ? p->last_se / fabs(den) : NAN;
}

int progress_within_noise(double d, double se) {
    return isfinite(d) && isfinite(se) && fabs(d) < 2 * se;
}

static void clear_marks(ex_progress *p) {
    p->layer = p->head = p->group = -1;
    memset(p->in_group, 0, sizeof p->in_group);
}

/* The only SWA KV head of m (layer and head), when it has exactly one. */
static int single_swa(const attn_mask *m, int *layer, int *head) {
    int n = 0;
    for (int u = 0; u < m->n_layer * m->n_head_kv; u++)
        if (m->z[u] == ATTN_SWA && n++ == 0) *layer = u / m->n_head_kv, *head = u % m->n_head_kv;
    return n == 1;
}

/* An evaluation: the count, its time, and in a phase about single layers or heads the one it is. */
static void on_eval(ex_progress *p, const search_event *ev) {
    if (ev->eval_index > p->n_evals) p->n_evals = ev->eval_index;
    if (!ev->replayed && isfinite(ev->seconds) && ev->seconds >= 0) p->live_s += ev->seconds, p->live_n++;
    /* the best at the target: a stage-1 probe with fewer SWA heads scores better and says nothing
       of the masks the search can return */
    if (ev->mask && isfinite(ev->score) && p->plan.target_swa > 0 &&
        mask_count_swa(ev->mask) == p->plan.target_swa && !(ev->score <= p->best_target))
        p->best_target = ev->score, p->best_target_eval = ev->eval_index;
    const search_plan_phase *ph =
        p->phase >= 0 && p->phase < p->plan.n_phases ? &p->plan.phase[p->phase] : NULL;
    on_eval_noise(p, ev, ph);
    if (!ph) return;
    if (ph->keeps & SEARCH_KEEPS_ONE_HEAD) {
        int l = -1, h = -1;
        if (ev->mask && single_swa(ev->mask, &l, &h)) p->layer = l, p->head = h;
    } else if (ph->keeps & (SEARCH_KEEPS_ONE_LAYER | SEARCH_KEEPS_CASCADE)) {
        if (ev->layer >= 0) p->layer = ev->layer, p->head = -1;
    }
}

void progress_on_event(ex_progress *p, const search_event *ev) {
    if (ev->kind == SEARCH_EV_SEARCH_START) {
        progress_reset(p);
        p->active = 1;
        p->evals_start = ev->evals_planned;
    }
    if (ev->plan) p->plan = *ev->plan;
    if (ev->phase != p->phase) clear_marks(p); /* a new phase: the old one's marks are stale */
    p->phase = ev->phase;
    p->unit = ev->unit;
    switch (ev->kind) {
    case SEARCH_EV_LAYER_START:
        p->layer = ev->layer, p->head = -1;
        break;
    case SEARCH_EV_LAYER_END:
    case SEARCH_EV_STAGE_START:
    case SEARCH_EV_STAGE_END:
        p->layer = p->head = -1;
        break;
    case SEARCH_EV_EVAL:
        on_eval(p, ev);
        break;
    case SEARCH_EV_GROUP_START:
        clear_marks(p);
        p->group = ev->group;
        for (int i = 0; i < ev->n_layers_in_group && ev->group_layers; i++)
            if (ev->group_layers[i] >= 0 && ev->group_layers[i] < PROGRESS_MAX_LAYERS)
                p->in_group[ev->group_layers[i]] = 1;
        break;
    case SEARCH_EV_GROUP_END:
        clear_marks(p);
        break;
    case SEARCH_EV_DONE:
        p->done = 1;
        p->final_score = ev->score;
        clear_marks(p);
        break;
    default:
        break;
    }
}

int progress_phase(const ex_progress *p) {
    return p->active && p->phase >= 0 && p->phase < p->plan.n_phases ? p->phase : -1;
}

long progress_evals_planned(const ex_progress *p) {
    long n = p->plan.evals_planned;
    return n > p->n_evals ? n : p->n_evals;
}

int progress_title(const ex_progress *p, char *buf, size_t cap) {
    const int i = progress_phase(p);
    if (!p->active) return snprintf(buf, cap, "%s", "");
    if (p->done)
        return snprintf(buf, cap, "done: %d phase%s, %ld evaluations", p->plan.n_phases,
                        p->plan.n_phases == 1 ? "" : "s", p->n_evals);
    if (i < 0) return snprintf(buf, cap, "starting: %d phases planned", p->plan.n_phases);
    return snprintf(buf, cap, "phase %d/%d: %s", i + 1, p->plan.n_phases, p->plan.phase[i].label);
}

/* What the unit is, after the counter: "L25", "L3 kv1", the group's layers, the normalizer. */
static void unit_detail(const ex_progress *p, const search_plan_phase *ph, char *buf, size_t cap) {
    buf[0] = '\0';
    if (ph->kind == SEARCH_PHASE_NORMALIZE && p->unit >= 0) {
        snprintf(buf, cap, ": %s", p->unit == 0 ? "all full" : "all SWA");
    } else if (p->head >= 0 && p->layer >= 0) {
        snprintf(buf, cap, ": L%d kv%d", p->layer, p->head);
    } else if (p->layer >= 0) {
        snprintf(buf, cap, ": L%d", p->layer);
    } else if (p->group >= 0) {
        size_t o = 0;
        int shown = 0, more = 0;
        for (int l = 0; l < PROGRESS_MAX_LAYERS; l++) {
            if (!p->in_group[l]) continue;
            if (shown < 6 && o + 8 < cap)
                o += (size_t)snprintf(buf + o, cap - o, "%sL%d", shown ? " " : ": ", l), shown++;
            else
                more++;
        }
        if (more && o + 12 < cap) snprintf(buf + o, cap - o, " +%d", more);
    }
}

int progress_counter(const ex_progress *p, char *buf, size_t cap) {
    const int i = progress_phase(p);
    if (i < 0 || p->done) return snprintf(buf, cap, "%s", "");
    const search_plan_phase *ph = &p->plan.phase[i];
    int n = ph->n_units > 0 ? ph->n_units : 0;
    int k = p->unit >= 0 ? p->unit + 1 : ph->units_done;
    if (k > n) k = n;
    if (k < 0) k = 0;
    char detail[96];
    unit_detail(p, ph, detail, sizeof detail);
    return snprintf(buf, cap, "%s %d/%d%s", search_unit_name(ph->unit), k, n, detail);
}

double progress_fraction(const ex_progress *p) {
    if (!p->active) return 0;
    if (p->done) return 1;
    const long n = progress_evals_planned(p);
    return n > 0 ? (double)p->n_evals / (double)n : 0;
}

double progress_sec_per_eval(const ex_progress *p) {
    return p->live_n > 0 ? p->live_s / (double)p->live_n : NAN;
}

double progress_eta_s(const ex_progress *p) {
    if (p->done) return 0;
    const double s = progress_sec_per_eval(p);
    if (!p->active || !isfinite(s)) return NAN;
    return s * (double)(progress_evals_planned(p) - p->n_evals);
}

int progress_fmt_duration(double s, char *buf, size_t cap) {
    if (!(s >= 0) || !isfinite(s)) return snprintf(buf, cap, "?");
    const long t = lround(s);
    if (t < 60) return snprintf(buf, cap, "%ld s", t);
    if (t < 3600) return snprintf(buf, cap, "%ld min %02ld s", t / 60, t % 60);
    return snprintf(buf, cap, "%ld h %02ld min", t / 3600, t / 60 % 60);
}

progress_mark progress_layer_mark(const ex_progress *p, int l) {
    if (!p->active || p->done || l < 0 || l >= PROGRESS_MAX_LAYERS) return PROGRESS_MARK_NONE;
    if (l == p->layer) return PROGRESS_MARK_UNIT;
    if (p->group >= 0 && p->in_group[l]) return PROGRESS_MARK_GROUP;
    return PROGRESS_MARK_NONE;
}

const char *progress_text(const ex_progress *p) {
    const int i = progress_phase(p);
    return i >= 0 && !p->done ? p->plan.phase[i].text : NULL;
}
