/* ui_request.h — applying a request (requests.h, keymap.h) to the explorer's UI state: a pure
 * function of the state (no curses, no worker calls). What the worker is to do comes back as a
 * ui_cmd (ui_cmd.h); the caller (explorer_keys.c) hands it to worker_submit and reports whether it
 * was queued with ui_cmd_done. Unit tests: tests/test_ui_request.c. */
#ifndef BOSCH_UI_REQUEST_H
#define BOSCH_UI_REQUEST_H

#include "keymap.h"
#include "ui_cmd.h"
#include "ui_state.h"

/* Apply request `req` of key `ch` (the key matters for REQ_FILL_COUNT, REQ_FORM_DIGIT and
 * REQ_PROMPT_CHAR) in the current mode; returns the worker command it needs (UI_CMD_NONE: none). */
ui_cmd ui_apply(ui_state *u, ui_request req, int ch);
/* A mouse event at screen cell (y, x) (ncurses' getmouse, turned into one of these by the caller). */
typedef enum { UI_MOUSE_CLICK, UI_MOUSE_WHEEL_UP, UI_MOUSE_WHEEL_DOWN } ui_mouse;
#define UI_WHEEL_LAYERS 3 /* layers one wheel step scrolls */
/* Apply a mouse event in UI_NORMAL, using the layout and scroll position last drawn (u->lay,
 * u->top; layout_hit): a click on a KV head's cell moves the cursor there, a click on the cursor's
 * own cell toggles it (as space), a click on a layer's label or statistics moves to that layer;
 * the wheel scrolls the grid by UI_WHEEL_LAYERS layers, the cursor with it. A click closes the
 * help and the ask result; other dialogs ignore the mouse. Pure, as ui_apply. */
ui_cmd ui_apply_mouse(ui_state *u, ui_mouse ev, int y, int x);
/* After the caller sent c to the worker: rc 0 when it was queued, -1 when refused (queue full;
 * the worker logs why). Updates what depends on it (following the search, messages). */
void ui_cmd_done(ui_state *u, const ui_cmd *c, int rc);
/* After u->snap was replaced by the worker's latest snapshot: the working mask follows the search,
 * a file job's result is shown (a comparison's rows must be in u->cmp_rows already), an answer
 * opens its dialog. */
void ui_apply_snapshot(ui_state *u);

/* ui_edit.c: helpers of the request files, also used by the draw code. */
/* Quit, or ask first when a search is unsaved. */
void ui_request_quit(ui_state *u);
/* Before a hand edit of the working mask: push it on the undo ring, stop following the search. */
void ui_begin_edit(ui_state *u);
/* Push the working mask on the undo ring. */
void ui_push_undo(ui_state *u);
/* The status message above the footer (printf format), stamped with base_now_s(). */
void ui_message(ui_state *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when the search has evaluations that were not exported since. */
int ui_search_unsaved(const ui_state *u);
/* Heads where the working mask and the diffed method's mask differ (0 without a diff). */
int ui_compare_n_diff(const ui_state *u);

/* The start form (ui_form.c): ratio, preset, window and granularity (heads or whole layers) of a new
 * search. */
extern const double ui_ratios[];
extern const int ui_n_ratios;
/* The preset the form starts with: the demo preset, whose stage-1 drops stand above their noise on
 * the default model (docs/search.md "The demo preset"). */
#define UI_FORM_PRESET "demo"
/* The form's defaults on a new state: ratio 0.5, preset UI_FORM_PRESET. */
void ui_form_init(ui_state *u);
/* The form's preset (search_preset_name(u->form_preset_i)). */
const char *ui_form_preset(const ui_state *u);
/* Open the form (UI_START) on its first field. */
void ui_form_open(ui_state *u);
/* A request of the form: field / value changes; REQ_FORM_ACCEPT returns UI_CMD_START_SEARCH. */
ui_cmd ui_form_apply(ui_state *u, ui_request req, int ch);
/* The method of the form (search_variant_name(u->form_method_i)). */
const char *ui_form_method(const ui_state *u);
/* 1 when the form's method can start from the working mask (BOSCH and its variants; a baseline's
 * mask comes from its pattern or ranking alone: the form greys the field). */
int ui_form_start_usable(const ui_state *u);
/* The window preset i gives the model (the probes' default when it cannot be applied), tokens. */
int ui_form_preset_window(const ui_state *u, int preset_i);
/* The plan the form's search would publish (search_plan_make on the configuration `bosch search`
 * makes of the form's fields, into *cfg): its phases, evaluations and target number of SWA KV
 * heads. 0, or -1 when a field is refused. */
int ui_form_plan(const ui_state *u, search_plan *p, search_config *cfg);
/* Seconds the plan would take: its evaluations x the seconds per evaluation measured on the last
 * search (progress.h), scaled by calibration samples x tokens from that search's to cfg's. NAN
 * when nothing was measured yet. */
double ui_form_seconds(const ui_state *u, const search_plan *p, const search_config *cfg);

/* The attention view (ui_attn.c): open it on the head under the cursor (UI_ATTN, UI_CMD_ATTN);
 * its requests (split, sample, cursor: each recomputes, UI_CMD_ATTN; close). */
ui_cmd ui_attn_open(ui_state *u);
ui_cmd ui_attn_apply(ui_state *u, ui_request req);
/* The cursor moves (REQ_MOVE_*, REQ_PAGE_*, REQ_FIRST_LAYER, REQ_LAST_LAYER; ui_edit.c). */
void ui_cursor_request(ui_state *u, ui_request req);
/* The side-by-side panel's work (ui_pin.c): when it is open, something is pinned and the working
 * mask is not following a running search (which would ask for two evaluations per step), the job
 * that compares the working mask with the pinned one, once per (working, pinned) pair; else
 * UI_CMD_NONE. The input glue sends it after every key and snapshot. */
ui_cmd ui_pin_refresh(ui_state *u);
/* The key of a (working, pinned) pair: both masks' bits, windows and sinks (FNV-1a). */
uint64_t ui_pin_key(const ex_mask *working, const ex_mask *pinned);
/* The ratio `:pin METHOD` cuts at without R: the search's target ratio during a search, else the
 * working mask's, else (an all-full working mask) the next search's (:ratio, the form). */
double ui_pin_default_ratio(const ui_state *u);
/* A workspace was opened (snapshot io EX_IO_WORKSPACE_OPEN, ok; ui_snapshot.c): its mask, cursor,
 * follow/edited; undo[n_undo] (oldest first, copied from the worker by the caller) becomes the undo ring. */
void ui_workspace_opened(ui_state *u, const ex_mask *undo, int n_undo);

#endif
