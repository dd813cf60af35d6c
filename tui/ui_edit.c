/* ui_edit.c — the helpers every request file shares (ui_internal.h): the status message, the undo
 * ring and hand edits of the working mask, the cursor, the prompts, following the search, the
 * quit question. Pure: no curses, no worker calls; it calls no other request file. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ui_internal.h"

void ui_message(ui_state *u, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->msg, sizeof u->msg, fmt, ap);
    va_end(ap);
    u->msg_t = base_now_s();
}

int ui_search_unsaved(const ui_state *u) {
    return u->snap.have_search && u->snap.n_evals > 0 && u->saved_evals != u->snap.n_evals;
}

void ui_request_quit(ui_state *u) {
    if (ui_search_unsaved(u) && u->mode != UI_CONFIRM_QUIT)
        u->mode = UI_CONFIRM_QUIT;
    else
        u->quit = 1;
}

int ui_compare_n_diff(const ui_state *u) {
    if (!u->have_cmp || u->cmp_mask.n_layer != u->mask.n_layer || u->cmp_mask.n_head_kv != u->mask.n_head_kv)
        return 0;
    int n = 0;
    for (int i = 0; i < u->mask.n_layer * u->mask.n_head_kv; i++) n += u->cmp_mask.z[i] != u->mask.z[i];
    return n;
}

/* ------------------------------------------------------------------ edits */

void ui_push_undo(ui_state *u) {
    u->undo[(u->undo_head + u->undo_n) % UI_UNDO] = u->mask;
    if (u->undo_n < UI_UNDO)
        u->undo_n++;
    else
        u->undo_head = (u->undo_head + 1) % UI_UNDO;
}

void ui_begin_edit(ui_state *u) {
    ui_push_undo(u);
    u->redo_n = 0; /* a new edit: what was undone cannot be redone over it */
    if (u->follow && u->snap.have_search && u->snap.phase == EX_RUNNING)
        ui_message(u, "editing: the grid stops following the search (p pauses it)");
    u->follow = 0;
    u->edited = 1;
}

static uint8_t *cell(ui_state *u, int l, int h) {
    return &u->mask.z[l * u->mask.n_head_kv + h];
}

void ui_toggle_head(ui_state *u) {
    ui_begin_edit(u);
    uint8_t *c = cell(u, u->cur_layer, u->cur_head);
    *c = *c == ATTN_FULL ? ATTN_SWA : ATTN_FULL;
}

void ui_fill_layer(ui_state *u, int k) {
    int H = u->mask.n_head_kv, l = u->cur_layer, n = 0;
    if (k > H) k = H;
    ui_begin_edit(u);
    for (int h = 0; h < H; h++) n += *cell(u, l, h) == ATTN_SWA;
    for (int h = 0; h < H && n < k; h++)
        if (*cell(u, l, h) == ATTN_FULL) {
            *cell(u, l, h) = ATTN_SWA;
            n++;
        }
    for (int h = H - 1; h >= 0 && n > k; h--)
        if (*cell(u, l, h) == ATTN_SWA) {
            *cell(u, l, h) = ATTN_FULL;
            n--;
        }
    ui_message(u, "layer %d: %d of %d KV heads SWA (ratio %.2f)", l, k, H, (double)k / H);
}

void ui_follow_again(ui_state *u) {
    if (u->edited) ui_push_undo(u);
    u->follow = 1;
    u->edited = 0;
}

/* ------------------------------------------------------------------ cursor */

void ui_move_cursor(ui_state *u, int dl, int dh) {
    int L = u->mask.n_layer, H = u->mask.n_head_kv;
    u->cur_layer += dl;
    u->cur_head += dh;
    if (u->cur_layer < 0) u->cur_layer = 0;
    if (u->cur_layer >= L) u->cur_layer = L - 1;
    if (u->cur_head < 0) u->cur_head = 0;
    if (u->cur_head >= H) u->cur_head = H - 1;
}

void ui_cursor_request(ui_state *u, ui_request req) {
    int page = u->lay.visible_layers > 1 ? u->lay.visible_layers - 1 : 1;
    switch (req) {
    case REQ_MOVE_UP:
        ui_move_cursor(u, -1, 0);
        break;
    case REQ_MOVE_DOWN:
        ui_move_cursor(u, 1, 0);
        break;
    case REQ_MOVE_LEFT:
        ui_move_cursor(u, 0, -1);
        break;
    case REQ_MOVE_RIGHT:
        ui_move_cursor(u, 0, 1);
        break;
    case REQ_PAGE_UP:
        ui_move_cursor(u, -page, 0);
        break;
    case REQ_PAGE_DOWN:
        ui_move_cursor(u, page, 0);
        break;
    case REQ_FIRST_LAYER:
        ui_move_cursor(u, -u->mask.n_layer, 0);
        break;
    case REQ_LAST_LAYER:
        ui_move_cursor(u, u->mask.n_layer, 0);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ prompts */

void ui_file_prompt(ui_state *u, prompt_kind k) {
    static const char *const names[] = {[PROMPT_EXPORT_MASK] = "bosch-mask.csv",
                                        [PROMPT_EXPORT_TRACE] = "bosch-trace.csv",
                                        [PROMPT_EXPORT_LAYERS] = "bosch-layers.csv",
                                        [PROMPT_LOAD_MASK] = "bosch-mask.csv",
                                        [PROMPT_COMPARE_DIR] = "runs/compare",
                                        [PROMPT_EXPORT_DUO] = "bosch-duo",
                                        [PROMPT_EXPORT_HF] = "bosch-hf-config.json",
                                        [PROMPT_EXPORT_TRTLLM] = "bosch-trtllm.json",
                                        [PROMPT_EXPORT_SCORES] = "bosch-scores",
                                        [PROMPT_WORKSPACE] = "bosch-workspace",
                                        [PROMPT_COMMAND] = "",
                                        [PROMPT_JUMP] = ""};
    const char *p = k == PROMPT_LOAD_MASK && u->last_path[0]   ? u->last_path
                    : k == PROMPT_COMPARE_DIR && u->cmp_dir[0] ? u->cmp_dir
                    : k == PROMPT_WORKSPACE && u->ws_dir[0]    ? u->ws_dir
                                                               : names[k];
    /* an export goes beside the open workspace, else into the export folder, never by default into
       the folder the explorer was started from (often the repository) */
    const int export = k != PROMPT_LOAD_MASK && k != PROMPT_COMPARE_DIR && k != PROMPT_WORKSPACE &&
                       k != PROMPT_COMMAND && k != PROMPT_JUMP;
    const char *dir = u->ws_dir[0] ? u->ws_dir : u->export_dir;
    const size_t dl = strlen(dir), pl = strlen(p);
    if (export && dl && dl + 1 + pl < sizeof u->input) {
        memcpy(u->input, dir, dl);
        u->input[dl] = '/';
        memcpy(u->input + dl + 1, p, pl + 1);
    } else {
        snprintf(u->input, sizeof u->input, "%s", p);
    }
    u->input_len = (int)strlen(u->input);
    u->prompt = k;
    u->mode = UI_PROMPT;
    u->prompt_refused = 0;
}

void ui_line_prompt(ui_state *u, prompt_kind k) {
    u->input[0] = '\0';
    u->input_len = 0;
    u->prompt = k;
    u->mode = UI_PROMPT;
    u->prompt_refused = 0;
}
