/* explorer.c — the explorer's UI thread: terminal set-up and restore, signals, the poll() loop
 * over stdin and the worker's wake-up pipe, and the frame drawing order (see explorer.h).
 * Signal handlers only set flags (or, for fatal signals, put the terminal back and re-raise). */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "explorer.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "explorer_ui.h"
#include "ui_stats.h"
#include "worker.h"
#include "clock.h"
#include "gguf.h"
#include "term_check.h"

/* Signal state: the only file-scope mutable state, as signal handlers need it. */
static volatile sig_atomic_t sig_quit;   /* SIGTERM, SIGHUP, SIGQUIT: leave now */
static volatile sig_atomic_t sig_int;    /* SIGINT: ask first when a search is unsaved */
static volatile sig_atomic_t sig_resize; /* SIGWINCH */
static volatile sig_atomic_t curses_on;
static struct termios saved_tio;
static int have_tio;

static void on_signal(int sig) {
    if (sig == SIGWINCH)
        sig_resize = 1;
    else if (sig == SIGINT)
        sig_int = 1;
    else
        sig_quit = 1;
}

/* Fatal signals: reset attributes, show the cursor, leave the alternate screen and restore the
 * terminal modes with async-signal-safe calls only; then die by the same signal, except a bus error
 * in the mapped model (it shrank while in use, engine/gguf.h gguf_mapping_path): that one says so,
 * naming the file, and exits 1. */
static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (curses_on) {
        static const char seq[] = "\033[0m\033[?25h\033[?1049l\r\n";
        ssize_t r = write(STDOUT_FILENO, seq, sizeof seq - 1);
        (void)r;
        if (have_tio) tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    }
    if (sig == SIGBUS && si) gguf_bus_error_exit(si->si_addr, ""); /* returns unless the model's */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void restore_at_exit(void) {
    if (curses_on) {
        endwin();
        curses_on = 0;
    }
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns EINTR and the loop looks at the flags */
    const int soft[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
    for (size_t i = 0; i < sizeof soft / sizeof soft[0]; i++) sigaction(soft[i], &sa, NULL);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_SIGINFO;
    const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) sigaction(fatal[i], &sa, NULL);
}

/* The colour pairs: the palette's (blue-red, or blue-orange for colour-blind eyes: orange is
 * xterm colour 208 on 256-colour terminals, yellow on 8), then the config file's own choices
 * (colours the terminal lacks keep the palette's). */
static void init_colors(ui_state *u, const explorer_opts *opts, const ui_config *cfg) {
    if (opts->mono || !has_colors()) return;
    start_color();
    use_default_colors();
    const int wide = COLORS >= 256, orange = cfg->palette == UI_PALETTE_BLUE_ORANGE;
    const int swa = orange ? (wide ? 208 : COLOR_YELLOW) : COLOR_RED;
    short pal[UI_N_PARTS][2] = {
        [PAIR_FULL - 1] = {orange && wide ? 33 : COLOR_BLUE, -1},
        [PAIR_SWA - 1] = {(short)swa, -1},
        [PAIR_PROBE - 1] = {orange ? COLOR_MAGENTA : COLOR_YELLOW, -1},
        [PAIR_TITLE - 1] = {COLOR_BLACK, COLOR_CYAN},
        [PAIR_GOOD - 1] = {orange ? (wide ? 39 : COLOR_CYAN) : COLOR_GREEN, -1},
        [PAIR_BAD - 1] = {(short)swa, -1},
        [PAIR_DIM - 1] = {wide ? 245 : COLOR_CYAN, -1},
        [PAIR_ACCENT - 1] = {COLOR_YELLOW, -1},
    };
    for (int i = 0; i < UI_N_PARTS; i++) {
        const ui_colour *c = &cfg->colour[i];
        if (c->set && c->fg < COLORS && c->bg < COLORS) pal[i][0] = (short)c->fg, pal[i][1] = (short)c->bg;
        init_pair((short)(i + 1), pal[i][0], pal[i][1]);
    }
    u->color = 1;
}

