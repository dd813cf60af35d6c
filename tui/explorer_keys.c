/* explorer_keys.c — what the explorer's keys do: cursor, mask edits with undo, search control,
 * held-out evaluation, ask the model, export / load CSV, dialogs; and how a new snapshot from the
 * worker updates the UI state. UI thread only; never waits for the worker. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "explorer_ui.h"
#include "probes.h"
#include "search.h"
#include "clock.h"

#define CTRL(c) ((c)&0x1f)

void ui_message(ui_state *u, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->msg, sizeof u->msg, fmt, ap);
    va_end(ap);
    u->msg_t = base_now_s();
}

int ui_search_unsaved(const ui_state *u) {
    return u->snap.have_search && u->snap.n_evals > 0 && u->saved_evals != u->snap.n_evals;
}

void ui_request_quit(ui_state *u) {
    if (ui_search_unsaved(u) && u->mode != UI_CONFIRM_QUIT)
        u->mode = UI_CONFIRM_QUIT;
    else
        u->quit = 1;
}

/* ------------------------------------------------------------------ edits */

static void push_undo(ui_state *u) {
    u->undo[(u->undo_head + u->undo_n) % UI_UNDO] = u->mask;
    if (u->undo_n < UI_UNDO)
        u->undo_n++;
    else
        u->undo_head = (u->undo_head + 1) % UI_UNDO;
}

void ui_begin_edit(ui_state *u) {
    push_undo(u);
    if (u->follow && u->snap.have_search && u->snap.phase == EX_RUNNING)
        ui_message(u, "editing: the grid stops following the search (p pauses it)");
    u->follow = 0;
    u->edited = 1;
}

static uint8_t *cell(ui_state *u, int l, int h) {
    return &u->mask.z[l * u->mask.n_head_kv + h];
}

static void toggle_head(ui_state *u) {
    ui_begin_edit(u);
    uint8_t *c = cell(u, u->cur_layer, u->cur_head);
    *c = *c == ATTN_FULL ? ATTN_SWA : ATTN_FULL;
}

static void toggle_layer(ui_state *u) {
    ui_begin_edit(u);
    int any_full = 0;
    for (int h = 0; h < u->mask.n_head_kv; h++) any_full |= *cell(u, u->cur_layer, h) == ATTN_FULL;
    for (int h = 0; h < u->mask.n_head_kv; h++) *cell(u, u->cur_layer, h) = any_full ? ATTN_SWA : ATTN_FULL;
}

/* Make layer l have exactly k SWA KV heads: keep the SWA heads it has, add from the lowest index,
 * remove from the highest. */
static void fill_layer(ui_state *u, int k) {
    int H = u->mask.n_head_kv, l = u->cur_layer, n = 0;
    if (k > H) k = H;
    ui_begin_edit(u);
    for (int h = 0; h < H; h++) n += *cell(u, l, h) == ATTN_SWA;
    for (int h = 0; h < H && n < k; h++)
        if (*cell(u, l, h) == ATTN_FULL) {
            *cell(u, l, h) = ATTN_SWA;
            n++;
        }
    for (int h = H - 1; h >= 0 && n > k; h--)
        if (*cell(u, l, h) == ATTN_SWA) {
            *cell(u, l, h) = ATTN_FULL;
            n--;
        }
    ui_message(u, "layer %d: %d of %d KV heads SWA (ratio %.2f)", l, k, H, (double)k / H);
}

static void undo(ui_state *u) {
    if (u->undo_n == 0) {
        ui_message(u, "nothing to undo");
        return;
    }
    u->undo_n--;
    u->mask = u->undo[(u->undo_head + u->undo_n) % UI_UNDO];
    u->follow = 0;
    u->edited = 1;
    ui_message(u, "undone (%d more)", u->undo_n);
}

/* ------------------------------------------------------------------ files */

static void default_path(ui_state *u, prompt_kind k) {
    static const char *const names[] = {"bosch-mask.csv", "bosch-trace.csv", "bosch-layers.csv",
                                        "bosch-mask.csv", "runs/compare"};
    const char *p = k == PROMPT_LOAD_MASK && u->last_path[0]   ? u->last_path
                    : k == PROMPT_COMPARE_DIR && u->cmp_dir[0] ? u->cmp_dir
                                                               : names[k];
    snprintf(u->input, sizeof u->input, "%s", p);
    u->input_len = (int)strlen(u->input);
    u->prompt = k;
    u->mode = UI_PROMPT;
    u->prompt_refused = 0;
}

/* The prompt's Enter: the file work goes to the worker (worker_io); its result comes back in the
 * snapshot (ui_on_snapshot). The compare folder is read here (two small files, see
 * explorer_compare.c). */
