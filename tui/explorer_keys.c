/* explorer_keys.c — the explorer's input glue on the UI thread: a key becomes a request
 * (keymap_lookup), the request is applied to the UI state (ui_apply, pure) and the worker command
 * it returns is sent; a new snapshot from the worker is copied and applied. Never waits for the
 * worker. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>

#include "explorer_ui.h"

/* Send c to the worker (a repaint is the UI's own); 0 when queued, -1 when refused. */
static int send_cmd(ui_state *u, const ui_cmd *c) {
    if (c->kind == UI_CMD_REDRAW) {
        clearok(curscr, TRUE);
        return 0;
    }
    return worker_submit(u->w, c);
}

/* The mouse event behind KEY_MOUSE as a ui_mouse; -1 for the ones the explorer does not use. */
static int mouse_event(int *y, int *x) {
    MEVENT ev;
    if (getmouse(&ev) != OK) return -1;
    *y = ev.y, *x = ev.x;
    if (ev.bstate & BUTTON4_PRESSED) return UI_MOUSE_WHEEL_UP;
    if (ev.bstate & BUTTON5_PRESSED) return UI_MOUSE_WHEEL_DOWN;
    if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)) return UI_MOUSE_CLICK;
    return -1;
}

/* The side-by-side panel's comparison when the working or the pinned mask changed (ui_pin_refresh). */
static void pin_refresh(ui_state *u) {
    ui_cmd c = ui_pin_refresh(u);
    if (c.kind != UI_CMD_NONE) ui_cmd_done(u, &c, send_cmd(u, &c));
}

void ui_handle_key(ui_state *u, int ch) {
    ui_request req = keymap_lookup_binds(u->binds, u->n_binds, u->mode, ch);
    ui_cmd c;
    if (ch == KEY_MOUSE) { /* the event is read here even where the mode ignores it */
        int y, x, ev = mouse_event(&y, &x);
        if (ev < 0 || (req != REQ_MOUSE && req != REQ_CLOSE)) return;
        c = ui_apply_mouse(u, (ui_mouse)ev, y, x);
    } else {
        c = ui_apply(u, req, ch);
    }
    if (c.kind != UI_CMD_NONE) ui_cmd_done(u, &c, send_cmd(u, &c));
    pin_refresh(u);
}

void ui_on_snapshot(ui_state *u) {
    worker_snapshot(u->w, &u->snap);
    ex_io *r = &u->snap.io;
    if (r->seq > u->io_seen && r->kind == EX_IO_COMPARE_OPEN && r->ok) { /* the rows stay with the worker */
        if (!u->cmp_rows) u->cmp_rows = calloc(COMPARE_MAX_METHODS, sizeof *u->cmp_rows);
        if (u->cmp_rows) {
            r->n_rows = worker_compare_rows(u->w, u->cmp_rows, COMPARE_MAX_METHODS);
        } else {
            r->ok = 0;
            snprintf(r->msg, sizeof r->msg, "out of memory");
        }
    }
    int ws_open = r->seq > u->io_seen && r->kind == EX_IO_WORKSPACE_OPEN && r->ok;
    ui_apply_snapshot(u);
    if (ws_open) { /* the undo masks stay with the worker: copy them, then apply the workspace */
        ex_mask *undo = calloc(UI_UNDO, sizeof *undo);
        int n = undo ? worker_workspace_undo(u->w, undo, UI_UNDO) : 0;
        ui_workspace_opened(u, undo, n);
        free(undo);
    }
    pin_refresh(u);
}
