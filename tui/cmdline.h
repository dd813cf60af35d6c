/* cmdline.h — the explorer's `:` command line and `/` layer jump, parsed as pure functions (no
 * curses, no state): tests/test_cmdline.c. ui_request.c applies a parsed command to the UI state.
 *
 * Commands (the table in cmdline.c; `:help` shows it):
 *   :ratio R           the next search's ratio rho, R in [0, 1] (s opens the form with it)
 *   :window W          the SWA window of the working mask (held-out, ask, exports) and of the next
 *                      search, W tokens in [1, SEARCH_OPTS_MAX_TOKENS]
 *   :load FILE         load a mask CSV (as o)
 *   :export NAME [FILE]  export NAME (mask, trace, layers: one row each in the export table); no
 *                      FILE: the file-name prompt opens with NAME's default
 *   :layer N, :N       move the cursor to layer N (as / N)
 *   :all full, :all swa  the working mask all full / all SWA (an edit: u undoes it)
 *   :pin [WHAT]        pin a mask to compare the working mask with (=: the side-by-side panel; the
 *                      grid marks the heads that differ; D turns it off). WHAT: nothing (a snapshot
 *                      of the working mask), full, swa, a baseline of the method registry with an
 *                      optional ratio (`:pin fisher`, `:pin bme 0.25`), or a mask file (any other
 *                      word: the rest of the line)
 *   :q, :quit          quit (asks first when a search is unsaved); :q! quits without asking
 *   :help, :h          the list of commands
 */
#ifndef BOSCH_CMDLINE_H
#define BOSCH_CMDLINE_H

#include <stddef.h>

#include "ui_state.h"

typedef enum {
    CMDLINE_RATIO,
    CMDLINE_WINDOW,
    CMDLINE_LOAD,
    CMDLINE_EXPORT,
    CMDLINE_LAYER,
    CMDLINE_ALL,
    CMDLINE_PIN,
    CMDLINE_QUIT,
    CMDLINE_QUIT_NOW,
    CMDLINE_HELP,
} cmdline_kind;

/* What :pin pins. */
typedef enum {
    CMDLINE_PIN_WORKING = 0, /* a snapshot of the working mask */
    CMDLINE_PIN_FULL,        /* every KV head full */
    CMDLINE_PIN_SWA,         /* every KV head SWA */
    CMDLINE_PIN_METHOD,      /* a baseline's mask (path: its registry name; ratio: R or -1) */
    CMDLINE_PIN_FILE,        /* a mask file (path) */
} cmdline_pin;

#define CMDLINE_MAX_WINDOW SEARCH_OPTS_MAX_TOKENS /* as bosch search --window */

typedef struct {
    cmdline_kind kind;
    double ratio;    /* CMDLINE_RATIO; CMDLINE_PIN_METHOD: the ratio given, -1 none */
    int window;      /* CMDLINE_WINDOW, tokens */
    int layer;       /* CMDLINE_LAYER */
    int all_swa;     /* CMDLINE_ALL: 1 all SWA, 0 all full */
    cmdline_pin pin; /* CMDLINE_PIN: what it pins */
    int export_i;    /* CMDLINE_EXPORT: row of cmdline_exports() */
    char path[256];  /* CMDLINE_LOAD, CMDLINE_EXPORT ("": ask for it), CMDLINE_PIN_METHOD (the
                        method's name), CMDLINE_PIN_FILE (the file) */
} cmdline_cmd;

/* One thing `:export NAME` writes. A new file format for the explorer is one row here (and its
 * ex_io_kind job in tui/worker_io.c). */
typedef struct {
    const char *name;     /* NAME */
    ex_io_kind io;        /* the worker's file job */
    prompt_kind prompt;   /* the file-name prompt when no FILE is given */
    int needs_search;     /* 1: only once a search has run (the trace) */
    const char *describe; /* for :help, e.g. "the mask (CSV)" */
} cmdline_export;

/* The export table; *n gets its length. */
const cmdline_export *cmdline_exports(int *n);

/* One command of the table, for :help: "ratio R", and what it does. */
typedef struct {
    const char *usage;
    const char *help;
} cmdline_help_line;
/* The help lines; *n gets their number. */
const cmdline_help_line *cmdline_help(int *n);

/* Parse one command line (without the ':'; leading and trailing blanks ignored). n_layer: the
 * model's layers (for :layer and :N). 0, or -1 with a one-line message in err naming the command
 * and the value (e.g. "ratio: bad value '2' (need a number in [0, 1])",
 * "unknown command 'frob' (:help lists them)"). */
int cmdline_parse(const char *line, int n_layer, cmdline_cmd *out, char *err, size_t errlen);

/* Parse a layer number as `/` takes it ("12", or "L12"; blanks ignored) in [0, n_layer). 0, or -1
 * with e.g. "no layer 40 (the model has layers 0-29)". */
int cmdline_parse_layer(const char *text, int n_layer, int *layer, char *err, size_t errlen);

#endif
