/* ui_line.c — the explorer's footer-row prompts (':' the command line, '/' a layer jump) and the
 * mouse, applied to the UI state (ui_request.h): pure, as ui_request.c; it calls only ui_edit.c. The parsing
 * is cmdline.c's; what a click hits is layout.c's (layout_hit). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "ui_internal.h"

static const ui_cmd no_cmd = {.kind = UI_CMD_NONE};

/* `:export NAME [FILE]`: the file job, or the file-name prompt when no FILE was given. */
static ui_cmd export_command(ui_state *u, const cmdline_cmd *c) {
    int n;
    const cmdline_export *e = &cmdline_exports(&n)[c->export_i];
    if (e->needs_search && !u->snap.have_search) {
        ui_message(u, "export %s: no search yet", e->name);
        return no_cmd;
    }
    if (!c->path[0]) {
        ui_file_prompt(u, e->prompt);
        return no_cmd;
    }
    snprintf(u->input, sizeof u->input, "%s", c->path);
    return (ui_cmd){.kind = UI_CMD_IO,
                    .io = e->io,
                    .path = u->input,
                    .mask = e->io == EX_IO_EXPORT_TRACE || e->io == EX_IO_EXPORT_LAYERS ? NULL : &u->mask};
}

/* The ':' line's Enter: parse it (cmdline.h) and apply it. */
static ui_cmd run_command(ui_state *u) {
    cmdline_cmd c;
    char err[EX_LINE];
    if (cmdline_parse(u->input, u->mask.n_layer, &c, err, sizeof err)) {
        ui_message(u, "%s", err);
        return no_cmd;
    }
    if (c.kind == CMDLINE_QUIT || c.kind == CMDLINE_QUIT_NOW || c.kind == CMDLINE_HELP) {
        if (c.kind == CMDLINE_QUIT_NOW) u->quit = 1;
        if (c.kind == CMDLINE_QUIT) ui_request_quit(u);
        if (c.kind == CMDLINE_HELP) u->mode = UI_HELP, u->help_page = 1;
        return no_cmd;
    }
    if (!u->have_model) {
        ui_message(u, "the model is still loading (q quits)");
        return no_cmd;
    }
    switch (c.kind) {
    case CMDLINE_RATIO:
        u->form_ratio = c.ratio;
        ui_message(u, "next search: ratio %.3f (s opens the form, Enter starts it)", c.ratio);
        break;
    case CMDLINE_WINDOW:
        ui_begin_edit(u);
        u->mask.window = c.window;
        u->form_window = c.window;
        ui_message(u, "window %d tokens: the working mask and the next search (u undoes)", c.window);
        break;
    case CMDLINE_LOAD:
        snprintf(u->input, sizeof u->input, "%s", c.path);
        return (ui_cmd){.kind = UI_CMD_IO, .io = EX_IO_LOAD_MASK, .path = u->input};
    case CMDLINE_EXPORT:
        return export_command(u, &c);
    case CMDLINE_LAYER:
        u->cur_layer = c.layer;
        break;
    case CMDLINE_PIN: /* the comparison's diff (draw_grid.c) and the side-by-side panel (ui_pin.c) */
        return ui_pin_command(u, &c);
    case CMDLINE_ALL:
        ui_begin_edit(u);
        memset(u->mask.z, c.all_swa ? ATTN_SWA : ATTN_FULL, (size_t)u->mask.n_layer * u->mask.n_head_kv);
        ui_message(u, "working mask: all %s (u undoes)", c.all_swa ? "SWA" : "full");
        break;
    default:
        break;
    }
    return no_cmd;
}

ui_cmd ui_line_run(ui_state *u) {
    if (u->prompt == PROMPT_COMMAND) return run_command(u);
    char err[EX_LINE];
    if (cmdline_parse_layer(u->input, u->mask.n_layer, &u->cur_layer, err, sizeof err))
        ui_message(u, "%s", err);
    return no_cmd;
}

ui_cmd ui_apply_mouse(ui_state *u, ui_mouse ev, int y, int x) {
    if (u->mode == UI_HELP || u->mode == UI_ASK) { /* a click closes them, as a key does */
        if (ev == UI_MOUSE_CLICK) u->mode = UI_NORMAL;
        return no_cmd;
    }
    if (u->mode != UI_NORMAL || !u->have_model) return no_cmd;
    if (ev != UI_MOUSE_CLICK) { /* the wheel scrolls the grid; the cursor keeps its row */
        int d = ev == UI_MOUSE_WHEEL_UP ? -UI_WHEEL_LAYERS : UI_WHEEL_LAYERS;
        int max_top = u->mask.n_layer - u->lay.visible_layers;
        ui_move_cursor(u, d, 0);
        u->top += d;
        if (u->top > max_top) u->top = max_top;
        if (u->top < 0) u->top = 0;
        return no_cmd;
    }
    lay_hit h = layout_hit(&u->lay, u->mask.n_layer, u->mask.n_head_kv, u->top, y, x);
    if (h.kind == LAY_HIT_CELL && h.layer == u->cur_layer && h.kv_head == u->cur_head)
        ui_toggle_head(u); /* a second click on the cursor's cell */
    else if (h.kind == LAY_HIT_CELL)
        u->cur_layer = h.layer, u->cur_head = h.kv_head;
    else if (h.kind == LAY_HIT_LAYER)
        u->cur_layer = h.layer;
    return no_cmd;
}
