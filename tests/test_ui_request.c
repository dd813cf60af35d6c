/* test_ui_request.c — the explorer's key table (tui/keymap.h) and requests applied to the UI state
 * (tui/ui_request.h), without a terminal or a worker: cursor moves and their limits, head and layer
 * toggles, fill, undo, the modes the dialogs switch between, the worker commands a request returns,
 * the quit confirmation, snapshot results (a loaded mask, a comparison); and that every key of the
 * table is in the help (UI_NORMAL's) or its dialog's footer, and the footers read as before.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "probes.h"
#include "search.h"
#include "search_methods.h"
#include "ui_request.h"

#define CTRL(c) ((c)&0x1f)

#define L 30
#define H 3

static ui_state *new_state(void) {
    ui_state *u = calloc(1, sizeof *u);
    u->undo = calloc(UI_UNDO, sizeof *u->undo);
    u->follow = 1;
    u->saved_evals = -1;
    ui_form_init(u); /* as the explorer does: ratio 0.5, the demo preset */
    u->snap.phase = EX_READY;
    u->snap.hp.n_layer = L;
    u->snap.hp.n_head_kv = H;
    u->snap.hp.n_head = 9;
    u->snap.hp.n_ctx_train = 8192;
    u->lay.visible_layers = 20;
    ui_apply_snapshot(u); /* the model is known: all full, cursor on the last layer */
    return u;
}

static void free_state(ui_state *u) {
    free(u->cmp_rows);
    free(u->undo);
    free(u);
}

/* The request of key ch in the current mode, applied; the command it returns. */
static ui_cmd key(ui_state *u, int ch) {
    return ui_apply(u, keymap_lookup(u->mode, ch), ch);
}

static int n_swa(const ui_state *u) {
    return ex_mask_count_swa(&u->mask);
}

static void test_model_start(void **st) {
    (void)st;
    ui_state *u = new_state();
    assert_int_equal(u->have_model, 1);
    assert_int_equal(u->mask.n_layer, L);
    assert_int_equal(u->mask.n_head_kv, H);
    assert_int_equal(n_swa(u), 0);
    assert_int_equal(u->cur_layer, L - 1);
    assert_int_equal(u->cur_head, 0);
    free_state(u);
}

static void test_loading_refuses_edits(void **st) {
    (void)st;
    ui_state *u = calloc(1, sizeof *u);
    u->undo = calloc(UI_UNDO, sizeof *u->undo);
    key(u, ' ');
    assert_string_equal(u->msg, "the model is still loading (q quits)");
    key(u, '?');
    assert_int_equal(u->mode, UI_HELP);
    key(u, 'x');
    assert_int_equal(u->mode, UI_NORMAL);
    key(u, 'q');
    assert_int_equal(u->quit, 1);
    free_state(u);
}

static void test_cursor(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, KEY_UP);
    assert_int_equal(u->cur_layer, L - 2);
    key(u, 'j');
    assert_int_equal(u->cur_layer, L - 1);
    key(u, 'j'); /* the last layer is the limit */
    assert_int_equal(u->cur_layer, L - 1);
    key(u, 'l');
    key(u, KEY_RIGHT);
    key(u, KEY_RIGHT);
    assert_int_equal(u->cur_head, H - 1);
    key(u, 'h');
    assert_int_equal(u->cur_head, H - 2);
    key(u, KEY_PPAGE); /* a page is the visible layers less one */
    assert_int_equal(u->cur_layer, L - 1 - 19);
    key(u, KEY_HOME);
    assert_int_equal(u->cur_layer, 0);
    key(u, 'k');
    assert_int_equal(u->cur_layer, 0);
    key(u, KEY_NPAGE);
    assert_int_equal(u->cur_layer, 19);
    key(u, KEY_END);
    assert_int_equal(u->cur_layer, L - 1);
    free_state(u);
}

static void test_toggles_and_undo(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, ' ');
    assert_int_equal(u->mask.z[(L - 1) * H + 0], ATTN_SWA);
    assert_int_equal(n_swa(u), 1);
    assert_int_equal(u->edited, 1);
    assert_int_equal(u->follow, 0);
    key(u, 't');
    assert_int_equal(n_swa(u), 0);
    key(u, KEY_UP);
    key(u, 'T'); /* layer 28 all SWA */
    assert_int_equal(n_swa(u), H);
    for (int h = 0; h < H; h++) assert_int_equal(u->mask.z[(L - 2) * H + h], ATTN_SWA);
    key(u, 'L'); /* and back to full */
    assert_int_equal(n_swa(u), 0);
    key(u, 'u');
    assert_int_equal(n_swa(u), H);
    assert_string_equal(u->msg, "undone (3 more; Ctrl-R redoes)");
    key(u, 'u');
    key(u, 'u');
    assert_int_equal(n_swa(u), 1);
    key(u, 'u');
    assert_int_equal(n_swa(u), 0);
    key(u, 'u');
    assert_string_equal(u->msg, "nothing to undo");
    free_state(u);
}

static void test_fill(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, 'f');
    assert_int_equal(u->mode, UI_FILL);
    key(u, '2');
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(n_swa(u), 2);
    assert_int_equal(u->mask.z[(L - 1) * H + 0], ATTN_SWA);
    assert_int_equal(u->mask.z[(L - 1) * H + 1], ATTN_SWA);
    key(u, 'f');
    key(u, '9'); /* more than the layer's KV heads: a hint, nothing changes */
    assert_int_equal(n_swa(u), 2);
    assert_string_equal(u->msg, "fill: type 0-3 (SWA KV heads of the layer)");
    key(u, 'f');
    key(u, 27);
    assert_int_equal(u->mode, UI_NORMAL);
    free_state(u);
}

static void test_export_prompt(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, 'x');
    assert_int_equal(u->mode, UI_EXPORT);
    key(u, 't'); /* no search: nothing to trace */
    assert_int_equal(u->mode, UI_NORMAL);
    assert_string_equal(u->msg, "no search yet: nothing to trace");
    key(u, 'x');
    key(u, 'm');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_string_equal(u->input, "bosch-mask.csv");
    key(u, CTRL('u'));
    assert_string_equal(u->input, "");
    key(u, 'a');
    key(u, 'b');
    key(u, KEY_BACKSPACE);
    key(u, 'c');
    assert_string_equal(u->input, "ac");
    ui_cmd c = key(u, '\r');
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(c.kind, UI_CMD_IO);
    assert_int_equal(c.io, EX_IO_EXPORT_MASK);
    assert_ptr_equal(c.mask, &u->mask);
    assert_string_equal(c.path, "ac");
    ui_cmd_done(u, &c, 0);
    assert_string_equal(u->msg, "writing ac...");
    key(u, 'x'); /* s: the static rankings' scores, a folder */
    key(u, 's');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_EXPORT_SCORES);
    assert_string_equal(u->input, "bosch-scores");
    c = key(u, '\r');
    assert_int_equal(c.kind, UI_CMD_IO);
    assert_int_equal(c.io, EX_IO_EXPORT_SCORES);
    assert_string_equal(c.path, "bosch-scores");
    key(u, 'o');
    key(u, CTRL('u'));
    c = key(u, '\n');
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_string_equal(u->msg, "no file name given");
    free_state(u);
}

