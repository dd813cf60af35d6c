/* plot_script.h — a gnuplot script built in memory (plot_script.c) and rendered to PNG and SVG by
 * running gnuplot on it (plot_run.c). Internal to plots/. */
#ifndef BOSCH_PLOT_SCRIPT_H
#define BOSCH_PLOT_SCRIPT_H

#include <stddef.h>

typedef struct {
    char *buf; /* NUL-terminated text */
    size_t n, cap;
    int oom; /* an append failed: the script is incomplete */
} plot_script;

/* Append printf-formatted text (on failure sets oom). */
void plot_script_printf(plot_script *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append text as a gnuplot double-quoted string, quotes included ("a\"b"). */
void plot_script_quoted(plot_script *s, const char *text);
/* Free the script's text buffer. */
void plot_script_free(plot_script *s);

/* The script's head: a comment naming what it draws (`what`) and how to redraw it, and the
 * terminal chosen by the variable term ("png", the default: pngcairo; "svg": svg) at w x h,
 * output to stdout. */
void plot_script_begin(plot_script *s, const char *name, const char *what, int w, int h);

/* Write s to BASE.gp, then run gnuplot on it twice (term png, term svg) and write its output to
 * BASE.png and BASE.svg (all atomic, formats/csvio.h). gnuplot NULL, "" or not executable: the
 * script only, PLOTS_NO_GNUPLOT with a warning in err. PLOTS_OK, or PLOTS_ERROR with a message
 * (the file, or gnuplot's exit and the first line it printed on stderr). */
int plot_render(const plot_script *s, const char *base, const char *gnuplot, char *err, size_t errlen);

/* plot_render of s as DIR/NAME (dir NULL: NAME alone), then plot_script_free(s). */
int plot_finish(plot_script *s, const char *dir, const char *name, const char *gnuplot, char *err,
                size_t errlen);

#endif
