/* ui_cmd.h — what the UI thread asks the worker for: a job of the table (requests.h UI_JOBS) with
 * its arguments. ui_apply (ui_request.h) returns one as a pure function of the UI state; the input
 * glue hands it to worker_submit (worker.h), which copies what it points to. */
#ifndef BOSCH_UI_CMD_H
#define BOSCH_UI_CMD_H

#include "ex_state.h"
#include "requests.h"
#include "search_options.h"

/* A search to start: the options as `bosch search` takes them (search/search_options.h), so the
 * explorer runs exactly the search the command line would with the same options. */
typedef struct {
    search_opts opts;
} worker_search_req;

/* What only the UI has, for a workspace save (UI_CMD_WORKSPACE with EX_IO_WORKSPACE_SAVE): the
 * undo ring (ring[(head + i) % cap] for i < n, oldest first), the cursor, follow / edited. */
typedef struct {
    const ex_mask *ring;
    int cap, head, n;
    int cur_layer, cur_head, follow, edited;
} ui_cmd_ws;

/* A job and its arguments. Pointers point into the ui_state (valid until its next change). */
typedef struct {
    ui_cmd_kind kind;
    worker_search_req req; /* UI_CMD_START_SEARCH */
    const ex_mask *mask;   /* the working mask (HELDOUT, ASK, ATTN, IO exports of the mask, jobs of
                              ui_act_job); NULL: none */
    int sample;            /* UI_CMD_ASK, UI_CMD_ATTN */
    int servable;          /* UI_CMD_HELDOUT: score the mask's servable projection */
    ex_io_kind io;         /* UI_CMD_IO, UI_CMD_WORKSPACE */
    const char *path;      /* UI_CMD_IO, UI_CMD_COMPARE_OPEN (the folder), UI_CMD_WORKSPACE */
    double ratio;          /* UI_CMD_COMPARE_OPEN: the ratio wanted */
    int row;               /* UI_CMD_COMPARE_MASK */
    int layer, kv_head;    /* UI_CMD_ATTN and ui_act_job's jobs: the cursor's head */
    int split;             /* UI_CMD_ATTN: 0 calibration, 1 held-out */
    ui_cmd_ws ws;          /* UI_CMD_WORKSPACE (save) */
    int pin_method;        /* UI_CMD_PIN: 1: pin the baseline named by path, cut at ratio (the
                              worker makes its mask); 0: pin `pinned` */
    const ex_mask *pinned; /* UI_CMD_PIN: the pinned mask (mask: the working one) */
} ui_cmd;

#endif
