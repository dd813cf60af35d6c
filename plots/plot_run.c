/* plot_run.c — running gnuplot on a written script and keeping what it draws (plot_script.h):
 * gnuplot's image comes on its stdout (the script says `set output`, no file), its messages on
 * stderr; both are read through pipes with poll(), so gnuplot never writes a file itself and every
 * file here is written atomically (csv_write_bytes). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "csvio.h"
#include "plot_script.h"
#include "plots.h"

extern char **environ;

#define RUN_MAX_BYTES (64u << 20) /* more output than any of our figures makes: refused */
#define RUN_TIMEOUT_S 120.0

typedef struct {
    char *buf;
    size_t n, cap;
} bytes;

static int bytes_add(bytes *b, const char *p, size_t k) {
    if (b->n + k > RUN_MAX_BYTES) return -1;
    if (b->n + k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + k + 1) cap *= 2;
        char *q = realloc(b->buf, cap);
        if (!q) return -1;
        b->buf = q, b->cap = cap;
    }
    memcpy(b->buf + b->n, p, k);
    b->n += k;
    b->buf[b->n] = '\0';
    return 0;
}

/* Read fds[0] into out and fds[1] into msg until both close, the output grows past its limit or
 * the time runs out. 0, or -1. */
static int drain(int fds[2], bytes *out, bytes *msg) {
    double t_end = base_now_s() + RUN_TIMEOUT_S;
    int open_n = 2;
    while (open_n > 0) {
        struct pollfd pf[2] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLIN}};
        int left_ms = (int)((t_end - base_now_s()) * 1e3);
        if (left_ms <= 0) return -1;
        int r = poll(pf, 2, left_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[65536];
            ssize_t k = read(fds[i], chunk, sizeof chunk);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                close(fds[i]);
                fds[i] = -1;
                open_n--;
            } else if (bytes_add(i == 0 ? out : msg, chunk, (size_t)k)) {
                return -1;
            }
        }
    }
    return 0;
}

/* Run `gnuplot -e "term='TERM'" script`; its stdout into out. 0, or -1 with a message. */
static int run_gnuplot(const char *gnuplot, const char *term, const char *script, bytes *out, char *err,
                       size_t errlen) {
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        snprintf(err, errlen, "%s: cannot make a pipe for gnuplot: %s", script, strerror(errno));
        for (int i = 0; i < 2; i++) po[i] >= 0 ? close(po[i]) : 0, pe[i] >= 0 ? close(pe[i]) : 0;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    char e_arg[64];
    snprintf(e_arg, sizeof e_arg, "term='%s'", term);
    char *argv[] = {(char *)gnuplot, "-e", e_arg, (char *)script, NULL};
    /* gnuplot starts with no signal blocked: a stopping command (app/cli_stop.c) blocks SIGINT,
     * SIGTERM and SIGHUP in this thread, and a child would inherit that */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int sp = posix_spawn(&pid, gnuplot, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    if (sp != 0) {
        snprintf(err, errlen, "%s: cannot run %s: %s", script, gnuplot, strerror(sp));
        close(po[0]), close(pe[0]);
        return -1;
    }
    bytes msg = {0};
    int fds[2] = {po[0], pe[0]};
    int dr = drain(fds, out, &msg);
    if (dr) kill(pid, SIGKILL);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) close(fds[i]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int ok = !dr && WIFEXITED(st) && WEXITSTATUS(st) == 0 && out->n > 0;
    if (!ok) {
        const char *m = msg.buf ? msg.buf : "";
        while (*m == '\n' || *m == ' ') m++;
        size_t len = strcspn(m, "\n");
        snprintf(err, errlen, "%s: gnuplot (term %s) %s%s%.*s", script, term,
                 dr                     ? "took too long or wrote too much"
                 : !WIFEXITED(st)       ? "was killed"
                 : WEXITSTATUS(st) != 0 ? "failed"
                                        : "drew nothing",
                 len ? ": " : "", (int)(len > 200 ? 200 : len), m);
    }
    free(msg.buf);
    return ok ? 0 : -1;
}

int plot_render(const plot_script *s, const char *base, const char *gnuplot, char *err, size_t errlen) {
    char path[4200];
    if (s->oom || !s->buf) {
        snprintf(err, errlen, "%s.gp: out of memory", base);
        return PLOTS_ERROR;
    }
    snprintf(path, sizeof path, "%s.gp", base);
    if (csv_write_text(path, s->buf, err, errlen)) return PLOTS_ERROR;
    if (!gnuplot || !*gnuplot || access(gnuplot, X_OK) != 0) {
        snprintf(err, errlen, "gnuplot not found: wrote %s but no PNG or SVG (install gnuplot-nox)", path);
        return PLOTS_NO_GNUPLOT;
    }
    static const char *const terms[] = {"png", "svg"};
    for (int t = 0; t < 2; t++) {
        bytes out = {0};
        char img[4200];
        snprintf(img, sizeof img, "%s.%s", base, terms[t]);
        int rc = run_gnuplot(gnuplot, terms[t], path, &out, err, errlen);
        if (rc == 0) rc = csv_write_bytes(img, out.buf, out.n, err, errlen);
        free(out.buf);
        if (rc) return PLOTS_ERROR;
    }
    return PLOTS_OK;
}

int plot_finish(plot_script *s, const char *dir, const char *name, const char *gnuplot, char *err,
                size_t errlen) {
    char base[4200];
    snprintf(base, sizeof base, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    int rc = plot_render(s, base, gnuplot, err, errlen);
    plot_script_free(s);
    return rc;
}
