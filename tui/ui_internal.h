/* ui_internal.h — helpers shared by the files that apply requests to the UI state (ui_request.c,
 * ui_line.c); not for the draw code. Pure: no curses, no worker calls. */
#ifndef BOSCH_UI_INTERNAL_H
#define BOSCH_UI_INTERNAL_H

#include "ui_request.h"

/* Toggle the KV head under the cursor (an edit: undoable). */
void ui_toggle_head(ui_state *u);
/* Move the cursor by dl layers and dh KV heads, clamped to the model's shape. */
void ui_move_cursor(ui_state *u, int dl, int dh);
/* Open the file-name prompt of kind k with its default path. */
void ui_file_prompt(ui_state *u, prompt_kind k);
/* Open a footer-row prompt (PROMPT_COMMAND or PROMPT_JUMP) with an empty line. */
void ui_line_prompt(ui_state *u, prompt_kind k);
/* Enter in a footer-row prompt (the mode is already back to UI_NORMAL): run the command or jump. */
ui_cmd ui_line_run(ui_state *u);

#endif
