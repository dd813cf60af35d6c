/* worker_publish.c — how the worker thread tells the UI (worker_internal.h): publish the snapshot
 * (bump its seq, write a wake-up byte), the event log, the busy line, the phase, a file job's
 * result and a job's reply. Every job file calls these; they call no other worker file. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "search_methods.h"
#include "worker_internal.h"

void worker_publish_locked(worker *w) {
    w->snap.seq++;
    char b = 1;
    ssize_t r = write(w->pipe_w, &b, 1); /* non-blocking: a full pipe already means "wake up" */
    (void)r;
}

static void log_vlocked(worker *w, const char *fmt, va_list ap) {
    char *line = w->snap.log[w->snap.log_n % EX_LOG];
    vsnprintf(line, EX_LINE, fmt, ap);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    w->snap.log_n++;
}

void worker_log_locked(worker *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vlocked(w, fmt, ap);
    va_end(ap);
}

void worker_log(worker *w, const char *fmt, ...) {
    pthread_mutex_lock(&w->mu);
    va_list ap;
    va_start(ap, fmt);
    log_vlocked(w, fmt, ap);
    va_end(ap);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void worker_set_busy(worker *w, const char *what) {
    pthread_mutex_lock(&w->mu);
    w->snap.busy = what != NULL;
    snprintf(w->snap.busy_what, sizeof w->snap.busy_what, "%s", what ? what : "");
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void worker_set_phase(worker *w, ex_phase ph) {
    pthread_mutex_lock(&w->mu);
    w->snap.phase = ph;
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void worker_io_publish(worker *w, ex_io *res, const char *log) {
    pthread_mutex_lock(&w->mu);
    res->seq = w->snap.io.seq + 1;
    w->snap.io = *res;
    if (log) worker_log_locked(w, "%s", log);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void worker_reply_publish(worker *w, ui_cmd_kind kind, ex_reply *r, const char *log) {
    if (kind <= UI_CMD_NONE || kind >= UI_CMD_N_JOBS) return;
    pthread_mutex_lock(&w->mu);
    r->seq = w->snap.reply[kind].seq + 1;
    w->snap.reply[kind] = *r;
    if (log) worker_log_locked(w, "%s", log);
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void worker_heat_publish_locked(worker *w) {
    ex_snapshot *s = &w->snap;
    const int L = s->hp.n_layer < EX_MAX_LAYERS ? s->hp.n_layer : EX_MAX_LAYERS;
    const int H = s->hp.n_head_kv < EX_MAX_KV ? s->hp.n_head_kv : EX_MAX_KV;
    for (int k = 0; k < ex_n_heat(); k++) {
        const double *v =
            w->search ? search_head_ranking(w->search, search_method_find(ex_heat_name(k))) : NULL;
        int src = EX_HEAT_SEARCH, measured = 0;
        for (int u = 0; v && u < L * H; u++) measured += isfinite(v[u]);
        const int j = ex_heat_rank(k);
        if ((!v || !measured) && j >= 0 && w->rk_imp[j]) /* none measured by the search yet */
            v = w->rk_imp[j], src = EX_HEAT_RANKINGS;
        s->heat_src[k] = v ? src : EX_HEAT_NONE;
        for (int u = 0; v && u < L * H; u++) s->heat[k][u] = (float)v[u];
    }
}
