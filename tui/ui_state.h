/* ui_state.h — the explorer's UI-thread state: the working mask with its undo ring, the cursor, the
 * mode (dialogs), the start form, the file-name prompt and the comparison view. No curses here:
 * ui_request.c changes it as a pure function of a request (tests/test_ui_request.c). */
#ifndef BOSCH_UI_STATE_H
#define BOSCH_UI_STATE_H

#include "compare.h"
#include "ex_state.h"
#include "layout.h"
#include "ui_config.h"
#include "worker.h"

#define UI_UNDO 64
#define UI_REDO 16

enum { UI_CMP_DIFF = 1, UI_CMP_LOAD = 2 };

typedef enum {
    UI_NORMAL = 0,
    UI_HELP,         /* help overlay: keys and colours */
    UI_START,        /* start-a-search form: ratio, preset, window, granularity */
    UI_EXPORT,       /* export menu: m mask, t trace, l layers */
    UI_PROMPT,       /* file-name prompt (export / load) */
    UI_FILL,         /* fill the cursor's layer: digit = SWA KV heads */
    UI_CONFIRM_QUIT, /* unsaved search: y / n */
    UI_ASK,          /* ask-the-model result */
    UI_COMPARE,      /* comparison view: each method's held-out accuracy at the ratio, load / diff */
    UI_ATTN,         /* attention view of the head under the cursor (draw_attn.c, ui_attn.c) */
} ui_mode;

typedef enum {
    PROMPT_EXPORT_MASK,
    PROMPT_EXPORT_TRACE,
    PROMPT_EXPORT_LAYERS,
    PROMPT_LOAD_MASK,
    PROMPT_COMPARE_DIR,
    PROMPT_EXPORT_DUO,
    PROMPT_EXPORT_HF,
    PROMPT_EXPORT_TRTLLM,
    PROMPT_EXPORT_SCORES,
    PROMPT_WORKSPACE, /* a folder to save the workspace to */
    PROMPT_COMMAND,   /* ':' the command line (cmdline.h), drawn on the footer row */
    PROMPT_JUMP,      /* '/' a layer number, drawn on the footer row */
} prompt_kind;

typedef struct {
    worker *w;
    ex_snapshot snap; /* the UI's own copy of the worker's snapshot */
    int have_model;   /* snap.hp is valid */
    ex_mask mask;     /* the working mask shown in the grid, edited, evaluated, exported */
    /* F: pinned heads, the constraints of the next search (search.h search_config.pins): per head
       [layer*n_head_kv + kv_head] 0 free, 1 pinned full, 2 pinned SWA; n_pin of them pinned */
    uint8_t pin[EX_MAX_LAYERS * EX_MAX_KV];
    int n_pin;
    int follow;    /* 1: the grid follows the search (last evaluated mask; final when done) */
    int edited;    /* the working mask was edited by hand since it last followed the search */
    ex_mask *undo; /* [UI_UNDO] ring of masks before each edit */
    int undo_n, undo_head;
    ex_mask redo[UI_REDO]; /* masks undone, the last on top (redo_n of them); an edit clears them */
    int redo_n;

    int cur_layer, cur_head, top;
    int query_view;
    int stat_numbers;        /* the grid's w and r columns as numbers (b), else as bars */
    int heat;                /* H: 0 off, k + 1: the cells' glyphs show heat score k (ex_heat_name; colour:
                                full / SWA) */
    double heat_lo, heat_hi; /* its smallest and largest measured value (draw_grid.c sets them each frame) */
    int heat_n;              /* how many heads are measured */
    int utf8, color;
    int ctx_tokens; /* context length of the KV-bytes line */
    int kv_elem;    /* bytes per key or value element in that line (explorer_opts.kv_type) */

    ui_mode mode;
    int form_field, form_preset_i, form_window; /* UI_START */
    double form_ratio;                          /* UI_START: the ratio (ui_ratios, or :ratio's) */
    int form_granularity;                       /* UI_START: 0 heads, 1 whole layers */
    int form_start;      /* UI_START: 1 start from the working mask (search.h search_config.start_*) */
    int form_window_set; /* UI_START: the window is the user's, not the preset's
                            (a preset change keeps it) */
    int help_page;       /* UI_HELP: 0 keys and colours, 1 the : commands */
    prompt_kind prompt;
    char input[256];
    int input_len;
    char msg[EX_LINE]; /* status message shown above the footer, with its time */
    double msg_t;

    long saved_evals; /* snap.n_evals when the search was last exported (-1: never) */
    int pause_pending;
    long ask_seen;      /* last ask.seq shown */
    long io_seen;       /* last io.seq handled */
    long io_req_evals;  /* snap.n_evals when the last file job was asked for */
    int prompt_refused; /* the prompt was reopened because its path was refused (msg says why) */
    int ask_sample;
    char last_path[256]; /* the last mask CSV read or written: the load prompt's default */
    int quit;
    ui_palette palette;          /* SWA heads red or orange (config) */
    ui_bind binds[UI_MAX_BINDS]; /* the config's key bindings (UI_NORMAL) */
    int n_binds;
    int rows, cols;
    layout lay;

    /* comparison view (explorer_compare.c) */
    compare_row *cmp_rows; /* [COMPARE_MAX_METHODS] held-out rows of a compare folder at cmp_ratio */
    int cmp_n, cmp_cur;
    double cmp_ratio;
    char cmp_dir[256];
    int cmp_want;      /* what the comparison mask being read is for: UI_CMP_DIFF or UI_CMP_LOAD */
    ex_mask cmp_mask;  /* a method's mask, diffed against the working mask in the grid */
    int have_cmp;      /* cmp_mask is shown as a diff */
    char cmp_name[32]; /* its method */

    /* pinned vs working (ui_pin.c, draw_pin.c): the pinned mask is cmp_mask (have_cmp, cmp_name) */
    int pin_view;       /* =: the side-by-side panel, in place of the teaching text and the log */
    uint64_t pin_sent;  /* ui_pin_key of the (working, pinned) pair last sent to the worker; 0 none */
    long pin_mask_seen; /* snap.pin.mask_seq last taken as the pinned mask (a baseline's) */
    int pin_making;     /* a baseline's mask is being made: it becomes the pinned mask */

    /* the start form's method (ui_form.c): index in search_variant_name */
    int form_method_i;
    /* attention view (ui_attn.c) */
    int attn_split;  /* 0 calibration, 1 held-out */
    int attn_sample; /* the sample asked for */
    /* workspaces */
    char ws_dir[256];     /* the folder last opened or saved ("" none) */
    char export_dir[200]; /* where the export prompts put their file names when no workspace is open
                             ("$HOME/bosch-exports"; "" for names relative to the current folder) */
} ui_state;

#endif
