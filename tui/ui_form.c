/* ui_form.c — the start-a-search form (UI_START): ratio, preset, window, method (any method of
 * `bosch compare`: BOSCH, its variants and the baselines, search_variant_name) and granularity
 * (single KV heads, or whole layers as `bosch search --granularity layer`) of a new search, as a
 * pure function of the UI state (ui_request.h). Drawn by draw_dialogs.c. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probes.h"
#include "search.h"
#include "search_methods.h"
#include "search_options.h"
#include "ui_internal.h"

const double ui_ratios[] = {0.25, 0.5, 0.75, 0.875};
const int ui_n_ratios = 4;

static int n_presets(void) {
    int n = 0;
    while (search_preset_name(n)) n++;
    return n;
}

const char *ui_form_preset(const ui_state *u) {
    const char *p = search_preset_name(u->form_preset_i);
    return p ? p : UI_FORM_PRESET;
}

void ui_form_init(ui_state *u) {
    u->form_ratio = 0.5;
    const int i = search_preset_find(UI_FORM_PRESET);
    u->form_preset_i = i >= 0 ? i : 0;
}

#define FORM_FIELDS 6 /* ratio, preset, window, method, granularity, start from */
#define FORM_OPTS 5   /* the fields that are options of the table (the start is the working mask) */
#define FORM_MAX_WINDOW SEARCH_OPTS_MAX_TOKENS /* typing stops there; the table checks the range */

static int n_methods(void) {
    int n = 0;
    while (search_variant_name(n)) n++;
    return n;
}

const char *ui_form_method(const ui_state *u) {
    const char *m = search_variant_name(u->form_method_i);
    return m ? m : "bosch";
}

int ui_form_start_usable(const ui_state *u) {
    const search_method_info *m = search_method_row(search_method_find(ui_form_method(u)));
    return m && m->kind == SEARCH_KIND_SEARCH;
}

int ui_form_preset_window(const ui_state *u, int preset_i) {
    search_config c;
    search_config_default(&c);
    char err[256];
    if (!search_preset_name(preset_i) ||
        search_preset_apply(&c, search_preset_name(preset_i), u->snap.hp.n_ctx_train, err, sizeof err) != 0)
        return PROBE_DEFAULT_WINDOW;
    return c.window;
}

void ui_form_open(ui_state *u) {
    u->mode = UI_START;
    u->form_field = 0;
    if (u->form_window <= 0) u->form_window = ui_form_preset_window(u, u->form_preset_i);
}

/* The next (d = 1) or previous (d = -1) of ui_ratios from r, wrapping around (r may be a ratio
 * of :ratio, between them). */
static double ratio_step(double r, int d) {
    if (d > 0) {
        for (int i = 0; i < ui_n_ratios; i++)
            if (ui_ratios[i] > r + 1e-9) return ui_ratios[i];
        return ui_ratios[0];
    }
    for (int i = ui_n_ratios - 1; i >= 0; i--)
        if (ui_ratios[i] < r - 1e-9) return ui_ratios[i];
    return ui_ratios[ui_n_ratios - 1];
}

/* Next (d = 1) or previous (d = -1) value of the current field. */
static void form_step(ui_state *u, int d) {
    if (u->form_field == 0) u->form_ratio = ratio_step(u->form_ratio, d);
    if (u->form_field == 1) { /* a window the user chose stays (the form says it is theirs) */
        u->form_preset_i = (u->form_preset_i + d + n_presets()) % n_presets();
        if (!u->form_window_set) u->form_window = ui_form_preset_window(u, u->form_preset_i);
    }
    if (u->form_field == 2) {
        long w = d > 0 ? (long)u->form_window * 2 : u->form_window / 2;
        if (w >= 1 && w <= FORM_MAX_WINDOW) u->form_window = (int)w;
        u->form_window_set = u->form_window != ui_form_preset_window(u, u->form_preset_i);
    }
    if (u->form_field == 3) u->form_method_i = (u->form_method_i + d + n_methods()) % n_methods();
    if (u->form_field == 4) u->form_granularity = !u->form_granularity; /* two values: heads, layers */
    if (u->form_field == 5) u->form_start = !u->form_start;             /* nothing, the working mask */
}

/* The form's fields as `bosch search` options into *o, parsed by the same table
 * (search_options.h); 0, or -1 with the field's message in err. */
