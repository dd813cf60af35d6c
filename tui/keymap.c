/* keymap.c — the explorer's key table (keymap.h) and the help and footer text made from it. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "keymap.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CTRL(c) ((c)&0x1f)
#define N KM(UI_NORMAL)
#define ESC 27

/* Order: UI_NORMAL's keys in footer order, then the dialogs'. A UI_NORMAL entry with help text
 * starts a help line; those after it with help NULL join that line. */
static const keymap_entry table[] = {
    {'?', REQ_HELP, N, "?", "this help / quit", "?:help"},
    {KEY_F(1), REQ_HELP, N, "F1", NULL, NULL},
    {'q', REQ_QUIT, N, "q", NULL, "q:quit"},
    {'Q', REQ_QUIT, N, "Q", NULL, NULL},
    {KEY_F(10), REQ_QUIT, N, "F10", NULL, NULL},
    {'s', REQ_START_FORM, N, "s", "start a search / pause or resume / step one evaluation", "s:search"},
    {'p', REQ_PAUSE, N, "p", NULL, "p:pause"},
    {'n', REQ_STEP, N, "n", NULL, "n:step"},
    {' ', REQ_TOGGLE_HEAD, N, "space", "toggle the KV head under the cursor (full <-> SWA)", "spc:toggle"},
    {'t', REQ_TOGGLE_HEAD, N, "t", NULL, NULL},
    {'T', REQ_TOGGLE_LAYER, N, "T", "toggle the whole layer", "T:layer"},
    {'L', REQ_TOGGLE_LAYER, N, "L", NULL, NULL},
    {'f', REQ_FILL, N, "f", "fill the layer: then 0-9 = that many SWA KV heads", "f:fill"},
    {'v', REQ_HELDOUT, N, "v", "held-out score of the mask / its per-layer projection", "v:eval"},
    {'a', REQ_ASK, N | KM(UI_ASK), "a", "ask the model a held-out question with this mask", "a:ask"},
    {'x', REQ_EXPORT_MENU, N | KM(UI_CONFIRM_QUIT), "x",
     "export, then m t l d h r (duo hf trtllm too) / load", "x:export"},
    {'o', REQ_LOAD_MASK, N, "o", NULL, "o:load"},
    {'u', REQ_UNDO, N, "u", "undo the last edit / jump to a layer / command line", "u:undo"},
    {'/', REQ_JUMP, N, "/", NULL, NULL},
    {KEY_F(3), REQ_JUMP, N, "F3", NULL, NULL}, /* htop's F3 is its search */
    {':', REQ_COMMAND, N, ":", NULL, NULL},
    {'g', REQ_QUERY_VIEW, N, "g", "cells per query head / KV-cache context length", "g:view"},
    {'c', REQ_CONTEXT, N, "c", NULL, "c:ctx"},
    {'C', REQ_COMPARE_OPEN, N, "C", "open a compare folder / diff against a method on-off", NULL},
    {'D', REQ_COMPARE_DIFF, N, "D", NULL, NULL},
    {KEY_UP, REQ_MOVE_UP, N, "Up", "move the cursor (mouse: click, wheel)", NULL},
    {KEY_DOWN, REQ_MOVE_DOWN, N, "Down", NULL, NULL},
    {KEY_LEFT, REQ_MOVE_LEFT, N, "Left", NULL, NULL},
    {KEY_RIGHT, REQ_MOVE_RIGHT, N, "Right", NULL, NULL},
    {'h', REQ_MOVE_LEFT, N, "h", NULL, NULL},
    {'j', REQ_MOVE_DOWN, N, "j", NULL, NULL},
    {'k', REQ_MOVE_UP, N, "k", NULL, NULL},
    {'l', REQ_MOVE_RIGHT, N, "l", NULL, NULL},
    {KEY_MOUSE, REQ_MOUSE, N, "mouse", NULL, NULL},
    {KEY_PPAGE, REQ_PAGE_UP, N, "PgUp", "page / first or last layer; redraw", NULL},
    {KEY_NPAGE, REQ_PAGE_DOWN, N, "PgDn", NULL, NULL},
    {KEY_HOME, REQ_FIRST_LAYER, N, "Home", NULL, NULL},
    {KEY_END, REQ_LAST_LAYER, N, "End", NULL, NULL},
    {CTRL('l'), REQ_REDRAW, N, "Ctrl-L", NULL, NULL},
    {'A', REQ_ATTN, N, "A", "attention view of the head / save the workspace", NULL},
    {'W', REQ_WORKSPACE_SAVE, N, "W", NULL, NULL},
    /* last in the footer: it is cut first on a narrow terminal */
    {'V', REQ_HELDOUT_SERVABLE, N, "V", NULL, "V:layer-eval"},
    /* the fill dialog */
    {'0', REQ_FILL_COUNT, KM(UI_FILL), "0-9", NULL, "fill layer: 0-9 = SWA KV heads"},
    {'1', REQ_FILL_COUNT, KM(UI_FILL), "1", NULL, NULL},
    {'2', REQ_FILL_COUNT, KM(UI_FILL), "2", NULL, NULL},
    {'3', REQ_FILL_COUNT, KM(UI_FILL), "3", NULL, NULL},
    {'4', REQ_FILL_COUNT, KM(UI_FILL), "4", NULL, NULL},
    {'5', REQ_FILL_COUNT, KM(UI_FILL), "5", NULL, NULL},
    {'6', REQ_FILL_COUNT, KM(UI_FILL), "6", NULL, NULL},
    {'7', REQ_FILL_COUNT, KM(UI_FILL), "7", NULL, NULL},
    {'8', REQ_FILL_COUNT, KM(UI_FILL), "8", NULL, NULL},
    {'9', REQ_FILL_COUNT, KM(UI_FILL), "9", NULL, NULL},
    /* the export menu */
    {'m', REQ_EXPORT_MASK, KM(UI_EXPORT), "m", NULL, "export: m mask"},
    {'t', REQ_EXPORT_TRACE, KM(UI_EXPORT), "t", NULL, "t trace"},
    {'l', REQ_EXPORT_LAYERS, KM(UI_EXPORT), "l", NULL, "l layers"},
    {'d', REQ_EXPORT_DUO, KM(UI_EXPORT), "d", NULL, "d duo"},
    {'h', REQ_EXPORT_HF, KM(UI_EXPORT), "h", NULL, "h hf"},
    {'r', REQ_EXPORT_TRTLLM, KM(UI_EXPORT), "r", NULL, "r trtllm"},
    {'s', REQ_EXPORT_SCORES, KM(UI_EXPORT), "s", NULL, "s scores"},
    /* the start form */
    {KEY_UP, REQ_FORM_PREV, KM(UI_START), "Up", NULL, "Up/Down field"},
    {'k', REQ_FORM_PREV, KM(UI_START), "k", NULL, NULL},
    {KEY_DOWN, REQ_FORM_NEXT, KM(UI_START), "Down", NULL, NULL},
    {'j', REQ_FORM_NEXT, KM(UI_START), "j", NULL, NULL},
    {'\t', REQ_FORM_NEXT, KM(UI_START), "Tab", NULL, NULL},
    {KEY_RIGHT, REQ_FORM_INC, KM(UI_START), "Right", NULL, "Left/Right value"},
    {'l', REQ_FORM_INC, KM(UI_START), "l", NULL, NULL},
    {'+', REQ_FORM_INC, KM(UI_START), "+", NULL, NULL},
    {KEY_LEFT, REQ_FORM_DEC, KM(UI_START), "Left", NULL, NULL},
    {'h', REQ_FORM_DEC, KM(UI_START), "h", NULL, NULL},
    {'-', REQ_FORM_DEC, KM(UI_START), "-", NULL, NULL},
    {'0', REQ_FORM_DIGIT, KM(UI_START), "0", NULL, NULL},
    {'1', REQ_FORM_DIGIT, KM(UI_START), "1", NULL, NULL},
    {'2', REQ_FORM_DIGIT, KM(UI_START), "2", NULL, NULL},
    {'3', REQ_FORM_DIGIT, KM(UI_START), "3", NULL, NULL},
    {'4', REQ_FORM_DIGIT, KM(UI_START), "4", NULL, NULL},
    {'5', REQ_FORM_DIGIT, KM(UI_START), "5", NULL, NULL},
    {'6', REQ_FORM_DIGIT, KM(UI_START), "6", NULL, NULL},
    {'7', REQ_FORM_DIGIT, KM(UI_START), "7", NULL, NULL},
    {'8', REQ_FORM_DIGIT, KM(UI_START), "8", NULL, NULL},
    {'9', REQ_FORM_DIGIT, KM(UI_START), "9", NULL, NULL},
    {KEY_BACKSPACE, REQ_FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL},
    {127, REQ_FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL},
    {8, REQ_FORM_BACKSPACE, KM(UI_START), "Backspace", NULL, NULL},
    {'\n', REQ_FORM_ACCEPT, KM(UI_START), "Enter", NULL, "Enter start"},
    {'\r', REQ_FORM_ACCEPT, KM(UI_START), "Enter", NULL, NULL},
    {KEY_ENTER, REQ_FORM_ACCEPT, KM(UI_START), "Enter", NULL, NULL},
    /* the file-name prompt */
    {'\n', REQ_PROMPT_ACCEPT, KM(UI_PROMPT), "Enter", NULL, "Enter accept"},
    {'\r', REQ_PROMPT_ACCEPT, KM(UI_PROMPT), "Enter", NULL, NULL},
    {KEY_ENTER, REQ_PROMPT_ACCEPT, KM(UI_PROMPT), "Enter", NULL, NULL},
    {KEY_BACKSPACE, REQ_PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL},
    {127, REQ_PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL},
    {8, REQ_PROMPT_BACKSPACE, KM(UI_PROMPT), "Backspace", NULL, NULL},
    {ESC, REQ_CLOSE, KM(UI_FILL) | KM(UI_EXPORT) | KM(UI_START) | KM(UI_PROMPT), "Esc", NULL, "Esc cancel"},
    {CTRL('u'), REQ_PROMPT_CLEAR, KM(UI_PROMPT), "Ctrl-U", NULL, "Ctrl-U clear"},
    /* the quit confirmation */
    {'y', REQ_CONFIRM_YES, KM(UI_CONFIRM_QUIT), "y", NULL, NULL},
    {'Y', REQ_CONFIRM_YES, KM(UI_CONFIRM_QUIT), "Y", NULL, NULL},
    /* the comparison view */
    {ESC, REQ_CLOSE, KM(UI_COMPARE), "Esc", NULL, NULL},
    {'q', REQ_CLOSE, KM(UI_COMPARE), "q", NULL, NULL},
    {KEY_UP, REQ_CMP_UP, KM(UI_COMPARE), "Up", NULL, NULL},
    {'k', REQ_CMP_UP, KM(UI_COMPARE), "k", NULL, NULL},
    {KEY_DOWN, REQ_CMP_DOWN, KM(UI_COMPARE), "Down", NULL, NULL},
    {'j', REQ_CMP_DOWN, KM(UI_COMPARE), "j", NULL, NULL},
    {'\n', REQ_CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL},
    {'\r', REQ_CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL},
    {KEY_ENTER, REQ_CMP_SHOW_DIFF, KM(UI_COMPARE), "Enter", NULL, NULL},
    {'L', REQ_CMP_LOAD, KM(UI_COMPARE), "L", NULL, NULL},
    /* the attention view: the cursor keys move to another head, recomputing the view */
    {'\t', REQ_ATTN_SPLIT, KM(UI_ATTN), "Tab", NULL, "Tab calib/held-out"},
    {'s', REQ_ATTN_SPLIT, KM(UI_ATTN), "s", NULL, NULL},
    {'n', REQ_ATTN_NEXT, KM(UI_ATTN), "n", NULL, "n/p sample"},
    {']', REQ_ATTN_NEXT, KM(UI_ATTN), "]", NULL, NULL},
    {'p', REQ_ATTN_PREV, KM(UI_ATTN), "p", NULL, NULL},
    {'[', REQ_ATTN_PREV, KM(UI_ATTN), "[", NULL, NULL},
    {KEY_UP, REQ_MOVE_UP, KM(UI_ATTN), "Up", NULL, "arrows head"},
    {KEY_DOWN, REQ_MOVE_DOWN, KM(UI_ATTN), "Down", NULL, NULL},
    {KEY_LEFT, REQ_MOVE_LEFT, KM(UI_ATTN), "Left", NULL, NULL},
    {KEY_RIGHT, REQ_MOVE_RIGHT, KM(UI_ATTN), "Right", NULL, NULL},
    {'k', REQ_MOVE_UP, KM(UI_ATTN), "k", NULL, NULL},
    {'j', REQ_MOVE_DOWN, KM(UI_ATTN), "j", NULL, NULL},
    {'h', REQ_MOVE_LEFT, KM(UI_ATTN), "h", NULL, NULL},
    {'l', REQ_MOVE_RIGHT, KM(UI_ATTN), "l", NULL, NULL},
    {ESC, REQ_CLOSE, KM(UI_ATTN), "Esc", NULL, "Esc close"},
    {'q', REQ_CLOSE, KM(UI_ATTN), "q", NULL, NULL},
    {'A', REQ_CLOSE, KM(UI_ATTN), "A", NULL, NULL},
};
#define N_TABLE ((int)(sizeof table / sizeof table[0]))

