/* plot_script.c — building a gnuplot script in memory (plot_script.h). */
#define _GNU_SOURCE
#include "plot_script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(plot_script *s, size_t more) {
    if (s->oom) return -1;
    if (s->n + more + 1 <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->n + more + 1) cap *= 2;
    char *b = realloc(s->buf, cap);
    if (!b) {
        s->oom = 1;
        return -1;
    }
    s->buf = b;
    s->cap = cap;
    return 0;
}

void plot_script_printf(plot_script *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || reserve(s, (size_t)k)) {
        s->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->buf + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    s->n += (size_t)k;
}

void plot_script_quoted(plot_script *s, const char *text) {
    plot_script_printf(s, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            plot_script_printf(s, "\\%c", *p);
        else if (*p == '\n')
            plot_script_printf(s, " ");
        else
            plot_script_printf(s, "%c", *p);
    }
    plot_script_printf(s, "\"");
}

void plot_script_free(plot_script *s) {
    free(s->buf);
    memset(s, 0, sizeof *s);
}

void plot_script_begin(plot_script *s, const char *name, const char *what, int w, int h) {
    plot_script_printf(s,
                       "# %s.gp - %s.\n"
                       "# Written by bosch with its data inline; redraw it from its folder:\n"
                       "#   gnuplot %s.gp > %s.png\n"
                       "#   gnuplot -e \"term='svg'\" %s.gp > %s.svg\n"
                       "if (!exists(\"term\")) term = \"png\"\n"
                       "if (term eq \"svg\") {\n"
                       "    set terminal svg size %d,%d dynamic noenhanced font \"sans,12\" background "
                       "\"white\"\n"
                       "} else {\n"
                       "    set terminal pngcairo size %d,%d noenhanced font \"sans,10\" background "
                       "\"white\"\n"
                       "}\n"
                       "set output\n"
                       "set encoding utf8\n"
                       "set grid lc rgb \"#dddddd\"\n"
                       "set border lc rgb \"#444444\"\n"
                       "set key outside right top box lc rgb \"#bbbbbb\"\n",
                       name, what, name, name, name, name, w, h, w, h);
    /* lines 1-8 in the Okabe-Ito colours (safe for colour-blind readers) with filled points, 9-16 the
       same colours dashed with open points, so 16 series stay apart */
    static const char *const okabe_ito[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                            "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
    static const int filled[8] = {7, 5, 9, 11, 13, 15, 3, 1}, open[8] = {6, 4, 8, 10, 12, 14, 2, 3};
    for (int i = 0; i < 16; i++)
        plot_script_printf(s, "set linetype %d lc rgb \"%s\" lw 2 dt %d pt %d ps 1.2\n", i + 1,
                           okabe_ito[i % 8], i < 8 ? 1 : 2, i < 8 ? filled[i] : open[i - 8]);
    plot_script_printf(s, "set linetype cycle 16\n");
}
