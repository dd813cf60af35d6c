/* cmd_mkmodel.c — `bosch mkmodel OUT [--shape NAME | --like MODEL] [--arch A] [--type f16|q4_1]
 * [--seed N] [--std S]`: write a random-weight GGUF of a real model's shape (engine/gguf_write.h), of
 * any architecture of the registry (engine/arch.h), e.g. for checking the GPU forward against the
 * CPU on a machine that does not have the real model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gguf_write.h"
#include "model.h"
#include "quant.h"

static void mk_usage(FILE *f) {
    char names[256];
    fprintf(f,
            "usage: bosch mkmodel OUT [options]\n"
            "  write a random-weight GGUF (noise text, real shape) to OUT\n"
            "  --shape NAME   smollm2 (default: 30 layers, 576, 9/3 heads, n_ff 1536, vocab 49152) or tiny\n"
            "  --like MODEL   copy the architecture and shape of a GGUF (layers, widths, heads, vocab, RoPE\n"
            "                 base, eps)\n"
            "  --arch A       architecture: %s (default llama, or the --like model's)\n"
            "  --type T       matrix type: q4_1 (default; token embedding Q8_0) or f16\n"
            "  --seed N       random seed (default 1); the same seed writes the same file\n"
            "  --std S        weight standard deviation (default 0.02)\n",
            arch_names(names, sizeof names));
}

/* Architecture and shape of an existing model file. */
static int shape_like(const char *path, mkmodel_shape *s) {
    char err[1024];
    model *m = NULL;
    if (model_load(&m, path, err, sizeof err)) {
        fprintf(stderr, "bosch mkmodel: %s\n", err);
        return -1;
    }
    const model_hparams *hp = &m->hp;
    int ok = hp->head_dim * hp->n_head == hp->n_embd && hp->rope_dim == hp->head_dim;
    if (!ok)
        fprintf(
            stderr,
            "bosch mkmodel: %s: only models with head_dim = n_embd / n_head and full RoPE can be copied\n",
            path);
    else {
        s->arch = hp->arch->name; /* a static row of the registry: outlives the model */
        s->n_layer = hp->n_layer, s->n_embd = hp->n_embd, s->n_head = hp->n_head,
        s->n_head_kv = hp->n_head_kv;
        s->n_ff = hp->n_ff, s->n_vocab = hp->n_vocab, s->n_ctx = hp->n_ctx_train > 0 ? hp->n_ctx_train : 2048;
        s->rope_base = hp->rope_base, s->rms_eps = hp->rms_eps;
    }
    model_free(m);
    return ok ? 0 : -1;
}

typedef struct {
    const char *out, *like, *type, *shape, *arch;
    double std;
    unsigned long long seed;
} mk_opts;

static void mk_init(void *opts) {
    ((mk_opts *)opts)->seed = 1;
}

/* OUT (the positional argument) and the options. */
static int mk_option(cmd_env *e, void *opts, const char *a, const char *v) {
    mk_opts *o = opts;
    if (a[0] != '-') {
        if (o->out) return CMD_OPT_UNKNOWN; /* the driver reports the extra argument */
        o->out = a;
        return CMD_OPT_FLAG;
    }
    const char **text = !strcmp(a, "--shape")  ? &o->shape
                        : !strcmp(a, "--like") ? &o->like
                        : !strcmp(a, "--type") ? &o->type
                        : !strcmp(a, "--arch") ? &o->arch
                                               : NULL;
    if (!text && strcmp(a, "--seed") && strcmp(a, "--std")) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (text) {
        *text = v;
        return CMD_OPT_VALUE;
    }
    if (!strcmp(a, "--seed")) return cmd_value(cli_parse_seed("mkmodel", a, v, &o->seed));
    if (cli_parse_real("mkmodel", a, v, 1e-9, 10, &o->std)) return CMD_OPT_BAD;
    return CMD_OPT_VALUE;
}

/* The shape from --shape / --like and --type, --std, --seed. 0, or the exit status. */
static int mk_shape(const mk_opts *o, mkmodel_shape *s) {
    mkmodel_preset("smollm2", s);
    if (!o->out) {
        mk_usage(stderr);
        return 2;
    }
    if (o->shape && o->like) {
        fprintf(stderr, "bosch mkmodel: --shape and --like exclude each other\n");
        return 2;
    }
    if (o->shape && mkmodel_preset(o->shape, s)) {
        fprintf(stderr, "bosch mkmodel: --shape: bad value '%s' (need smollm2 or tiny)\n", o->shape);
        return 2;
    }
    if (o->type && strcmp(o->type, "f16") && strcmp(o->type, "q4_1")) {
        fprintf(stderr, "bosch mkmodel: --type: bad value '%s' (need f16 or q4_1)\n", o->type);
        return 2;
    }
    if (o->arch && !arch_find(o->arch)) {
        char names[256];
        fprintf(stderr, "bosch mkmodel: --arch: bad value '%s' (need one of %s)\n", o->arch,
                arch_names(names, sizeof names));
        return 2;
    }
    if (o->like && shape_like(o->like, s)) return 1;
    if (o->arch) s->arch = o->arch;
    if (o->type) s->wtype = strcmp(o->type, "f16") ? GGML_TYPE_Q4_1 : GGML_TYPE_F16;
    if (o->std > 0) s->std = (float)o->std;
    s->seed = o->seed;
    return 0;
}

static int mk_run(cmd_env *e, void *opts) {
    (void)e;
    const mk_opts *o = opts;
    mkmodel_shape s;
    int rc = mk_shape(o, &s);
    if (rc) return rc;
    char err[1024];
    if (mkmodel_write(o->out, &s, err, sizeof err)) {
        fprintf(stderr, "bosch mkmodel: %s\n", err);
        return 1;
    }
    printf("wrote %s: %s, %d layers, n_embd %d, %d/%d heads, n_ff %d, vocab %d, %s weights, seed %llu\n",
           o->out, s.arch ? s.arch : "llama", s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.n_ff, s.n_vocab,
           quant_type_name(s.wtype), o->seed);
    return 0;
}

const command cmd_mkmodel = {
    .name = "mkmodel",
    .help = "write a random-weight GGUF of a real model's shape and a registered architecture",
    .opts_size = sizeof(mk_opts),
    .init = mk_init,
    .option = mk_option,
    .run = mk_run,
    .usage = mk_usage,
};
