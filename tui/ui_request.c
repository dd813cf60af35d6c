/* ui_request.c — applying a request to the explorer's UI state (ui_request.h), the hub: in UI_NORMAL
 * the request's action from the table of requests.h (ui_actions.c), in a dialog the dialog's own
 * handling (the file-name prompt, the export menu, fill, the quit question, the comparison view
 * here; the start form ui_form.c; the attention view ui_attn.c); once a job is queued, its note
 * from the table (ui_snapshot.c). Pure: no curses, no worker calls (those come back as a ui_cmd). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "probes.h"
#include "ui_internal.h"

static const ui_cmd no_cmd = {.kind = UI_CMD_NONE};

/* The table's UI half (requests.h): per request its flags and action, per job its note. */
static const struct {
    unsigned flags;
    ui_cmd (*action)(ui_state *u, ui_request req, int ch);
} requests[REQ_N] = {
#define REQUEST_ROW(id, name, flags, action, job) [REQ_##id] = {flags, action},
    UI_REQUESTS(REQUEST_ROW)
#undef REQUEST_ROW
};
static void (*const on_queued[UI_CMD_N_JOBS])(ui_state *u, const ui_cmd *c) = {[UI_CMD_NONE] = ui_queued_none,
#define QUEUED_ROW(id, job, note) [UI_CMD_##id] = note,
                                                                               UI_JOBS(QUEUED_ROW)
#undef QUEUED_ROW
};

/* ------------------------------------------------------------------ the file-name prompt */

/* The prompt's Enter: the file work goes to the worker; its result comes back in the snapshot
 * (ui_apply_snapshot). */
static ui_cmd run_prompt(ui_state *u) {
    u->mode = UI_NORMAL;
    if (u->prompt == PROMPT_COMMAND || u->prompt == PROMPT_JUMP) return ui_line_run(u);
    if (!u->input[0]) {
        ui_message(u, "no file name given");
        return no_cmd;
    }
    if (u->prompt == PROMPT_COMPARE_DIR) { /* at the ratio nearest the search's, else the mask's */
        attn_mask am;
        ex_mask_view(&u->mask, &am);
        double want = u->snap.have_search ? u->snap.target_ratio : mask_ratio(&am);
        return (ui_cmd){.kind = UI_CMD_COMPARE_OPEN, .path = u->input, .ratio = want};
    }
    if (u->prompt == PROMPT_WORKSPACE) /* the save takes what only the UI has: mask, undo, cursor */
        return (ui_cmd){.kind = UI_CMD_WORKSPACE,
                        .io = EX_IO_WORKSPACE_SAVE,
                        .path = u->input,
                        .mask = &u->mask,
                        .ws = {u->undo, UI_UNDO, u->undo_head, u->undo_n, u->cur_layer, u->cur_head,
                               u->follow, u->edited}};
    static const ex_io_kind kinds[] = {
        [PROMPT_EXPORT_MASK] = EX_IO_EXPORT_MASK,     [PROMPT_EXPORT_TRACE] = EX_IO_EXPORT_TRACE,
        [PROMPT_EXPORT_LAYERS] = EX_IO_EXPORT_LAYERS, [PROMPT_LOAD_MASK] = EX_IO_LOAD_MASK,
        [PROMPT_EXPORT_DUO] = EX_IO_EXPORT_DUO,       [PROMPT_EXPORT_HF] = EX_IO_EXPORT_HF,
        [PROMPT_EXPORT_TRTLLM] = EX_IO_EXPORT_TRTLLM, [PROMPT_EXPORT_SCORES] = EX_IO_EXPORT_SCORES};
    ex_io_kind k = kinds[u->prompt];
    int of_mask =
        k == EX_IO_EXPORT_MASK || k == EX_IO_EXPORT_DUO || k == EX_IO_EXPORT_HF || k == EX_IO_EXPORT_TRTLLM;
    return (ui_cmd){.kind = UI_CMD_IO, .io = k, .path = u->input, .mask = of_mask ? &u->mask : NULL};
}

static ui_cmd prompt_request(ui_state *u, ui_request req, int ch) {
    u->prompt_refused = 0;
    switch (req) {
    case REQ_CLOSE:
        u->mode = UI_NORMAL;
        break;
    case REQ_PROMPT_ACCEPT:
        return run_prompt(u);
    case REQ_PROMPT_BACKSPACE:
        if (u->input_len > 0) u->input[--u->input_len] = '\0';
        break;
    case REQ_PROMPT_CLEAR:
        u->input_len = 0;
        u->input[0] = '\0';
        break;
    case REQ_PROMPT_CHAR:
        if (ch >= 32 && ch < 256 && ch != 127 && u->input_len < (int)sizeof u->input - 1) {
            u->input[u->input_len++] = (char)ch;
            u->input[u->input_len] = '\0';
        }
        break;
    default:
        break;
    }
    return no_cmd;
}

