/* requests.h — the explorer's requests, keys and worker jobs as one table (tig's REQ_INFO pattern):
 * three X-macro lists that every other part is generated from.
 *
 *   UI_JOBS(J)      J(ID, job, on_queued): the work the worker thread does for the UI. UI_CMD_ID is
 *                   its ui_cmd kind (ui_cmd.h); `job` its function on the worker thread
 *                   (void job(worker *, const wcmd *), tui/worker_*.c; worker.c dispatches by kind);
 *                   `on_queued` the UI's note once the worker took it
 *                   (void on_queued(ui_state *, const ui_cmd *), ui_queued_none for none).
 *   UI_REQUESTS(R)  R(ID, name, flags, action, job): what a key asks for. REQ_ID is its ui_request;
 *                   `name` its name in the config file (NULL: a dialog's request, not bindable);
 *                   `flags` UI_REQ_ANYTIME when it works before the model is loaded; `action` what
 *                   it does in UI_NORMAL (ui_cmd action(ui_state *, ui_request, int key), pure:
 *                   tui/ui_actions.c; ui_act_none for the dialogs' requests, which their dialog
 *                   applies); `job` the job it sends (NONE: none; ui_act_job sends it with the
 *                   working mask and the cursor's head).
 *   UI_KEYS(K)      K(key, ID, modes, label, help, footer): one key of request REQ_ID in the modes
 *                   `modes` (KM() bits of ui_mode); `label` the key as the help shows it; `help` its
 *                   help text (UI_NORMAL; it starts a help line, NULL joins the line above); `footer`
 *                   its item in the footer of its modes (NULL: none). Order: UI_NORMAL's keys in
 *                   footer and help order, then the dialogs'.
 *
 * Adding a key that needs the worker: a J row and its job file, an R row (action ui_act_job, or
 * one of ui_actions.c), a K row, and the drawing of its result (the job publishes it in the
 * snapshot's reply[UI_CMD_ID], worker_reply_publish). Nothing else changes: the enums, the name
 * table, the help, the footers, the dispatch on both threads and the prototypes of the functions
 * the rows name are generated here (ui_internal.h, worker_internal.h).
 *
 * No curses here: the K rows name curses' KEY_* codes, expanded only in keymap.c. */
#ifndef BOSCH_REQUESTS_H
#define BOSCH_REQUESTS_H

/* clang-format off */
#define UI_JOBS(J)                                                           \
    J(START_SEARCH, worker_job_start,     ui_queued_start)                   \
    J(PAUSE,        worker_job_pause,     ui_queued_none)                    \
    J(RESUME,       worker_job_resume,    ui_queued_none)                    \
    J(STEP,         worker_job_step,      ui_queued_none)                    \
    J(HELDOUT,      worker_job_heldout,   ui_queued_heldout)                 \
    J(ASK,          worker_job_ask,       ui_queued_ask)                     \
    J(IO,           worker_job_io,        ui_queued_io)                      \
    J(COMPARE_OPEN, worker_job_compare,   ui_queued_compare_open)            \
    J(COMPARE_MASK, worker_job_compare,   ui_queued_none)                    \
    J(ATTN,         worker_job_attn,      ui_queued_attn)                    \
    J(WORKSPACE,    worker_job_workspace, ui_queued_workspace)               \
    J(HEAT,         worker_job_heat,      ui_queued_none)                    \
    J(PIN,          worker_job_pin,       ui_queued_pin)

