/* explorer_ui.h — the explorer's UI thread: drawing functions and the input glue (UI thread only). */
#ifndef BOSCH_EXPLORER_UI_H
#define BOSCH_EXPLORER_UI_H

#include "keymap.h"
#include "ui_request.h"
#include "ui_state.h"

/* Colour pairs / attributes used by the draw code. */
enum { PAIR_FULL = 1, PAIR_SWA, PAIR_PROBE, PAIR_TITLE, PAIR_GOOD, PAIR_BAD, PAIR_DIM, PAIR_ACCENT };

/* glyphs (UTF-8 or ASCII) */
typedef struct {
    const char *full, *swa;    /* one column each */
    const char *probe, *group; /* row markers */
    const char *diff;          /* a head where the diffed method's mask differs */
    const char *spark[8];      /* sparkline levels, low to high */
    const char *bar_on, *bar_off;
    const char *vline, *hline;
} ui_glyphs;
const ui_glyphs *ui_glyphs_get(int utf8);

/* explorer_keys.c: a key -> its request (keymap.h) -> ui_apply (ui_request.h) -> the worker */
void ui_handle_key(ui_state *u, int ch);
/* Copy the worker's latest snapshot (and a comparison's rows) and apply it (ui_apply_snapshot). */
void ui_on_snapshot(ui_state *u);

/* draw_grid.c */
void draw_grid(ui_state *u);
/* draw_panels.c */
void draw_title(ui_state *u);
void draw_stage(ui_state *u);
void draw_score(ui_state *u);
void draw_mask(ui_state *u);
void draw_teach(ui_state *u);
void draw_log(ui_state *u);
void draw_footer(ui_state *u);
/* explorer_compare.c: the comparison view (UI_COMPARE) */
void draw_compare(ui_state *u);
/* draw_pin.c: pinned vs working side by side, in the rows of the teaching text and the log */
void draw_pin(ui_state *u);
/* draw_attn.c: the attention view (UI_ATTN) */
void draw_attn(ui_state *u);

/* draw_dialogs.c */
void draw_dialogs(ui_state *u);
void draw_too_small(ui_state *u);
/* draw_util.c (helpers shared by the draw files) */
void draw_text(int y, int x, int w, int attr, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void draw_panel_title(const lay_rect *r, ui_state *u, const char *title);
int draw_wrap(int y, int x, int w, int max_lines, int attr, const char *text);
/* Lines draw_wrap needs for all of text at width w (draws nothing). */
int draw_wrap_lines(int w, const char *text);
/* text at (y, x) in at most w columns; when it is longer, cut after its last whole word that fits
 * with `ell` ("…" or "...") after it: never mid-word. */
void draw_text_words(int y, int x, int w, int attr, const char *ell, const char *text);
/* Screen columns of UTF-8 text (one per code point, as draw_wrap counts them). */
int draw_cols(const char *s);
int ui_attr(const ui_state *u, int pair, int mono_attr);
void draw_box(const lay_rect *r, ui_state *u, const char *title);
/* Format bytes as "12.3 MiB". */
void fmt_bytes(double bytes, char *buf, size_t cap);

#endif
