/* interop.c — export and import entry points over the interop formats (see interop.h). */
#include "interop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_swa.h"
#include "hf_config.h"
#include "trtllm.h"

static const char *const names[INTEROP_COUNT] = {"duo", "hf", "trtllm", "gguf", "scores"};

const char *interop_format_name(interop_format f) {
    return (unsigned)f < INTEROP_COUNT ? names[f] : "?";
}

int interop_format_parse(const char *s, interop_format *out, char *err, size_t errlen) {
    for (int i = 0; i < INTEROP_COUNT; i++)
        if (s && !strcmp(s, names[i])) {
            *out = (interop_format)i;
            return 0;
        }
    snprintf(err, errlen, "unknown format '%s' (valid: duo, hf, trtllm, gguf, scores)", s ? s : "");
    return -1;
}

int interop_format_is_dir(interop_format f) {
    return f == INTEROP_DUO || f == INTEROP_SCORES;
}

/* Hugging Face's name for the model's architecture (the registry's row, engine/arch.h). */
static const char *model_type(const model *md) {
    return md->hp.arch->hf_model_type;
}

/* dir exists (or is made: *made = 1) and is a folder. 0 or -1 with a message. */
static int make_dir(const char *dir, int *made, char *err, size_t errlen) {
    struct stat sb;
    *made = mkdir(dir, 0777) == 0;
    if (!*made && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create the folder: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a directory (need a folder for the output)", dir);
        return -1;
    }
    return 0;
}

/* A DuoAttention export into a folder made for it: on failure (a full disk) the folder goes again,
 * with whatever of the export it holds (nothing the user made is in a folder made just now). */
static int duo_export(const char *dir, const attn_mask *m, char *err, size_t errlen) {
    int made = 0;
    if (make_dir(dir, &made, err, errlen)) return -1;
    if (duo_save(dir, m, err, errlen) == 0) return 0;
    if (made) {
        static const char *const files[] = {"full_attention_heads.tsv", "config.json"};
        for (int i = 0; i < 2; i++) {
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", dir, files[i]);
            unlink(p);
        }
        rmdir(dir);
    }
    return -1;
}

int interop_export_mask(interop_format f, const char *path, const attn_mask *m, const model *md, char *note,
                        size_t notelen, char *err, size_t errlen) {
    int n_swa = 0;
    note[0] = '\0';
    if (m->n_layer != md->hp.n_layer || m->n_head_kv != md->hp.n_head_kv) {
        snprintf(err, errlen, "%s: the mask is %d x %d KV heads, the model %d x %d", path, m->n_layer,
                 m->n_head_kv, md->hp.n_layer, md->hp.n_head_kv);
        return -1;
    }
    switch (f) {
    case INTEROP_DUO:
        if (duo_export(path, m, err, errlen)) return -1;
        snprintf(note, notelen, "%d of %d KV heads SWA, recent_size %d, sink_size %d", mask_count_swa(m),
                 m->n_layer * m->n_head_kv, m->window, m->sinks);
        return 0;
    case INTEROP_HF:
        if (hf_config_save(path, m, model_type(md), &n_swa, err, errlen)) return -1;
        snprintf(note, notelen, "%d of %d layers SWA in the servable projection (window %d)%s", n_swa,
                 m->n_layer, m->window,
                 m->sinks > 0 && n_swa > 0 ? "; the sinks are dropped: Hugging Face configs have none" : "");
        return 0;
    case INTEROP_TRTLLM: {
        int max_seq = md->hp.n_ctx_train > m->window ? md->hp.n_ctx_train : m->window;
        if (trtllm_save(path, m, max_seq, &n_swa, err, errlen)) return -1;
        snprintf(note, notelen,
                 "%d of %d layers SWA in the servable projection (window %d, %d sinks; full layers %d)",
                 n_swa, m->n_layer, m->window, m->sinks, max_seq);
        return 0;
    }
    case INTEROP_GGUF: {
        const char *a = md->hp.arch->name; /* general.architecture, as the registry knows it */
        if (gguf_swa_honoured(a))          /* no registered architecture is one llama.cpp runs with SWA */
            snprintf(err, errlen, "%s: architecture '%s' is not one this program writes", path, a);
        else
            gguf_swa_refusal(a, err, errlen);
        return -1;
    }
    default:
        snprintf(err, errlen, "%s: format %s is not a mask export", path, interop_format_name(f));
        return -1;
    }
}

int interop_import_duo(const char *path, const model *md, int have_cut, duo_cut cut, double value,
                       attn_mask *out, char *note, size_t notelen, char *err, size_t errlen) {
    duo_pattern p;
    memset(out, 0, sizeof *out);
    if (duo_load(path, &md->hp, &p, err, errlen)) return -1;
    if (!have_cut && !duo_is_binary(&p)) {
        snprintf(err, errlen,
                 "%s: the gates are not all 0 or 1: give a ratio (DuoAttention's sparsity) or a threshold to "
                 "cut them",
                 path);
        duo_pattern_free(&p);
        return -1;
    }
    int rc = duo_to_mask(&p, have_cut ? cut : DUO_CUT_THRESHOLD, have_cut ? value : 0.5, out);
    duo_pattern_free(&p);
    if (rc) {
        snprintf(err, errlen, "%s: out of memory or a bad cut value", path);
        return -1;
    }
    snprintf(note, notelen, "%d of %d KV heads SWA (ratio %.3f), window %d, sinks %d", mask_count_swa(out),
             out->n_layer * out->n_head_kv, mask_ratio(out), out->window, out->sinks);
    return 0;
}
