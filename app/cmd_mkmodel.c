/* cmd_mkmodel.c — `bosch mkmodel OUT [--shape NAME | --like MODEL] [--type f16|q4_1] [--seed N]
 * [--std S]`: write a random-weight llama GGUF of a real model's shape (engine/gguf_write.h), e.g. for
 * checking the GPU forward against the CPU on a machine that does not have the real model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gguf_write.h"
#include "model.h"
#include "quant.h"

static void mk_usage(FILE *f) {
    fprintf(f,
            "usage: bosch mkmodel OUT [options]\n"
            "  write a random-weight llama GGUF (noise text, real shape) to OUT\n"
            "  --shape NAME   smollm2 (default: 30 layers, 576, 9/3 heads, n_ff 1536, vocab 49152) or tiny\n"
            "  --like MODEL   copy the shape of a llama GGUF (layers, widths, heads, vocab, RoPE base, eps)\n"
            "  --type T       matrix type: q4_1 (default; token embedding Q8_0) or f16\n"
            "  --seed N       random seed (default 1); the same seed writes the same file\n"
            "  --std S        weight standard deviation (default 0.02)\n");
}

/* Shape of an existing llama model file. */
static int shape_like(const char *path, mkmodel_shape *s) {
    char err[1024];
    model *m = NULL;
    if (model_load(&m, path, err, sizeof err)) {
        fprintf(stderr, "bosch mkmodel: %s\n", err);
        return -1;
    }
    const model_hparams *hp = &m->hp;
    int ok = hp->arch == MODEL_ARCH_LLAMA && hp->head_dim * hp->n_head == hp->n_embd &&
             hp->rope_dim == hp->head_dim;
    if (!ok)
        fprintf(stderr,
                "bosch mkmodel: %s: only llama models with head_dim = n_embd / n_head and full RoPE can be "
                "copied\n",
                path);
    else {
        s->n_layer = hp->n_layer, s->n_embd = hp->n_embd, s->n_head = hp->n_head,
        s->n_head_kv = hp->n_head_kv;
        s->n_ff = hp->n_ff, s->n_vocab = hp->n_vocab, s->n_ctx = hp->n_ctx_train > 0 ? hp->n_ctx_train : 2048;
        s->rope_base = hp->rope_base, s->rms_eps = hp->rms_eps;
    }
    model_free(m);
    return ok ? 0 : -1;
}

int cmd_mkmodel(int argc, char **argv) {
    mkmodel_shape s;
    mkmodel_preset("smollm2", &s);
    const char *out = NULL, *like = NULL, *type = NULL, *shape = NULL;
    double std = 0;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            mk_usage(stdout);
            return 0;
        } else if (a[0] == '-' && !val) {
            fprintf(stderr, "bosch mkmodel: %s needs a value (or is unknown)\n", a);
            return 2;
        } else if (!strcmp(a, "--shape")) {
            shape = argv[++i];
        } else if (!strcmp(a, "--like")) {
            like = argv[++i];
        } else if (!strcmp(a, "--type")) {
            type = argv[++i];
        } else if (!strcmp(a, "--seed")) {
            errno = 0;
            seed = strtoull(argv[++i], &end, 10);
            if (errno || *end || end == argv[i]) {
                fprintf(stderr, "bosch mkmodel: --seed expects a non-negative integer, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--std")) {
            std = strtod(argv[++i], &end);
            if (*end || !(std > 0 && std < 10)) {
                fprintf(stderr, "bosch mkmodel: --std expects a number in (0, 10), got '%s'\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "bosch mkmodel: unknown option %s (see bosch mkmodel --help)\n", a);
            return 2;
        } else if (!out) {
            out = a;
        } else {
            fprintf(stderr, "bosch mkmodel: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!out) {
        mk_usage(stderr);
        return 2;
    }
    if (shape && like) {
        fprintf(stderr, "bosch mkmodel: --shape and --like exclude each other\n");
        return 2;
    }
    if (shape && mkmodel_preset(shape, &s)) {
        fprintf(stderr, "bosch mkmodel: unknown shape '%s' (smollm2, tiny)\n", shape);
        return 2;
    }
    if (like && shape_like(like, &s)) return 1;
    if (type && strcmp(type, "f16") && strcmp(type, "q4_1")) {
        fprintf(stderr, "bosch mkmodel: --type must be f16 or q4_1, got '%s'\n", type);
        return 2;
    }
    if (type) s.wtype = strcmp(type, "f16") ? GGML_TYPE_Q4_1 : GGML_TYPE_F16;
    if (std > 0) s.std = (float)std;
    s.seed = seed;
    char err[1024];
    if (mkmodel_write(out, &s, err, sizeof err)) {
        fprintf(stderr, "bosch mkmodel: %s\n", err);
        return 1;
    }
    printf("wrote %s: llama, %d layers, n_embd %d, %d/%d heads, n_ff %d, vocab %d, %s weights, seed %llu\n",
           out, s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.n_ff, s.n_vocab, quant_type_name(s.wtype),
           seed);
    return 0;
}