static void test_io_results(void **st) {
    (void)st;
    ui_state *u = new_state();
    ex_io *r = &u->snap.io;
    r->seq = 1;
    r->kind = EX_IO_LOAD_MASK;
    r->ok = 1;
    r->mask = u->mask;
    r->mask.z[0] = ATTN_SWA;
    snprintf(r->path, sizeof r->path, "m.csv");
    snprintf(r->msg, sizeof r->msg, "loaded m.csv");
    ui_apply_snapshot(u);
    assert_int_equal(n_swa(u), 1);
    assert_string_equal(u->last_path, "m.csv");
    assert_string_equal(u->msg, "loaded m.csv");
    key(u, 'u'); /* the load is undone like an edit */
    assert_int_equal(n_swa(u), 0);
    ui_apply_snapshot(u); /* the same result is not applied twice */
    assert_int_equal(n_swa(u), 0);
    r->seq = 2; /* a refused path opens the prompt again with it */
    r->kind = EX_IO_EXPORT_TRACE;
    r->ok = 0;
    r->path_refused = 1;
    snprintf(r->path, sizeof r->path, "adir");
    ui_apply_snapshot(u);
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_EXPORT_TRACE);
    assert_string_equal(u->input, "adir");
    assert_int_equal(u->prompt_refused, 1);
    key(u, 27);
    assert_int_equal(u->prompt_refused, 0);
    assert_int_equal(u->mode, UI_NORMAL);
    free_state(u);
}

static void test_search_control(void **st) {
    (void)st;
    ui_state *u = new_state();
    ui_cmd c = key(u, 'p');
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_string_equal(u->msg, "no search yet: press s to start one");
    key(u, ' '); /* an edit before the search goes on the undo ring when it starts */
    key(u, 's');
    assert_int_equal(u->mode, UI_START);
    assert_true(u->form_window > 0);
    assert_string_equal(ui_form_preset(u), "demo"); /* the form's default (issue 28 item 2) */
    assert_int_equal(u->form_window, 32);           /* demo's window */
    key(u, KEY_DOWN);
    assert_int_equal(u->form_field, 1);
    key(u, KEY_UP);
    key(u, KEY_RIGHT); /* ratio 0.5 -> 0.75 */
    key(u, '-');       /* and back */
    key(u, '\t');
    key(u, '\t'); /* the window */
    key(u, KEY_BACKSPACE);
    key(u, KEY_BACKSPACE);
    key(u, KEY_BACKSPACE);
    key(u, KEY_BACKSPACE);
    key(u, KEY_BACKSPACE);
    c = key(u, KEY_ENTER); /* window 0: refused by the option table, as `bosch search --window 0` is */
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_int_equal(u->mode, UI_START);
    assert_string_equal(u->msg, "--window: bad value '0' (need an integer in [1, 16777216])");
    key(u, '6');
    key(u, '4');
    assert_int_equal(u->form_window, 64);
    key(u, '+');
    assert_int_equal(u->form_window, 128);
    key(u, '\t'); /* the method: bosch */
    assert_string_equal(ui_form_method(u), "bosch");
    key(u, '\t'); /* the granularity: heads, then whole layers, then heads again */
    assert_int_equal(u->form_granularity, 0);
    key(u, KEY_RIGHT);
    assert_int_equal(u->form_granularity, 1);
    key(u, KEY_RIGHT);
    key(u, KEY_LEFT);
    assert_int_equal(u->form_granularity, 1);
    key(u, '\t'); /* start from: nothing, then the working mask (BOSCH can use it) */
    assert_int_equal(u->form_field, 5);
    assert_int_equal(u->form_start, 0);
    key(u, KEY_RIGHT);
    assert_int_equal(u->form_start, 1);
    assert_true(ui_form_start_usable(u));
    key(u, '\t'); /* back to the ratio: six fields */
    assert_int_equal(u->form_field, 0);
    c = key(u, KEY_ENTER);
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(c.kind, UI_CMD_START_SEARCH);
    assert_true(c.req.opts.ratio == 0.5);
    assert_string_equal(c.req.opts.name[SOPT_PRESET], "demo");
    assert_int_equal(c.req.opts.num[SOPT_WINDOW], 128);
    assert_int_equal(c.req.opts.num[SOPT_GRANULARITY], 1);
    /* what the worker runs: bosch search --ratio 0.5 --preset demo --window 128 --granularity layer */
    search_config cfg;
    char err[256];
    assert_int_equal(search_opts_config(&c.req.opts, 8192, &cfg, err, sizeof err), 0);
    assert_true(cfg.ratio == 0.5);
    assert_int_equal(cfg.window, 128);
    assert_int_equal(cfg.calib_samples, 12); /* demo's: 12 x 256 tokens, the three tasks */
    assert_int_equal(cfg.calib_tokens, 256);
    assert_int_equal(cfg.calib_mix, 1);
    assert_int_equal(cfg.method, SEARCH_METHOD_BOSCH);
    assert_int_equal(cfg.granularity, SEARCH_GRANULARITY_LAYER);
    assert_int_equal(cfg.stage1_independent, 1);
    /* the working mask is the start: L29 kv0, toggled above, SWA, the rest full (--start) */
    assert_true(c.req.opts.given & SOPT_BIT(SOPT_START));
    assert_int_equal(cfg.start_layers, L);
    assert_int_equal(cfg.start_heads, H);
    assert_int_equal(search_start_swa(&cfg, L - 1, 0), 1);
    assert_int_equal(search_start_swa(&cfg, L - 1, 1), 0);
    assert_int_equal(search_start_swa(&cfg, 0, 0), 0);
    /* a static ranking cannot use it: the form greys the field and sends no start */
    const int method_i = u->form_method_i;
    while (strcmp(ui_form_method(u), "fisher")) u->form_method_i++;
    assert_false(ui_form_start_usable(u));
    u->mode = UI_START;
    u->form_granularity = 0; /* whole layers are BOSCH's */
    ui_cmd fc = key(u, KEY_ENTER);
    assert_int_equal(fc.kind, UI_CMD_START_SEARCH);
    assert_false(fc.req.opts.given & SOPT_BIT(SOPT_START));
    assert_int_equal(fc.req.opts.start_layers, 0);
    u->form_method_i = method_i, u->form_granularity = 1;
    int undo_before = u->undo_n;
    ui_cmd_done(u, &c, 0);
    assert_int_equal(u->follow, 1);
    assert_int_equal(u->edited, 0);
    assert_int_equal(u->undo_n, undo_before + 1);
    assert_string_equal(u->msg, "starting bosch: ratio 0.500, preset demo, window 128");
    u->snap.have_search = 1;
    u->snap.phase = EX_RUNNING;
    c = key(u, 'p');
    assert_int_equal(c.kind, UI_CMD_PAUSE);
    assert_int_equal(u->pause_pending, 1);
    c = key(u, 'p'); /* asked already */
    assert_int_equal(c.kind, UI_CMD_NONE);
    u->snap.phase = EX_PAUSED;
    ui_apply_snapshot(u);
    assert_int_equal(u->pause_pending, 0);
    c = key(u, 'n');
    assert_int_equal(c.kind, UI_CMD_STEP);
    c = key(u, 'p');
    assert_int_equal(c.kind, UI_CMD_RESUME);
    assert_string_equal(u->msg, "resumed");
    c = key(u, 'v');
    assert_int_equal(c.kind, UI_CMD_HELDOUT);
    assert_int_equal(c.servable, 0);
    c = key(u, 'V'); /* the servable projection of the same mask */
    assert_int_equal(c.kind, UI_CMD_HELDOUT);
    assert_int_equal(c.servable, 1);
    assert_ptr_equal(c.mask, &u->mask);
    ui_cmd_done(u, &c, 0);
    assert_string_equal(u->msg, "evaluating the servable (per-layer) projection on held-out probes...");
    c = key(u, 'a');
    assert_int_equal(c.kind, UI_CMD_ASK);
    assert_int_equal(c.sample, 0);
    assert_int_equal(key(u, 'a').sample, 1);
    free_state(u);
}

