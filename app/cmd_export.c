/* cmd_export.c — `bosch export MASK.csv --format F --out PATH`: a mask in another tool's format
 * (formats/interop.h; docs/interop.md): duo (DuoAttention folder), hf (Hugging Face config.json
 * patch), trtllm (TensorRT-LLM KvCacheConfig JSON), gguf (refused: llama.cpp ignores SWA keys for
 * llama and qwen3), scores (the static rankings' per-head scores, computed on a calibration split
 * with the mask's window and sinks: PATH/scores.csv and PATH/<ranking>.json). Every file is written
 * atomically. The positional argument is the mask, so the model is --model M. The summary line goes
 * to stdout, progress and errors to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "outpath.h"
#include "cli_backend.h"
#include "command.h"
#include "commands.h"
#include "csvio.h"
#include "interop.h"
#include "scores.h"
#include "search_scores.h"

typedef struct {
    const char *mask_path, *out, *model_path;
    interop_format fmt;
    int have_fmt, samples, tokens;
} export_opts;

static void export_usage(FILE *f) {
    char rankings[256] = "";
    for (int k = 0; k < search_scores_n(); k++) /* the registry's static head rankings */
        snprintf(rankings + strlen(rankings), sizeof rankings - strlen(rankings), "%s%s", k ? ", " : "",
                 search_scores_name(k));
    fprintf(f,
            "usage: bosch export MASK.csv --format F --out PATH [OPTIONS]\n"
            "  write a mask for another tool (docs/interop.md)\n"
            "  --format F     duo: DuoAttention's full_attention_heads.tsv + config.json in folder PATH\n"
            "                 hf: Hugging Face config.json patch (layer_types, sliding_window) of the\n"
            "                     servable projection (a layer is SWA only if all its KV heads are)\n"
            "                 trtllm: TensorRT-LLM kv_cache_config (max_attention_window per layer,\n"
            "                     sink_token_length) of the servable projection, JSON\n"
            "                 gguf: refused for llama and qwen3 (llama.cpp ignores SWA keys there)\n"
            "                 scores: per-KV-head scores of every static ranking (%s):\n"
            "                     PATH/scores.csv and PATH/<ranking>.json (Retrieval-Head layout)\n"
            "  --out PATH     the file (hf, trtllm, gguf) or folder (duo, scores; created if missing)\n"
            "  --model M      the model the mask is for (default: %s)\n"
            "  --samples N    scores: calibration samples (default: 2)\n"
            "  --length T     scores: tokens per sample (default: 512)\n"
            "  --device D     scores: cpu, cuda or auto (default: auto)\n" CLI_PRECISION_HELP CLI_KV_HELP,
            rankings, cli_default_model());
}

static void export_init(void *opts) {
    export_opts *o = opts;
    o->samples = 2;
    o->tokens = 512;
}

/* MASK.csv (the positional argument) and the options. */
static int export_option(cmd_env *e, void *opts, const char *a, const char *v) {
    export_opts *o = opts;
    char err[256];
    long x = 0;
    if (a[0] != '-') {
        if (o->mask_path) return CMD_OPT_UNKNOWN;
        o->mask_path = a;
        return CMD_OPT_FLAG;
    }
    if (strcmp(a, "--format") && strcmp(a, "--out") && strcmp(a, "--model") && strcmp(a, "--samples") &&
        strcmp(a, "--length"))
        return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (!strcmp(a, "--format")) {
        if (interop_format_parse(v, &o->fmt, err, sizeof err)) {
            fprintf(stderr, "bosch export: --format: %s\n", err);
            return CMD_OPT_BAD;
        }
        o->have_fmt = 1;
        return CMD_OPT_VALUE;
    }
    if (!strcmp(a, "--out")) {
        o->out = v;
        return cmd_value(cli_need_nonempty("export", a, v, "a file or folder"));
    }
    if (!strcmp(a, "--model")) {
        o->model_path = v;
        return cmd_value(cli_need_nonempty("export", a, v, "a GGUF file"));
    }
    int s = !strcmp(a, "--samples");
    if (s ? cli_parse_int_range("export", a, v, 1, 256, &x)
          : cli_parse_tokens("export", a, v, 64, 1 << 20, &x))
        return CMD_OPT_BAD;
    *(s ? &o->samples : &o->tokens) = (int)x;
    return CMD_OPT_VALUE;
}