const keymap_entry *keymap_table(int *n) {
    *n = N_TABLE;
    return table;
}

ui_request keymap_lookup(ui_mode mode, int ch) {
    for (int i = 0; i < N_TABLE; i++)
        if (table[i].key == ch && (table[i].modes & KM(mode))) return table[i].req;
    switch (mode) {
    case UI_HELP: /* any key closes these */
    case UI_EXPORT:
    case UI_CONFIRM_QUIT:
    case UI_ASK:
        return REQ_CLOSE;
    case UI_FILL: /* another key closes it with a hint (ui_apply) */
        return REQ_FILL_COUNT;
    case UI_PROMPT:
        return REQ_PROMPT_CHAR;
    default:
        return REQ_NONE;
    }
}

ui_request keymap_lookup_binds(const ui_bind *binds, int n_binds, ui_mode mode, int ch) {
    for (int i = 0; mode == UI_NORMAL && i < n_binds; i++)
        if (binds[i].key == ch) return (ui_request)binds[i].req;
    return keymap_lookup(mode, ch);
}

static const struct {
    ui_request req;
    const char *name;
} request_names[] = {
    {REQ_NONE, "none"},
    {REQ_HELP, "help"},
    {REQ_QUIT, "quit"},
    {REQ_START_FORM, "search"},
    {REQ_PAUSE, "pause"},
    {REQ_STEP, "step"},
    {REQ_TOGGLE_HEAD, "toggle"},
    {REQ_TOGGLE_LAYER, "toggle_layer"},
    {REQ_FILL, "fill"},
    {REQ_HELDOUT, "eval"},
    {REQ_ASK, "ask"},
    {REQ_EXPORT_MENU, "export"},
    {REQ_LOAD_MASK, "load"},
    {REQ_UNDO, "undo"},
    {REQ_QUERY_VIEW, "view"},
    {REQ_CONTEXT, "context"},
    {REQ_COMPARE_OPEN, "compare"},
    {REQ_COMPARE_DIFF, "diff"},
    {REQ_MOVE_UP, "up"},
    {REQ_MOVE_DOWN, "down"},
    {REQ_MOVE_LEFT, "left"},
    {REQ_MOVE_RIGHT, "right"},
    {REQ_PAGE_UP, "page_up"},
    {REQ_PAGE_DOWN, "page_down"},
    {REQ_FIRST_LAYER, "first"},
    {REQ_LAST_LAYER, "last"},
    {REQ_REDRAW, "redraw"},
    {REQ_JUMP, "jump"},
    {REQ_COMMAND, "command"},
    {REQ_HELDOUT_SERVABLE, "eval_servable"},
    {REQ_ATTN, "attention"},
    {REQ_WORKSPACE_SAVE, "workspace"},
};
#define N_REQUEST_NAMES ((int)(sizeof request_names / sizeof request_names[0]))

