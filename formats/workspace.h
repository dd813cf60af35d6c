/* workspace.h — the explorer's own file in a workspace folder, DIR/workspace.txt (docs/explorer.md,
 * "Workspaces"): what the search state (DIR/state, search_io.c), the working mask (DIR/mask.csv,
 * csvio.h) and the trace (DIR/trace.csv, trace.h) do not hold. Text, one "key value" line each:
 *   bosch-workspace 1                 first line, the format and its version
 *   model NAME                        the model's name (informative)
 *   shape L H                         layers and KV heads (must match the model)
 *   window W / sinks S                the working mask's window and sinks, tokens
 *   cursor LAYER KV_HEAD              the grid's cursor
 *   follow 0|1 / edited 0|1           the grid follows the search / the mask was edited by hand
 *   done 0|1                          the search in DIR/state had finished (optional, default 0)
 *   heldout HASH SCORE ACC SECONDS N T   the held-out evaluation shown (optional; HASH: mask_hash
 *                                     in hex, doubles as %.17g, N samples of T tokens)
 *   undo MASK                         the undo history, oldest first (0..WORKSPACE_UNDO_MAX lines;
 *                                     MASK as mask_to_string: '1' full, '0' SWA, layers split by '/')
 * Lines may come in any order after the first; unknown keys are errors (a newer version). Written
 * atomically (csvio.h csv_write_text: temporary file, fsync, rename).
 */
#ifndef BOSCH_WORKSPACE_H
#define BOSCH_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

#define WORKSPACE_UNDO_MAX 64

typedef struct {
    char model[128];
    int n_layer, n_head_kv, window, sinks;
    int cur_layer, cur_head, follow, edited;
    int search_done; /* the search of DIR/state had finished when it was saved */
    int have_heldout;
    uint64_t heldout_hash;
    double heldout_score, heldout_accuracy, heldout_seconds;
    int heldout_samples, heldout_tokens;
    int n_undo;
    uint8_t *undo; /* [n_undo][n_layer * n_head_kv] ATTN_FULL / ATTN_SWA, oldest first (malloc'd) */
} workspace_info;

/* Write ws to path atomically. 0, or -1 with a message naming the file. */
int workspace_write(const char *path, const workspace_info *ws, char *err, size_t errlen);

/* Read path into *ws (zeroed first; free with workspace_info_free). n_layer, n_head_kv: the
 * model's shape, which the file's must equal. Errors name the file, the line and the field, e.g.
 * "ws/workspace.txt: line 5: cursor: bad value '40 1' (need a layer < 30 and a KV head < 3)".
 * 0, or -1. */
int workspace_read(const char *path, workspace_info *ws, int n_layer, int n_head_kv, char *err,
                   size_t errlen);

/* Free what workspace_read allocated in *ws (its undo masks); ws itself is the caller's. */
void workspace_info_free(workspace_info *ws);

#endif
