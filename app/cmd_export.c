/* cmd_export.c — `bosch export MASK.csv --format F --out PATH`: a mask in another tool's format
 * (formats/interop.h; docs/interop.md): duo (DuoAttention folder), hf (Hugging Face config.json
 * patch), trtllm (TensorRT-LLM KvCacheConfig JSON), gguf (refused: llama.cpp ignores SWA keys for
 * llama and qwen3), scores (the static rankings' per-head scores, computed on a calibration split
 * with the mask's window and sinks: PATH/scores.csv and PATH/<ranking>.json). Every file is written
 * atomically. The summary line goes to stdout, progress and errors to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "cli_backend.h"
#include "commands.h"
#include "csvio.h"
#include "interop.h"
#include "search_scores.h"

typedef struct {
    const char *mask_path, *out, *model_path, *device;
    interop_format fmt;
    int have_fmt, samples, tokens;
    model_opts mo;
} export_opts;

static void export_usage(FILE *f) {
    fprintf(f,
            "usage: bosch export MASK.csv --format F --out PATH [OPTIONS]\n"
            "  write a mask for another tool (docs/interop.md)\n"
            "  --format F     duo: DuoAttention's full_attention_heads.tsv + config.json in folder PATH\n"
            "                 hf: Hugging Face config.json patch (layer_types, sliding_window) of the\n"
            "                     servable projection (a layer is SWA only if all its KV heads are)\n"
            "                 trtllm: TensorRT-LLM kv_cache_config (max_attention_window per layer,\n"
            "                     sink_token_length) of the servable projection, JSON\n"
            "                 gguf: refused for llama and qwen3 (llama.cpp ignores SWA keys there)\n"
            "                 scores: per-KV-head scores of ablation, fisher, locality and echo:\n"
            "                     PATH/scores.csv and PATH/<ranking>.json (Retrieval-Head layout)\n"
            "  --out PATH     the file (hf, trtllm, gguf) or folder (duo, scores; created if missing)\n"
            "  --model M      the model the mask is for (default: %s)\n"
            "  --samples N    scores: calibration samples (default: 2)\n"
            "  --length T     scores: tokens per sample (default: 512)\n"
            "  --device D     scores: cpu, cuda or auto (default: auto)\n" CLI_PRECISION_HELP,
            cli_default_model());
}

/* Parse argv into o. 0, 1 (help printed), or 2 (usage error printed). */
static int export_parse(int argc, char **argv, export_opts *o) {
    char err[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            export_usage(stdout);
            return 1;
        } else if (a[0] != '-') {
            if (o->mask_path) {
                fprintf(stderr, "bosch export: unexpected argument '%s'\n", a);
                return 2;
            }
            o->mask_path = a;
            continue;
        } else if (!v) {
            fprintf(stderr, "bosch export: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "--format")) {
            if (interop_format_parse(v, &o->fmt, err, sizeof err)) {
                fprintf(stderr, "bosch export: --format: %s\n", err);
                return 2;
            }
            o->have_fmt = 1;
        } else if (!strcmp(a, "--out")) {
            if (cli_need_nonempty("export", a, v, "a file or folder")) return 2;
            o->out = v;
        } else if (!strcmp(a, "--model")) {
            o->model_path = v;
        } else if (!strcmp(a, "--device")) {
            o->device = v;
        } else if (!strcmp(a, "--precision")) {
            if (cli_parse_precision("export", v, &o->mo.precision)) return 2;
        } else if (!strcmp(a, "--samples") || !strcmp(a, "--length")) {
            int s = !strcmp(a, "--samples");
            if (s ? cli_parse_int_range("export", a, v, 1, 256, &x)
                  : cli_parse_tokens("export", a, v, 64, 1 << 20, &x))
                return 2;
            *(s ? &o->samples : &o->tokens) = (int)x;
        } else {
            fprintf(stderr, "bosch export: unknown option '%s'\n", a);
            export_usage(stderr);
            return 2;
        }
        i++;
    }
    if (!o->mask_path || !o->have_fmt || !o->out) {
        fprintf(stderr, "bosch export: need MASK.csv, --format and --out\n");
        export_usage(stderr);
        return 2;
    }
    return 0;
}

static void say_ranking(void *user, const char *ranking) {
    (void)user;
    fprintf(stderr, "bosch export: scores: %s...\n", ranking);
}

/* --format scores: compute the rankings with the mask's window and sinks and write them. */
static int export_scores(const export_opts *o, const model *m, const attn_mask *mask) {
    char err[1024], path[4096];
    backend_device device = BACKEND_AUTO;
    if (o->device && backend_parse_device(o->device, &device, err, sizeof err)) {
        fprintf(stderr, "bosch export: --device: %s\n", err);
        return 2;
    }
    if (cli_out_dir_ready("export", o->out)) return 1;
    backend *dev = NULL;
    backend_options bo = cli_backend_options(device, 0);
    if (backend_create(&dev, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        return 1;
    }
    search_scores_opts so = {o->samples, o->tokens, mask->window, mask->sinks, say_ranking, NULL};
    double *score[SCORES_N];
    struct sigaction old[3];
    cli_catch_stop_signals(old);
    int rc = search_static_scores(m, dev, &so, &cli_stop, score, err, sizeof err);
    cli_restore_stop_signals(old);
    backend_free(dev);
    if (rc) {
        fprintf(stderr, "bosch export: %s\n", rc > 0 ? "stopped" : err);
        return 1;
    }
    const int L = m->hp.n_layer, H = m->hp.n_head_kv;
    snprintf(path, sizeof path, "%s/scores.csv", o->out);
    rc = scores_write_csv(path, L, H, (const double *const *)score, err, sizeof err);
    for (int k = 0; k < SCORES_N && !rc; k++) {
        snprintf(path, sizeof path, "%s/%s.json", o->out, scores_names[k]);
        rc = scores_write_json(path, L, H, score[k], err, sizeof err);
    }
    for (int k = 0; k < SCORES_N; k++) free(score[k]);
    if (rc)
        fprintf(stderr, "bosch export: %s\n", err);
    else
        printf("scores of %d x %d KV heads (%d samples x %d tokens, window %d) in %s\n", L, H, o->samples,
               o->tokens, mask->window, o->out);
    return rc ? 1 : 0;
}

int cmd_export(int argc, char **argv) {
    export_opts o = {.samples = 2, .tokens = 512, .mo = {PRECISION_AUTO, 0}};
    int p = export_parse(argc, argv, &o);
    if (p) return p == 1 ? 0 : 2;
    if (!interop_format_is_dir(o.fmt) && o.fmt != INTEROP_GGUF && cli_out_file_ready("export", o.out))
        return 1;
    model *m = NULL;
    if (cli_load_model("export", o.model_path ? o.model_path : cli_default_model(), &o.mo, &m)) return 1;
    char err[1024], warn[512], note[512];
    attn_mask mask;
    if (csv_mask_load_for(o.mask_path, &mask, &m->hp, m->name, warn, sizeof warn, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        model_free(m);
        return 1;
    }
    if (warn[0]) fprintf(stderr, "bosch export: %s\n", warn);
    int rc;
    if (o.fmt == INTEROP_SCORES) {
        rc = export_scores(&o, m, &mask);
    } else if (interop_export_mask(o.fmt, o.out, &mask, m, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "bosch export: %s\n", err);
        rc = 1;
    } else {
        printf("%s: %s\n", o.out, note);
        rc = 0;
    }
    mask_free(&mask);
    model_free(m);
    return rc;
}
