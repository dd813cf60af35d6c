/* worker.c — the explorer's worker thread: command queue, main loop, snapshot publishing (see
 * worker.h). Engine work lives in worker_jobs.c, search events in worker_events.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker_internal.h"

/* ------------------------------------------------------------------ publishing (mu held) */

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

/* ------------------------------------------------------------------ thread */

static void set_phase(worker *w, ex_phase ph) {
    pthread_mutex_lock(&w->mu);
    w->snap.phase = ph;
    worker_publish_locked(w);
    pthread_mutex_unlock(&w->mu);
}

static void handle(worker *w, const wcmd *c) {
    switch (c->kind) {
    case WCMD_START:
        if (worker_job_prepare_search(w, &c->req) == 0) {
            w->stepping = 1;
            w->search_done = 0;
            set_phase(w, EX_RUNNING);
        } else {
            set_phase(w, EX_READY);
        }
        break;
    case WCMD_PAUSE:
        if (w->search && !w->search_done && w->stepping) {
            w->stepping = 0;
            search_notify_paused(w->search, 1);
            set_phase(w, EX_PAUSED);
        }
        break;
    case WCMD_RESUME:
        if (w->search && !w->search_done && !w->stepping) {
            w->stepping = 1;
            search_notify_paused(w->search, 0);
            set_phase(w, EX_RUNNING);
        }
        break;
    case WCMD_STEP:
        if (w->search && !w->search_done) {
            if (w->stepping) {
                w->stepping = 0;
                search_notify_paused(w->search, 1);
            }
            char err[512] = "";
            int rc = search_step(w->search, err, sizeof err);
            if (rc == SEARCH_CANCELLED) break; /* quitting: nothing recorded, nothing to show */
            if (rc < 0) worker_log(w, "step failed: %s", err);
            if (rc == 1) w->search_done = 1;
            set_phase(w, w->search_done ? EX_DONE : EX_PAUSED);
        }
        break;
    case WCMD_HELDOUT:
        worker_job_heldout(w, &c->mask, c->servable);
        break;
    case WCMD_ASK:
        worker_job_ask(w, &c->mask, c->sample);
        break;
    case WCMD_IO:
        worker_job_io(w, c->io, c->path, &c->mask);
        break;
    case WCMD_COMPARE:
        worker_job_compare(w, c);
        break;
    case WCMD_ATTN:
        worker_job_attn(w, c);
        break;
    case WCMD_WORKSPACE:
        worker_job_workspace(w, c);
        break;
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    int loaded = worker_job_load(w) == 0;
    if (loaded && w->opts.workspace_dir) { /* `bosch --workspace DIR` */
        wcmd *c = calloc(1, sizeof *c);
        if (c) {
            c->kind = WCMD_WORKSPACE;
            c->io = EX_IO_WORKSPACE_OPEN;
            snprintf(c->path, sizeof c->path, "%s", w->opts.workspace_dir);
            worker_job_workspace(w, c);
            free(c);
        }
    }
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->quit && w->q_n == 0 && !(loaded && w->search && w->stepping && !w->search_done) &&
               !(loaded && worker_attn_rank_pending(w)))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit) { /* exports asked for before the quit are still written: they are the user's */
            while (w->q_n > 0) {
                wcmd c = w->queue[w->q_head];
                w->q_head = (w->q_head + 1) % WORKER_QUEUE;
                w->q_n--;
                if (!loaded || c.kind != WCMD_IO || c.io == EX_IO_LOAD_MASK) continue;
                pthread_mutex_unlock(&w->mu);
                worker_job_io(w, c.io, c.path, &c.mask);
                pthread_mutex_lock(&w->mu);
            }
            pthread_mutex_unlock(&w->mu);
            break;
        }
        wcmd c;
        int have = 0;
        if (w->q_n > 0) {
            c = w->queue[w->q_head];
            w->q_head = (w->q_head + 1) % WORKER_QUEUE;
            w->q_n--;
            have = 1;
        }
        pthread_mutex_unlock(&w->mu);
        if (have) {
            if (loaded) handle(w, &c);
            continue; /* commands first: a pause queued during a step wins over the next step */
        }
        int searching = w->search && w->stepping && !w->search_done;
        if (worker_attn_rank_pending(w) && (!searching || (w->rk_turn = !w->rk_turn))) {
            worker_attn_rank_step(w); /* the attention view's rankings share the thread with the search */
            continue;
        }
        char err[512] = "";
        int rc = search_step(w->search, err, sizeof err);
        if (rc == SEARCH_CANCELLED) continue; /* quitting: the loop sees w->quit */
        if (rc < 0) {
            w->stepping = 0;
            worker_log(w, "search stopped after an error (press p to retry): %s", err);
            set_phase(w, EX_PAUSED);
        } else if (rc == 1) {
            w->search_done = 1;
            set_phase(w, EX_DONE);
        }
    }
    worker_job_free_all(w);
    pthread_mutex_lock(&w->mu);
    w->done_flag = 1;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int worker_start(worker **out, const explorer_opts *opts, char *err, size_t errlen) {
    *out = NULL;
    worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "explorer: out of memory");
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "explorer: pipe: %s", strerror(errno));
        free(w);
        return -1;
    }
    w->pipe_r = fds[0];
    w->pipe_w = fds[1];
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->opts = *opts;
    w->snap.phase = EX_LOADING;
    snprintf(w->snap.model_path, sizeof w->snap.model_path, "%s", opts->model_path);
    snprintf(w->snap.status, sizeof w->snap.status, "loading %s", opts->model_path);
    worker_reset_search_snapshot_locked(w);
    /* The worker takes no asynchronous signals: they go to the UI thread, whose poll() they
     * interrupt. Faults (SIGSEGV, ...) stay unblocked so the terminal-restoring handler runs. */
    sigset_t async, old;
    sigemptyset(&async);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&async, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &async, &old);
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "explorer: cannot start the worker thread: %s", strerror(rc));
        close(fds[0]);
        close(fds[1]);
        free(w);
        return -1;
    }
    w->thread_started = 1;
    *out = w;
    return 0;
}

