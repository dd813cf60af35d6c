/* explorer_compare.c — the explorer's comparison view (issue: "the explorer shows it"): the held-out
 * accuracy of every method of a finished `bosch compare` folder at the ratio nearest the working
 * mask's, with its 95 % Wilson interval; Enter shows a method's mask as a diff against the working
 * mask (differing heads marked in the grid), L makes it the working mask (u undoes). Reads two small
 * files on the UI thread (results.csv is capped by compare_folder_rows, the mask by its shape). */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "explorer_ui.h"

void ui_compare_open(ui_state *u, const char *dir) {
    char err[512];
    if (!u->cmp_rows && !(u->cmp_rows = calloc(COMPARE_MAX_METHODS, sizeof *u->cmp_rows))) {
        ui_message(u, "out of memory");
        return;
    }
    attn_mask am;
    ex_mask_view(&u->mask, &am);
    double want = u->snap.have_search ? u->snap.target_ratio : mask_ratio(&am), got;
    int n;
    if (compare_folder_rows(dir, want, u->cmp_rows, COMPARE_MAX_METHODS, &n, &got, err, sizeof err)) {
        ui_message(u, "%s", err);
        u->mode = UI_NORMAL;
        return;
    }
    u->cmp_n = n;
    u->cmp_cur = 0;
    u->cmp_ratio = got;
    snprintf(u->cmp_dir, sizeof u->cmp_dir, "%s", dir);
    u->mode = UI_COMPARE;
}

/* Load the selected method's mask; 0 or -1 (message shown). */
static int load_selected(ui_state *u, ex_mask *out) {
    const compare_row *r = &u->cmp_rows[u->cmp_cur];
    attn_mask loaded;
    char err[512], warn[512];
    if (csv_mask_load_for(r->mask_path, &loaded, &u->snap.hp, u->snap.model_name, warn, sizeof warn, err,
                          sizeof err)) {
        ui_message(u, "%s", err);
        return -1;
    }
    int rc = ex_mask_from(out, &loaded);
    mask_free(&loaded);
    if (rc) ui_message(u, "%s: the mask does not fit the explorer", r->mask_path);
    return rc;
}

int ui_compare_n_diff(const ui_state *u) {
    if (!u->have_cmp || u->cmp_mask.n_layer != u->mask.n_layer || u->cmp_mask.n_head_kv != u->mask.n_head_kv)
        return 0;
    int n = 0;
    for (int i = 0; i < u->mask.n_layer * u->mask.n_head_kv; i++) n += u->cmp_mask.z[i] != u->mask.z[i];
    return n;
}

void ui_compare_key(ui_state *u, int ch) {
    if (ch == 27 || ch == 'q') {
        u->mode = UI_NORMAL;
    } else if ((ch == KEY_UP || ch == 'k') && u->cmp_cur > 0) {
        u->cmp_cur--;
    } else if ((ch == KEY_DOWN || ch == 'j') && u->cmp_cur + 1 < u->cmp_n) {
        u->cmp_cur++;
    } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        if (load_selected(u, &u->cmp_mask) == 0) {
            u->have_cmp = 1;
            snprintf(u->cmp_name, sizeof u->cmp_name, "%s", u->cmp_rows[u->cmp_cur].method);
            u->mode = UI_NORMAL;
            ui_message(u, "diff against %s at rho %.3f: %d heads differ (D turns it off)", u->cmp_name,
                       u->cmp_ratio, ui_compare_n_diff(u));
        }
    } else if (ch == 'L') {
        ex_mask m;
        if (load_selected(u, &m) == 0) {
            ui_begin_edit(u);
            u->mask = m;
            u->mode = UI_NORMAL;
            ui_message(u, "working mask = %s at rho %.3f (u undoes)", u->cmp_rows[u->cmp_cur].method,
                       u->cmp_ratio);
        }
    }
}

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
