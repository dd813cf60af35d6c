/* ui_actions.c — what each request does in UI_NORMAL (the `action` column of requests.h's
 * UI_REQUESTS): mask edits with undo, search control, held-out evaluation, ask the model, the
 * dialogs and prompts they open, the views. Pure functions of the UI state (ui_request.h): the
 * worker job a request needs comes back as a ui_cmd. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "heat.h"
#include "ui_internal.h"

static const ui_cmd no_cmd = {.kind = UI_CMD_NONE};

ui_cmd ui_act_none(ui_state *u, ui_request req, int ch) {
    (void)u, (void)req, (void)ch;
    return no_cmd;
}

/* The job of request req's row, with the working mask and the cursor's head: what a new
 * worker-backed key needs (requests.h). */
ui_cmd ui_act_job(ui_state *u, ui_request req, int ch) {
    (void)ch;
    static const ui_cmd_kind jobs[REQ_N] = {
#define JOB_ROW(id, name, flags, action, job) [REQ_##id] = UI_CMD_##job,
        UI_REQUESTS(JOB_ROW)
#undef JOB_ROW
    };
    return (ui_cmd){.kind = jobs[req], .mask = &u->mask, .layer = u->cur_layer, .kv_head = u->cur_head};
}

ui_cmd ui_act_help(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    u->mode = UI_HELP;
    u->help_page = req == REQ_PLAN ? 2 : 0; /* 2: the search's plan (draw_dialogs.c) */
    return no_cmd;
}

ui_cmd ui_act_quit(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ui_request_quit(u);
    return no_cmd;
}

ui_cmd ui_act_command(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ui_line_prompt(u, PROMPT_COMMAND);
    return no_cmd;
}

ui_cmd ui_act_jump(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ui_line_prompt(u, PROMPT_JUMP);
    return no_cmd;
}

/* ------------------------------------------------------------------ edits */

ui_cmd ui_act_toggle_head(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ui_toggle_head(u);
    return no_cmd;
}

ui_cmd ui_act_toggle_layer(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    const int H = u->mask.n_head_kv;
    uint8_t *z = &u->mask.z[u->cur_layer * H];
    ui_begin_edit(u);
    int any_full = 0;
    for (int h = 0; h < H; h++) any_full |= z[h] == ATTN_FULL;
    for (int h = 0; h < H; h++) z[h] = any_full ? ATTN_SWA : ATTN_FULL;
    return no_cmd;
}

ui_cmd ui_act_fill(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    u->mode = UI_FILL;
    return no_cmd;
}

ui_cmd ui_act_undo(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    if (u->undo_n == 0) {
        ui_message(u, "nothing to undo");
        return no_cmd;
    }
    if (u->redo_n == UI_REDO) { /* full: the oldest undone mask goes */
        memmove(u->redo, u->redo + 1, sizeof u->redo[0] * (UI_REDO - 1));
        u->redo_n--;
    }
    u->redo[u->redo_n++] = u->mask;
    u->undo_n--;
    u->mask = u->undo[(u->undo_head + u->undo_n) % UI_UNDO];
    u->follow = 0;
    u->edited = 1;
    ui_message(u, "undone (%d more; Ctrl-R redoes)", u->undo_n);
    return no_cmd;
}

ui_cmd ui_act_redo(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    if (u->redo_n == 0) {
        ui_message(u, "nothing to redo");
        return no_cmd;
    }
    ui_push_undo(u);
    u->mask = u->redo[--u->redo_n];
    u->follow = 0;
    u->edited = 1;
    ui_message(u, "redone (%d more)", u->redo_n);
    return no_cmd;
}

ui_cmd ui_act_cursor(ui_state *u, ui_request req, int ch) {
    (void)ch;
    ui_cursor_request(u, req);
    return no_cmd;
}

/* ------------------------------------------------------------------ search control */

ui_cmd ui_act_start_form(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ui_form_open(u);
    return no_cmd;
}

