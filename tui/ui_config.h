/* ui_config.h — the explorer's config file (docs/explorer.md, "Config file"): colours, the palette,
 * the mouse and key bindings, parsed as a pure function of its text (tests/test_ui_config.c). The
 * app finds and reads the file ($XDG_CONFIG_HOME/bosch/explorer.conf, else
 * ~/.config/bosch/explorer.conf) and hands its text to the explorer (explorer_opts); no library
 * reads the environment.
 *
 * Format: one `name = value` per line; `#` starts a comment; blank lines are ignored.
 *   palette = blue-red | blue-orange     full vs SWA heads (blue-orange: safe for colour-blind eyes)
 *   mouse = on | off                     clicks and the wheel (default on)
 *   color.PART = FG[,BG]                 PART: full swa probe title good bad dim accent; a colour
 *                                        is a name (default black red green yellow blue magenta
 *                                        cyan white) or a number 0-255 (`colour.` works too)
 *   bind.KEY = REQUEST                   KEY: a character, space, Tab, Enter, Esc, Backspace, Up,
 *                                        Down, Left, Right, PgUp, PgDn, Home, End, F1-F12 or C-x;
 *                                        REQUEST: a name of keymap_request_parse, or none (unbind)
 */
#ifndef BOSCH_UI_CONFIG_H
#define BOSCH_UI_CONFIG_H

#include <stddef.h>

#define UI_MAX_BINDS 48
#define UI_N_PARTS 8 /* colour pairs: full swa probe title good bad dim accent (explorer_ui.h order) */

typedef enum { UI_PALETTE_BLUE_RED = 0, UI_PALETTE_BLUE_ORANGE } ui_palette;

typedef struct {
    int key; /* curses key code */
    int req; /* ui_request (keymap.h); REQ_NONE unbinds the key */
} ui_bind;

typedef struct {
    int set;    /* 1: the file gave this part's colours */
    int fg, bg; /* -1: the terminal's default; else 0-255 */
} ui_colour;

typedef struct {
    ui_palette palette;
    int mouse; /* 1: clicks and wheel (default) */
    ui_colour colour[UI_N_PARTS];
    ui_bind binds[UI_MAX_BINDS];
    int n_binds;
} ui_config;

/* The defaults: blue-red, mouse on, no colour or key changes. */
void ui_config_default(ui_config *c);

/* Parse the text of a config file into *c (starting from the defaults); path only names it in
 * messages. 0, or -1 with the first bad line, e.g.
 * "explorer.conf: line 3: palette: bad value 'green' (blue-red or blue-orange)". */
int ui_config_parse(ui_config *c, const char *path, const char *text, char *err, size_t errlen);

#endif
