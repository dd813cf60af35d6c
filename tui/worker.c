/* worker.c — the explorer's worker thread, the hub: the job queue, the main loop that runs the
 * jobs of the table (requests.h UI_JOBS) between search steps, start and stop (see worker.h). The
 * jobs live in worker_*.c; publishing in worker_publish.c. */
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

#include "outlock.h"
#include "worker_internal.h"

/* ------------------------------------------------------------------ thread */

/* The jobs of the table (requests.h UI_JOBS), by kind. */
static void (*const jobs[UI_CMD_N_JOBS])(worker *w, const wcmd *c) = {
#define JOB_ROW(id, job, on_queued) [UI_CMD_##id] = job,
    UI_JOBS(JOB_ROW)
#undef JOB_ROW
};

/* Free everything the jobs made (the rankings before the search and the evaluators, the backend
 * after every evaluator made with it). */
static void free_all(worker *w) {
    worker_attn_free(w);
    worker_pin_free(w);
    worker_job_free_search(w);
    evaluator_free(w->heldout_ev);
    w->heldout_ev = NULL;
    probe_set_free(&w->heldout);
    backend_free(w->dev);
    w->dev = NULL;
    model_free(w->m);
    w->m = NULL;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    int loaded = worker_job_load(w) == 0;
    if (loaded && w->opts.workspace_dir) { /* `bosch --workspace DIR` */
        wcmd *c = calloc(1, sizeof *c);
        if (c) {
            c->kind = UI_CMD_WORKSPACE;
            c->io = EX_IO_WORKSPACE_OPEN;
            snprintf(c->path, sizeof c->path, "%s", w->opts.workspace_dir);
            worker_job_workspace(w, c);
            free(c);
        }
    }
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->quit && w->q_n == 0 && !(loaded && w->search && w->stepping && !w->search_done) &&
               !(loaded && worker_attn_rank_pending(w)) && !(loaded && worker_pin_pending(w)))
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit) { /* exports asked for before the quit are still written: they are the user's */
            while (w->q_n > 0) {
                wcmd c = w->queue[w->q_head];
                w->q_head = (w->q_head + 1) % WORKER_QUEUE;
                w->q_n--;
                if (!loaded || c.kind != UI_CMD_IO || c.io == EX_IO_LOAD_MASK || c.io == EX_IO_PIN_MASK)
                    continue;
                pthread_mutex_unlock(&w->mu);
                worker_job_io(w, &c);
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
            if (loaded && c.kind > UI_CMD_NONE && c.kind < UI_CMD_N_JOBS) jobs[c.kind](w, &c);
            continue; /* commands first: a pause queued during a step wins over the next step */
        }
        int searching = w->search && w->stepping && !w->search_done;
        if (worker_pin_pending(w) && (!searching || (w->pin_turn = !w->pin_turn))) {
            worker_pin_step(w); /* the comparison shares the thread with the search, turn about */
            continue;
        }
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
            worker_set_phase(w, EX_PAUSED);
        } else if (rc == 1) {
            w->search_done = 1;
            worker_set_phase(w, EX_DONE);
        }
    }
    free_all(w);
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
    outlock_release(w->ws_lock);
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

/* Queue c (UI thread; mu taken here). 0, or -1 when the queue is full (logged). */
static int enqueue(worker *w, const wcmd *c) {
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

int worker_submit(worker *w, const ui_cmd *c) {
    if (c->kind <= UI_CMD_NONE || c->kind >= UI_CMD_N_JOBS) return -1;
    if (c->kind == UI_CMD_WORKSPACE && c->io == EX_IO_WORKSPACE_SAVE && worker_workspace_stage(w, c) != 0)
        return -1;
    wcmd *q = &w->cmd_scratch; /* UI thread only: one caller at a time */
    memset(q, 0, sizeof *q);
    q->kind = c->kind;
    q->req = c->req;
    if (c->mask) q->mask = *c->mask;
    q->sample = c->sample, q->servable = c->servable, q->io = c->io;
    if (c->path) snprintf(q->path, sizeof q->path, "%s", c->path);
    q->ratio = c->ratio, q->row = c->row, q->layer = c->layer, q->kv_head = c->kv_head, q->split = c->split;
    q->pin_method = c->pin_method;
    if (c->pinned) q->pinned = *c->pinned;
    return enqueue(w, q);
}

int worker_compare_rows(worker *w, compare_row *dst, int cap) {
    pthread_mutex_lock(&w->mu);
    int n = w->cmp_n < cap ? w->cmp_n : cap;
    if (n > 0) memcpy(dst, w->cmp_rows, (size_t)n * sizeof *dst);
    pthread_mutex_unlock(&w->mu);
    return n;
}