ui_cmd ui_act_pause(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ex_phase ph = u->snap.phase;
    if (ph == EX_RUNNING && !u->pause_pending) {
        u->pause_pending = 1;
        ui_message(u, "pausing after the evaluation in progress...");
        return (ui_cmd){.kind = UI_CMD_PAUSE};
    }
    if (ph == EX_PAUSED) {
        ui_message(u, u->edited ? "resumed; your edited mask is on the undo stack (u)" : "resumed");
        ui_follow_again(u);
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

ui_cmd ui_act_step(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    ex_phase ph = u->snap.phase;
    if (ph != EX_RUNNING && ph != EX_PAUSED) {
        ui_message(u, ph == EX_DONE ? "the search has finished" : "no search to step: press s");
        return no_cmd;
    }
    ui_follow_again(u);
    ui_message(u, "one evaluation...");
    return (ui_cmd){.kind = UI_CMD_STEP};
}

/* ------------------------------------------------------------------ the worker's jobs */

ui_cmd ui_act_heldout(ui_state *u, ui_request req, int ch) {
    (void)ch;
    return (ui_cmd){.kind = UI_CMD_HELDOUT, .mask = &u->mask, .servable = req == REQ_HELDOUT_SERVABLE};
}

ui_cmd ui_act_ask(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    return (ui_cmd){.kind = UI_CMD_ASK, .mask = &u->mask, .sample = u->ask_sample++};
}

ui_cmd ui_act_attn(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    return ui_attn_open(u);
}

/* ------------------------------------------------------------------ dialogs, prompts, views */

ui_cmd ui_act_export_menu(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    u->mode = UI_EXPORT;
    return no_cmd;
}

/* The requests that open a file-name prompt: load, compare folder, workspace. */
ui_cmd ui_act_prompt(ui_state *u, ui_request req, int ch) {
    (void)ch;
    ui_file_prompt(u, req == REQ_LOAD_MASK      ? PROMPT_LOAD_MASK
                      : req == REQ_COMPARE_OPEN ? PROMPT_COMPARE_DIR
                                                : PROMPT_WORKSPACE);
    return no_cmd;
}

ui_cmd ui_act_compare_diff(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    if (u->have_cmp || u->pin_making) {
        u->have_cmp = u->pin_making = u->pin_view = 0;
        ui_message(u, "diff against %s off", u->cmp_name);
    } else if (u->cmp_n > 0) {
        u->mode = UI_COMPARE;
    } else {
        ui_message(u, "no comparison loaded: C opens a compare folder");
    }
    return no_cmd;
}

ui_cmd ui_act_query_view(ui_state *u, ui_request req, int ch) {
    (void)ch;
    if (req == REQ_STAT_VIEW) {
        u->stat_numbers = !u->stat_numbers;
    } else
        u->query_view = !u->query_view;
    return no_cmd;
}

/* H: the next heat-map score (heat.h's cycle: off, then every static head ranking of the registry).
 * A score nothing has measured yet is asked of the worker (the attention view's rankings compute
 * it in the background); the search's own scores are used as they are (no second pass). */
ui_cmd ui_act_heat(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    u->heat = heat_next(u->heat, ex_n_heat());
    if (!u->heat) {
        ui_message(u, "heat off");
        return no_cmd;
    }
    const int k = u->heat - 1;
    const char *name = ex_heat_name(k);
    switch (u->snap.heat_src[k]) {
    case EX_HEAT_SEARCH:
        ui_message(u, "heat: %s, the search's scores; glyph = score, colour = full / SWA (H: next)", name);
        return no_cmd;
    case EX_HEAT_RANKINGS:
        ui_message(u, "heat: %s, the attention view's ranking; glyph = score, colour = full / SWA (H: next)",
                   name);
        return no_cmd;
    default:
        ui_message(u, "heat: %s not measured yet: computing it on the worker (H: next)", name);
        return (ui_cmd){.kind = UI_CMD_HEAT, .mask = &u->mask, .layer = u->cur_layer, .kv_head = u->cur_head};
    }
}

/* F: the cursor's head pinned full, then SWA, then free (a constraint of every later search, the
 * start form passes it as --force-full / --force-swa). Pinning puts the head so in the working
 * mask too (an edit: u undoes the mask, not the pin), so the grid and the pin agree. */
ui_cmd ui_act_pin_head(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    const int i = u->cur_layer * u->mask.n_head_kv + u->cur_head;
    const uint8_t next = (uint8_t)((u->pin[i] + 1) % 3);
    u->n_pin += (next != 0) - (u->pin[i] != 0);
    u->pin[i] = next;
    if (next) {
        ui_begin_edit(u);
        u->mask.z[i] = next == 2 ? ATTN_SWA : ATTN_FULL;
    }
    if (next)
        ui_message(u, "L%d kv%d pinned %s: every search keeps it (%d pinned; F again: %s)", u->cur_layer,
                   u->cur_head, next == 2 ? "SWA" : "full", u->n_pin, next == 1 ? "pinned SWA" : "free");
    else
        ui_message(u, "L%d kv%d free again (%d pinned)", u->cur_layer, u->cur_head, u->n_pin);
    return no_cmd;
}

ui_cmd ui_act_context(ui_state *u, ui_request req, int ch) {
    (void)req, (void)ch;
    static const int ctx[] = {1024, 4096, 8192, 32768, 131072};
    int i = 0;
    while (i < 5 && ctx[i] <= u->ctx_tokens) i++;
    u->ctx_tokens = ctx[i % 5];
    ui_message(u, "KV bytes now at a %d-token context", u->ctx_tokens);
    return no_cmd;
}

ui_cmd ui_act_redraw(ui_state *u, ui_request req, int ch) {
    (void)u, (void)req, (void)ch;
    return (ui_cmd){.kind = UI_CMD_REDRAW};
}