static void test_quit_confirm(void **st) {
    (void)st;
    ui_state *u = new_state();
    u->snap.have_search = 1;
    u->snap.n_evals = 5;
    key(u, 'q');
    assert_int_equal(u->mode, UI_CONFIRM_QUIT);
    assert_int_equal(u->quit, 0);
    key(u, 'n');
    assert_int_equal(u->mode, UI_NORMAL);
    key(u, 'Q');
    key(u, 'x'); /* export first */
    assert_int_equal(u->mode, UI_EXPORT);
    key(u, 27);
    key(u, 'q');
    key(u, 'y');
    assert_int_equal(u->quit, 1);
    free_state(u);
}

static void test_toggles_views(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, 'g');
    assert_int_equal(u->query_view, 1);
    key(u, 'g');
    assert_int_equal(u->query_view, 0);
    key(u, 'c');
    assert_int_equal(u->ctx_tokens, 32768);
    assert_int_equal(key(u, CTRL('l')).kind, UI_CMD_REDRAW);
    key(u, 'D');
    assert_string_equal(u->msg, "no comparison loaded: C opens a compare folder");
    u->snap.ask.seq = 1; /* an answer opens its dialog; a closes it and asks the next sample */
    ui_apply_snapshot(u);
    assert_int_equal(u->mode, UI_ASK);
    assert_int_equal(key(u, 'a').kind, UI_CMD_ASK);
    assert_int_equal(u->mode, UI_NORMAL);
    free_state(u);
}

static void test_compare(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, 'C');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_string_equal(u->input, "runs/compare");
    ui_cmd c = key(u, '\r');
    assert_int_equal(c.kind, UI_CMD_COMPARE_OPEN);
    assert_string_equal(c.path, "runs/compare");
    assert_true(c.ratio == 0.0); /* no search: the working mask's ratio */
    /* the worker's result: two rows at rho 0.5 (the glue copies them into cmp_rows) */
    u->cmp_rows = calloc(COMPARE_MAX_METHODS, sizeof *u->cmp_rows);
    snprintf(u->cmp_rows[0].method, sizeof u->cmp_rows[0].method, "bosch");
    snprintf(u->cmp_rows[1].method, sizeof u->cmp_rows[1].method, "ablation");
    ex_io *r = &u->snap.io;
    *r = (ex_io){.seq = 1, .kind = EX_IO_COMPARE_OPEN, .ok = 1, .n_rows = 2, .ratio = 0.5};
    snprintf(r->path, sizeof r->path, "runs/compare");
    ui_apply_snapshot(u);
    assert_int_equal(u->mode, UI_COMPARE);
    assert_int_equal(u->cmp_n, 2);
    key(u, 'j');
    key(u, 'j'); /* the last row is the limit */
    assert_int_equal(u->cmp_cur, 1);
    c = key(u, '\n');
    assert_int_equal(c.kind, UI_CMD_COMPARE_MASK);
    assert_int_equal(c.row, 1);
    *r = (ex_io){.seq = 2, .kind = EX_IO_COMPARE_MASK, .ok = 1, .row = 1, .mask = u->mask};
    r->mask.z[5] = ATTN_SWA;
    ui_apply_snapshot(u);
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(u->have_cmp, 1);
    assert_string_equal(u->cmp_name, "ablation");
    assert_int_equal(ui_compare_n_diff(u), 1);
    assert_int_equal(n_swa(u), 0);
    key(u, 'D');
    assert_int_equal(u->have_cmp, 0);
    key(u, 'D');
    assert_int_equal(u->mode, UI_COMPARE);
    key(u, KEY_UP);
    c = key(u, 'L');
    assert_int_equal(c.row, 0);
    *r = (ex_io){.seq = 3, .kind = EX_IO_COMPARE_MASK, .ok = 1, .row = 0, .mask = u->mask};
    r->mask.z[7] = ATTN_SWA;
    ui_apply_snapshot(u);
    assert_int_equal(n_swa(u), 1);
    assert_string_equal(u->msg, "working mask = bosch at rho 0.500 (u undoes)");
    key(u, 'u');
    assert_int_equal(n_swa(u), 0);
    key(u, 'D');
    key(u, 'q');
    assert_int_equal(u->mode, UI_NORMAL);
    free_state(u);
}

/* Every key of UI_NORMAL is in the help (its label on its line); every dialog key with a footer
 * item is in its dialog's footer; no key is bound twice in one mode; help lines fit the box. */
