/* draw_util.c — small drawing helpers shared by the explorer's draw files: width-aware clipped
 * text (UTF-8), word wrapping, panel titles, boxes, glyph sets and colour attributes. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "explorer_ui.h"

static const ui_glyphs glyphs_utf8 = {
    .full = "\u2588",
    .swa = "\u2591",
    .probe = "\u25b6",
    .group = "\u2022",
    .diff = "\u25c6",
    .spark = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"},
    .bar_on = "\u2588",
    .bar_off = "\u2591",
    .vline = "\u2502",
    .hline = "\u2500",
};
static const ui_glyphs glyphs_ascii = {
    .full = "#",
    .swa = ".",
    .probe = ">",
    .group = "*",
    .diff = "x",
    .spark = {"_", ".", ",", ":", "-", "=", "+", "#"},
    .bar_on = "#",
    .bar_off = "-",
    .vline = "|",
    .hline = "-",
};

const ui_glyphs *ui_glyphs_get(int utf8) {
    return utf8 ? &glyphs_utf8 : &glyphs_ascii;
}

int ui_attr(const ui_state *u, int pair, int mono_attr) {
    return u->color ? (int)COLOR_PAIR(pair) : mono_attr;
}

/* Put at most w columns of UTF-8 text at (y, x). */
static void put_clipped(int y, int x, int w, int attr, const char *s) {
    if (w <= 0 || y < 0 || x < 0) return;
    wchar_t wb[512];
    mbstate_t st;
    memset(&st, 0, sizeof st);
    const char *src = s;
    size_t n = mbsrtowcs(wb, &src, sizeof wb / sizeof wb[0] - 1, &st);
    if (n == (size_t)-1) { /* not valid in this locale: show bytes as '?' */
        n = 0;
        for (const char *p = s; *p && n < sizeof wb / sizeof wb[0] - 1; p++)
            wb[n++] = (unsigned char)*p < 128 ? (wchar_t)*p : L'?';
    }
    wb[n] = 0;
    int cols = 0;
    size_t k = 0;
    for (; k < n; k++) {
        int cw = wcwidth(wb[k]);
        if (cw < 0) {
            wb[k] = L'?';
            cw = 1;
        }
        if (cols + cw > w) break;
        cols += cw;
    }
    if (k == 0) return;
    attron(attr);
    mvaddnwstr(y, x, wb, (int)k);
    attroff(attr);
}

void draw_text(int y, int x, int w, int attr, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put_clipped(y, x, w, attr, buf);
}

/* Word-wrap `text` into at most max_lines lines of w columns from (y, x). Width is counted in
 * characters (the texts are plain words). Returns the number of lines used. */
/* draw_wrap, drawing only when `draw` (else counting the lines). */
static int wrap(int y, int x, int w, int max_lines, int attr, const char *text, int draw) {
    if (w <= 0 || max_lines <= 0) return 0;
    const char *p = text;
    int line = 0;
    char buf[512];
    while (*p && line < max_lines) {
        while (*p == ' ') p++;
        if (!*p) break;
        /* take words while they fit (columns = UTF-8 code points here) */
        const char *end = p, *best = NULL;
        int cols = 0;
        while (*end && *end != '\n') {
            const char *q = end;
            int wc = 0;
            while (*q && *q != ' ' && *q != '\n') {
                if (((unsigned char)*q & 0xC0) != 0x80) wc++;
                q++;
            }
            int need = cols + (cols ? 1 : 0) + wc;
            if (need > w && best) break;
            if (need > w) { /* a single word longer than the line: cut it */
                best = q;
                break;
            }
            cols = need;
            best = q;
            end = q;
            while (*end == ' ') end++;
        }
        if (!best) best = end;
        size_t len = (size_t)(best - p);
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (draw) put_clipped(y + line, x, w, attr, buf);
        line++;
        p = best;
        if (*p == '\n') p++;
    }
    return line;
}

void draw_panel_title(const lay_rect *r, ui_state *u, const char *title) {
    if (!r->h) return;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    int attr = ui_attr(u, PAIR_TITLE, A_BOLD) | A_BOLD;
    attron(ui_attr(u, PAIR_DIM, A_NORMAL));
    for (int i = 0; i < r->w; i++) mvaddstr(r->y, r->x + i, g->hline);
    attroff(ui_attr(u, PAIR_DIM, A_NORMAL));
    char buf[256];
    snprintf(buf, sizeof buf, " %s ", title);
    put_clipped(r->y, r->x + 1, r->w - 2, attr, buf);
}

void draw_box(const lay_rect *r, ui_state *u, const char *title) {
    if (!r->h || !r->w) return;
    const ui_glyphs *g = ui_glyphs_get(u->utf8);
    for (int y = r->y; y < r->y + r->h; y++) {
        move(y, r->x);
        for (int x = 0; x < r->w; x++) addch(' ');
    }
    int attr = ui_attr(u, PAIR_ACCENT, A_BOLD);
    attron(attr);
    for (int x = 1; x < r->w - 1; x++) {
        mvaddstr(r->y, r->x + x, g->hline);
        mvaddstr(r->y + r->h - 1, r->x + x, g->hline);
    }
    for (int y = 1; y < r->h - 1; y++) {
        mvaddstr(r->y + y, r->x, g->vline);
        mvaddstr(r->y + y, r->x + r->w - 1, g->vline);
    }
    mvaddstr(r->y, r->x, u->utf8 ? "\u250c" : "+");
    mvaddstr(r->y, r->x + r->w - 1, u->utf8 ? "\u2510" : "+");
    mvaddstr(r->y + r->h - 1, r->x, u->utf8 ? "\u2514" : "+");
    mvaddstr(r->y + r->h - 1, r->x + r->w - 1, u->utf8 ? "\u2518" : "+");
    attroff(attr);
    if (title) {
        char buf[256];
        snprintf(buf, sizeof buf, " %s ", title);
        put_clipped(r->y, r->x + 2, r->w - 4, attr | A_BOLD, buf);
    }
}

void fmt_bytes(double bytes, char *buf, size_t cap) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024 && i < 4) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", bytes, unit[i]);
}

int draw_wrap(int y, int x, int w, int max_lines, int attr, const char *text) {
    return wrap(y, x, w, max_lines, attr, text, 1);
}

int draw_wrap_lines(int w, const char *text) {
    return wrap(0, 0, w, 1 << 20, 0, text, 0);
}

int draw_cols(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Byte length of the longest prefix of s of at most `cols` columns that ends before a space (0:
 * none). */
static size_t word_prefix(const char *s, int cols) {
    size_t best = 0;
    int c = 0;
    for (size_t i = 0; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
        if (c > cols) break;
        if (s[i] == ' ' && c <= cols) best = i;
        c++;
    }
    while (best > 0 && s[best - 1] == ' ') best--;
    return best;
}

void draw_text_words(int y, int x, int w, int attr, const char *ell, const char *text) {
    if (draw_cols(text) <= w) {
        put_clipped(y, x, w, attr, text);
        return;
    }
    const int ew = draw_cols(ell);
    size_t n = word_prefix(text, w - ew);
    char buf[1024];
    if (n == 0 || n >= sizeof buf - 8) { /* one long word: cut it */
        put_clipped(y, x, w, attr, text);
        return;
    }
    snprintf(buf, sizeof buf, "%.*s%s", (int)n, text, ell);
    put_clipped(y, x, w, attr, buf);
}