#define UI_REQUESTS(R)                                                                   \
    R(NONE,              "none",          0,              ui_act_none,          NONE)    \
    /* UI_NORMAL */                                                                      \
    R(HELP,              "help",          UI_REQ_ANYTIME, ui_act_help,          NONE)    \
    R(PLAN,              "plan",          0,              ui_act_help,          NONE)    \
    R(QUIT,              "quit",          UI_REQ_ANYTIME, ui_act_quit,          NONE)    \
    R(START_FORM,        "search",        0,              ui_act_start_form,    NONE)    \
    R(PAUSE,             "pause",         0,              ui_act_pause,         PAUSE)   \
    R(STEP,              "step",          0,              ui_act_step,          STEP)    \
    R(TOGGLE_HEAD,       "toggle",        0,              ui_act_toggle_head,   NONE)    \
    R(TOGGLE_LAYER,      "toggle_layer",  0,              ui_act_toggle_layer,  NONE)    \
    R(FILL,              "fill",          0,              ui_act_fill,          NONE)    \
    R(HELDOUT,           "eval",          0,              ui_act_heldout,       HELDOUT) \
    R(HELDOUT_SERVABLE,  "eval_servable", 0,              ui_act_heldout,       HELDOUT) \
    R(ASK,               "ask",           0,              ui_act_ask,           ASK)     \
    R(EXPORT_MENU,       "export",        0,              ui_act_export_menu,   NONE)    \
    R(LOAD_MASK,         "load",          0,              ui_act_prompt,        NONE)    \
    R(UNDO,              "undo",          0,              ui_act_undo,          NONE)    \
    R(REDO,              "redo",          0,              ui_act_redo,          NONE)    \
    R(QUERY_VIEW,        "view",          0,              ui_act_query_view,    NONE)    \
    R(STAT_VIEW,         "stat_view",     0,              ui_act_query_view,    NONE)    \
    R(HEAT,              "heat",          0,              ui_act_heat,          NONE)    \
    R(PIN_HEAD,          "pin_head",      0,              ui_act_pin_head,      NONE)    \
    R(CONTEXT,           "context",       0,              ui_act_context,       NONE)    \
    R(COMPARE_OPEN,      "compare",       0,              ui_act_prompt,        NONE)    \
    R(COMPARE_DIFF,      "diff",          0,              ui_act_compare_diff,  NONE)    \
    R(PIN_VIEW,          "pin_view",      0,              ui_act_pin_view,      NONE)    \
    R(MOVE_UP,           "up",            0,              ui_act_cursor,        NONE)    \
    R(MOVE_DOWN,         "down",          0,              ui_act_cursor,        NONE)    \
    R(MOVE_LEFT,         "left",          0,              ui_act_cursor,        NONE)    \
    R(MOVE_RIGHT,        "right",         0,              ui_act_cursor,        NONE)    \
    R(PAGE_UP,           "page_up",       0,              ui_act_cursor,        NONE)    \
    R(PAGE_DOWN,         "page_down",     0,              ui_act_cursor,        NONE)    \
    R(FIRST_LAYER,       "first",         0,              ui_act_cursor,        NONE)    \
    R(LAST_LAYER,        "last",          0,              ui_act_cursor,        NONE)    \
    R(REDRAW,            "redraw",        0,              ui_act_redraw,        NONE)    \
    R(JUMP,              "jump",          0,              ui_act_jump,          NONE)    \
    R(COMMAND,           "command",       UI_REQ_ANYTIME, ui_act_command,       NONE)    \
    R(MOUSE,             NULL,            0,              ui_act_none,          NONE)    \
    R(ATTN,              "attention",     0,              ui_act_attn,          ATTN)    \
    R(WORKSPACE_SAVE,    "workspace",     0,              ui_act_prompt,        NONE)    \
    /* the dialogs' requests: their dialog applies them (ui_request.c) */                \
    R(CLOSE,             NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_MASK,       NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_TRACE,      NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_LAYERS,     NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_DUO,        NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_HF,         NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_TRTLLM,     NULL,            0,              ui_act_none,          NONE)    \
    R(EXPORT_SCORES,     NULL,            0,              ui_act_none,          NONE)    \
    R(FILL_COUNT,        NULL,            0,              ui_act_none,          NONE)    \
    R(CONFIRM_YES,       NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_PREV,         NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_NEXT,         NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_INC,          NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_DEC,          NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_DIGIT,        NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_BACKSPACE,    NULL,            0,              ui_act_none,          NONE)    \
    R(FORM_ACCEPT,       NULL,            0,              ui_act_none,          START_SEARCH) \
    R(PROMPT_ACCEPT,     NULL,            0,              ui_act_none,          NONE)    \
    R(PROMPT_BACKSPACE,  NULL,            0,              ui_act_none,          NONE)    \
    R(PROMPT_CLEAR,      NULL,            0,              ui_act_none,          NONE)    \
    R(PROMPT_CHAR,       NULL,            0,              ui_act_none,          NONE)    \
    R(CMP_UP,            NULL,            0,              ui_act_none,          NONE)    \
    R(CMP_DOWN,          NULL,            0,              ui_act_none,          NONE)    \
    R(CMP_SHOW_DIFF,     NULL,            0,              ui_act_none,          COMPARE_MASK) \
    R(CMP_LOAD,          NULL,            0,              ui_act_none,          COMPARE_MASK) \
    R(ATTN_SPLIT,        NULL,            0,              ui_act_none,          ATTN)    \
    R(ATTN_NEXT,         NULL,            0,              ui_act_none,          ATTN)    \
    R(ATTN_PREV,         NULL,            0,              ui_act_none,          ATTN)