static void test_table_help_footer(void **st) {
    (void)st;
    int n;
    const keymap_entry *t = keymap_table(&n);
    int nl = keymap_help_lines();
    assert_true(nl > 0 && nl <= 14); /* the help box fits 80x24 */
    char help[32][160];
    for (int i = 0; i < nl; i++) {
        keymap_help_line(i, help[i], sizeof help[i]);
        assert_true(strlen(help[i]) <= 74);
    }
    const char *text = NULL;
    for (int k = 0; k < n; k++) {
        for (int m = 0; m <= UI_ATTN; m++)
            if (t[k].modes & KM(m)) assert_int_equal(keymap_lookup((ui_mode)m, t[k].key), t[k].req);
        if (t[k].modes & KM(UI_NORMAL)) { /* on the line of the help text above it in the table */
            if (t[k].help) text = t[k].help;
            assert_non_null(text);
            int found = 0;
            for (int i = 0; i < nl && !found; i++) {
                size_t len = strlen(help[i]), tl = strlen(text);
                if (len < tl + 3 || strcmp(help[i] + len - tl, text)) continue;
                char keys[160];
                snprintf(keys, sizeof keys, " %.*s ", (int)(len - tl - 3), help[i] + 2); /* the labels */
                char want[40];
                snprintf(want, sizeof want, " %s ", t[k].label);
                found = strstr(keys, want) != NULL;
            }
            if (!found) fail_msg("key %s is not in the help", t[k].label);
        }
        if (t[k].footer)
            for (int m = 0; m <= UI_ATTN; m++) {
                if (!(t[k].modes & KM(m))) continue;
                char f[256];
                keymap_footer((ui_mode)m, f, sizeof f);
                if (!strstr(f, t[k].footer)) fail_msg("footer of mode %d lacks %s", m, t[k].footer);
            }
    }
    assert_true(strstr(help[0], "this help") != NULL);
    int toggle = 0;
    for (int i = 0; i < nl; i++) toggle |= strstr(help[i], "toggle the KV head under the cursor") != NULL;
    assert_true(toggle);
}

static void test_footers(void **st) {
    (void)st;
    char f[256];
    keymap_footer(UI_NORMAL, f, sizeof f);
    assert_string_equal(f, " ?:help P:plan q:quit s:search p:pause n:step spc:toggle T:layer f:fill v:eval "
                           "a:ask x:export o:load u:undo g:view c:ctx");
    keymap_footer(UI_COMPARE, f, sizeof f); /* dialogs without their own footer show the main one */
    assert_string_equal(f, " ?:help P:plan q:quit s:search p:pause n:step spc:toggle T:layer f:fill v:eval "
                           "a:ask x:export o:load u:undo g:view c:ctx");
    keymap_footer(UI_FILL, f, sizeof f);
    assert_string_equal(f, " fill layer: 0-9 = SWA KV heads  Esc cancel");
    keymap_footer(UI_EXPORT, f, sizeof f);
    assert_string_equal(f, " export: m mask  t trace  l layers  d duo  h hf  r trtllm  s scores  Esc cancel");
    keymap_footer(UI_PROMPT, f, sizeof f);
    assert_string_equal(f, " Enter accept  Esc cancel  Ctrl-U clear");
    keymap_footer(UI_START, f, sizeof f);
    assert_string_equal(f, " Up/Down field  Left/Right value  Enter start  Esc cancel");
}

/* Type each character of text, then Enter. */
static ui_cmd type_line(ui_state *u, const char *text) {
    for (const char *p = text; *p; p++) key(u, (unsigned char)*p);
    return key(u, '\r');
}

static void test_command_line(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, ':');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_COMMAND);
    assert_string_equal(u->input, "");
    ui_cmd c = type_line(u, "ratio 0.6");
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_int_equal(u->mode, UI_NORMAL);
    assert_true(u->form_ratio == 0.6);
    assert_string_equal(u->msg, "next search: ratio 0.600 (s opens the form, Enter starts it)");
    key(u, 's'); /* the form starts from it; Right / Left step to the listed ratios around it */
    c = key(u, '\r');
    assert_int_equal(c.kind, UI_CMD_START_SEARCH);
    assert_true(c.req.opts.ratio == 0.6);
    key(u, 's');
    key(u, KEY_RIGHT);
    assert_true(u->form_ratio == 0.75);
    key(u, KEY_LEFT);
    key(u, KEY_LEFT);
    assert_true(u->form_ratio == 0.25);
    key(u, KEY_LEFT); /* wraps */
    assert_true(u->form_ratio == 0.875);
    key(u, 27);

    int undo_before = u->undo_n;
    key(u, ':');
    type_line(u, "window 32");
    assert_int_equal(u->mask.window, 32);
    assert_int_equal(u->form_window, 32);
    assert_int_equal(u->undo_n, undo_before + 1);
    key(u, 'u');
    assert_int_equal(u->mask.window, ui_form_preset_window(
                                         u, u->form_preset_i)); /* the working mask starts at the form's W */

    key(u, ':');
    c = type_line(u, "load /tmp/a mask.csv");
    assert_int_equal(c.kind, UI_CMD_IO);
    assert_int_equal(c.io, EX_IO_LOAD_MASK);
    assert_string_equal(c.path, "/tmp/a mask.csv");
    key(u, ':');
    c = type_line(u, "export mask /tmp/m.csv");
    assert_int_equal(c.kind, UI_CMD_IO);
    assert_int_equal(c.io, EX_IO_EXPORT_MASK);
    assert_ptr_equal(c.mask, &u->mask);
    assert_string_equal(c.path, "/tmp/m.csv");
    key(u, ':');
    c = type_line(u, "export layers");
    assert_int_equal(c.kind, UI_CMD_NONE); /* no file: the prompt opens with the default */
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_EXPORT_LAYERS);
    assert_string_equal(u->input, "bosch-layers.csv");
    key(u, 27);
    key(u, ':');
    type_line(u, "export trace x.csv");
    assert_string_equal(u->msg, "export trace: no search yet");
    key(u, ':');
    type_line(u, "frob");
    assert_string_equal(u->msg, "unknown command 'frob' (:help lists them)");
    assert_int_equal(u->mode, UI_NORMAL);
    key(u, ':');
    type_line(u, "12");
    assert_int_equal(u->cur_layer, 12);
    key(u, ':');
    key(u, 'q');
    key(u, 27); /* Esc: nothing */
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(u->quit, 0);
    key(u, ':');
    type_line(u, "help");
    assert_int_equal(u->mode, UI_HELP);
    assert_int_equal(u->help_page, 1);
    key(u, 'x');
    key(u, '?');
    assert_int_equal(u->help_page, 0);
    key(u, 'x');
    u->snap.have_search = 1, u->snap.n_evals = 5; /* unsaved: :q asks, :q! does not */
    key(u, ':');
    type_line(u, "q");
    assert_int_equal(u->mode, UI_CONFIRM_QUIT);
    assert_int_equal(u->quit, 0);
    key(u, 'n');
    key(u, ':');
    type_line(u, "q!");
    assert_int_equal(u->quit, 1);
    free_state(u);
}