int keymap_request_parse(const char *name) {
    for (int i = 0; i < N_REQUEST_NAMES; i++)
        if (!strcmp(name, request_names[i].name)) return (int)request_names[i].req;
    return -1;
}

const char *keymap_request_name(ui_request req) {
    for (int i = 0; i < N_REQUEST_NAMES; i++)
        if (request_names[i].req == req) return request_names[i].name;
    return "?";
}

int keymap_key_parse(const char *name) {
    static const struct {
        const char *name;
        int key;
    } named[] = {{"space", ' '},
                 {"Tab", '\t'},
                 {"Enter", '\r'},
                 {"Esc", ESC},
                 {"Backspace", KEY_BACKSPACE},
                 {"Up", KEY_UP},
                 {"Down", KEY_DOWN},
                 {"Left", KEY_LEFT},
                 {"Right", KEY_RIGHT},
                 {"PgUp", KEY_PPAGE},
                 {"PgDn", KEY_NPAGE},
                 {"Home", KEY_HOME},
                 {"End", KEY_END}};
    if (!name || !name[0]) return -1;
    if (!name[1])
        return (unsigned char)name[0] > 32 && (unsigned char)name[0] < 127 ? (unsigned char)name[0] : -1;
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (!strcasecmp(name, named[i].name)) return named[i].key;
    if ((name[0] == 'F' || name[0] == 'f') && name[1] >= '1' && name[1] <= '9') {
        int n = name[1] - '0';
        if (name[2] >= '0' && name[2] <= '9' && !name[3])
            n = n * 10 + (name[2] - '0');
        else if (name[2])
            return -1;
        return n >= 1 && n <= 12 ? KEY_F(n) : -1;
    }
    const char *c = !strncasecmp(name, "C-", 2) ? name + 2 : !strncasecmp(name, "Ctrl-", 5) ? name + 5 : NULL;
    if (c && c[0] && !c[1] && ((c[0] >= 'a' && c[0] <= 'z') || (c[0] >= 'A' && c[0] <= 'Z')))
        return CTRL(c[0]);
    return -1;
}

