/* keymap.c — the explorer's key table (keymap.h, from requests.h's UI_KEYS) and the help, footer and
 * request-name text made from it. */
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

/* The key rows of requests.h, in their order. */
static const keymap_entry table[] = {
#define KEY_ROW(key, id, modes, label, help, footer) {key, REQ_##id, modes, label, help, footer},
    UI_KEYS(KEY_ROW)
#undef KEY_ROW
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

/* The config file's name of each request (requests.h; NULL: not bindable). */
static const char *const request_names[REQ_N] = {
#define NAME_ROW(id, name, flags, action, job) [REQ_##id] = name,
    UI_REQUESTS(NAME_ROW)
#undef NAME_ROW
};

int keymap_request_parse(const char *name) {
    for (int i = 0; i < REQ_N; i++)
        if (request_names[i] && !strcmp(name, request_names[i])) return i;
    return -1;
}

const char *keymap_request_name(ui_request req) {
    return (unsigned)req < REQ_N && request_names[req] ? request_names[req] : "?";
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