static void test_jump_and_f_keys(void **st) {
    (void)st;
    ui_state *u = new_state();
    key(u, '/');
    assert_int_equal(u->prompt, PROMPT_JUMP);
    type_line(u, "7");
    assert_int_equal(u->cur_layer, 7);
    key(u, '/');
    type_line(u, "99");
    assert_int_equal(u->cur_layer, 7);
    assert_string_equal(u->msg, "no layer 99 (the model has layers 0-29)");
    key(u, KEY_F(3)); /* htop's search key: the same prompt */
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_JUMP);
    type_line(u, "L3");
    assert_int_equal(u->cur_layer, 3);
    key(u, KEY_F(1));
    assert_int_equal(u->mode, UI_HELP);
    key(u, 'x');
    key(u, KEY_F(10));
    assert_int_equal(u->quit, 1);
    free_state(u);
    /* while the model loads, :q and :help work and the rest waits */
    u = calloc(1, sizeof *u);
    u->undo = calloc(UI_UNDO, sizeof *u->undo);
    key(u, ':');
    type_line(u, "ratio 0.5");
    assert_string_equal(u->msg, "the model is still loading (q quits)");
    key(u, ':');
    type_line(u, "q");
    assert_int_equal(u->quit, 1);
    free_state(u);
}

/* Clicks and the wheel on the 80x24 layout (tests/test_layout.c test_hit has the columns). */
static void test_mouse(void **st) {
    (void)st;
    ui_state *u = new_state();
    layout_input in = {.rows = 24, .cols = 80, .n_layer = L, .n_head_kv = H, .group = 3};
    layout_compute(&in, &u->lay);
    u->top = 10;
    ui_apply_mouse(u, UI_MOUSE_CLICK, 3, 8); /* row 3 = layer 10, column 8 = KV head 1 */
    assert_int_equal(u->cur_layer, 10);
    assert_int_equal(u->cur_head, 1);
    assert_int_equal(n_swa(u), 0);
    ui_apply_mouse(u, UI_MOUSE_CLICK, 3, 9); /* again on the cursor's cell: toggles it */
    assert_int_equal(u->mask.z[10 * H + 1], ATTN_SWA);
    assert_int_equal(n_swa(u), 1);
    ui_apply_mouse(u, UI_MOUSE_CLICK, 3, 9);
    assert_int_equal(n_swa(u), 0);
    assert_int_equal(u->undo_n, 2);           /* each toggle is an edit */
    ui_apply_mouse(u, UI_MOUSE_CLICK, 5, 20); /* layer 12's statistics: the layer, same head */
    assert_int_equal(u->cur_layer, 12);
    assert_int_equal(u->cur_head, 1);
    ui_apply_mouse(u, UI_MOUSE_CLICK, 5, 60); /* the right column: nothing */
    assert_int_equal(u->cur_layer, 12);
    ui_apply_mouse(u, UI_MOUSE_WHEEL_DOWN, 5, 5);
    assert_int_equal(u->cur_layer, 15);
    assert_int_equal(u->top, 10); /* at most n_layer - visible = 10 */
    u->top = 0;
    ui_apply_mouse(u, UI_MOUSE_WHEEL_DOWN, 5, 5);
    assert_int_equal(u->top, 3);
    assert_int_equal(u->cur_layer, 18);
    ui_apply_mouse(u, UI_MOUSE_WHEEL_UP, 5, 5);
    ui_apply_mouse(u, UI_MOUSE_WHEEL_UP, 5, 5);
    assert_int_equal(u->top, 0);
    assert_int_equal(u->cur_layer, 12);
    key(u, '?'); /* a click closes the help; the start form ignores it */
    ui_apply_mouse(u, UI_MOUSE_CLICK, 3, 8);
    assert_int_equal(u->mode, UI_NORMAL);
    assert_int_equal(u->cur_layer, 12);
    key(u, 's');
    ui_apply_mouse(u, UI_MOUSE_CLICK, 3, 8);
    assert_int_equal(u->mode, UI_START);
    assert_int_equal(u->cur_layer, 12);
    free_state(u);
}

/* The attention view (A): its command for the head under the cursor, the split and sample keys,
 * the cursor moving to another head (each recomputes), Esc. The form's method field (every method
 * of bosch compare, through the option table). W's folder prompt and its command; an opened
 * workspace's mask, cursor and undo history. */
