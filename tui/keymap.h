/* keymap.h — the explorer's keys, from the table of requests.h (UI_KEYS): each entry binds one key,
 * in the modes it works in, to a request, with its label and help text. The help overlay, the
 * footers and the config file's request names are generated from that table; ui_request.h applies
 * a request to the UI state. No curses calls here (the key codes are curses' KEY_* constants). */
#ifndef BOSCH_KEYMAP_H
#define BOSCH_KEYMAP_H

#include <stddef.h>

#include "requests.h"
#include "ui_state.h"

/* Bit of a ui_mode in keymap_entry.modes. */
#define KM(mode) (1u << (mode))

typedef struct {
    int key;            /* curses key code (getch) */
    ui_request req;     /* what it asks for */
    unsigned modes;     /* KM() of the modes it works in */
    const char *label;  /* the key as the help shows it ("space", "PgUp") */
    const char *help;   /* UI_NORMAL: help text, starting a help line; NULL: on the line above */
    const char *footer; /* the footer's item for it ("p:pause", "Esc cancel"); NULL: not shown */
} keymap_entry;

/* The table, in footer and help order; *n gets its length. */
const keymap_entry *keymap_table(int *n);

/* The request of key `ch` in `mode`: the table's entry, else the mode's default (REQ_CLOSE in the
 * dialogs that close on any key, REQ_PROMPT_CHAR in the prompt, REQ_FILL_COUNT in the fill dialog,
 * REQ_NONE elsewhere). */
ui_request keymap_lookup(ui_mode mode, int ch);

/* keymap_lookup with the user's bindings (ui_config.h) first in UI_NORMAL: a bound key gives its
 * request (REQ_NONE: unbound), the others the table's. */
ui_request keymap_lookup_binds(const ui_bind *binds, int n_binds, ui_mode mode, int ch);

/* The curses key code of a key name as the config file writes it: one printable character, space,
 * Tab, Enter, Esc, Backspace, Up, Down, Left, Right, PgUp, PgDn, Home, End, F1-F12, C-a .. C-z
 * (also Ctrl-a). -1 when it is none of these. */
int keymap_key_parse(const char *name);
/* The UI_NORMAL request of a name (help quit search pause step toggle toggle_layer fill eval ask
 * export load undo view context compare diff up down left right page_up page_down first last
 * redraw jump command, or none = REQ_NONE); -1 when unknown. */
int keymap_request_parse(const char *name);
/* The key's name as keymap_key_parse reads it ("space", "F5", "C-x", "j") into buf. */
void keymap_key_label(int key, char *buf, size_t cap);
/* The name of a UI_NORMAL request (keymap_request_parse's), or "?". */
const char *keymap_request_name(ui_request req);

/* Number of lines of the keys part of the help (UI_NORMAL's keys, grouped as the table says). */
int keymap_help_lines(void);
/* Help line i in [0, keymap_help_lines()): "  LABELS  TEXT" into buf (cap bytes). */
void keymap_help_line(int i, char *buf, size_t cap);

/* The footer of `mode`: its entries' footer items, in table order (modes without any use
 * UI_NORMAL's): " ?:help q:quit ..." into buf (cap bytes). */
void keymap_footer(ui_mode mode, char *buf, size_t cap);

#endif