static void draw_loading(ui_state *u) {
    lay_rect r = u->lay.panel[LAY_GRID];
    const ex_snapshot *s = &u->snap;
    draw_panel_title(&r, u, s->phase == EX_FAILED ? "Model" : "Loading");
    if (s->phase == EX_FAILED) {
        draw_text(r.y + 2, r.x + 1, r.w - 1, ui_attr(u, PAIR_BAD, A_BOLD) | A_BOLD, "cannot load the model:");
        draw_wrap(r.y + 3, r.x + 1, r.w - 2, r.h - 4, A_NORMAL, s->status);
        draw_text(r.y + r.h - 1, r.x + 1, r.w - 1, A_BOLD, "q quits");
    } else {
        draw_text(r.y + 2, r.x + 1, r.w - 1, A_BOLD, "loading the model...");
        draw_wrap(r.y + 3, r.x + 1, r.w - 2, 4, A_NORMAL, s->model_path);
    }
}

static void draw_frame(ui_state *u) {
    erase();
    getmaxyx(stdscr, u->rows, u->cols);
    const ex_snapshot *s = &u->snap;
    layout_input in = {.rows = u->rows,
                       .cols = u->cols,
                       .n_layer = u->have_model ? s->hp.n_layer : 30,
                       .n_head_kv = u->have_model ? s->hp.n_head_kv : 3,
                       .group = u->have_model && s->hp.n_head_kv ? s->hp.n_head / s->hp.n_head_kv : 3,
                       .query_view = u->query_view};
    if (!layout_compute(&in, &u->lay)) {
        draw_too_small(u);
        refresh();
        return;
    }
    draw_title(u);
    if (u->have_model)
        draw_grid(u);
    else
        draw_loading(u);
    lay_rect g = u->lay.panel[LAY_GRID];
    const ui_glyphs *gl = ui_glyphs_get(u->utf8);
    attron(ui_attr(u, PAIR_DIM, A_NORMAL));
    for (int y = g.y; y < g.y + g.h; y++) mvaddstr(y, g.x + g.w, gl->vline);
    attroff(ui_attr(u, PAIR_DIM, A_NORMAL));
    draw_stage(u);
    draw_score(u);
    draw_mask(u);
    if (u->pin_view && u->have_model) {
        draw_pin(u);
    } else {
        draw_teach(u);
        draw_log(u);
    }
    draw_footer(u);
    draw_dialogs(u);
    refresh();
}

static void handle_resize(void) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resizeterm(ws.ws_row, ws.ws_col);
}

static void ui_free(ui_state *u) {
    if (!u) return;
    free(u->cmp_rows);
    free(u->undo);
    free(u);
}

/* The UI state with its undo ring, before the worker starts; NULL when out of memory. */
static ui_state *ui_create(const explorer_opts *opts) {
    ui_state *u = calloc(1, sizeof *u);
    ex_mask *undo = calloc(UI_UNDO, sizeof *undo);
    if (!u || !undo) {
        free(u);
        free(undo);
        return NULL;
    }
    u->undo = undo;
    const char *cs = nl_langinfo(CODESET);
    u->utf8 = !opts->ascii && cs && !strcmp(cs, "UTF-8");
    u->follow = 1;
    u->saved_evals = -1;
    u->ctx_tokens = opts->ctx_tokens;
    u->kv_elem = attn_kv_elem_bytes((attn_kv_type)opts->kv_type);
    ui_form_init(u); /* ratio 0.5, the demo preset */
    if (opts->export_dir && opts->export_dir[0] == '/' && strlen(opts->export_dir) < sizeof u->export_dir)
        snprintf(u->export_dir, sizeof u->export_dir, "%s", opts->export_dir);
    return u;
}

/* curses on the terminal: modes, colours, the restore at exit. NULL when it cannot start. */
static SCREEN *terminal_start(ui_state *u, const explorer_opts *opts, const ui_config *cfg) {
    have_tio = tcgetattr(STDIN_FILENO, &saved_tio) == 0;
    install_signals();
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) return NULL;
    curses_on = 1;
    atexit(restore_at_exit);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    init_colors(u, opts, cfg);
    if (cfg->mouse) { /* presses, not clicks: no wait for the release; the wheel is buttons 4 and 5 */
        mouseinterval(0);
        mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    }
    return scr;
}

/* The keys waiting on stdin. 0, or -1 when the terminal is gone (hang-up without a key). */
static int read_keys(ui_state *u, short revents) {
    int ch, got = 0;
    while ((ch = getch()) != ERR) {
        got = 1;
        if (ch == KEY_RESIZE) continue;
        ui_handle_key(u, ch);
        if (u->quit) break;
    }
    return !got && (revents & (POLLHUP | POLLERR | POLLNVAL)) ? -1 : 0;
}

