/* keymap.c — the explorer's key table (keymap.h) and the help and footer text made from it. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include "keymap.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

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
    {'s', REQ_START_FORM, N, "s", "start a search / pause or resume / step one evaluation", "s:search"},
    {'p', REQ_PAUSE, N, "p", NULL, "p:pause"},
    {'n', REQ_STEP, N, "n", NULL, "n:step"},
    {' ', REQ_TOGGLE_HEAD, N, "space", "toggle the KV head under the cursor (full <-> SWA)", "spc:toggle"},
    {'t', REQ_TOGGLE_HEAD, N, "t", NULL, NULL},
    {'T', REQ_TOGGLE_LAYER, N, "T", "toggle the whole layer", "T:layer"},
    {'L', REQ_TOGGLE_LAYER, N, "L", NULL, NULL},
    {'f', REQ_FILL, N, "f", "fill the layer: then 0-9 = that many SWA KV heads", "f:fill"},
    {'v', REQ_HELDOUT, N, "v", "score the mask on held-out probes", "v:eval"},
    {'a', REQ_ASK, N | KM(UI_ASK), "a", "ask the model a held-out question with this mask", "a:ask"},
    {'x', REQ_EXPORT_MENU, N | KM(UI_CONFIRM_QUIT), "x",
     "export, then m t l: mask, trace, layers / load a mask", "x:export"},
    {'o', REQ_LOAD_MASK, N, "o", NULL, "o:load"},
    {'u', REQ_UNDO, N, "u", "undo the last edit", "u:undo"},
    {'g', REQ_QUERY_VIEW, N, "g", "cells per query head / KV-cache context length", "g:view"},
    {'c', REQ_CONTEXT, N, "c", NULL, "c:ctx"},
    {'C', REQ_COMPARE_OPEN, N, "C", "open a compare folder / diff against a method on-off", NULL},
    {'D', REQ_COMPARE_DIFF, N, "D", NULL, NULL},
    {KEY_UP, REQ_MOVE_UP, N, "Up", "move the cursor", NULL},
    {KEY_DOWN, REQ_MOVE_DOWN, N, "Down", NULL, NULL},
    {KEY_LEFT, REQ_MOVE_LEFT, N, "Left", NULL, NULL},
    {KEY_RIGHT, REQ_MOVE_RIGHT, N, "Right", NULL, NULL},
    {'h', REQ_MOVE_LEFT, N, "h", NULL, NULL},
    {'j', REQ_MOVE_DOWN, N, "j", NULL, NULL},
    {'k', REQ_MOVE_UP, N, "k", NULL, NULL},
    {'l', REQ_MOVE_RIGHT, N, "l", NULL, NULL},
    {KEY_PPAGE, REQ_PAGE_UP, N, "PgUp", "page / first or last layer; redraw", NULL},
    {KEY_NPAGE, REQ_PAGE_DOWN, N, "PgDn", NULL, NULL},
    {KEY_HOME, REQ_FIRST_LAYER, N, "Home", NULL, NULL},
    {KEY_END, REQ_LAST_LAYER, N, "End", NULL, NULL},
    {CTRL('l'), REQ_REDRAW, N, "Ctrl-L", NULL, NULL},
    {'A', REQ_ATTN, N, "A", "attention view of the head / save the workspace", NULL},
    {'W', REQ_WORKSPACE_SAVE, N, "W", NULL, NULL},
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