void keymap_key_label(int key, char *buf, size_t cap) {
    static const char *const probe[] = {"space", "Tab",   "Enter", "Esc",  "Backspace", "Up", "Down",
                                        "Left",  "Right", "PgUp",  "PgDn", "Home",      "End"};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++)
        if (keymap_key_parse(probe[i]) == key) {
            snprintf(buf, cap, "%s", probe[i]);
            return;
        }
    if (key >= KEY_F(1) && key <= KEY_F(12))
        snprintf(buf, cap, "F%d", key - KEY_F(0));
    else if (key >= 1 && key <= 26)
        snprintf(buf, cap, "C-%c", 'a' + key - 1);
    else if (key > 32 && key < 127)
        snprintf(buf, cap, "%c", key);
    else
        snprintf(buf, cap, "key %d", key);
}

/* Index in table of the first entry of help line i, or -1; *end gets one past its last entry. */
static int help_line_entries(int i, int *end) {
    int line = -1;
    for (int k = 0; k < N_TABLE; k++) {
        if (!(table[k].modes & N) || !table[k].help) continue;
        if (++line < i) continue;
        int e = k + 1;
        while (e < N_TABLE && (table[e].modes & N) && !table[e].help) e++;
        *end = e;
        return k;
    }
    return -1;
}