void worker_stop(worker *w) {
    if (!w) return;
    atomic_store(&w->cancel, 1); /* before quit: a job that sees quit has been asked to stop */
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->thread_started) pthread_join(w->thread, NULL); /* at most one layer of work, see worker.h */
    trace_rows_free(&w->trace);
    free(w->cmp_rows);
    workspace_info_free(&w->ws_ui);
    workspace_info_free(&w->ws_info);
    workspace_info_free(&w->ws_save);
    close(w->pipe_r);
    close(w->pipe_w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}

int worker_wake_fd(const worker *w) {
    return w->pipe_r;
}

void worker_drain(worker *w) {
    char buf[256];
    while (read(w->pipe_r, buf, sizeof buf) > 0) {
    }
}

void worker_snapshot(worker *w, ex_snapshot *dst) {
    pthread_mutex_lock(&w->mu);
    *dst = w->snap;
    pthread_mutex_unlock(&w->mu);
}

long worker_seq(worker *w) {
    pthread_mutex_lock(&w->mu);
    long s = w->snap.seq;
    pthread_mutex_unlock(&w->mu);
    return s;
}

int worker_enqueue(worker *w, const wcmd *c) {
    pthread_mutex_lock(&w->mu);
    int rc = -1;
    if (w->q_n < WORKER_QUEUE) {
        w->queue[(w->q_head + w->q_n) % WORKER_QUEUE] = *c;
        w->q_n++;
        rc = 0;
        pthread_cond_signal(&w->cv);
    } else {
        worker_log_locked(w, "busy: command dropped (the worker has %d waiting)", w->q_n);
        worker_publish_locked(w);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int worker_start_search(worker *w, const worker_search_req *req) {
    wcmd c = {.kind = WCMD_START, .req = *req};
    return worker_enqueue(w, &c);
}
int worker_pause(worker *w) {
    return worker_enqueue(w, &(wcmd){.kind = WCMD_PAUSE});
}
int worker_resume(worker *w) {
    return worker_enqueue(w, &(wcmd){.kind = WCMD_RESUME});
}
int worker_step(worker *w) {
    return worker_enqueue(w, &(wcmd){.kind = WCMD_STEP});
}

/* The UI thread's command scratch, cleared (UI thread only: one caller at a time). */
static wcmd *scratch(worker *w, wcmd_kind kind) {
    wcmd *c = &w->cmd_scratch;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    return c;
}

int worker_heldout(worker *w, const ex_mask *m) {
    wcmd *c = scratch(w, WCMD_HELDOUT);
    c->mask = *m;
    return worker_enqueue(w, c);
}

int worker_heldout_servable(worker *w, const ex_mask *m) {
    wcmd *c = scratch(w, WCMD_HELDOUT);
    c->mask = *m;
    c->servable = 1;
    return worker_enqueue(w, c);
}

int worker_ask(worker *w, const ex_mask *m, int sample) {
    wcmd *c = scratch(w, WCMD_ASK);
    c->mask = *m;
    c->sample = sample;
    return worker_enqueue(w, c);
}

int worker_io(worker *w, ex_io_kind kind, const char *path, const ex_mask *m) {
    wcmd *c = scratch(w, WCMD_IO);
    c->io = kind;
    snprintf(c->path, sizeof c->path, "%s", path);
    if (m) c->mask = *m;
    return worker_enqueue(w, c);
}

int worker_compare_open(worker *w, const char *dir, double ratio) {
    wcmd *c = scratch(w, WCMD_COMPARE);
    c->io = EX_IO_COMPARE_OPEN;
    snprintf(c->path, sizeof c->path, "%s", dir);
    c->ratio = ratio;
    return worker_enqueue(w, c);
}

int worker_compare_mask(worker *w, int row) {
    wcmd *c = scratch(w, WCMD_COMPARE);
    c->io = EX_IO_COMPARE_MASK;
    c->row = row;
    return worker_enqueue(w, c);
}

int worker_attn(worker *w, const ex_mask *m, int layer, int kv_head, int split, int sample) {
    wcmd *c = scratch(w, WCMD_ATTN);
    c->mask = *m;
    c->layer = layer, c->kv_head = kv_head, c->split = split, c->sample = sample;
    return worker_enqueue(w, c);
}

int worker_compare_rows(worker *w, compare_row *dst, int cap) {
    pthread_mutex_lock(&w->mu);
    int n = w->cmp_n < cap ? w->cmp_n : cap;
    if (n > 0) memcpy(dst, w->cmp_rows, (size_t)n * sizeof *dst);
    pthread_mutex_unlock(&w->mu);
    return n;
}
