/* ui_snapshot.c — what the worker tells the UI state: the note once a job is queued (the
 * `on_queued` column of requests.h's UI_JOBS), and how a new snapshot updates the state (the model
 * known, the working mask following the search, a file job's result, an answer, an opened
 * workspace). Pure, as ui_request.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "probes.h"
#include "ui_internal.h"

/* ------------------------------------------------------------------ queued jobs */

void ui_queued_none(ui_state *u, const ui_cmd *c) {
    (void)u, (void)c;
}

void ui_queued_start(ui_state *u, const ui_cmd *c) {
    ui_follow_again(u);
    u->saved_evals = -1;
    ui_message(u, "starting %s: ratio %.3f, preset %s, window %ld", c->req.opts.name[SOPT_METHOD],
               c->req.opts.ratio, c->req.opts.name[SOPT_PRESET], c->req.opts.num[SOPT_WINDOW]);
}

void ui_queued_heldout(ui_state *u, const ui_cmd *c) {
    ui_message(u, c->servable ? "evaluating the servable (per-layer) projection on held-out probes..."
                              : "evaluating the mask on held-out probes...");
}

void ui_queued_ask(ui_state *u, const ui_cmd *c) {
    ui_message(u, "asking the model (held-out sample %d)...", c->sample + 1);
}

void ui_queued_io(ui_state *u, const ui_cmd *c) {
    u->io_req_evals = u->snap.n_evals;
    ui_message(u, "%s %s...", c->io == EX_IO_LOAD_MASK ? "reading" : "writing", c->path);
}

void ui_queued_compare_open(ui_state *u, const ui_cmd *c) {
    ui_message(u, "reading %s...", c->path);
}

void ui_queued_workspace(ui_state *u, const ui_cmd *c) {
    u->io_req_evals = u->snap.n_evals;
    ui_message(u, "saving the workspace to %s...", c->path);
}

void ui_queued_attn(ui_state *u, const ui_cmd *c) {
    ui_message(u, "attention of L%d kv%d on the %s split...", c->layer, c->kv_head,
               c->split ? "held-out" : "calibration");
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
    if (r->kind == EX_IO_PIN_MASK) {
        ui_pin_on_file(u, r);
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
        /* the load prompt's default: the last mask file, never a trace or a table */
        if (r->kind == EX_IO_LOAD_MASK || r->kind == EX_IO_EXPORT_MASK)
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
    /* the window the start form offers (its preset's for this model): the grid, the form and the
       search that follows say the same W */
    if (u->form_window <= 0) u->form_window = ui_form_preset_window(u, u->form_preset_i);
    u->mask.window = u->form_window;
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
    ui_pin_on_snapshot(u);
    if (s->ask.seq > u->ask_seen) {
        u->ask_seen = s->ask.seq;
        if (u->mode == UI_NORMAL || u->mode == UI_ASK) u->mode = UI_ASK;
    }
}

void ui_workspace_opened(ui_state *u, const ex_mask *undo, int n_undo) {
    const ex_io *r = &u->snap.io;
    const ex_workspace *ws = &r->ws;
    u->mask = r->mask;
    u->follow = ws->have_ui ? ws->follow : 1;
    /* following a search that is not done: the grid shows the mask it evaluated last, as it does
       live (the folder's mask is its result so far, which the phase's marks do not describe) */
    if (u->follow && u->snap.have_search && !ws->search_done && u->snap.last_mask.n_layer > 0)
        u->mask = u->snap.last_mask;
    u->edited = ws->have_ui ? ws->edited : 0;
    if (ws->have_ui && ws->cur_layer < u->mask.n_layer && ws->cur_head < u->mask.n_head_kv)
        u->cur_layer = ws->cur_layer, u->cur_head = ws->cur_head;
    u->undo_n = u->undo_head = 0;
    for (int i = 0; i < n_undo; i++) {
        ex_mask keep = u->mask;
        u->mask = undo[i];
        ui_push_undo(u);
        u->mask = keep;
    }
    u->saved_evals = u->snap.n_evals; /* just opened: nothing unsaved */
    snprintf(u->ws_dir, sizeof u->ws_dir, "%s", r->path);
}