static int export_check(cmd_env *e, void *opts) {
    (void)e;
    export_opts *o = opts;
    if (!o->mask_path || !o->have_fmt || !o->out) {
        fprintf(stderr, "bosch export: need MASK.csv, --format and --out\n");
        export_usage(stderr);
        return 2;
    }
    if (o->fmt == INTEROP_SCORES) return cmd_out_dir(e, o->out, 0) ? 1 : 0;
    if (!interop_format_is_dir(o->fmt) && o->fmt != INTEROP_GGUF && cli_out_file_ready("export", o->out))
        return 1;
    return 0;
}

static void say_ranking(void *user, const char *ranking) {
    (void)user;
    fprintf(stderr, "bosch export: scores: %s...\n", ranking);
}

/* --format scores: compute the rankings with the mask's window and sinks and write them. */
static int export_scores(cmd_env *e, const export_opts *o, const model *m, const attn_mask *mask) {
    char err[1024];
    backend *dev = NULL;
    backend_options bo = cli_backend_options(e->device, 0);
    if (backend_create(&dev, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        return 1;
    }
    search_scores_opts so = {o->samples, o->tokens, mask->window, mask->sinks, say_ranking, NULL};
    double *score[SEARCH_METHODS_MAX];
    const char *name[SEARCH_METHODS_MAX];
    const int n = search_scores_n();
    for (int k = 0; k < n; k++) name[k] = search_scores_name(k);
    int rc = search_static_scores(m, dev, &so, &cli_stop, score, err, sizeof err);
    backend_free(dev);
    if (rc) {
        fprintf(stderr, "bosch export: %s\n", rc > 0 ? "stopped" : err);
        return 1;
    }
    const int L = m->hp.n_layer, H = m->hp.n_head_kv;
    rc = scores_write_folder(o->out, L, H, n, name, (const double *const *)score, err, sizeof err);
    for (int k = 0; k < n; k++) free(score[k]);
    if (rc)
        fprintf(stderr, "bosch export: %s\n", err);
    else
        printf("scores of %d x %d KV heads (%d samples x %d tokens, window %d) in %s\n", L, H, o->samples,
               o->tokens, mask->window, o->out);
    return rc ? 1 : 0;
}

static int export_run(cmd_env *e, void *opts) {
    export_opts *o = opts;
    model *m = NULL;
    if (cli_load_model("export", o->model_path ? o->model_path : cli_default_model(), &e->mo, &m)) return 1;
    char err[1024], warn[512], note[512];
    attn_mask mask;
    if (csv_mask_load_for(o->mask_path, &mask, &m->hp, m->name, warn, sizeof warn, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        model_free(m);
        return 1;
    }
    if (warn[0]) fprintf(stderr, "bosch export: %s\n", warn);
    int rc;
    if (o->fmt == INTEROP_SCORES) {
        rc = export_scores(e, o, m, &mask);
    } else if (interop_export_mask(o->fmt, o->out, &mask, m, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        rc = 1;
    } else {
        /* the summary line: on stdout, unless the output itself went there (outpath.h) */
        fprintf(outpath_is_stream(o->out) ? stderr : stdout, "%s: %s\n", o->out, note);
        rc = 0;
    }
    mask_free(&mask);
    model_free(m);
    return rc;
}

const command cmd_export = {
    .name = "export",
    .help = "write a mask for another tool (DuoAttention, HF, TensorRT-LLM, scores)",
    .flags = CMD_PRECISION | CMD_DEVICE | CMD_STOP,
    .opts_size = sizeof(export_opts),
    .init = export_init,
    .option = export_option,
    .check = export_check,
    .run = export_run,
    .usage = export_usage,
};