/* A request of UI_NORMAL: its action, once the model is loaded unless it works any time. */
static ui_cmd normal_request(ui_state *u, ui_request req, int ch) {
    if ((unsigned)req >= REQ_N) return no_cmd;
    if (!u->have_model && !(requests[req].flags & UI_REQ_ANYTIME)) {
        ui_message(u, "the model is still loading (q quits)");
        return no_cmd;
    }
    return requests[req].action(u, req, ch);
}

/* ------------------------------------------------------------------ dialogs */

static void export_request(ui_state *u, ui_request req) {
    u->mode = UI_NORMAL;
    if (req == REQ_EXPORT_MASK) ui_file_prompt(u, PROMPT_EXPORT_MASK);
    if (req == REQ_EXPORT_TRACE) {
        if (u->snap.have_search)
            ui_file_prompt(u, PROMPT_EXPORT_TRACE);
        else
            ui_message(u, "no search yet: nothing to trace");
    }
    if (req == REQ_EXPORT_LAYERS) ui_file_prompt(u, PROMPT_EXPORT_LAYERS);
    if (req == REQ_EXPORT_DUO) ui_file_prompt(u, PROMPT_EXPORT_DUO);
    if (req == REQ_EXPORT_HF) ui_file_prompt(u, PROMPT_EXPORT_HF);
    if (req == REQ_EXPORT_TRTLLM) ui_file_prompt(u, PROMPT_EXPORT_TRTLLM);
    if (req == REQ_EXPORT_SCORES) ui_file_prompt(u, PROMPT_EXPORT_SCORES);
}

static void fill_request(ui_state *u, ui_request req, int ch) {
    u->mode = UI_NORMAL;
    if (req != REQ_FILL_COUNT) return; /* Esc */
    if (ch >= '0' && ch <= '9' && ch - '0' <= u->mask.n_head_kv)
        ui_fill_layer(u, ch - '0');
    else
        ui_message(u, "fill: type 0-%d (SWA KV heads of the layer)", u->mask.n_head_kv);
}

static ui_cmd compare_request(ui_state *u, ui_request req) {
    if (req == REQ_CLOSE) {
        u->mode = UI_NORMAL;
    } else if (req == REQ_CMP_UP && u->cmp_cur > 0) {
        u->cmp_cur--;
    } else if (req == REQ_CMP_DOWN && u->cmp_cur + 1 < u->cmp_n) {
        u->cmp_cur++;
    } else if ((req == REQ_CMP_SHOW_DIFF || req == REQ_CMP_LOAD) && u->cmp_cur < u->cmp_n) {
        u->cmp_want = req == REQ_CMP_SHOW_DIFF ? UI_CMP_DIFF : UI_CMP_LOAD;
        return (ui_cmd){.kind = UI_CMD_COMPARE_MASK, .row = u->cmp_cur};
    }
    return no_cmd;
}

/* Behind the "too small" screen nothing is visible, so only what that screen offers acts: quitting
 * (with its confirmation, which draw_too_small then shows) and the repaint. u->rows is 0 before
 * the first frame (and in tests without a terminal): everything acts. */
static int too_small_allows(const ui_state *u, ui_request req) {
    return u->rows <= 0 || u->lay.fits || req == REQ_QUIT || req == REQ_REDRAW || u->mode == UI_CONFIRM_QUIT;
}

ui_cmd ui_apply(ui_state *u, ui_request req, int ch) {
    if (!too_small_allows(u, req)) return no_cmd;
    switch (u->mode) {
    case UI_HELP:
        u->mode = UI_NORMAL;
        return no_cmd;
    case UI_START:
        return ui_form_apply(u, req, ch);
    case UI_PROMPT:
        return prompt_request(u, req, ch);
    case UI_EXPORT:
        export_request(u, req);
        return no_cmd;
    case UI_FILL:
        fill_request(u, req, ch);
        return no_cmd;
    case UI_CONFIRM_QUIT:
        if (req == REQ_CONFIRM_YES)
            u->quit = 1;
        else
            u->mode = req == REQ_EXPORT_MENU ? UI_EXPORT : UI_NORMAL;
        return no_cmd;
    case UI_ASK:
        u->mode = UI_NORMAL;
        return req == REQ_ASK ? normal_request(u, req, ch) : no_cmd;
    case UI_COMPARE:
        return compare_request(u, req);
    case UI_ATTN:
        return ui_attn_apply(u, req);
    default:
        return normal_request(u, req, ch);
    }
}

void ui_cmd_done(ui_state *u, const ui_cmd *c, int rc) {
    if (rc != 0 || c->kind <= UI_CMD_NONE || c->kind >= UI_CMD_N_JOBS)
        return; /* refused: the worker logged why */
    on_queued[c->kind](u, c);
}
