/* layout.h — where each panel of the explorer goes, as a pure function of the terminal size and
 * the model's shape (docs/design.md §9). No curses here: tests/test_layout.c checks it directly.
 *
 * Screen, top to bottom: a title row, the main area, a footer row (keys). The main area has the
 * layer x head grid on the left (one row per layer, scrolled when the layers do not fit) with the
 * per-layer statistics beside it, a one-column separator, and a right column of stacked panels:
 * stage + progress, probe-score sparkline, current mask (ratio, KV bytes), teaching text, event log.
 * Every panel's first row is its title. Coordinates are 0-based (y = row, x = column).
 */
#ifndef BOSCH_LAYOUT_H
#define BOSCH_LAYOUT_H

#define LAYOUT_MIN_COLS 80
#define LAYOUT_MIN_ROWS 24

typedef struct {
    int y, x, h, w; /* h == 0 or w == 0: not shown */
} lay_rect;

typedef enum {
    LAY_TITLE = 0, /* row 0: program, model, phase */
    LAY_GRID,      /* title row, column-header row, then one row per visible layer */
    LAY_STAGE,     /* current stage, progress bar, evaluation counters */
    LAY_SCORE,     /* sparkline of probe scores and best so far */
    LAY_MASK,      /* ratio and KV-cache bytes of the current mask, held-out result */
    LAY_TEACH,     /* plain-words explanation of the current stage and the colours */
    LAY_LOG,       /* event log, newest last */
    LAY_FOOTER,    /* last row: keys */
    LAY_N
} lay_panel;

typedef struct {
    int rows, cols; /* terminal size in character cells */
    int n_layer;    /* grid rows */
    int n_head_kv;  /* KV heads per layer */
    int group;      /* query heads per KV head (GQA group); used when query_view */
    int query_view; /* 0: one cell per KV head; 1: one cell per query head, grouped by KV head */
} layout_input;

/* Columns of one grid row, relative to the grid rect's x:
 *   [marker 1][layer label label_w][space][cells cells_w][stats stats_w]
 * KV view: each KV head is a 2-column glyph with a 1-column gap before it (the gaps carry the cursor
 * brackets): cells_w = 3*n_head_kv + 1. Query view: each KV head's group is `group` 1-column glyphs:
 * cells_w = (group+1)*n_head_kv + 1. */
typedef struct {
    int fits; /* 1 when the terminal is at least the minimum size and everything fits */
    lay_rect panel[LAY_N];
    int label_w;          /* digits of the largest layer index */
    int cells_x, cells_w; /* cell area, relative to the grid rect */
    int cell_glyph_w;     /* columns per head glyph: 2 (KV view) or 1 (query view) */
    int cell_pitch;       /* columns from one KV head's gap to the next */
    int stats_x, stats_w; /* per-layer stats block (delta, weight, ratio, bucket, n_swa); w 0 = hidden */
    int visible_layers;   /* grid rows available for layers (may be < n_layer: the grid scrolls) */
    int spark_w;          /* sparkline width in cells */
} layout;

/* Width of the stats block "  delta     w    r g swa" (leading separator included). */
#define LAYOUT_STATS_W 24

/* Compute the layout. Always fills *out (panels clipped to the screen); returns 1 when it fits
 * (cols >= 80, rows >= 24, and the grid with its stats fits beside a right column at least 30
 * columns wide), 0 when the caller should show "terminal too small" instead. */
int layout_compute(const layout_input *in, layout *out);

/* First layer to show so that `cursor` is visible, moving as little as possible from `top`.
 * Also keeps `focus` (the layer being probed, or -1) visible when the cursor allows it.
 * Result in [0, max(0, n_layer - visible)]. */
int layout_grid_top(int n_layer, int visible, int top, int cursor, int focus);

/* Column (relative to the grid rect) of KV head h's gap column (the cursor's '['), and the first
 * glyph column is one to the right. */
int layout_cell_x(const layout *l, int kv_head);

/* What a mouse click at screen cell (y, x) points at in the grid drawn with first layer `top`. */
typedef enum {
    LAY_HIT_NONE = 0, /* not a layer row: titles, the column header, other panels, below the last layer */
    LAY_HIT_LAYER,    /* a layer's row outside its cells: marker, label, statistics */
    LAY_HIT_CELL,     /* a KV head's cell: its glyphs and the gap column before them (where the cursor's
                         '[' goes; the last head also owns the closing ']'); in the query view any
                         query head of the KV head's group */
} lay_hit_kind;
typedef struct {
    lay_hit_kind kind;
    int layer, kv_head; /* layer: LAY_HIT_LAYER and LAY_HIT_CELL; kv_head: LAY_HIT_CELL (else -1) */
} lay_hit;
/* The hit test of the grid (rows at panel[LAY_GRID].y + 2 + i for layer top + i, cells as
 * layout_cell_x says). Pure; a layout that does not fit hits nothing. */
lay_hit layout_hit(const layout *l, int n_layer, int n_head_kv, int top, int y, int x);

/* Centered box of at most w x h inside the screen (dialogs, help overlay). */
lay_rect layout_center(int rows, int cols, int h, int w);

#endif