/* The poll() loop over stdin and the worker's pipe until a quit, a signal to leave or a lost
 * terminal. stats (or NULL) gets the UI thread's busy time per wake-up. */
static void run_loop(ui_state *u, ui_stats *stats) {
    double t_wake = -1,
           cpu_wake = 0; /* when poll() last returned (-1: not yet), the thread's CPU time then */
    int dirty = 1;
    while (!u->quit && !sig_quit) {
        if (sig_int) {
            sig_int = 0;
            if (u->mode == UI_CONFIRM_QUIT)
                u->quit = 1;
            else
                ui_request_quit(u);
            dirty = 1;
            continue;
        }
        if (sig_resize) {
            sig_resize = 0;
            handle_resize();
            dirty = 1;
        }
        if (dirty) draw_frame(u);
        dirty = 0;
        struct pollfd pf[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                               {.fd = worker_wake_fd(u->w), .events = POLLIN}};
        if (stats && t_wake >= 0)
            ui_stats_add(stats, (base_now_s() - t_wake) * 1e3, (base_thread_cpu_s() - cpu_wake) * 1e3);
        int n = poll(pf, 2, 100);
        t_wake = base_now_s();
        if (stats) cpu_wake = base_thread_cpu_s();
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (n == 0) { /* tick: spinner, message expiry */
            dirty = 1;
            continue;
        }
        if (pf[1].revents & POLLIN) {
            worker_drain(u->w);
            ui_on_snapshot(u);
            dirty = 1;
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
            if (read_keys(u, pf[0].revents) != 0) break; /* terminal gone */
            dirty = 1;
        }
    }
}

int explorer_run(const explorer_opts *opts) {
    setlocale(LC_ALL, "");
    ui_config cfg;
    char err[512] = "";
    if (ui_config_parse(&cfg, opts->config_path ? opts->config_path : "explorer.conf",
                        opts->config_text ? opts->config_text : "", err, sizeof err)) {
        fprintf(stderr, "bosch: %s\n", err);
        return 2;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr,
                "bosch: the explorer needs a terminal; for headless runs use a subcommand (bosch --help)\n");
        return 1;
    }
    if (term_check_usable(opts->term, err, sizeof err)) {
        fprintf(stderr, "bosch: %s\n", err);
        return 1;
    }
    ui_state *u = ui_create(opts);
    if (!u) {
        fprintf(stderr, "bosch: out of memory\n");
        return 1;
    }
    u->palette = cfg.palette;
    memcpy(u->binds, cfg.binds, sizeof cfg.binds);
    u->n_binds = cfg.n_binds;
    if (worker_start(&u->w, opts, err, sizeof err) != 0) {
        fprintf(stderr, "bosch: %s\n", err);
        ui_free(u);
        return 1;
    }
    SCREEN *scr = terminal_start(u, opts, &cfg);
    if (!scr) {
        fprintf(stderr, "bosch: cannot initialise the terminal (TERM=%s)\n", opts->term ? opts->term : "");
        worker_stop(u->w);
        ui_free(u);
        return 1;
    }
    ui_stats *stats = opts->ui_stats_path ? calloc(1, sizeof *stats) : NULL;
    run_loop(u, stats);
    /* Quit, SIGTERM, SIGHUP, SIGQUIT and a lost terminal all end here: the terminal first, then
     * the worker is cancelled and joined before anything is freed or the process exits. */
    endwin();
    curses_on = 0;
    delscreen(scr);
    worker_stop(u->w);
    u->w = NULL;
    if (stats) {
        if (ui_stats_write(stats, opts->ui_stats_path, err, sizeof err) != 0)
            fprintf(stderr, "bosch: %s\n", err);
        free(stats);
    }
    int failed = u->snap.phase == EX_FAILED;
    if (failed) fprintf(stderr, "bosch: %s\n", u->snap.status);
    if (u->snap.have_search && ui_search_unsaved(u))
        fprintf(stderr, "bosch: left a search of %ld evaluations unsaved\n", u->snap.n_evals);
    ui_free(u);
    return failed ? 1 : 0;
}
