/* ui_request.c — what the explorer's requests do to its UI state (ui_request.h): cursor, mask edits
 * with undo, search control, held-out evaluation, ask the model, export / load, the dialogs and
 * the comparison view; and how a new snapshot from the worker updates the state. Pure: no curses,
 * no worker calls (those come back as a ui_cmd). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ui_internal.h"
#include "probes.h"
#include "ui_request.h"

static const ui_cmd no_cmd = {.kind = UI_CMD_NONE};

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

static void toggle_layer(ui_state *u) {
    ui_begin_edit(u);
    int any_full = 0;
    for (int h = 0; h < u->mask.n_head_kv; h++) any_full |= *cell(u, u->cur_layer, h) == ATTN_FULL;
    for (int h = 0; h < u->mask.n_head_kv; h++) *cell(u, u->cur_layer, h) = any_full ? ATTN_SWA : ATTN_FULL;
}

/* Make layer l have exactly k SWA KV heads: keep the SWA heads it has, add from the lowest index,
 * remove from the highest. */
static void fill_layer(ui_state *u, int k) {
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

static void undo(ui_state *u) {
    if (u->undo_n == 0) {
        ui_message(u, "nothing to undo");
        return;
    }
    u->undo_n--;
    u->mask = u->undo[(u->undo_head + u->undo_n) % UI_UNDO];
    u->follow = 0;
    u->edited = 1;
    ui_message(u, "undone (%d more)", u->undo_n);
}

void ui_move_cursor(ui_state *u, int dl, int dh) {
    int L = u->mask.n_layer, H = u->mask.n_head_kv;
    u->cur_layer += dl;
    u->cur_head += dh;
    if (u->cur_layer < 0) u->cur_layer = 0;
    if (u->cur_layer >= L) u->cur_layer = L - 1;
    if (u->cur_head < 0) u->cur_head = 0;
    if (u->cur_head >= H) u->cur_head = H - 1;
}

/* The cursor requests (REQ_MOVE_* .. REQ_LAST_LAYER). */
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

/* ------------------------------------------------------------------ files */

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
    snprintf(u->input, sizeof u->input, "%s", p);
    u->input_len = (int)strlen(u->input);
    u->prompt = k;
    u->mode = UI_PROMPT;
    u->prompt_refused = 0;
}

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
    if (u->prompt == PROMPT_WORKSPACE) return (ui_cmd){.kind = UI_CMD_WORKSPACE, .path = u->input};
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

/* ------------------------------------------------------------------ search control */

/* The grid follows the search again; a hand-edited mask goes on the undo ring first. */
static void follow_again(ui_state *u) {
    if (u->edited) ui_push_undo(u);
    u->follow = 1;
    u->edited = 0;
}

static ui_cmd pause_resume(ui_state *u) {
    ex_phase ph = u->snap.phase;
    if (ph == EX_RUNNING && !u->pause_pending) {
        u->pause_pending = 1;
        ui_message(u, "pausing after the evaluation in progress...");
        return (ui_cmd){.kind = UI_CMD_PAUSE};
    }
    if (ph == EX_PAUSED) {
        ui_message(u, u->edited ? "resumed; your edited mask is on the undo stack (u)" : "resumed");
        follow_again(u);
        return (ui_cmd){.kind = UI_CMD_RESUME};
    }
    if (ph == EX_DONE)
        ui_message(u, "the search has finished; s starts a new one");
    else if (ph == EX_PREPARING)
        ui_message(u, "the search is being prepared");
    else if (!u->snap.have_search)
        ui_message(u, "no search yet: press s to start one");
    return no_cmd;
}

static ui_cmd step_one(ui_state *u) {
    ex_phase ph = u->snap.phase;
    if (ph != EX_RUNNING && ph != EX_PAUSED) {
        ui_message(u, ph == EX_DONE ? "the search has finished" : "no search to step: press s");
        return no_cmd;
    }
    follow_again(u);
    ui_message(u, "one evaluation...");
    return (ui_cmd){.kind = UI_CMD_STEP};
}

static void compare_diff_toggle(ui_state *u) {
    if (u->have_cmp) {
        u->have_cmp = 0;
        ui_message(u, "diff against %s off", u->cmp_name);
    } else if (u->cmp_n > 0) {
        u->mode = UI_COMPARE;
    } else {
        ui_message(u, "no comparison loaded: C opens a compare folder");
    }
}

static void next_context(ui_state *u) {
    static const int ctx[] = {1024, 4096, 8192, 32768, 131072};
    int i = 0;
    while (i < 5 && ctx[i] <= u->ctx_tokens) i++;
    u->ctx_tokens = ctx[i % 5];
    ui_message(u, "KV bytes now at a %d-token context", u->ctx_tokens);
}