static void test_attn_form_workspace(void **st) {
    (void)st;
    ui_state *u = new_state();
    ui_cmd c = key(u, 'A');
    assert_int_equal(u->mode, UI_ATTN);
    assert_int_equal(c.kind, UI_CMD_ATTN);
    assert_int_equal(c.layer, L - 1);
    assert_int_equal(c.kv_head, 0);
    assert_int_equal(c.split, 0);
    assert_ptr_equal(c.mask, &u->mask);
    c = key(u, '\t');
    assert_int_equal(c.kind, UI_CMD_ATTN);
    assert_int_equal(c.split, 1);
    c = key(u, 'n');
    assert_int_equal(c.sample, 1);
    c = key(u, 'p');
    c = key(u, 'p');
    assert_int_equal(c.sample, -1); /* the worker wraps it */
    c = key(u, KEY_UP);
    assert_int_equal(c.kind, UI_CMD_ATTN);
    assert_int_equal(c.layer, L - 2);
    c = key(u, 'l');
    assert_int_equal(c.kv_head, 1);
    c = key(u, 'x'); /* not a key of the view */
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_int_equal(u->mode, UI_ATTN);
    key(u, 27);
    assert_int_equal(u->mode, UI_NORMAL);

    /* the form: Down x3 to the method; Right walks every row of the method registry once, in the
     * pickers' order: the 9 BOSCH variants (bosch_layer the last), then the 8 baselines, written out
     * by hand (a row a build adds is left aside, so adding one needs no edit here); Left from bosch
     * wraps to the last row */
    static const char *const builtin[] = {
        "bosch",        "bosch_paper", "bosch_indep", "bosch_marginal", "bosch_ranks", "bosch_heads",
        "bosch_bucket", "bosch_plus",  "bosch_layer", "rand",           "bme",         "intr",
        "nll",          "locality",    "echo",        "ablation",       "fisher"};
    const int n_builtin = (int)(sizeof builtin / sizeof builtin[0]);
    key(u, 's');
    for (int i = 0; i < 3; i++) key(u, KEY_DOWN);
    const char *seen[32];
    int n = 0;
    do {
        seen[n++] = ui_form_method(u);
        key(u, KEY_RIGHT);
    } while (strcmp(ui_form_method(u), "bosch") && n < 32);
    assert_int_equal(n, search_methods_count());
    int k = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int j = 0; j < n_builtin; j++) known |= !strcmp(seen[i], builtin[j]);
        if (!known) continue;
        assert_true(k < n_builtin);
        assert_string_equal(seen[i], builtin[k++]);
    }
    assert_int_equal(k, n_builtin);
    key(u, KEY_LEFT);
    assert_string_equal(ui_form_method(u), seen[n - 1]);
    for (int i = 1; i < n && strcmp(ui_form_method(u), "locality"); i++) key(u, KEY_LEFT);
    assert_string_equal(ui_form_method(u), "locality");
    c = key(u, '\n');
    assert_int_equal(c.kind, UI_CMD_START_SEARCH);
    search_config cfg;
    char err[256];
    assert_int_equal(search_opts_config(&c.req.opts, 8192, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.method, SEARCH_METHOD_LOCALITY);
    ui_cmd_done(u, &c, 0);
    assert_non_null(strstr(u->msg, "starting locality"));

    /* W: the folder prompt, then the save command */
    key(u, 'W');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_int_equal(u->prompt, PROMPT_WORKSPACE);
    assert_string_equal(u->input, "bosch-workspace");
    c = key(u, '\n');
    assert_int_equal(c.kind, UI_CMD_WORKSPACE);
    assert_string_equal(c.path, "bosch-workspace");
    u->snap.have_search = 1, u->snap.n_evals = 7;
    ui_cmd_done(u, &c, 0);
    assert_int_equal(ui_search_unsaved(u), 1);
    u->snap.io = (ex_io){.seq = 1, .kind = EX_IO_WORKSPACE_SAVE, .ok = 1, .path = "bosch-workspace"};
    ui_apply_snapshot(u);
    assert_int_equal(ui_search_unsaved(u), 0); /* saved: quitting does not ask */

    /* an opened workspace */
    ex_io *r = &u->snap.io;
    *r = (ex_io){.seq = 2, .kind = EX_IO_WORKSPACE_OPEN, .ok = 1, .path = "ws", .mask = u->mask};
    r->mask.z[4] = ATTN_SWA;
    r->ws =
        (ex_workspace){.have_ui = 1, .cur_layer = 2, .cur_head = 1, .follow = 0, .edited = 1, .n_undo = 2};
    ex_mask undo[2] = {u->mask, u->mask};
    undo[1].z[0] = ATTN_SWA;
    ui_apply_snapshot(u);
    ui_workspace_opened(u, undo, 2);
    assert_int_equal(u->cur_layer, 2);
    assert_int_equal(u->cur_head, 1);
    assert_int_equal(u->follow, 0);
    assert_int_equal(n_swa(u), 1);
    assert_string_equal(u->ws_dir, "ws");
    key(u, 'u'); /* the newest undo mask */
    assert_int_equal(u->mask.z[0], ATTN_SWA);
    assert_int_equal(u->mask.z[4], ATTN_FULL);
    key(u, 'u');
    assert_int_equal(n_swa(u), 0);

    /* a `bosch search --out` folder opened mid-search, following it: the grid shows the mask the
       search evaluated last (what the phase's marks describe), not its result so far (issue 28:
       the head-score pass showed the 60 stage-1 heads under a '▶' on the one head scored) */
    *r = (ex_io){.seq = 3, .kind = EX_IO_WORKSPACE_OPEN, .ok = 1, .path = "run", .mask = u->mask};
    for (int i = 0; i < 60; i++) r->mask.z[i] = ATTN_SWA;
    r->ws = (ex_workspace){.have_ui = 0, .have_search = 1, .search_done = 0};
    u->snap.have_search = 1, u->snap.phase = EX_PAUSED;
    u->snap.last_mask = u->mask;
    u->snap.last_mask.z[82] = ATTN_SWA;
    ui_apply_snapshot(u);
    ui_workspace_opened(u, NULL, 0);
    assert_int_equal(u->follow, 1);
    assert_int_equal(n_swa(u), 1);
    assert_int_equal(u->mask.z[82], ATTN_SWA);
    free_state(u);
}

/* Issue 28's defects of the UI state, each failing on the code before its fix:
 *  - the load prompt offered the last export whatever it was (a trace);
 *  - keys acted behind the "too small" screen (Space toggled an invisible head);
 *  - the form said round-half-down KV heads (67 of 90 at 0.75) where the search makes 68;
 *  - a preset change reset a window the user had typed, silently; the working mask's W was not the
 *    form's;
 *  - the help put V on the A W line (two descriptions on one row). */
