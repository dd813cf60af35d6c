/* explorer_ui.h — the explorer's UI-thread state and drawing functions (UI thread only). */
#ifndef BOSCH_EXPLORER_UI_H
#define BOSCH_EXPLORER_UI_H

#include "compare.h"
#include "ex_state.h"
#include "layout.h"
#include "worker.h"

#define UI_UNDO 64

typedef enum {
    UI_NORMAL = 0,
    UI_HELP,         /* help overlay: keys and colours */
    UI_START,        /* start-a-search form: ratio, preset, window */
    UI_EXPORT,       /* export menu: m mask, t trace, l layers */
    UI_PROMPT,       /* file-name prompt (export / load) */
    UI_FILL,         /* fill the cursor's layer: digit = SWA KV heads */
    UI_CONFIRM_QUIT, /* unsaved search: y / n */
    UI_ASK,          /* ask-the-model result */
    UI_COMPARE,      /* comparison view: each method's held-out accuracy at the ratio, load / diff */
} ui_mode;

typedef enum {
    PROMPT_EXPORT_MASK,
    PROMPT_EXPORT_TRACE,
    PROMPT_EXPORT_LAYERS,
    PROMPT_LOAD_MASK,
    PROMPT_COMPARE_DIR
} prompt_kind;

/* Colour pairs / attributes used by the draw code. */
enum { PAIR_FULL = 1, PAIR_SWA, PAIR_PROBE, PAIR_TITLE, PAIR_GOOD, PAIR_BAD, PAIR_DIM, PAIR_ACCENT };

typedef struct {
    worker *w;
    ex_snapshot snap; /* the UI's own copy of the worker's snapshot */
    int have_model;   /* snap.hp is valid */
    ex_mask mask;     /* the working mask shown in the grid, edited, evaluated, exported */
    int follow;       /* 1: the grid follows the search (last evaluated mask; final when done) */
    int edited;       /* the working mask was edited by hand since it last followed the search */
    ex_mask *undo;    /* [UI_UNDO] ring of masks before each edit */
    int undo_n, undo_head;

    int cur_layer, cur_head, top;
    int query_view;
    int utf8, color;
    int ctx_tokens; /* context length of the KV-bytes line */

    ui_mode mode;
    int form_field, form_ratio_i, form_preset_i, form_window; /* UI_START */
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
    char last_path[256];
    int quit;
    int rows, cols;
    layout lay;

    /* comparison view (explorer_compare.c) */
    compare_row *cmp_rows; /* [COMPARE_MAX_METHODS] held-out rows of a compare folder at cmp_ratio */
    int cmp_n, cmp_cur;
    double cmp_ratio;
    char cmp_dir[256];
    ex_mask cmp_mask;  /* a method's mask, diffed against the working mask in the grid */
    int have_cmp;      /* cmp_mask is shown as a diff */
    char cmp_name[32]; /* its method */
} ui_state;

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

/* explorer_keys.c */
void ui_handle_key(ui_state *u, int ch);
void ui_on_snapshot(ui_state *u);
void ui_request_quit(ui_state *u); /* asks first when a search is unsaved */
/* Before a hand edit of the working mask: push it on the undo ring, stop following the search. */
void ui_begin_edit(ui_state *u);
void ui_message(ui_state *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ui_search_unsaved(const ui_state *u);

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
/* explorer_compare.c */
/* Load the held-out rows of compare folder `dir` at the ratio nearest the working mask's; opens the
 * view (UI_COMPARE) or says why not. */
void ui_compare_open(ui_state *u, const char *dir);
void ui_compare_key(ui_state *u, int ch);
void draw_compare(ui_state *u);
/* Heads where the working mask and the diffed method's mask differ (0 without a diff). */
int ui_compare_n_diff(const ui_state *u);

/* draw_dialogs.c */
void draw_dialogs(ui_state *u);
void draw_too_small(ui_state *u);
/* draw_util.c (helpers shared by the draw files) */
void draw_text(int y, int x, int w, int attr, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void draw_panel_title(const lay_rect *r, ui_state *u, const char *title);
int draw_wrap(int y, int x, int w, int max_lines, int attr, const char *text);
int ui_attr(const ui_state *u, int pair, int mono_attr);
void draw_box(const lay_rect *r, ui_state *u, const char *title);
/* Format bytes as "12.3 MiB". */
void fmt_bytes(double bytes, char *buf, size_t cap);
/* Ratio presets the form offers. */
extern const double ui_ratios[];
extern const int ui_n_ratios;
extern const char *const ui_presets[];
extern const int ui_n_presets;

#endif
