/* duo.h — DuoAttention's attention pattern (Xiao et al., ICLR 2025; the layout of its repository
 * mit-han-lab/duo-attention, duo_attn/utils.py: load_attn_pattern, save_full_attention_heads,
 * sparsify_attention_heads), the per-head format that DuoAttention and kvpress read.
 *
 * A pattern is a folder holding two files:
 *   full_attention_heads.tsv  one line per layer (layer 0 first), one tab-separated number per KV
 *                             head (kv_head 0 first): 1 = full attention ("retrieval head"), 0 =
 *                             streaming head (sinks + recent window), values in between = trained
 *                             gates in [0, 1]. numpy's loadtxt reads it; we write 1 and 0.
 *   config.json               {"sink_size": S, "recent_size": W} (other keys are ignored on read)
 * Our mask maps as z = the cell (1 full, 0 SWA), window W = recent_size, sinks S = sink_size.
 */
#ifndef BOSCH_DUO_H
#define BOSCH_DUO_H

#include <stddef.h>

#include "mask.h"
#include "model.h"

#define DUO_TSV "full_attention_heads.tsv"
#define DUO_CONFIG "config.json"

/* Write m as a pattern into the folder dir (which must exist): DIR/full_attention_heads.tsv and
 * DIR/config.json, each atomically (csvio.h). 0, or -1 with a message naming the file. */
int duo_save(const char *dir, const attn_mask *m, char *err, size_t errlen);

/* A pattern as read: gate[n_layer][n_head_kv] row-major, each in [0, 1]. */
typedef struct {
    int n_layer, n_head_kv;
    double *gate;
    int sink_size, recent_size;
} duo_pattern;

/* Read a pattern from path: a folder holding the two files, or the .tsv file itself (config.json
 * beside it). Checks: every cell a finite number in [0, 1] ("DIR/full_attention_heads.tsv: line 3,
 * column 2: bad value 'x' (need a number in [0, 1])"), every line the same number of columns, at
 * least one line; blank lines and '#' comments skipped (as numpy's loadtxt); sink_size an integer
 * >= 0, recent_size an integer >= 1 (json_get_int's messages). When hp is non-NULL the shape must
 * match it: "...tsv: 32 lines (layers), the model has 30" / "...tsv: line 1: 4 columns (KV heads),
 * the model has 3". 0, or -1 with a message. Free with duo_pattern_free. */
int duo_load(const char *path, const model_hparams *hp, duo_pattern *out, char *err, size_t errlen);
void duo_pattern_free(duo_pattern *p);
/* The TSV part of duo_load on buf[0..n) in memory (tsv names it in messages; no config.json: sink_size
 * and recent_size are left 0). Same checks and messages. 0, or -1. For the fuzz target. */
int duo_parse_tsv(const char *tsv, const char *buf, size_t n, const model_hparams *hp, duo_pattern *out,
                  char *err, size_t errlen);

/* 1 when every gate is exactly 0 or 1 (a pattern that needs no cut). */
int duo_is_binary(const duo_pattern *p);

/* How gates become z. DUO_CUT_SPARSITY: sparsify_attention_heads(sparsity = value): the heads
 * below numpy.quantile(gates, value) go SWA, which for N heads with distinct gates is the
 * ceil(value * (N - 1)) smallest ones (value <= 0: none; value >= 1: all). DuoAttention breaks
 * ties with uniform noise in [0, 1e-6); we break them by position instead, so the cut is
 * deterministic: among equal gates the lower layer, then the lower kv_head, goes SWA first.
 * DUO_CUT_THRESHOLD: gate >= value is full, as sparsify_attention_heads(threshold = value). */
typedef enum { DUO_CUT_SPARSITY = 0, DUO_CUT_THRESHOLD = 1 } duo_cut;

/* The mask of p cut as above, with window = recent_size and sinks = sink_size. out is
 * uninitialised and allocated here (free with mask_free). 0, or -1 (bad value: not finite; OOM). */
int duo_to_mask(const duo_pattern *p, duo_cut cut, double value, attn_mask *out);

/* Number of SWA heads a DUO_CUT_SPARSITY cut of n heads at `sparsity` makes. */
int duo_sparsity_count(int n, double sparsity);

#endif
