/* cmd_generate.c — `bosch generate [MODEL] --prompt TEXT [--chat] [-n N] [--mask FILE] ...`:
 * greedy decoding with an optional head mask (engine/generate.h generate_greedy, on the CPU forward
 * or the GPU path). The prompt is prefilled into the KV cache in one forward pass, then one token
 * at a time is decoded until an end-of-generation token or N new tokens. The text streams to
 * stdout; timings go to stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "csvio.h"
#include "backend.h"
#include "cli_backend.h"
#include "generate.h"
#include "kv_cache.h"
#include "model.h"

#define GEN_DEFAULT_N 128
#define GEN_DEFAULT_WINDOW 256

static void gen_usage(FILE *f) {
    fprintf(f,
            "usage: bosch generate [MODEL] --prompt TEXT [options]\n"
            "  greedy generation; the text streams to stdout, timings to stderr\n"
            "  MODEL            GGUF file (default: %s)\n"
            "  --prompt TEXT    the prompt (required)\n"
            "  --chat           wrap the prompt in the model's chat template (user turn)\n"
            "  --system TEXT    system message for --chat (default: the template's own)\n"
            "  -n N             new tokens at most (default %d); stops earlier at end of turn\n"
            "  --mask FILE      head mask CSV (bosch search / export); default: all heads full\n"
            "  --all-swa        make every KV head SWA (window/sinks below)\n"
            "  --window W       SWA window in tokens (default: the mask file's, else %d)\n"
            "  --sinks S        sink tokens kept by SWA heads (default: the mask file's, else 0)\n"
            "  --special        print special tokens (e.g. <|im_end|>)\n"
            "  --device D       cpu, cuda or auto (default: cuda when a GPU is visible)\n" CLI_PRECISION_HELP
                CLI_KV_HELP CLI_DECODE_HELP,
            cli_default_model(), GEN_DEFAULT_N, GEN_DEFAULT_WINDOW);
}

typedef struct {
    const char *prompt, *system, *mask_path;
    int chat, n_new, window, sinks, all_swa, special;
} gen_opts;

static void gen_init(void *opts) {
    gen_opts *o = opts;
    o->n_new = GEN_DEFAULT_N;
    o->window = o->sinks = -1;
}

static int gen_option(cmd_env *e, void *opts, const char *a, const char *v) {
    gen_opts *o = opts;
    int *flag = !strcmp(a, "--chat")      ? &o->chat
                : !strcmp(a, "--all-swa") ? &o->all_swa
                : !strcmp(a, "--special") ? &o->special
                                          : NULL;
    if (flag) {
        *flag = 1;
        return CMD_OPT_FLAG;
    }
    const char **text = !strcmp(a, "--prompt") || !strcmp(a, "-p") ? &o->prompt
                        : !strcmp(a, "--system")                   ? &o->system
                        : !strcmp(a, "--mask")                     ? &o->mask_path
                                                                   : NULL;
    if (!text && strcmp(a, "-n") && strcmp(a, "--window") && strcmp(a, "--sinks")) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (text) {
        *text = v;
        return CMD_OPT_VALUE;
    }
    if (!strcmp(a, "-n")) return cmd_value(cli_parse_int_in("generate", a, v, 0, 1 << 20, &o->n_new));
    if (!strcmp(a, "--window")) return cmd_value(cli_parse_int_in("generate", a, v, 1, 1 << 24, &o->window));
    return cmd_value(cli_parse_int_in("generate", a, v, 0, 1 << 24, &o->sinks));
}

static int gen_check(cmd_env *e, void *opts) {
    (void)e;
    const gen_opts *o = opts;
    if (!o->prompt) {
        fprintf(stderr, "bosch generate: --prompt TEXT is required\n");
        gen_usage(stderr);
        return 2;
    }
    if (o->mask_path && o->all_swa) {
        fprintf(stderr, "bosch generate: --mask and --all-swa exclude each other\n");
        return 2;
    }
    return 0;
}

/* The mask: from the file, all-SWA, or all-full; --window/--sinks override. */
static int build_mask(const gen_opts *o, const model *m, attn_mask *mask) {
    char err[1024];
    if (o->mask_path) {
        char warn[512];
        if (csv_mask_load_for(o->mask_path, mask, &m->hp, m->name, warn, sizeof warn, err, sizeof err) != 0) {
            fprintf(stderr, "bosch generate: %s\n", err);
            return -1;
        }
        if (warn[0]) fprintf(stderr, "bosch generate: warning: %s\n", warn);
    } else if (mask_init(mask, m->hp.n_layer, m->hp.n_head_kv, GEN_DEFAULT_WINDOW, 0,
                         o->all_swa ? ATTN_SWA : ATTN_FULL) != 0) {
        fprintf(stderr, "bosch generate: out of memory\n");
        return -1;
    }
    if (o->window > 0) mask->window = o->window;
    if (o->sinks >= 0) mask->sinks = o->sinks;
    return 0;
}