/* The requests of UI_NORMAL once the model is loaded, other than the cursor's. */
static ui_cmd model_request(ui_state *u, ui_request req) {
    switch (req) {
    case REQ_TOGGLE_HEAD:
        ui_toggle_head(u);
        break;
    case REQ_TOGGLE_LAYER:
        toggle_layer(u);
        break;
    case REQ_FILL:
        u->mode = UI_FILL;
        break;
    case REQ_UNDO:
        undo(u);
        break;
    case REQ_START_FORM:
        ui_form_open(u);
        break;
    case REQ_PAUSE:
        return pause_resume(u);
    case REQ_STEP:
        return step_one(u);
    case REQ_HELDOUT:
    case REQ_HELDOUT_SERVABLE:
        return (ui_cmd){.kind = UI_CMD_HELDOUT, .mask = &u->mask, .servable = req == REQ_HELDOUT_SERVABLE};
    case REQ_ASK:
        return (ui_cmd){.kind = UI_CMD_ASK, .mask = &u->mask, .sample = u->ask_sample++};
    case REQ_EXPORT_MENU:
        u->mode = UI_EXPORT;
        break;
    case REQ_LOAD_MASK:
        ui_file_prompt(u, PROMPT_LOAD_MASK);
        break;
    case REQ_COMPARE_OPEN:
        ui_file_prompt(u, PROMPT_COMPARE_DIR);
        break;
    case REQ_COMPARE_DIFF:
        compare_diff_toggle(u);
        break;
    case REQ_QUERY_VIEW:
        u->query_view = !u->query_view;
        break;
    case REQ_CONTEXT:
        next_context(u);
        break;
    case REQ_REDRAW:
        return (ui_cmd){.kind = UI_CMD_REDRAW};
    case REQ_JUMP:
        ui_line_prompt(u, PROMPT_JUMP);
        break;
    case REQ_ATTN:
        return ui_attn_open(u);
    case REQ_WORKSPACE_SAVE:
        ui_file_prompt(u, PROMPT_WORKSPACE);
        break;
    default:
        ui_cursor_request(u, req);
        break;
    }
    return no_cmd;
}

static ui_cmd normal_request(ui_state *u, ui_request req) {
    if (req == REQ_QUIT) {
        ui_request_quit(u);
        return no_cmd;
    }
    if (req == REQ_HELP) {
        u->mode = UI_HELP;
        u->help_page = 0;
        return no_cmd;
    }
    if (req == REQ_COMMAND) { /* :q and :help work while the model loads */
        ui_line_prompt(u, PROMPT_COMMAND);
        return no_cmd;
    }
    if (!u->have_model) {
        ui_message(u, "the model is still loading (q quits)");
        return no_cmd;
    }
    return model_request(u, req);
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
        fill_layer(u, ch - '0');
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

ui_cmd ui_apply(ui_state *u, ui_request req, int ch) {
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
        return req == REQ_ASK ? normal_request(u, req) : no_cmd;
    case UI_COMPARE:
        return compare_request(u, req);
    case UI_ATTN:
        return ui_attn_apply(u, req);
    default:
        return normal_request(u, req);
    }
}

