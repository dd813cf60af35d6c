/* ui_attn.c — the attention view's requests (UI_ATTN), as pure functions of the UI state
 * (ui_request.h): what to ask the worker for comes back as a ui_cmd. The view is drawn by
 * draw_attn.c from the snapshot's attn (worker_attn.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ui_internal.h"

/* The view of the head under the cursor, for the split and sample asked for. */
static ui_cmd attn_cmd(ui_state *u) {
    return (ui_cmd){.kind = UI_CMD_ATTN,
                    .mask = &u->mask,
                    .layer = u->cur_layer,
                    .kv_head = u->cur_head,
                    .split = u->attn_split,
                    .sample = u->attn_sample};
}

ui_cmd ui_attn_open(ui_state *u) {
    if (!u->have_model) return (ui_cmd){.kind = UI_CMD_NONE};
    u->mode = UI_ATTN;
    return attn_cmd(u);
}

ui_cmd ui_attn_apply(ui_state *u, ui_request req) {
    switch (req) {
    case REQ_CLOSE:
        u->mode = UI_NORMAL;
        return (ui_cmd){.kind = UI_CMD_NONE};
    case REQ_ATTN_SPLIT:
        u->attn_split = !u->attn_split;
        u->attn_sample = 0;
        break;
    case REQ_ATTN_NEXT:
    case REQ_ATTN_PREV: /* the worker takes the sample modulo the split's size */
        u->attn_sample += req == REQ_ATTN_NEXT ? 1 : -1;
        break;
    case REQ_MOVE_UP:
    case REQ_MOVE_DOWN:
    case REQ_MOVE_LEFT:
    case REQ_MOVE_RIGHT:
        ui_cursor_request(u, req);
        break;
    default:
        return (ui_cmd){.kind = UI_CMD_NONE};
    }
    return attn_cmd(u);
}