static void test_issue28_defects(void **st) {
    (void)st;
    ui_state *u = new_state();
    /* the load prompt: the last mask file, not the last trace */
    ex_io *r = &u->snap.io;
    r->seq = 1, r->kind = EX_IO_EXPORT_MASK, r->ok = 1;
    snprintf(r->path, sizeof r->path, "mine.csv");
    ui_apply_snapshot(u);
    r->seq = 2, r->kind = EX_IO_EXPORT_TRACE;
    snprintf(r->path, sizeof r->path, "trace.csv");
    ui_apply_snapshot(u);
    key(u, 'o');
    assert_int_equal(u->mode, UI_PROMPT);
    assert_string_equal(u->input, "mine.csv");
    key(u, 27);

    /* too small: nothing acts but quit and the repaint */
    u->rows = 20, u->cols = 60, u->lay.fits = 0;
    key(u, ' ');
    assert_int_equal(n_swa(u), 0);
    key(u, 's');
    assert_int_equal(u->mode, UI_NORMAL);
    key(u, 'q');
    assert_int_equal(u->quit, 1);
    u->quit = 0, u->lay.fits = 1;
    key(u, ' ');
    assert_int_equal(n_swa(u), 1);
    key(u, 'u');

    /* the form's promise is the plan's target: round(0.75 x 90) = 68 (67.5 rounds up, as lround) */
    key(u, 's');
    u->form_ratio = 0.75;
    search_plan plan;
    search_config cfg;
    assert_int_equal(ui_form_plan(u, &plan, &cfg), 0);
    assert_int_equal(plan.target_swa, 68);
    assert_true(plan.evals_planned > 2 && plan.n_phases == 7);
    assert_true(isnan(ui_form_seconds(u, &plan, &cfg))); /* nothing measured: no time claimed */
    /* measured 2 s/eval on a search of 4 x 512 tokens: the demo plan (12 x 256 tokens) takes
       1.5 x 2 s x its evaluations */
    u->snap.progress.live_s = 20, u->snap.progress.live_n = 10;
    u->snap.calib_samples = 4, u->snap.calib_tokens = 512;
    assert_true(fabs(ui_form_seconds(u, &plan, &cfg) - 3.0 * (double)plan.evals_planned) < 1e-9);
    /* a baseline plans far fewer evaluations than bosch: its time is its own */
    search_plan plan_loc;
    u->form_method_i = 0;
    while (search_variant_name(u->form_method_i) && strcmp(search_variant_name(u->form_method_i), "locality"))
        u->form_method_i++;
    assert_non_null(search_variant_name(u->form_method_i));
    assert_int_equal(ui_form_plan(u, &plan_loc, &cfg), 0);
    assert_true(plan_loc.evals_planned < plan.evals_planned / 10);
    u->form_method_i = 0;

    /* the window: the grid's W is the form's; a typed window survives a preset change */
    const int p0 = u->form_preset_i; /* demo */
    assert_int_equal(u->mask.window, ui_form_preset_window(u, p0));
    assert_int_equal(u->form_window, ui_form_preset_window(u, p0));
    u->form_field = 1; /* the preset: default, then back to demo, resets an untouched window */
    key(u, KEY_RIGHT);
    assert_string_equal(ui_form_preset(u), "default");
    assert_int_equal(u->form_window, ui_form_preset_window(u, p0 + 1));
    key(u, KEY_LEFT);
    u->form_field = 2; /* the window: doubled by hand */
    key(u, KEY_RIGHT);
    const int mine = 2 * ui_form_preset_window(u, p0);
    assert_int_equal(u->form_window, mine);
    u->form_field = 1;
    key(u, KEY_RIGHT);
    assert_int_equal(u->form_window, mine);
    key(u, 27);

    /* exports: into the export folder, or beside the open workspace; never the start folder */
    snprintf(u->export_dir, sizeof u->export_dir, "/home/t/bosch-exports");
    key(u, 'x');
    key(u, 'm');
    assert_string_equal(u->input, "/home/t/bosch-exports/bosch-mask.csv");
    key(u, 27);
    snprintf(u->ws_dir, sizeof u->ws_dir, "ws");
    key(u, 'x');
    key(u, 'l');
    assert_string_equal(u->input, "ws/bosch-layers.csv");
    key(u, 27);
    key(u, 'o'); /* a load is not an export: the last mask file */
    assert_string_equal(u->input, "mine.csv");
    key(u, 27);

    /* redo (Ctrl-R) brings back what u undid; a new edit clears it; :all full / :all swa */
    key(u, ':');
    type_line(u, "all swa");
    assert_int_equal(n_swa(u), L * H);
    key(u, ' ');
    assert_int_equal(n_swa(u), L * H - 1);
    key(u, 'u');
    key(u, 'u');
    assert_int_equal(n_swa(u), 0);
    key(u, CTRL('r'));
    assert_int_equal(n_swa(u), L * H);
    key(u, CTRL('r'));
    assert_int_equal(n_swa(u), L * H - 1);
    key(u, CTRL('r'));
    assert_string_equal(u->msg, "nothing to redo");
    key(u, 'u');
    key(u, ':');
    type_line(u, "all full"); /* an edit: the undone toggle cannot come back over it */
    assert_int_equal(n_swa(u), 0);
    key(u, CTRL('r'));
    assert_string_equal(u->msg, "nothing to redo");
    key(u, 'u');
    assert_int_equal(n_swa(u), L * H);
    key(u, 'u');

    /* :pin: a snapshot of the working mask to diff against (issue 28 item 4, in part) */
    key(u, ' ');
    key(u, ':');
    type_line(u, "pin");
    assert_int_equal(u->have_cmp, 1);
    assert_string_equal(u->cmp_name, "pinned");
    assert_int_equal(ui_compare_n_diff(u), 0);
    key(u, KEY_LEFT), key(u, KEY_RIGHT), key(u, KEY_RIGHT);
    key(u, ' ');
    assert_int_equal(ui_compare_n_diff(u), 1);
    key(u, ':');
    type_line(u, "pin full");
    assert_int_equal(ui_compare_n_diff(u), 2);
    /* item 4: the side-by-side panel is open; its job compares the working mask with the pinned one,
       once per pair (ui_pin_refresh), again after an edit */
    assert_int_equal(u->pin_view, 1);
    ui_cmd c = ui_pin_refresh(u);
    assert_int_equal(c.kind, UI_CMD_PIN);
    assert_ptr_equal(c.mask, &u->mask);
    assert_ptr_equal(c.pinned, &u->cmp_mask);
    assert_int_equal(c.pin_method, 0);
    ui_cmd_done(u, &c, 0);
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_NONE);
    key(u, ' ');
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_PIN);
    key(u, 'u');
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_NONE); /* that pair was sent */
    key(u, '=');
    assert_int_equal(u->pin_view, 0);
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_NONE); /* panel closed: nothing computed */
    key(u, '=');
    assert_int_equal(u->pin_view, 1);
    /* following a running search: no evaluation per step; the panel says p pauses it */
    u->snap.have_search = 1, u->snap.phase = EX_RUNNING, u->snap.target_ratio = 0.75;
    u->follow = 1;
    key(u, ' ');
    u->follow = 1;
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_NONE);
    u->follow = 0;
    assert_int_equal(ui_pin_refresh(u).kind, UI_CMD_PIN);
    /* a baseline: the worker makes its mask at the search's target ratio, or at the one given */
    key(u, ':');
    c = type_line(u, "pin fisher");
    assert_int_equal(c.kind, UI_CMD_PIN);
    assert_int_equal(c.pin_method, 1);
    assert_string_equal(c.path, "fisher");
    assert_true(c.ratio == 0.75);
    assert_int_equal(u->have_cmp, 0);
    assert_int_equal(u->pin_making, 1);
    key(u, ':');
    assert_true(type_line(u, "pin bme 0.25").ratio == 0.25);
    u->snap.have_search = 0, u->snap.phase = EX_READY;
    assert_true(ui_pin_default_ratio(u) == 1.0 / 90); /* the working mask's: one SWA head */
    /* the mask the worker made becomes the pinned one */
    u->snap.pin.mask_seq = 1;
    u->snap.pin.pinned = u->mask;
    memset(u->snap.pin.pinned.z, ATTN_FULL, L * H);
    memset(u->snap.pin.pinned.z, ATTN_SWA, 45);
    snprintf(u->snap.pin.name, sizeof u->snap.pin.name, "bme");
    ui_apply_snapshot(u);
    assert_int_equal(u->have_cmp, 1);
    assert_int_equal(u->pin_making, 0);
    assert_string_equal(u->cmp_name, "bme");
    assert_int_equal(ex_mask_count_swa(&u->cmp_mask), 45);
    /* a compare folder's method pinned (C, Enter) while a baseline is made: that one is dropped */
    key(u, ':');
    type_line(u, "pin fisher");
    assert_int_equal(u->pin_making, 1);
    u->cmp_mask = u->mask, u->have_cmp = 1;
    c = ui_pin_refresh(u);
    assert_int_equal(c.kind, UI_CMD_PIN);
    ui_cmd_done(u, &c, 0);
    assert_int_equal(u->pin_making, 0);
    /* a file: read by the worker, then pinned under its name */
    key(u, ':');
    c = type_line(u, "pin runs/a mask.csv");
    assert_int_equal(c.kind, UI_CMD_IO);
    assert_int_equal(c.io, EX_IO_PIN_MASK);
    assert_string_equal(c.path, "runs/a mask.csv");
    u->snap.io = (ex_io){.seq = u->io_seen + 1, .kind = EX_IO_PIN_MASK, .ok = 1, .mask = u->mask};
    snprintf(u->snap.io.path, sizeof u->snap.io.path, "runs/a mask.csv");
    ui_apply_snapshot(u);
    assert_string_equal(u->cmp_name, "a mask.csv");
    assert_int_equal(ui_compare_n_diff(u), 0);
    assert_int_equal(n_swa(u), 1); /* pinning never edits the working mask */
    key(u, 'D');
    assert_int_equal(u->have_cmp, 0);
    assert_int_equal(u->pin_view, 0);
    key(u, '=');
    assert_string_equal(u->msg, "nothing pinned: :pin [full | swa | a baseline such as fisher | FILE]");
    for (int i = 0; i < 4 && n_swa(u) > 0; i++) key(u, 'u'); /* the toggles above undone */
    assert_int_equal(n_swa(u), 0);

    /* H: the heat map cycles through every static head ranking of the registry (table order), then
       off; a score nothing measured is asked of the worker, one the search has is used as it is */
    assert_int_equal(ex_n_heat(), search_methods_count_kind(SEARCH_KIND_HEAD_RANKING));
    assert_string_equal(ex_heat_name(0), "ablation");
    assert_string_equal(ex_heat_name(1), "fisher");
    assert_string_equal(ex_rank_name(ex_heat_rank(1)), "fisher");
    ui_cmd hc = key(u, 'H');
    assert_int_equal(u->heat, 1);
    assert_int_equal(hc.kind, UI_CMD_HEAT);
    assert_ptr_equal(hc.mask, &u->mask);
    assert_string_equal(u->msg, "heat: ablation not measured yet: computing it on the worker (H: next)");
    u->snap.heat_src[1] = EX_HEAT_SEARCH;
    hc = key(u, 'H');
    assert_int_equal(u->heat, 2);
    assert_int_equal(hc.kind, UI_CMD_NONE); /* the search's fisher scores: no second pass */
    assert_string_equal(u->msg,
                        "heat: fisher, the search's scores; glyph = score, colour = full / SWA (H: next)");
    u->snap.heat_src[2] = EX_HEAT_RANKINGS;
    hc = key(u, 'H');
    assert_int_equal(hc.kind, UI_CMD_NONE);
    assert_string_equal(u->msg,
                        "heat: locality, the attention view's ranking; glyph = score, colour = full / "
                        "SWA (H: next)");
    for (int i = 3; i < ex_n_heat(); i++) key(u, 'H');
    key(u, 'H');
    assert_int_equal(u->heat, 0);
    assert_string_equal(u->msg, "heat off");
    u->snap.heat_src[1] = u->snap.heat_src[2] = EX_HEAT_NONE;

    /* the help: V on v's line, A W alone on theirs */
    char line[160];
    int found_v = 0;
    for (int i = 0; i < keymap_help_lines(); i++) {
        keymap_help_line(i, line, sizeof line);
        if (strstr(line, "  v V ")) found_v = 1;
        if (strstr(line, "  A W")) assert_null(strstr(line, " V "));
    }
    assert_true(found_v);
    free_state(u);
}