void ui_cmd_done(ui_state *u, const ui_cmd *c, int rc) {
    if (rc != 0) return; /* refused: the worker logged why */
    switch (c->kind) {
    case UI_CMD_START_SEARCH:
        follow_again(u);
        u->saved_evals = -1;
        ui_message(u, "starting %s: ratio %.3f, preset %s, window %ld", c->req.opts.name[SOPT_METHOD],
                   c->req.opts.ratio, c->req.opts.name[SOPT_PRESET], c->req.opts.num[SOPT_WINDOW]);
        break;
    case UI_CMD_HELDOUT:
        ui_message(u, c->servable ? "evaluating the servable (per-layer) projection on held-out probes..."
                                  : "evaluating the mask on held-out probes...");
        break;
    case UI_CMD_ASK:
        ui_message(u, "asking the model (sample %d)...", c->sample);
        break;
    case UI_CMD_IO:
        u->io_req_evals = u->snap.n_evals;
        ui_message(u, "%s %s...", c->io == EX_IO_LOAD_MASK ? "reading" : "writing", c->path);
        break;
    case UI_CMD_COMPARE_OPEN:
        ui_message(u, "reading %s...", c->path);
        break;
    case UI_CMD_WORKSPACE:
        u->io_req_evals = u->snap.n_evals;
        ui_message(u, "saving the workspace to %s...", c->path);
        break;
    case UI_CMD_ATTN:
        ui_message(u, "attention of L%d kv%d on the %s split...", c->layer, c->kv_head,
                   c->split ? "held-out" : "calibration");
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ snapshot */

/* A comparison read's result: the rows (already in u->cmp_rows) open the view; a method's mask
 * becomes the diff or the working mask, as asked for. */
static void on_compare_result(ui_state *u, const ex_io *r) {
    if (!r->ok) {
        ui_message(u, "%s", r->msg);
        return;
    }
    if (r->kind == EX_IO_COMPARE_OPEN) {
        u->cmp_n = r->n_rows;
        u->cmp_cur = 0;
        u->cmp_ratio = r->ratio;
        snprintf(u->cmp_dir, sizeof u->cmp_dir, "%s", r->path);
        if (u->mode == UI_NORMAL) u->mode = UI_COMPARE;
        return;
    }
    const char *method = r->row >= 0 && r->row < u->cmp_n ? u->cmp_rows[r->row].method : "?";
    if (u->mode == UI_COMPARE) u->mode = UI_NORMAL;
    if (u->cmp_want == UI_CMP_LOAD) {
        ui_begin_edit(u);
        u->mask = r->mask;
        ui_message(u, "working mask = %s at rho %.3f (u undoes)", method, u->cmp_ratio);
    } else {
        u->cmp_mask = r->mask;
        u->have_cmp = 1;
        snprintf(u->cmp_name, sizeof u->cmp_name, "%s", method);
        ui_message(u, "diff against %s at rho %.3f: %d heads differ (D turns it off)", u->cmp_name,
                   u->cmp_ratio, ui_compare_n_diff(u));
    }
}

/* A file job's result (snapshot io): show it; a load becomes the working mask; a refused path
 * opens the prompt again with it, so the user can correct it. */
static void on_io_result(ui_state *u) {
    const ex_io *r = &u->snap.io;
    if (r->kind == EX_IO_COMPARE_OPEN || r->kind == EX_IO_COMPARE_MASK) {
        on_compare_result(u, r);
        return;
    }
    ui_message(u, "%s", r->msg);
    if (r->kind == EX_IO_WORKSPACE_SAVE || r->kind == EX_IO_WORKSPACE_OPEN) {
        if (r->ok) snprintf(u->ws_dir, sizeof u->ws_dir, "%s", r->path);
        if (r->ok && r->kind == EX_IO_WORKSPACE_SAVE) u->saved_evals = u->io_req_evals;
        if (!r->ok && r->path_refused && u->mode == UI_NORMAL) {
            u->prompt = PROMPT_WORKSPACE;
            snprintf(u->input, sizeof u->input, "%s", r->path);
            u->input_len = (int)strlen(u->input);
            u->mode = UI_PROMPT;
            u->prompt_refused = 1;
        }
        return; /* an opened workspace's state: ui_workspace_opened */
    }
    if (r->ok) {
        snprintf(u->last_path, sizeof u->last_path, "%s", r->path);
        if (r->kind == EX_IO_LOAD_MASK) {
            ui_begin_edit(u);
            u->mask = r->mask;
        } else if (u->snap.have_search) {
            u->saved_evals = r->kind == EX_IO_EXPORT_TRACE ? r->n_evals : u->io_req_evals;
        }
        return;
    }
    if (r->path_refused && u->mode == UI_NORMAL) {
        static const prompt_kind back[] = {
            [EX_IO_EXPORT_MASK] = PROMPT_EXPORT_MASK,     [EX_IO_EXPORT_TRACE] = PROMPT_EXPORT_TRACE,
            [EX_IO_EXPORT_LAYERS] = PROMPT_EXPORT_LAYERS, [EX_IO_LOAD_MASK] = PROMPT_LOAD_MASK,
            [EX_IO_EXPORT_DUO] = PROMPT_EXPORT_DUO,       [EX_IO_EXPORT_HF] = PROMPT_EXPORT_HF,
            [EX_IO_EXPORT_TRTLLM] = PROMPT_EXPORT_TRTLLM, [EX_IO_EXPORT_SCORES] = PROMPT_EXPORT_SCORES};
        u->prompt = back[r->kind];
        snprintf(u->input, sizeof u->input, "%s", r->path);
        u->input_len = (int)strlen(u->input);
        u->mode = UI_PROMPT;
        u->prompt_refused = 1;
    }
}

/* The model is known: an all-full working mask of its shape, the cursor on the last layer. */
static void on_model(ui_state *u) {
    const ex_snapshot *s = &u->snap;
    u->have_model = 1;
    memset(&u->mask, 0, sizeof u->mask);
    u->mask.n_layer = s->hp.n_layer;
    u->mask.n_head_kv = s->hp.n_head_kv;
    u->mask.window = PROBE_DEFAULT_WINDOW;
    u->mask.sinks = PROBE_DEFAULT_SINKS;
    memset(u->mask.z, ATTN_FULL, (size_t)s->hp.n_layer * s->hp.n_head_kv);
    if (u->ctx_tokens <= 0) u->ctx_tokens = s->hp.n_ctx_train > 0 ? s->hp.n_ctx_train : 8192;
    u->cur_layer = s->hp.n_layer - 1; /* stage 1 starts at the last layer */
}

void ui_apply_snapshot(ui_state *u) {
    const ex_snapshot *s = &u->snap;
    if (!u->have_model && s->phase != EX_LOADING && s->phase != EX_FAILED && s->hp.n_layer > 0) on_model(u);
    if (u->pause_pending && s->phase != EX_RUNNING) u->pause_pending = 0;
    if (u->follow && s->have_search) {
        if (s->phase == EX_DONE && s->result_mask.n_layer > 0)
            u->mask = s->result_mask;
        else if (s->last_mask.n_layer > 0)
            u->mask = s->last_mask;
    }
    if (s->io.seq > u->io_seen) {
        u->io_seen = s->io.seq;
        on_io_result(u);
    }
    if (s->ask.seq > u->ask_seen) {
        u->ask_seen = s->ask.seq;
        if (u->mode == UI_NORMAL || u->mode == UI_ASK) u->mode = UI_ASK;
    }
}
