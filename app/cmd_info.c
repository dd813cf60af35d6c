/* cmd_info.c — `bosch info [MODEL]`: architecture, shapes, RoPE, vocabulary and tensor types.
 * Output on stdout, one `key: value` line each (machine-readable); errors on stderr. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "attn_bf16.h"
#include "qdot.h"
#include "model.h"
#include "quant.h"

static void info_usage(FILE *f) {
    fprintf(
        f,
        "usage: bosch info [MODEL] [--precision P] [--kv T]\n"
        "  print the architecture, hyper-parameters, tensor types and bytes of a GGUF model\n"
        "  (default model: %s), and the CPU kernels the engine uses for it\n" CLI_PRECISION_HELP CLI_KV_HELP,
        cli_default_model());
}

static int info_run(cmd_env *e, void *opts) {
    (void)opts;
    const model *m = e->m;
    const model_hparams *hp = &m->hp;
    printf("model: %s\n", m->path);
    printf("name: %s\n", m->name);
    printf("architecture: %s\n", hp->arch->name);
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
    printf("qk_norm: %s\n", hp->arch->qk_norm ? "yes" : "no");
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
           e->mo.precision == PRECISION_AUTO ? " (auto)" : "");
    printf("gemm_weight_bytes: %llu\n", (unsigned long long)model_gemm_bytes(m));
    printf("decode: %s (kernels %s)\n",
           m->decode_blocks ? "from the file's blocks, 8-bit activations" : "through the GEMM weights",
           qdot_level_name(qdot_level_best()));
    printf("kv_cache: %s (attention kernels %s)\n", attn_kv_type_name(m->kv_type),
           m->kv_type == ATTN_KV_BF16 ? attn_isa_name(attn_isa_current()) : "fp32");
    printf("load_s: %.3f\n", m->load_s);
    return 0;
}

const command cmd_info = {
    .name = "info",
    .help = "print a model's architecture, shapes and tensor types",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_LOAD,
    .run = info_run,
    .usage = info_usage,
};