/* Prompt tokens (chat template if asked; BOS when the file says tokenizer.ggml.add_bos_token). */
static int encode_prompt(const gen_opts *o, const model *m, int32_t **toks, size_t *n) {
    char err[1024];
    char *text = NULL;
    if (o->chat) {
        if (tokenizer_chat_prompt(m->tok, o->system, o->prompt, &text, err, sizeof err) != 0) {
            fprintf(stderr, "bosch generate: %s\n", err);
            return -1;
        }
    }
    const char *src = text ? text : o->prompt;
    int32_t *t = NULL;
    size_t nt = 0;
    int rc = tokenizer_encode(m->tok, src, strlen(src), o->chat, &t, &nt);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "bosch generate: cannot tokenize the prompt\n");
        return -1;
    }
    int add_bos = 0;
    if (gguf_find_kv(m->gguf, "tokenizer.ggml.add_bos_token") &&
        gguf_get_bool(m->gguf, "tokenizer.ggml.add_bos_token", &add_bos, err, sizeof err) != 0)
        add_bos = 0;
    int32_t bos = tokenizer_bos(m->tok);
    if (add_bos && bos >= 0 && (nt == 0 || t[0] != bos)) {
        int32_t *t2 = realloc(t, sizeof(int32_t) * (nt + 1));
        if (!t2) {
            free(t);
            return -1;
        }
        memmove(t2 + 1, t2, sizeof(int32_t) * nt);
        t2[0] = bos;
        t = t2;
        nt++;
    }
    if (nt == 0) {
        free(t);
        fprintf(stderr, "bosch generate: the prompt is empty\n");
        return -1;
    }
    *toks = t;
    *n = nt;
    return 0;
}

/* The GPU path as generate_steps: backend_prefill / backend_decode of the CUDA backend into `logits`. */
typedef struct {
    backend *gpu;
    float *logits;
} gpu_steps;

static int gpu_prefill(void *ctx, const int32_t *tokens, int n_tokens, char *err, size_t errlen) {
    gpu_steps *g = ctx;
    return backend_prefill(g->gpu, tokens, n_tokens, g->logits, err, errlen);
}

static int gpu_decode(void *ctx, int32_t token, char *err, size_t errlen) {
    gpu_steps *g = ctx;
    return backend_decode(g->gpu, &token, g->logits, err, errlen);
}

/* The text streams to stdout: the prompt once prefilled (not with --chat), then each token. */
typedef struct {
    const model *m;
    const gen_opts *o;
} gen_print;

static void print_prompt(void *user) {
    const gen_print *p = user;
    if (!p->o->chat) fputs(p->o->prompt, stdout);
    fflush(stdout);
}

static void print_token(void *user, int32_t token) {
    const gen_print *p = user;
    char buf[256];
    size_t len = tokenizer_token_bytes(p->m->tok, token, p->o->special, buf, sizeof buf);
    fwrite(buf, 1, len < sizeof buf ? len : sizeof buf, stdout);
    fflush(stdout);
}

/* Where the forward runs: the started GPU (gs) or the CPU forward (*cpu); *steps then holds it. */
static int make_steps(const model *m, const attn_mask *mask, int n_prompt, int n_ctx, gpu_steps *gs,
                      generate_cpu **cpu, generate_steps *steps) {
    char err[1024];
    if (gs->gpu) {
        if (backend_start(gs->gpu, mask, 1, n_ctx, err, sizeof err)) {
            fprintf(stderr, "bosch generate: %s\n", err);
            return -1;
        }
        gs->logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
        if (!gs->logits) {
            fprintf(stderr, "bosch generate: out of memory\n");
            return -1;
        }
        *steps = (generate_steps){gs, gpu_prefill, gpu_decode, gs->logits};
        return 0;
    }
    if (generate_cpu_create(cpu, m, mask, n_prompt, n_ctx, NULL, err, sizeof err)) {
        fprintf(stderr, "bosch generate: %s\n", err);
        return -1;
    }
    *steps = generate_cpu_steps(*cpu);
    return 0;
}

