/* cmd_info.c — `bosch info [MODEL]`: architecture, shapes, RoPE, vocabulary and tensor types.
 * Output on stdout, one `key: value` line each (machine-readable); errors on stderr. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "qdot.h"
#include "model.h"
#include "quant.h"

static void info_usage(FILE *f) {
    fprintf(f, "usage: bosch info [MODEL] [--precision P]\n"
               "  print the architecture, hyper-parameters, tensor types and bytes of a GGUF model\n"
               "  (default model: %s), and the CPU kernels the engine uses for it\n" CLI_PRECISION_HELP,
            cli_default_model());
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    model_opts mo = {PRECISION_AUTO, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            info_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            if (cli_parse_precision("info", argv[++i], &mo.precision)) return 2;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "bosch info: unknown option '%s'\n", argv[i]);
            info_usage(stderr);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "bosch info: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!path) path = cli_default_model();
    model *m = NULL;
    if (cli_load_model("info", path, &mo, &m) != 0) return 1;
    const model_hparams *hp = &m->hp;
    printf("model: %s\n", m->path);
    printf("name: %s\n", m->name);
    printf("architecture: %s\n", hp->arch == MODEL_ARCH_QWEN3 ? "qwen3" : "llama");
    printf("n_layer: %d\n", hp->n_layer);
    printf("n_head: %d\n", hp->n_head);
    printf("n_head_kv: %d\n", hp->n_head_kv);
    printf("gqa_group: %d\n", hp->n_head / hp->n_head_kv);
    printf("head_dim: %d\n", hp->head_dim);
    printf("n_embd: %d\n", hp->n_embd);
    printf("n_ff: %d\n", hp->n_ff);
    printf("context_length: %d\n", hp->n_ctx_train);
    printf("rope_base: %g\n", (double)hp->rope_base);
    printf("rope_dim: %d\n", hp->rope_dim);
    printf("rope_layout: %s\n", hp->rope_neox ? "neox (halves)" : "adjacent pairs");
    printf("rms_eps: %g\n", (double)hp->rms_eps);
    printf("vocab_size: %d\n", hp->n_vocab);
    printf("output_embedding: %s\n", m->output == m->tok_embd ? "tied" : "separate");
    printf("qk_norm: %s\n", m->layers[0].q_norm ? "yes" : "no");
    /* tensor types: count and bytes per type, in first-seen order */
    uint32_t types[32];
    uint64_t counts[32] = {0}, bytes[32] = {0};
    int nt = 0;
    const gguf_file *g = m->gguf;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        int k = 0;
        while (k < nt && types[k] != g->tensors[i].type) k++;
        if (k == nt && nt < 32) types[nt++] = g->tensors[i].type;
        if (k < nt) {
            counts[k]++;
            bytes[k] += g->tensors[i].n_bytes;
        }
    }
    printf("tensors: %llu\n", (unsigned long long)g->n_tensors);
    for (int k = 0; k < nt; k++)
        printf("tensor_type: %s count %llu bytes %llu\n", quant_type_name(types[k]),
               (unsigned long long)counts[k], (unsigned long long)bytes[k]);
    printf("tensor_bytes: %llu\n", (unsigned long long)model_file_bytes(m));
    printf("file_bytes: %llu\n", (unsigned long long)g->file_size);
    printf("fp32_weight_bytes: %zu\n", m->arena_bytes);
    char gd[160];
    gemm_describe(gd, sizeof gd);
    printf("gemm_library: %s\n", gd);
    printf("gemm_precision: %s%s\n", gemm_precision_name(m->precision),
           mo.precision == PRECISION_AUTO ? " (auto)" : "");
    printf("gemm_weight_bytes: %llu\n", (unsigned long long)model_gemm_bytes(m));
    printf("decode: %s (kernels %s)\n",
           m->decode_blocks ? "from the file's blocks, 8-bit activations" : "through the GEMM weights",
           qdot_level_name(qdot_level_best()));
    printf("load_s: %.3f\n", m->load_s);
    model_free(m);
    return 0;
}