static void run_prompt(ui_state *u) {
    const char *path = u->input;
    u->mode = UI_NORMAL;
    if (!path[0]) {
        ui_message(u, "no file name given");
        return;
    }
    if (u->prompt == PROMPT_COMPARE_DIR) {
        ui_compare_open(u, path);
        return;
    }
    static const ex_io_kind kinds[] = {[PROMPT_EXPORT_MASK] = EX_IO_EXPORT_MASK,
                                       [PROMPT_EXPORT_TRACE] = EX_IO_EXPORT_TRACE,
                                       [PROMPT_EXPORT_LAYERS] = EX_IO_EXPORT_LAYERS,
                                       [PROMPT_LOAD_MASK] = EX_IO_LOAD_MASK};
    ex_io_kind k = kinds[u->prompt];
    if (worker_io(u->w, k, path, k == EX_IO_EXPORT_MASK ? &u->mask : NULL) != 0) return; /* busy: logged */
    u->io_req_evals = u->snap.n_evals;
    ui_message(u, "%s %s...", k == EX_IO_LOAD_MASK ? "reading" : "writing", path);
}

/* A file job's result (snapshot io): show it; a load becomes the working mask; a refused path
 * opens the prompt again with it, so the user can correct it. */
static void on_io_result(ui_state *u) {
    const ex_io *r = &u->snap.io;
    ui_message(u, "%s", r->msg);
    if (r->ok) {
        snprintf(u->last_path, sizeof u->last_path, "%s", r->path);
        if (r->kind == EX_IO_LOAD_MASK) {
            ui_begin_edit(u);
            u->mask = r->mask;
        } else if (u->snap.have_search) {
            u->saved_evals = r->kind == EX_IO_EXPORT_TRACE ? r->n_evals : u->io_req_evals;
        }
        return;
    }
    if (r->path_refused && u->mode == UI_NORMAL) {
        static const prompt_kind back[] = {[EX_IO_EXPORT_MASK] = PROMPT_EXPORT_MASK,
                                           [EX_IO_EXPORT_TRACE] = PROMPT_EXPORT_TRACE,
                                           [EX_IO_EXPORT_LAYERS] = PROMPT_EXPORT_LAYERS,
                                           [EX_IO_LOAD_MASK] = PROMPT_LOAD_MASK};
        u->prompt = back[r->kind];
        snprintf(u->input, sizeof u->input, "%s", r->path);
        u->input_len = (int)strlen(u->input);
        u->mode = UI_PROMPT;
        u->prompt_refused = 1;
    }
}

static void prompt_key(ui_state *u, int ch) {
    u->prompt_refused = 0;
    if (ch == 27) {
        u->mode = UI_NORMAL;
    } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        run_prompt(u);
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (u->input_len > 0) u->input[--u->input_len] = '\0';
    } else if (ch == CTRL('u')) {
        u->input_len = 0;
        u->input[0] = '\0';
    } else if (ch >= 32 && ch < 256 && ch != 127 && u->input_len < (int)sizeof u->input - 1) {
        u->input[u->input_len++] = (char)ch;
        u->input[u->input_len] = '\0';
    }
}

/* ------------------------------------------------------------------ search control */

static int preset_window(const ui_state *u, int preset_i) {
    search_config c;
    search_config_default(&c);
    char err[256];
    if (search_preset_apply(&c, ui_presets[preset_i], u->snap.hp.n_ctx_train, err, sizeof err) != 0)
        return PROBE_DEFAULT_WINDOW;
    return c.window;
}

static void start_key(ui_state *u, int ch) {
    if (ch == 27) {
        u->mode = UI_NORMAL;
        return;
    }
    if (ch == KEY_UP || ch == 'k') u->form_field = (u->form_field + 2) % 3;
    if (ch == KEY_DOWN || ch == 'j' || ch == '\t') u->form_field = (u->form_field + 1) % 3;
    int d = ch == KEY_RIGHT || ch == 'l' || ch == '+' ? 1 : ch == KEY_LEFT || ch == 'h' || ch == '-' ? -1 : 0;
    if (d && u->form_field == 0) u->form_ratio_i = (u->form_ratio_i + d + ui_n_ratios) % ui_n_ratios;
    if (d && u->form_field == 1) {
        u->form_preset_i = (u->form_preset_i + d + ui_n_presets) % ui_n_presets;
        u->form_window = preset_window(u, u->form_preset_i);
    }
    if (d && u->form_field == 2) {
        long w = d > 0 ? (long)u->form_window * 2 : u->form_window / 2;
        if (w >= 1 && w <= 1 << 20) u->form_window = (int)w;
    }
    if (u->form_field == 2 && ch >= '0' && ch <= '9') {
        long w = (long)u->form_window * 10 + (ch - '0');
        if (w <= 1 << 20) u->form_window = (int)w;
    }
    if (u->form_field == 2 && (ch == KEY_BACKSPACE || ch == 127 || ch == 8)) u->form_window /= 10;
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        if (u->form_window < 1) {
            ui_message(u, "the window must be at least 1 token");
            return;
        }
        worker_search_req req = {.ratio = ui_ratios[u->form_ratio_i], .window = u->form_window, .sinks = 0};
        snprintf(req.preset, sizeof req.preset, "%s", ui_presets[u->form_preset_i]);
        if (worker_start_search(u->w, &req) == 0) {
            if (u->edited) push_undo(u);
            u->follow = 1;
            u->edited = 0;
            u->saved_evals = -1;
            ui_message(u, "starting: ratio %.3f, preset %s, window %d", req.ratio, req.preset, req.window);
        }
        u->mode = UI_NORMAL;
    }
}