int keymap_help_lines(void) {
    int n = 0;
    for (int k = 0; k < N_TABLE; k++) n += (table[k].modes & N) && table[k].help;
    return n;
}

void keymap_help_line(int i, char *buf, size_t cap) {
    int end = 0, k = help_line_entries(i, &end);
    if (cap == 0) return;
    buf[0] = '\0';
    if (k < 0) return;
    char keys[128] = "";
    size_t o = 0;
    for (int e = k; e < end && o < sizeof keys; e++)
        o += (size_t)snprintf(keys + o, sizeof keys - o, "%s%s", e > k ? " " : "", table[e].label);
    int w = (int)strlen(keys) + 2; /* the text starts at column 20, or two spaces after long labels */
    snprintf(buf, cap, "  %-*s%s", w < 18 ? 18 : w, keys, table[k].help);
}

/* Entry k has a footer item in the footer of the modes `bit` (UI_NORMAL's items belong to its
 * footer only, also where the key works in a dialog too). */
static int in_footer(int k, unsigned bit) {
    return table[k].footer && (table[k].modes & bit) && (bit == N || !(table[k].modes & N));
}

void keymap_footer(ui_mode mode, char *buf, size_t cap) {
    unsigned bit = KM(mode);
    int any = 0;
    for (int k = 0; k < N_TABLE && !any; k++) any = in_footer(k, bit);
    if (!any) bit = N;
    const char *sep = bit == N ? " " : "  ";
    size_t o = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    for (int k = 0; k < N_TABLE && o < cap; k++)
        if (in_footer(k, bit))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? sep : " ", table[k].footer);
}
