/* ui_pin.c — pinning a mask and the side-by-side panel, applied to the UI state (ui_request.h):
 * `:pin` (a snapshot of the working mask, all full, all SWA, a baseline of the method registry, a
 * mask file), `=` (the panel on / off), and the comparison job the panel needs (worker_pin.c
 * computes it; draw_pin.c shows it). The pinned mask is the comparison's (cmp_mask: draw_grid.c
 * marks the heads that differ). Pure, as ui_request.c; it calls only ui_edit.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ui_internal.h"

static const ui_cmd no_cmd = {.kind = UI_CMD_NONE};

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t key_mask(uint64_t h, const ex_mask *m) {
    const int head[4] = {m->n_layer, m->n_head_kv, m->window, m->sinks};
    h = fnv_bytes(h, head, sizeof head);
    return fnv_bytes(h, m->z, (size_t)m->n_layer * m->n_head_kv);
}

uint64_t ui_pin_key(const ex_mask *working, const ex_mask *pinned) {
    uint64_t k = key_mask(key_mask(1469598103934665603ull, working), pinned);
    return k ? k : 1; /* 0 means "none sent" */
}

double ui_pin_default_ratio(const ui_state *u) {
    if (u->snap.have_search) return u->snap.target_ratio;
    const int units = u->mask.n_layer * u->mask.n_head_kv, n_swa = ex_mask_count_swa(&u->mask);
    return units > 0 && n_swa > 0 ? (double)n_swa / units : u->form_ratio;
}

/* The pinned mask is m, named name: the grid diffs against it (and the panel opens when `open`). */
static void pin_mask(ui_state *u, const ex_mask *m, const char *name, int open) {
    u->cmp_mask = *m;
    u->have_cmp = 1;
    u->pin_making = 0;
    if (open) u->pin_view = 1;
    snprintf(u->cmp_name, sizeof u->cmp_name, "%.31s", name);
}

ui_cmd ui_pin_command(ui_state *u, const cmdline_cmd *c) {
    ex_mask m = u->mask;
    switch (c->pin) {
    case CMDLINE_PIN_WORKING:
    case CMDLINE_PIN_FULL:
    case CMDLINE_PIN_SWA:
        if (c->pin != CMDLINE_PIN_WORKING)
            memset(m.z, c->pin == CMDLINE_PIN_SWA ? ATTN_SWA : ATTN_FULL, (size_t)m.n_layer * m.n_head_kv);
        pin_mask(u, &m,
                 c->pin == CMDLINE_PIN_WORKING ? "pinned"
                 : c->pin == CMDLINE_PIN_FULL  ? "all full"
                                               : "all SWA",
                 1);
        ui_message(
            u, "pinned %s: = shows it beside the working mask, the grid marks the heads that differ (D: off)",
            c->pin == CMDLINE_PIN_WORKING ? "the working mask" : u->cmp_name);
        return no_cmd; /* the panel's job follows (ui_pin_refresh) */
    case CMDLINE_PIN_FILE:
        snprintf(u->input, sizeof u->input, "%s", c->path);
        return (ui_cmd){.kind = UI_CMD_IO, .io = EX_IO_PIN_MASK, .path = u->input};
    case CMDLINE_PIN_METHOD: {
        const double ratio = c->ratio >= 0 ? c->ratio : ui_pin_default_ratio(u);
        u->have_cmp = 0; /* the old pin's diff goes; the baseline's comes when it is made */
        u->pin_making = 1;
        u->pin_view = 1;
        snprintf(u->cmp_name, sizeof u->cmp_name, "%.31s", c->path);
        snprintf(u->input, sizeof u->input, "%s", c->path);
        return (ui_cmd){
            .kind = UI_CMD_PIN, .pin_method = 1, .path = u->input, .ratio = ratio, .mask = &u->mask};
    }
    }
    return no_cmd;
}

void ui_queued_pin(ui_state *u, const ui_cmd *c) {
    if (c->pin_method)
        ui_message(u, "pin: making the %s mask at rho %.3f on the calibration split...", c->path, c->ratio);
    else /* the worker drops a baseline still being made for this pair (a compare folder's mask) */
        u->pin_sent = ui_pin_key(c->mask, c->pinned), u->pin_making = 0;
}

ui_cmd ui_act_pin_view(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    if (u->pin_view) {
        u->pin_view = 0;
    } else if (u->have_cmp || u->pin_making) {
        u->pin_view = 1;
    } else {
        ui_message(u, "nothing pinned: :pin [full | swa | a baseline such as fisher | FILE]");
    }
    return no_cmd;
}

ui_cmd ui_pin_refresh(ui_state *u) {
    if (!u->pin_view || !u->have_cmp || !u->have_model || u->cmp_mask.n_layer != u->mask.n_layer ||
        u->cmp_mask.n_head_kv != u->mask.n_head_kv)
        return no_cmd;
    if (u->follow && u->snap.have_search && u->snap.phase == EX_RUNNING) return no_cmd;
    if (ui_pin_key(&u->mask, &u->cmp_mask) == u->pin_sent) return no_cmd;
    return (ui_cmd){.kind = UI_CMD_PIN, .mask = &u->mask, .pinned = &u->cmp_mask};
}

void ui_pin_on_snapshot(ui_state *u) {
    const ex_pin *p = &u->snap.pin;
    if (p->mask_seq <= u->pin_mask_seen) return;
    u->pin_mask_seen = p->mask_seq;
    if (!u->pin_making || p->pinned.n_layer != u->mask.n_layer) return; /* pinned something else since */
    pin_mask(u, &p->pinned, p->name, 0); /* the panel opened with :pin; = may have hidden it since */
    ui_message(u, "pinned %s at rho %.3f: %d of %d KV heads SWA, %d differ from the working mask", p->name,
               p->ratio, ex_mask_count_swa(&p->pinned), p->pinned.n_layer * p->pinned.n_head_kv,
               ui_compare_n_diff(u));
}

void ui_pin_on_file(ui_state *u, const ex_io *r) {
    if (!r->ok) {
        ui_message(u, "pin: %s", r->msg);
        return;
    }
    const char *base = strrchr(r->path, '/');
    pin_mask(u, &r->mask, base && base[1] ? base + 1 : r->path, 1);
    ui_message(u, "pinned %s: %d of %d KV heads SWA, W %d; %d differ from the working mask", u->cmp_name,
               ex_mask_count_swa(&r->mask), r->mask.n_layer * r->mask.n_head_kv, r->mask.window,
               ui_compare_n_diff(u));
}
