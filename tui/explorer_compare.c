/* explorer_compare.c — the explorer's comparison view (issue: "the explorer shows it"): the held-out
 * accuracy of every method of a finished `bosch compare` folder at the ratio nearest the working
 * mask's, with its 95 % Wilson interval; Enter shows a method's mask as a diff against the working
 * mask (differing heads marked in the grid), L makes it the working mask (u undoes). The files are
 * read on the worker (worker_compare_open, worker_compare_mask); the requests are ui_request.c's. */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "explorer_ui.h"

void draw_compare(ui_state *u) {
    int h = u->cmp_n + 6;
    lay_rect r = layout_center(u->rows, u->cols, h, 70);
    char title[96];
    snprintf(title, sizeof title, "Comparison at rho %.3f (held-out)", u->cmp_ratio);
    draw_box(&r, u, title);
    int x = r.x + 2, w = r.w - 4;
    draw_text(r.y + 1, x, w, A_BOLD, "%-16s %8s  %-15s %7s %8s", "method", "accuracy", "95% interval", "prob",
              "samples");
    for (int i = 0; i < u->cmp_n && i < r.h - 5; i++) {
        const compare_row *c = &u->cmp_rows[i];
        int sel = i == u->cmp_cur;
        int attr = sel ? (A_REVERSE | A_BOLD) : (!strcmp(c->method, "bosch") ? (int)A_BOLD : A_NORMAL);
        draw_text(r.y + 2 + i, x, w, attr, "%-16s %8.3f  [%.3f, %.3f] %7.3f %8ld", c->method, c->accuracy,
                  c->ci_lo, c->ci_hi, c->score, c->n);
    }
    draw_text(r.y + r.h - 3, x, w, A_NORMAL, "%s", u->cmp_dir);
    draw_text(r.y + r.h - 2, x, w, ui_attr(u, PAIR_DIM, A_NORMAL),
              "up/down select  Enter diff in the grid  L load as working mask  Esc close");
}
