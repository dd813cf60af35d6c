/* worker_control.c — the search control jobs on the worker thread (requests.h UI_JOBS): start a
 * search (replacing any previous one), pause, resume, one step then paused. They run between two
 * search steps, so a pause takes effect after the evaluation in progress. */
#define _GNU_SOURCE
#include <stdio.h>

#include "worker_internal.h"

void worker_job_start(worker *w, const wcmd *c) {
    if (worker_job_prepare_search(w, &c->req) == 0) {
        w->stepping = 1;
        w->search_done = 0;
        worker_set_phase(w, EX_RUNNING);
    } else {
        worker_set_phase(w, EX_READY);
    }
}

void worker_job_pause(worker *w, const wcmd *c) {
    (void)c;
    if (w->search && !w->search_done && w->stepping) {
        w->stepping = 0;
        search_notify_paused(w->search, 1);
        worker_set_phase(w, EX_PAUSED);
    }
}

void worker_job_resume(worker *w, const wcmd *c) {
    (void)c;
    if (w->search && !w->search_done && !w->stepping) {
        w->stepping = 1;
        search_notify_paused(w->search, 0);
        worker_set_phase(w, EX_RUNNING);
    }
}

void worker_job_step(worker *w, const wcmd *c) {
    (void)c;
    if (!w->search || w->search_done) return;
    if (w->stepping) {
        w->stepping = 0;
        search_notify_paused(w->search, 1);
    }
    char err[512] = "";
    int rc = search_step(w->search, err, sizeof err);
    if (rc == SEARCH_CANCELLED) return; /* quitting: nothing recorded, nothing to show */
    if (rc < 0) worker_log(w, "step failed: %s", err);
    if (rc == 1) w->search_done = 1;
    worker_set_phase(w, w->search_done ? EX_DONE : EX_PAUSED);
}