/* The greedy generation after the set-up line; its text to stdout, its timings to stderr. */
static int run_generation(const gen_opts *o, const model *m, const attn_mask *mask, const int32_t *toks,
                          size_t n_prompt, const generate_steps *steps) {
    char err[1024] = "";
    gen_print pr = {m, o};
    generate_opts go = {mask, o->n_new, NULL, steps, print_prompt, print_token, &pr};
    generate_result r;
    if (generate_greedy(m, toks, (int)n_prompt, &go, NULL, &r, err, sizeof err) != 0) {
        const int say = err[0] != '\0'; /* the backend's message, or the token loop's (NaN logits) */
        if (r.stage == GENERATE_PREFILL)
            fprintf(stderr, "bosch generate: prefill failed%s%s\n", say ? ": " : "", say ? err : "");
        else
            fprintf(stderr, "\nbosch generate: decode failed at position %d%s%s\n",
                    (int)n_prompt + r.n_gen - 1, say ? ": " : "", say ? err : "");
        return -1;
    }
    fputc('\n', stdout);
    fprintf(stderr,
            "bosch generate: load %.2f s; prefill %zu tokens in %.3f s (%.1f tokens/s); "
            "decode %d tokens in %.3f s (%.1f tokens/s)\n",
            m->load_s, n_prompt, r.prefill_s, n_prompt / r.prefill_s, r.n_gen, r.decode_s,
            r.n_gen > 1 ? (r.n_gen - 1) / r.decode_s : 0.0);
    return 0;
}

/* Prefill and decode on e->m: the GPU backend (warmed up) for --device cuda, else the CPU forward. */
static int gen_run(cmd_env *e, void *opts) {
    const gen_opts *o = opts;
    const model *m = e->m;
    const backend_device dev = e->device;
    char err[1024];
    int rc;
    attn_mask mask = {0};
    int32_t *toks = NULL;
    size_t n_prompt = 0;
    gpu_steps gs = {NULL, NULL};
    generate_cpu *cpu = NULL;
    generate_steps steps;
    rc = 1;
    if (build_mask(o, m, &mask) != 0 || encode_prompt(o, m, &toks, &n_prompt) != 0) goto done;
    size_t n_ctx = n_prompt + (size_t)o->n_new;
    if (n_ctx > (size_t)1 << 24) {
        fprintf(stderr, "bosch generate: prompt + -n = %zu tokens is too long\n", n_ctx);
        goto done;
    }
    if (m->hp.n_ctx_train > 0 && n_ctx > (size_t)m->hp.n_ctx_train)
        fprintf(stderr, "bosch generate: warning: %zu tokens exceed the model's training context %d\n", n_ctx,
                m->hp.n_ctx_train);
    backend_options bo = cli_backend_options(BACKEND_CUDA, 1);
    if (dev == BACKEND_CUDA && backend_create(&gs.gpu, &bo, m, err, sizeof err)) {
        fprintf(stderr, "bosch generate: %s\n", err);
        goto done;
    }
    if (make_steps(m, &mask, (int)n_prompt, (int)n_ctx, &gs, &cpu, &steps) != 0) goto done;
    const int on_gpu = gs.gpu != NULL;
    fprintf(
        stderr,
        "bosch generate: %s, %zu prompt tokens, %d SWA KV heads of %d (window %d, sinks %d), "
        "KV cache %.1f MiB (%s), on %s%s%s%s\n",
        m->name, n_prompt, mask_count_swa(&mask), mask.n_layer * mask.n_head_kv, mask.window, mask.sinks,
        kv_cache_bytes(&m->hp, &mask, (int)n_ctx, on_gpu ? 4 : attn_kv_elem_bytes(m->kv_type)) / 1048576.0,
        on_gpu ? "fp32" : attn_kv_type_name(m->kv_type), backend_device_name(dev), on_gpu ? "" : " (",
        on_gpu ? "" : gemm_precision_name(m->precision),
        on_gpu ? "" : (m->decode_blocks ? " GEMMs, decode from the file's blocks)" : " GEMMs and decode)"));
    if (run_generation(o, m, &mask, toks, n_prompt, &steps) == 0) rc = 0;
done:
    free(gs.logits);
    backend_free(gs.gpu);
    generate_cpu_free(cpu);
    free(toks);
    if (mask.z) mask_free(&mask);
    return rc;
}

const command cmd_generate = {
    .name = "generate",
    .help = "greedy generation with an optional head mask",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DECODE | CMD_DEVICE | CMD_LOAD,
    .opts_size = sizeof(gen_opts),
    .init = gen_init,
    .option = gen_option,
    .check = gen_check,
    .run = gen_run,
    .usage = gen_usage,
};