static void pause_resume(ui_state *u) {
    ex_phase ph = u->snap.phase;
    if (ph == EX_RUNNING && !u->pause_pending) {
        worker_pause(u->w);
        u->pause_pending = 1;
        ui_message(u, "pausing after the evaluation in progress...");
    } else if (ph == EX_PAUSED) {
        if (u->edited) {
            push_undo(u);
            ui_message(u, "resumed; your edited mask is on the undo stack (u)");
        } else {
            ui_message(u, "resumed");
        }
        u->follow = 1;
        u->edited = 0;
        worker_resume(u->w);
    } else if (ph == EX_DONE) {
        ui_message(u, "the search has finished; s starts a new one");
    } else if (ph == EX_PREPARING) {
        ui_message(u, "the search is being prepared");
    } else if (!u->snap.have_search) {
        ui_message(u, "no search yet: press s to start one");
    }
}

static void step_one(ui_state *u) {
    ex_phase ph = u->snap.phase;
    if (ph != EX_RUNNING && ph != EX_PAUSED) {
        ui_message(u, ph == EX_DONE ? "the search has finished" : "no search to step: press s");
        return;
    }
    if (u->edited) push_undo(u);
    u->follow = 1;
    u->edited = 0;
    worker_step(u->w);
    ui_message(u, "one evaluation...");
}

/* ------------------------------------------------------------------ keys */

static void move_cursor(ui_state *u, int dl, int dh) {
    int L = u->mask.n_layer, H = u->mask.n_head_kv;
    u->cur_layer += dl;
    u->cur_head += dh;
    if (u->cur_layer < 0) u->cur_layer = 0;
    if (u->cur_layer >= L) u->cur_layer = L - 1;
    if (u->cur_head < 0) u->cur_head = 0;
    if (u->cur_head >= H) u->cur_head = H - 1;
}

static void normal_key(ui_state *u, int ch) {
    if (ch == 'q' || ch == 'Q') {
        ui_request_quit(u);
        return;
    }
    if (ch == '?' || ch == KEY_F(1)) {
        u->mode = UI_HELP;
        return;
    }
    if (!u->have_model) {
        if (ch != ERR) ui_message(u, "the model is still loading (q quits)");
        return;
    }
    int page = u->lay.visible_layers > 1 ? u->lay.visible_layers - 1 : 1;
    switch (ch) {
    case KEY_UP:
    case 'k':
        move_cursor(u, -1, 0);
        break;
    case KEY_DOWN:
    case 'j':
        move_cursor(u, 1, 0);
        break;
    case KEY_LEFT:
    case 'h':
        move_cursor(u, 0, -1);
        break;
    case KEY_RIGHT:
    case 'l':
        move_cursor(u, 0, 1);
        break;
    case KEY_PPAGE:
        move_cursor(u, -page, 0);
        break;
    case KEY_NPAGE:
        move_cursor(u, page, 0);
        break;
    case KEY_HOME:
        move_cursor(u, -u->mask.n_layer, 0);
        break;
    case KEY_END:
        move_cursor(u, u->mask.n_layer, 0);
        break;
    case ' ':
    case 't':
        toggle_head(u);
        break;
    case 'T':
    case 'L':
        toggle_layer(u);
        break;
    case 'f':
        u->mode = UI_FILL;
        break;
    case 'u':
        undo(u);
        break;
    case 's':
        u->mode = UI_START;
        u->form_field = 0;
        if (u->form_window <= 0) u->form_window = preset_window(u, u->form_preset_i);
        break;
    case 'p':
        pause_resume(u);
        break;
    case 'n':
        step_one(u);
        break;
    case 'v':
        if (worker_heldout(u->w, &u->mask) == 0) ui_message(u, "evaluating the mask on held-out probes...");
        break;
    case 'a':
        if (worker_ask(u->w, &u->mask, u->ask_sample) == 0)
            ui_message(u, "asking the model (sample %d)...", u->ask_sample);
        u->ask_sample++;
        break;
    case 'x':
        u->mode = UI_EXPORT;
        break;
    case 'o':
        default_path(u, PROMPT_LOAD_MASK);
        break;
    case 'C':
        default_path(u, PROMPT_COMPARE_DIR);
        break;
    case 'D':
        if (u->have_cmp) {
            u->have_cmp = 0;
            ui_message(u, "diff against %s off", u->cmp_name);
        } else if (u->cmp_n > 0) {
            u->mode = UI_COMPARE;
        } else {
            ui_message(u, "no comparison loaded: C opens a compare folder");
        }
        break;
    case 'g':
        u->query_view = !u->query_view;
        break;
    case 'c': {
        static const int ctx[] = {1024, 4096, 8192, 32768, 131072};
        int i = 0;
        while (i < 5 && ctx[i] <= u->ctx_tokens) i++;
        u->ctx_tokens = ctx[i % 5];
        ui_message(u, "KV bytes now at a %d-token context", u->ctx_tokens);
        break;
    }
    case CTRL('l'):
        clearok(curscr, TRUE);
        break;
    default:
        break;
    }
}