#define UI_KEYS(K)                                                                                    \
    K('?',         HELP,             N, "?",      "this help / the search's plan, phase by phase / quit", "?:help") \
    K(KEY_F(1),    HELP,             N, "F1",     NULL, NULL)                                         \
    K('P',         PLAN,             N, "P",      NULL, "P:plan")                                     \
    K('q',         QUIT,             N, "q",      NULL, "q:quit")                                     \
    K('Q',         QUIT,             N, "Q",      NULL, NULL)                                         \
    K(KEY_F(10),   QUIT,             N, "F10",    NULL, NULL)                                         \
    K('s',         START_FORM,       N, "s",      "start a search / pause or resume / step one evaluation", "s:search") \
    K('p',         PAUSE,            N, "p",      NULL, "p:pause")                                    \
    K('n',         STEP,             N, "n",      NULL, "n:step")                                     \
    K(' ',         TOGGLE_HEAD,      N, "space",  "toggle the KV head under the cursor (full <-> SWA)", "spc:toggle") \
    K('t',         TOGGLE_HEAD,      N, "t",      NULL, NULL)                                         \
    K('T',         TOGGLE_LAYER,     N, "T",      "toggle the whole layer", "T:layer")                \
    K('L',         TOGGLE_LAYER,     N, "L",      NULL, NULL)                                         \
    K('f',         FILL,             N, "f",      "fill the layer: then 0-9 = that many SWA KV heads", "f:fill") \
    K('v',         HELDOUT,          N, "v",      "held-out score of the mask / its per-layer projection", "v:eval") \
    K('V',         HELDOUT_SERVABLE, N, "V",      NULL, NULL)                                         \
    K('a',         ASK,              N | KM(UI_ASK), "a", "ask the model a held-out question with this mask", "a:ask") \
    K('x',         EXPORT_MENU,      N | KM(UI_CONFIRM_QUIT), "x", "export, then m t l d h r (duo hf trtllm too) / load", "x:export") \
    K('o',         LOAD_MASK,        N, "o",      NULL, "o:load")                                     \
    K('u',         UNDO,             N, "u",      "undo / redo an edit / jump to a layer / command line", "u:undo") \
    K(CTRL('r'),   REDO,             N, "Ctrl-R", NULL, NULL)                                         \
    K('/',         JUMP,             N, "/",      NULL, NULL)                                         \
    K(KEY_F(3),    JUMP,             N, "F3",     NULL, NULL) /* htop's F3 is its search */           \
    K(':',         COMMAND,          N, ":",      NULL, NULL)                                         \
    K('g',         QUERY_VIEW,       N, "g",      "query heads / KV ctx / w r bars / heat map / pin head", "g:view") \
    K('c',         CONTEXT,          N, "c",      NULL, "c:ctx")                                      \
    K('b',         STAT_VIEW,        N, "b",      NULL, NULL)                                         \
    K('H',         HEAT,             N, "H",      NULL, NULL)                                         \
    K('F',         PIN_HEAD,         N, "F",      NULL, NULL)                                         \
    K('C',         COMPARE_OPEN,     N, "C",      "compare folder / diff on-off / pinned vs working", NULL) \
    K('D',         COMPARE_DIFF,     N, "D",      NULL, NULL)                                         \
    K('=',         PIN_VIEW,         N, "=",      NULL, NULL)                                         \
    K(KEY_UP,      MOVE_UP,          N, "Up",     "move the cursor (mouse: click, wheel)", NULL)      \
    K(KEY_DOWN,    MOVE_DOWN,        N, "Down",   NULL, NULL)                                         \
    K(KEY_LEFT,    MOVE_LEFT,        N, "Left",   NULL, NULL)                                         \
    K(KEY_RIGHT,   MOVE_RIGHT,       N, "Right",  NULL, NULL)                                         \
    K('h',         MOVE_LEFT,        N, "h",      NULL, NULL)                                         \
    K('j',         MOVE_DOWN,        N, "j",      NULL, NULL)                                         \
    K('k',         MOVE_UP,          N, "k",      NULL, NULL)                                         \
    K('l',         MOVE_RIGHT,       N, "l",      NULL, NULL)                                         \
    K(KEY_MOUSE,   MOUSE,            N, "mouse",  NULL, NULL)                                         \
    K(KEY_PPAGE,   PAGE_UP,          N, "PgUp",   "page / first or last layer; redraw", NULL)         \
    K(KEY_NPAGE,   PAGE_DOWN,        N, "PgDn",   NULL, NULL)                                         \
    K(KEY_HOME,    FIRST_LAYER,      N, "Home",   NULL, NULL)                                         \
    K(KEY_END,     LAST_LAYER,       N, "End",    NULL, NULL)                                         \
    K(CTRL('l'),   REDRAW,           N, "Ctrl-L", NULL, NULL)                                         \
    K('A',         ATTN,             N, "A",      "attention view of the head / save the workspace", NULL) \
    K('W',         WORKSPACE_SAVE,   N, "W",      NULL, NULL)                                         \
    /* the fill dialog */                                                                             \
    K('0', FILL_COUNT, KM(UI_FILL), "0-9", NULL, "fill layer: 0-9 = SWA KV heads")                    \
    K('1', FILL_COUNT, KM(UI_FILL), "1", NULL, NULL)                                                  \
    K('2', FILL_COUNT, KM(UI_FILL), "2", NULL, NULL)                                                  \
    K('3', FILL_COUNT, KM(UI_FILL), "3", NULL, NULL)                                                  \
    K('4', FILL_COUNT, KM(UI_FILL), "4", NULL, NULL)                                                  \
    K('5', FILL_COUNT, KM(UI_FILL), "5", NULL, NULL)                                                  \
    K('6', FILL_COUNT, KM(UI_FILL), "6", NULL, NULL)                                                  \
    K('7', FILL_COUNT, KM(UI_FILL), "7", NULL, NULL)                                                  \
    K('8', FILL_COUNT, KM(UI_FILL), "8", NULL, NULL)                                                  \
    K('9', FILL_COUNT, KM(UI_FILL), "9", NULL, NULL)                                                  \
    /* the export menu */                                                                             \
    K('m', EXPORT_MASK,   KM(UI_EXPORT), "m", NULL, "export: m mask")                                 \
    K('t', EXPORT_TRACE,  KM(UI_EXPORT), "t", NULL, "t trace")                                        \
    K('l', EXPORT_LAYERS, KM(UI_EXPORT), "l", NULL, "l layers")                                       \
    K('d', EXPORT_DUO,    KM(UI_EXPORT), "d", NULL, "d duo")                                          \
    K('h', EXPORT_HF,     KM(UI_EXPORT), "h", NULL, "h hf")                                           \
    K('r', EXPORT_TRTLLM, KM(UI_EXPORT), "r", NULL, "r trtllm")                                       \
    K('s', EXPORT_SCORES, KM(UI_EXPORT), "s", NULL, "s scores")                                       \
    /* the start form */                                                                              \
    K(KEY_UP,        FORM_PREV,      KM(UI_START), "Up", NULL, "Up/Down field")                       \
    K('k',           FORM_PREV,      KM(UI_START), "k", NULL, NULL)                                   \
    K(KEY_DOWN,      FORM_NEXT,      KM(UI_START), "Down", NULL, NULL)                                \
    K('j',           FORM_NEXT,      KM(UI_START), "j", NULL, NULL)                                   \
    K('\t',          FORM_NEXT,      KM(UI_START), "Tab", NULL, NULL)                                 \
    K(KEY_RIGHT,     FORM_INC,       KM(UI_START), "Right", NULL, "Left/Right value")                 \
    K('l',           FORM_INC,       KM(UI_START), "l", NULL, NULL)                                   \
    K('+',           FORM_INC,       KM(UI_START), "+", NULL, NULL)                                   \
    K(KEY_LEFT,      FORM_DEC,       KM(UI_START), "Left", NULL, NULL)                                \
    K('h',           FORM_DEC,       KM(UI_START), "h", NULL, NULL)                                   \
    K('-',           FORM_DEC,       KM(UI_START), "-", NULL, NULL)                                   \
    K('0',           FORM_DIGIT,     KM(UI_START), "0", NULL, NULL)                                   \
    K('1',           FORM_DIGIT,     KM(UI_START), "1", NULL, NULL)                                   \
    K('2',           FORM_DIGIT,     KM(UI_START), "2", NULL, NULL)                                   \
    K('3',           FORM_DIGIT,     KM(UI_START), "3", NULL, NULL)                                   \
    K('4',           FORM_DIGIT,     KM(UI_START), "4", NULL, NULL)                                   \
    K('5',           FORM_DIGIT,     KM(UI_START), "5", NULL, NULL)                                   \
    K('6',           FORM_DIGIT,     KM(UI_START), "6", NULL, NULL)                                   \
    K('7',           FORM_DIGIT,     KM(UI_START), "7", NULL, NULL)                                   \
    K('8',           FORM_DIGIT,     KM(UI_START), "8", NULL, NULL)                                   \
    K('9',           FORM_DIGIT,     KM(UI_START), "9", NULL, NULL)                                   \
    K(KEY_BACKSPACE, FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL)                           \
    K(127,           FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL)                           \
    K(8,             FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL)                           \
    K('\n',          FORM_ACCEPT,    KM(UI_START), "Enter", NULL, "Enter start")                      \
    K('\r',          FORM_ACCEPT,    KM(UI_START), "Enter", NULL, NULL)                               \
    K(KEY_ENTER,     FORM_ACCEPT,    KM(UI_START), "Enter", NULL, NULL)                               \
    /* the file-name prompt */                                                                        \
    K('\n',          PROMPT_ACCEPT,    KM(UI_PROMPT), "Enter", NULL, "Enter accept")                  \
    K('\r',          PROMPT_ACCEPT,    KM(UI_PROMPT), "Enter", NULL, NULL)                            \
    K(KEY_ENTER,     PROMPT_ACCEPT,    KM(UI_PROMPT), "Enter", NULL, NULL)                            \
    K(KEY_BACKSPACE, PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL)                        \
    K(127,           PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL)                        \
    K(8,             PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL)                        \
    K(ESC, CLOSE, KM(UI_FILL) | KM(UI_EXPORT) | KM(UI_START) | KM(UI_PROMPT), "Esc", NULL, "Esc cancel") \
    K(CTRL('u'),     PROMPT_CLEAR,     KM(UI_PROMPT), "Ctrl-U", NULL, "Ctrl-U clear")                 \
    /* the quit confirmation */                                                                       \
    K('y', CONFIRM_YES, KM(UI_CONFIRM_QUIT), "y", NULL, NULL)                                         \
    K('Y', CONFIRM_YES, KM(UI_CONFIRM_QUIT), "Y", NULL, NULL)                                         \
    /* the comparison view */                                                                         \
    K(ESC,       CLOSE,         KM(UI_COMPARE), "Esc", NULL, NULL)                                    \
    K('q',       CLOSE,         KM(UI_COMPARE), "q", NULL, NULL)                                      \
    K(KEY_UP,    CMP_UP,        KM(UI_COMPARE), "Up", NULL, NULL)                                     \
    K('k',       CMP_UP,        KM(UI_COMPARE), "k", NULL, NULL)                                      \
    K(KEY_DOWN,  CMP_DOWN,      KM(UI_COMPARE), "Down", NULL, NULL)                                   \
    K('j',       CMP_DOWN,      KM(UI_COMPARE), "j", NULL, NULL)                                      \
    K('\n',      CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL)                                  \
    K('\r',      CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL)                                  \
    K(KEY_ENTER, CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL)                                  \
    K('L',       CMP_LOAD,      KM(UI_COMPARE), "L", NULL, NULL)                                      \
    /* the attention view: the cursor keys move to another head, recomputing the view */              \
    K('\t',      ATTN_SPLIT, KM(UI_ATTN), "Tab", NULL, "Tab calib/held-out")                          \
    K('s',       ATTN_SPLIT, KM(UI_ATTN), "s", NULL, NULL)                                            \
    K('n',       ATTN_NEXT,  KM(UI_ATTN), "n", NULL, "n/p sample")                                    \
    K(']',       ATTN_NEXT,  KM(UI_ATTN), "]", NULL, NULL)                                            \
    K('p',       ATTN_PREV,  KM(UI_ATTN), "p", NULL, NULL)                                            \
    K('[',       ATTN_PREV,  KM(UI_ATTN), "[", NULL, NULL)                                            \
    K(KEY_UP,    MOVE_UP,    KM(UI_ATTN), "Up", NULL, "arrows head")                                  \
    K(KEY_DOWN,  MOVE_DOWN,  KM(UI_ATTN), "Down", NULL, NULL)                                         \
    K(KEY_LEFT,  MOVE_LEFT,  KM(UI_ATTN), "Left", NULL, NULL)                                         \
    K(KEY_RIGHT, MOVE_RIGHT, KM(UI_ATTN), "Right", NULL, NULL)                                        \
    K('k',       MOVE_UP,    KM(UI_ATTN), "k", NULL, NULL)                                            \
    K('j',       MOVE_DOWN,  KM(UI_ATTN), "j", NULL, NULL)                                            \
    K('h',       MOVE_LEFT,  KM(UI_ATTN), "h", NULL, NULL)                                            \
    K('l',       MOVE_RIGHT, KM(UI_ATTN), "l", NULL, NULL)                                            \
    K(ESC,       CLOSE,      KM(UI_ATTN), "Esc", NULL, "Esc close")                                   \
    K('q',       CLOSE,      KM(UI_ATTN), "q", NULL, NULL)                                            \
    K('A',       CLOSE,      KM(UI_ATTN), "A", NULL, NULL)
/* clang-format on */

/* The worker jobs: UI_CMD_NONE, one kind per J row, then UI_CMD_REDRAW (the UI's own: a full
 * repaint, never sent to the worker). */
typedef enum {
    UI_CMD_NONE = 0,
#define UI_JOB_ENUM(id, job, on_queued) UI_CMD_##id,
    UI_JOBS(UI_JOB_ENUM)
#undef UI_JOB_ENUM
        UI_CMD_N_JOBS, /* one past the last worker job */
    UI_CMD_REDRAW = UI_CMD_N_JOBS,
} ui_cmd_kind;

/* The requests: one per R row, REQ_NONE (0) first; REQ_N counts them. */
typedef enum {
#define UI_REQ_ENUM(id, name, flags, action, job) REQ_##id,
    UI_REQUESTS(UI_REQ_ENUM)
#undef UI_REQ_ENUM
        REQ_N
} ui_request;

/* R row flags. */
#define UI_REQ_ANYTIME 1u /* works before the model is loaded (help, quit, the command line) */

#endif