/* F pins the cursor's head (full, SWA, free) and puts it so in the working mask; the start form
 * passes the pins as --force-full / --force-swa, and refuses pins the search cannot keep, saying why
 * (issue 28 item 5). */
static void test_pins(void **st) {
    (void)st;
    ui_state *u = new_state();
    assert_int_equal(u->cur_layer, L - 1);
    key(u, ' '); /* L29 kv0 SWA by hand, then pinned full: the mask follows the pin */
    key(u, 'F');
    assert_int_equal(u->pin[(L - 1) * H], 1);
    assert_int_equal(u->mask.z[(L - 1) * H], ATTN_FULL);
    assert_string_equal(u->msg, "L29 kv0 pinned full: every search keeps it (1 pinned; F again: pinned SWA)");
    key(u, 'F');
    assert_int_equal(u->pin[(L - 1) * H], 2);
    assert_int_equal(u->mask.z[(L - 1) * H], ATTN_SWA);
    key(u, 'u'); /* undo takes the mask back, not the pin */
    assert_int_equal(u->mask.z[(L - 1) * H], ATTN_FULL);
    assert_int_equal(u->pin[(L - 1) * H], 2);
    key(u, 'l');
    key(u, 'F'); /* L29 kv1 full */
    assert_int_equal(u->n_pin, 2);
    key(u, 's');
    ui_cmd c = key(u, KEY_ENTER);
    assert_int_equal(c.kind, UI_CMD_START_SEARCH);
    assert_int_equal(c.req.opts.n_pins, 2);
    assert_true(c.req.opts.given & SOPT_BIT(SOPT_FORCE_FULL));
    assert_true(c.req.opts.given & SOPT_BIT(SOPT_FORCE_SWA));
    search_config cfg;
    char err[256], list[64];
    assert_int_equal(search_opts_config(&c.req.opts, 8192, &cfg, err, sizeof err), 0);
    assert_string_equal(search_pins_format(&cfg, 0, list, sizeof list), "29.1");
    assert_string_equal(search_pins_format(&cfg, 1, list, sizeof list), "29.0");
    /* the third F frees the head */
    key(u, 'F');
    key(u, 'F');
    assert_int_equal(u->pin[(L - 1) * H + 1], 0);
    assert_int_equal(u->n_pin, 1);
    assert_string_equal(u->msg, "L29 kv1 free again (1 pinned)");
    /* pins the search cannot keep: refused with the reason, the form stays open */
    for (int i = 0; i < 80; i++) u->pin[i] = 1;
    u->n_pin = 81;
    u->form_ratio = 0.25; /* 23 SWA heads, 9 not pinned full */
    key(u, 's');
    c = key(u, KEY_ENTER);
    assert_int_equal(c.kind, UI_CMD_NONE);
    assert_int_equal(u->mode, UI_START);
    assert_non_null(strstr(u->msg, "more than the heads not pinned full"));
    key(u, 27);
    free_state(u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue28_defects),
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_model_start),
        cmocka_unit_test(test_loading_refuses_edits),
        cmocka_unit_test(test_cursor),
        cmocka_unit_test(test_toggles_and_undo),
        cmocka_unit_test(test_fill),
        cmocka_unit_test(test_export_prompt),
        cmocka_unit_test(test_io_results),
        cmocka_unit_test(test_search_control),
        cmocka_unit_test(test_quit_confirm),
        cmocka_unit_test(test_toggles_views),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_table_help_footer),
        cmocka_unit_test(test_footers),
        cmocka_unit_test(test_command_line),
        cmocka_unit_test(test_jump_and_f_keys),
        cmocka_unit_test(test_mouse),
        cmocka_unit_test(test_attn_form_workspace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