void ui_handle_key(ui_state *u, int ch) {
    switch (u->mode) {
    case UI_HELP:
        u->mode = UI_NORMAL;
        break;
    case UI_START:
        start_key(u, ch);
        break;
    case UI_PROMPT:
        prompt_key(u, ch);
        break;
    case UI_EXPORT:
        u->mode = UI_NORMAL;
        if (ch == 'm') default_path(u, PROMPT_EXPORT_MASK);
        if (ch == 't') {
            if (u->snap.have_search)
                default_path(u, PROMPT_EXPORT_TRACE);
            else
                ui_message(u, "no search yet: nothing to trace");
        }
        if (ch == 'l') default_path(u, PROMPT_EXPORT_LAYERS);
        break;
    case UI_FILL:
        u->mode = UI_NORMAL;
        if (ch >= '0' && ch <= '9' && ch - '0' <= u->mask.n_head_kv)
            fill_layer(u, ch - '0');
        else if (ch != 27)
            ui_message(u, "fill: type 0-%d (SWA KV heads of the layer)", u->mask.n_head_kv);
        break;
    case UI_CONFIRM_QUIT:
        if (ch == 'y' || ch == 'Y')
            u->quit = 1;
        else if (ch == 'x')
            u->mode = UI_EXPORT;
        else
            u->mode = UI_NORMAL;
        break;
    case UI_ASK:
        u->mode = UI_NORMAL;
        if (ch == 'a') normal_key(u, ch);
        break;
    case UI_COMPARE:
        ui_compare_key(u, ch);
        break;
    default:
        normal_key(u, ch);
        break;
    }
}

/* ------------------------------------------------------------------ snapshot */

void ui_on_snapshot(ui_state *u) {
    worker_snapshot(u->w, &u->snap);
    ex_snapshot *s = &u->snap;
    if (!u->have_model && s->phase != EX_LOADING && s->phase != EX_FAILED && s->hp.n_layer > 0) {
        u->have_model = 1;
        memset(&u->mask, 0, sizeof u->mask);
        u->mask.n_layer = s->hp.n_layer;
        u->mask.n_head_kv = s->hp.n_head_kv;
        u->mask.window = PROBE_DEFAULT_WINDOW;
        u->mask.sinks = PROBE_DEFAULT_SINKS;
        memset(u->mask.z, ATTN_FULL, (size_t)s->hp.n_layer * s->hp.n_head_kv);
        if (u->ctx_tokens <= 0) u->ctx_tokens = s->hp.n_ctx_train > 0 ? s->hp.n_ctx_train : 8192;
        u->cur_layer = s->hp.n_layer - 1; /* stage 1 starts at the last layer */
    }
    if (u->pause_pending && s->phase != EX_RUNNING) u->pause_pending = 0;
    if (u->follow && s->have_search) {
        if (s->phase == EX_DONE && s->result_mask.n_layer > 0)
            u->mask = s->result_mask;
        else if (s->last_mask.n_layer > 0)
            u->mask = s->last_mask;
    }
    if (s->io.seq > u->io_seen) {
        u->io_seen = s->io.seq;
        on_io_result(u);
    }
    if (s->ask.seq > u->ask_seen) {
        u->ask_seen = s->ask.seq;
        if (u->mode == UI_NORMAL || u->mode == UI_ASK) u->mode = UI_ASK;
    }
}
