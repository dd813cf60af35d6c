/* explorer.h — the ncurses explorer (`bosch [MODEL]`, docs/design.md §9): its options and entry point.
 *
 * The UI thread (explorer.c) draws and reads keys; the worker thread (worker.c) computes and
 * publishes snapshots (ex_state.h). Only the UI thread calls ncurses.
 */
#ifndef BOSCH_EXPLORER_H
#define BOSCH_EXPLORER_H

#include "backend.h"

/* Options of `bosch [MODEL]`. */
typedef struct {
    const char *model_path;
    int threads;               /* 0 = OpenMP default */
    int ctx_tokens;            /* context length for the KV-bytes line (default: model's n_ctx_train) */
    int ascii;                 /* 1: ASCII glyphs even in a UTF-8 locale */
    int mono;                  /* 1: no colours even when the terminal has them (or NO_COLOR is set) */
    backend_options backend;   /* where the worker's evaluators run (engine/backend.h); zero: the CPU */
    int precision;             /* engine_precision (gemm.h) of the CPU engine; 0 = PRECISION_FP32 */
    int kv_type;               /* attn_kv_type (attention.h) of the CPU engine's attention and KV cache,
                                  and of the KV-bytes line; 0 = ATTN_KV_FP32 */
    const char *ui_stats_path; /* NULL, or where to write the UI thread's busy times at exit (CSV) */
    const char *term;          /* $TERM, named when the terminal cannot be initialised; NULL unset */
    const char *config_path;   /* the config file (tui/ui_config.h), named in its messages; NULL: none */
    const char *config_text;   /* its text, read by the app; NULL: no file (the defaults) */
    const char *workspace_dir; /* NULL, or a workspace / `bosch search --out` folder to open once the
                                  model is loaded (worker_workspace_open) */
    const char *export_dir;    /* the default export folder, an absolute path the app makes from $HOME
                                  ($HOME/bosch-exports), created on its first use; NULL: none */
} explorer_opts;

/* Run the explorer until the user quits. Returns the process exit status (0, or 1 after an error
 * that was shown / printed; 2 when the config file has a bad line, printed before the terminal is
 * touched: "bosch: FILE: line N: NAME: bad value 'V' (...)"). Restores the terminal on every path. */
int explorer_run(const explorer_opts *opts);

#endif
