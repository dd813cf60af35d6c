/* keymap.h — the explorer's keys as one table (like tig's `enum request` and keymap): each entry
 * binds one key, in the modes it works in, to a request, with its label and help text. The help
 * overlay and the footer are generated from the table; ui_request.h applies a request to the UI
 * state. No curses calls here (the key codes are curses' KEY_* constants). */
#ifndef BOSCH_KEYMAP_H
#define BOSCH_KEYMAP_H

#include <stddef.h>

#include "ui_state.h"

typedef enum {
    REQ_NONE = 0, /* the key does nothing here */
    /* UI_NORMAL */
    REQ_HELP,
    REQ_QUIT,
    REQ_START_FORM,
    REQ_PAUSE,
    REQ_STEP,
    REQ_TOGGLE_HEAD,
    REQ_TOGGLE_LAYER,
    REQ_FILL,
    REQ_HELDOUT,
    REQ_HELDOUT_SERVABLE,
    REQ_ASK,
    REQ_EXPORT_MENU,
    REQ_LOAD_MASK,
    REQ_UNDO,
    REQ_QUERY_VIEW,
    REQ_CONTEXT,
    REQ_COMPARE_OPEN,
    REQ_COMPARE_DIFF,
    REQ_MOVE_UP,
    REQ_MOVE_DOWN,
    REQ_MOVE_LEFT,
    REQ_MOVE_RIGHT,
    REQ_PAGE_UP,
    REQ_PAGE_DOWN,
    REQ_FIRST_LAYER,
    REQ_LAST_LAYER,
    REQ_REDRAW,
    REQ_JUMP,           /* '/': the layer prompt */
    REQ_COMMAND,        /* ':': the command line (cmdline.h) */
    REQ_MOUSE,          /* KEY_MOUSE: a click or the wheel (ui_apply_mouse) */
    REQ_ATTN,           /* the attention view of the head under the cursor */
    REQ_WORKSPACE_SAVE, /* save the workspace: the folder prompt */
    /* dialogs */
    REQ_CLOSE,         /* Esc, or any other key where a dialog closes on it */
    REQ_EXPORT_MASK,   /* UI_EXPORT */
    REQ_EXPORT_TRACE,  /* UI_EXPORT */
    REQ_EXPORT_LAYERS, /* UI_EXPORT */
    REQ_EXPORT_DUO,    /* UI_EXPORT: DuoAttention folder */
    REQ_EXPORT_HF,     /* UI_EXPORT: Hugging Face config.json patch */
    REQ_EXPORT_TRTLLM,
    REQ_EXPORT_SCORES,  /* UI_EXPORT: TensorRT-LLM kv_cache_config */
    REQ_FILL_COUNT,     /* UI_FILL: the key's digit = SWA KV heads of the layer */
    REQ_CONFIRM_YES,    /* UI_CONFIRM_QUIT */
    REQ_FORM_PREV,      /* UI_START: previous field */
    REQ_FORM_NEXT,      /* UI_START: next field */
    REQ_FORM_INC,       /* UI_START: next value */
    REQ_FORM_DEC,       /* UI_START: previous value */
    REQ_FORM_DIGIT,     /* UI_START: type a digit of the window */
    REQ_FORM_BACKSPACE, /* UI_START: drop the window's last digit */
    REQ_FORM_ACCEPT,    /* UI_START: start the search */
    REQ_PROMPT_ACCEPT,  /* UI_PROMPT */
    REQ_PROMPT_BACKSPACE,
    REQ_PROMPT_CLEAR,
    REQ_PROMPT_CHAR, /* UI_PROMPT: type the key (printable keys not in the table) */
    REQ_CMP_UP,      /* UI_COMPARE: select */
    REQ_CMP_DOWN,
    REQ_CMP_SHOW_DIFF, /* UI_COMPARE: the selected method's mask as a diff in the grid */
    REQ_CMP_LOAD,      /* UI_COMPARE: the selected method's mask as the working mask */
    REQ_ATTN_SPLIT,    /* UI_ATTN: calibration <-> held-out */
    REQ_ATTN_NEXT,     /* UI_ATTN: the next sample */
    REQ_ATTN_PREV,     /* UI_ATTN: the previous sample */
    REQ_N
} ui_request;

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
