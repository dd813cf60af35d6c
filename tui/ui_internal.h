/* ui_internal.h — what the files that apply requests to the UI state share (not for the draw code):
 * the helpers of ui_edit.c, and the prototypes of the functions the table of requests.h names (UI
 * actions and the notes of queued jobs), generated from the table so that a new row needs no
 * header edit. Pure: no curses, no worker calls. The hub ui_request.c calls the others; they call
 * only ui_edit.c (and one another's entry points below), never back into the hub. */
#ifndef BOSCH_UI_INTERNAL_H
#define BOSCH_UI_INTERNAL_H

#include "cmdline.h"
#include "ui_request.h"

/* ---- ui_edit.c ---- */
/* Toggle the KV head under the cursor (an edit: undoable). */
void ui_toggle_head(ui_state *u);
/* Make the cursor's layer have exactly k SWA KV heads (an edit): keep the SWA heads it has, add
 * from the lowest index, remove from the highest; says so in the message. */
void ui_fill_layer(ui_state *u, int k);
/* The grid follows the search again; a hand-edited mask goes on the undo ring first. */
void ui_follow_again(ui_state *u);
/* Move the cursor by dl layers and dh KV heads, clamped to the model's shape. */
void ui_move_cursor(ui_state *u, int dl, int dh);
/* Open the file-name prompt of kind k with its default path. */
void ui_file_prompt(ui_state *u, prompt_kind k);
/* Open a footer-row prompt (PROMPT_COMMAND or PROMPT_JUMP) with an empty line. */
void ui_line_prompt(ui_state *u, prompt_kind k);

/* ---- ui_line.c ---- */
/* Enter in a footer-row prompt (the mode is already back to UI_NORMAL): run the command or jump. */
ui_cmd ui_line_run(ui_state *u);

/* ---- ui_pin.c ---- */
/* `:pin` (cmdline.h CMDLINE_PIN): pin the mask it names and open the side-by-side panel; a
 * baseline's mask or a file comes back from the worker (the job returned). */
ui_cmd ui_pin_command(ui_state *u, const cmdline_cmd *c);
/* A new snapshot: a baseline's mask the worker made becomes the pinned one. */
void ui_pin_on_snapshot(ui_state *u);
/* A pinned file read (EX_IO_PIN_MASK): it becomes the pinned mask, or the message says why not. */
void ui_pin_on_file(ui_state *u, const ex_io *r);

/* ---- the table's functions (requests.h): UI actions (ui_actions.c), notes of queued jobs
 * (ui_snapshot.c) ---- */
#define UI_ACTION_PROTO(id, name, flags, action, job) ui_cmd action(ui_state *u, ui_request req, int ch);
UI_REQUESTS(UI_ACTION_PROTO)
#undef UI_ACTION_PROTO
#define UI_QUEUED_PROTO(id, job, on_queued) void on_queued(ui_state *u, const ui_cmd *c);
UI_JOBS(UI_QUEUED_PROTO)
#undef UI_QUEUED_PROTO

#endif