static int form_opts(const ui_state *u, search_opts *o, char *err, size_t errlen) {
    char text[FORM_OPTS][32], e[256];
    const search_opt_id ids[FORM_OPTS] = {SOPT_RATIO, SOPT_PRESET, SOPT_WINDOW, SOPT_METHOD,
                                          SOPT_GRANULARITY};
    snprintf(text[0], sizeof text[0], "%.17g", u->form_ratio);
    snprintf(text[1], sizeof text[1], "%s", ui_form_preset(u));
    snprintf(text[2], sizeof text[2], "%d", u->form_window);
    snprintf(text[3], sizeof text[3], "%s", ui_form_method(u));
    snprintf(text[4], sizeof text[4], "%s", u->form_granularity ? "layer" : "head");
    for (int i = 0; i < FORM_OPTS; i++)
        if (search_opts_set(o, ids[i], text[i], e, sizeof e)) {
            snprintf(err, errlen, "%s: %s", search_opts_name(ids[i]), e);
            return -1;
        }
    /* the working mask as the start (--start), for a method that can use one */
    if (u->form_start && ui_form_start_usable(u) &&
        (long)u->mask.n_layer * u->mask.n_head_kv <= SEARCH_START_MAX) {
        const int n = u->mask.n_layer * u->mask.n_head_kv;
        memset(o->start_swa, 0, sizeof o->start_swa);
        o->start_layers = u->mask.n_layer, o->start_heads = u->mask.n_head_kv;
        for (int i = 0; i < n; i++)
            if (u->mask.z[i] == ATTN_SWA) o->start_swa[i / 8] |= (uint8_t)(1u << (i % 8));
        o->given |= SOPT_BIT(SOPT_START);
    }
    /* the pinned heads (F), as --force-full / --force-swa would give them */
    const int H = u->mask.n_head_kv;
    for (int i = 0; i < u->mask.n_layer * H && o->n_pins < SEARCH_PINS_MAX; i++)
        if (u->pin[i]) {
            o->pins[o->n_pins++] =
                (search_pin){(int16_t)(i / H), (int16_t)(i % H), (uint8_t)(u->pin[i] == 2)};
            o->given |= SOPT_BIT(u->pin[i] == 2 ? SOPT_FORCE_SWA : SOPT_FORCE_FULL);
        }
    return 0;
}

int ui_form_plan(const ui_state *u, search_plan *p, search_config *cfg) {
    search_opts o;
    memset(&o, 0, sizeof o);
    char err[256];
    if (form_opts(u, &o, err, sizeof err) ||
        search_opts_config(&o, u->snap.hp.n_ctx_train, cfg, err, sizeof err) ||
        search_pins_check(cfg, u->snap.hp.n_layer, u->snap.hp.n_head_kv, err, sizeof err))
        return -1;
    return search_plan_make(p, cfg, u->snap.hp.n_layer, u->snap.hp.n_head_kv, 1, 1);
}

double ui_form_seconds(const ui_state *u, const search_plan *p, const search_config *cfg) {
    const ex_snapshot *s = &u->snap;
    const double sec = progress_sec_per_eval(&s->progress);
    if (!isfinite(sec) || s->calib_samples <= 0 || s->calib_tokens <= 0) return NAN;
    const double scale =
        (double)cfg->calib_samples * cfg->calib_tokens / ((double)s->calib_samples * s->calib_tokens);
    return sec * scale * (double)p->evals_planned;
}

/* The form's fields as a start command (the option table refuses a bad field: the message says
 * which). */
static ui_cmd form_accept(ui_state *u) {
    ui_cmd c = {.kind = UI_CMD_NONE};
    char err[300];
    search_config cfg;
    if (form_opts(u, &c.req.opts, err, sizeof err) ||
        search_opts_config(&c.req.opts, u->snap.hp.n_ctx_train, &cfg, err, sizeof err) ||
        search_pins_check(&cfg, u->snap.hp.n_layer, u->snap.hp.n_head_kv, err, sizeof err)) {
        ui_message(u, "%s", err);
        return c;
    }
    c.kind = UI_CMD_START_SEARCH;
    u->mode = UI_NORMAL;
    return c;
}

ui_cmd ui_form_apply(ui_state *u, ui_request req, int ch) {
    switch (req) {
    case REQ_CLOSE:
        u->mode = UI_NORMAL;
        break;
    case REQ_FORM_PREV:
        u->form_field = (u->form_field + FORM_FIELDS - 1) % FORM_FIELDS;
        break;
    case REQ_FORM_NEXT:
        u->form_field = (u->form_field + 1) % FORM_FIELDS;
        break;
    case REQ_FORM_INC:
    case REQ_FORM_DEC:
        form_step(u, req == REQ_FORM_INC ? 1 : -1);
        break;
    case REQ_FORM_DIGIT:
        if (u->form_field == 2) {
            long w = (long)u->form_window * 10 + (ch - '0');
            if (w <= FORM_MAX_WINDOW) u->form_window = (int)w;
            u->form_window_set = u->form_window != ui_form_preset_window(u, u->form_preset_i);
        }
        break;
    case REQ_FORM_BACKSPACE:
        if (u->form_field == 2) {
            u->form_window /= 10;
            u->form_window_set = u->form_window != ui_form_preset_window(u, u->form_preset_i);
        }
        break;
    case REQ_FORM_ACCEPT:
        return form_accept(u);
    default:
        break;
    }
    return (ui_cmd){.kind = UI_CMD_NONE};
}
