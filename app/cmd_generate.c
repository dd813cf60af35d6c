/* cmd_generate.c — `bosch generate [MODEL] --prompt TEXT [--chat] [-n N] [--mask FILE] ...`:
 * greedy decoding with an optional head mask. The prompt is prefilled into the KV cache in one
 * forward pass, then one token at a time is decoded (forward_decode) until an end-of-generation
 * token or N new tokens. The text streams to stdout; timings go to stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "csvio.h"
#include "backend.h"
#include "cli_backend.h"
#include "forward.h"
#include "kv_cache.h"
#include "model.h"
#include "ops.h"
#include "clock.h"

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
                CLI_DECODE_HELP,
            cli_default_model(), GEN_DEFAULT_N, GEN_DEFAULT_WINDOW);
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "bosch generate: %s expects an integer in [%d, %d], got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

typedef struct {
    const char *model_path, *prompt, *system, *mask_path, *device;
    int chat, n_new, window, sinks, all_swa, special;
    model_opts mo; /* --precision, --decode */
} gen_opts;

static int parse_args(int argc, char **argv, gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_new = GEN_DEFAULT_N;
    o->window = o->sinks = -1;
    o->mo.precision = PRECISION_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            gen_usage(stdout);
            return 1;
        } else if (!strcmp(a, "--chat")) {
            o->chat = 1;
        } else if (!strcmp(a, "--all-swa")) {
            o->all_swa = 1;
        } else if (!strcmp(a, "--special")) {
            o->special = 1;
        } else if ((!strcmp(a, "--prompt") || !strcmp(a, "-p")) && has_val) {
            o->prompt = argv[++i];
        } else if (!strcmp(a, "--system") && has_val) {
            o->system = argv[++i];
        } else if (!strcmp(a, "--device") && has_val) {
            o->device = argv[++i];
        } else if (!strcmp(a, "--precision") && has_val) {
            if (cli_parse_precision("generate", argv[++i], &o->mo.precision)) return 2;
        } else if (!strcmp(a, "--decode-weights") && has_val) {
            if (cli_parse_decode("generate", argv[++i], &o->mo)) return 2;
        } else if (!strcmp(a, "--mask") && has_val) {
            o->mask_path = argv[++i];
        } else if (!strcmp(a, "-n") && has_val) {
            if (parse_int(a, argv[++i], 0, 1 << 20, &o->n_new)) return 2;
        } else if (!strcmp(a, "--window") && has_val) {
            if (parse_int(a, argv[++i], 1, 1 << 24, &o->window)) return 2;
        } else if (!strcmp(a, "--sinks") && has_val) {
            if (parse_int(a, argv[++i], 0, 1 << 24, &o->sinks)) return 2;
        } else if (a[0] == '-') {
            fprintf(stderr, "bosch generate: unknown option or missing value: '%s'\n", a);
            gen_usage(stderr);
            return 2;
        } else if (!o->model_path) {
            o->model_path = a;
        } else {
            fprintf(stderr, "bosch generate: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!o->prompt) {
        fprintf(stderr, "bosch generate: --prompt TEXT is required\n");
        gen_usage(stderr);
        return 2;
    }
    if (o->mask_path && o->all_swa) {
        fprintf(stderr, "bosch generate: --mask and --all-swa exclude each other\n");
        return 2;
    }
    if (!o->model_path) o->model_path = cli_default_model();
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

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    char err[1024];
    backend_device dev = backend_default_device();
    if (o.device && backend_parse_device(o.device, &dev, err, sizeof err)) {
        fprintf(stderr, "bosch generate: %s\n", err);
        return 2;
    }
    model *m = NULL;
    if (cli_load_model("generate", o.model_path, &o.mo, &m) != 0) return 1;
    attn_mask mask = {0};
    int32_t *toks = NULL;
    size_t n_prompt = 0;
    kv_cache kv;
    int kv_ok = 0;
    forward_ws *ws = NULL;
    backend *gpu = NULL; /* the CUDA backend (NULL: the CPU forward below) */
    float *logits = NULL;
    rc = 1;
    if (build_mask(&o, m, &mask) != 0 || encode_prompt(&o, m, &toks, &n_prompt) != 0) goto done;
    size_t n_ctx = n_prompt + (size_t)o.n_new;
    if (n_ctx > (size_t)1 << 24) {
        fprintf(stderr, "bosch generate: prompt + -n = %zu tokens is too long\n", n_ctx);
        goto done;
    }
    if (m->hp.n_ctx_train > 0 && n_ctx > (size_t)m->hp.n_ctx_train)
        fprintf(stderr, "bosch generate: warning: %zu tokens exceed the model's training context %d\n", n_ctx,
                m->hp.n_ctx_train);
    if (dev == BACKEND_CUDA) {
        backend_options bo = cli_backend_options(BACKEND_CUDA, 1);
        if (backend_create(&gpu, &bo, m, err, sizeof err) ||
            backend_start(gpu, &mask, 1, (int)n_ctx, err, sizeof err)) {
            fprintf(stderr, "bosch generate: %s\n", err);
            goto done;
        }
    } else {
        if (kv_cache_init(&kv, &m->hp, &mask, (int)n_ctx) != 0) {
            fprintf(stderr, "bosch generate: cannot allocate the KV cache for %zu tokens\n", n_ctx);
            goto done;
        }
        kv_ok = 1;
        ws = forward_ws_create(&m->hp, (int)n_prompt);
    }
    logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    if ((!gpu && !ws) || !logits) {
        fprintf(stderr, "bosch generate: out of memory\n");
        goto done;
    }
    fprintf(stderr,
            "bosch generate: %s, %zu prompt tokens, %d SWA KV heads of %d (window %d, sinks %d), "
            "KV cache %.1f MiB, on %s%s%s%s\n",
            m->name, n_prompt, mask_count_swa(&mask), mask.n_layer * mask.n_head_kv, mask.window, mask.sinks,
            kv_cache_bytes(&m->hp, &mask, (int)n_ctx, 4) / 1048576.0, backend_device_name(dev),
            gpu ? "" : " (", gpu ? "" : gemm_precision_name(m->precision),
            gpu ? "" : (m->decode_blocks ? " GEMMs, decode from the file's blocks)" : " GEMMs and decode)"));
    double t0 = base_now_s();
    int last = (int)n_prompt - 1;
    int prc = gpu ? backend_prefill(gpu, toks, (int)n_prompt, logits, err, sizeof err)
                  : forward_prefill(m, &mask, toks, (int)n_prompt, &kv, &last, 1, logits, ws);
    if (prc != 0) {
        fprintf(stderr, "bosch generate: prefill failed%s%s\n", gpu ? ": " : "", gpu ? err : "");
        goto done;
    }
    double t_prefill = base_now_s() - t0;
    if (!o.chat) fputs(o.prompt, stdout);
    fflush(stdout);
    t0 = base_now_s();
    int n_gen = 0;
    char buf[256];
    while (n_gen < o.n_new) {
        int32_t next = ops_argmax(logits, m->hp.n_vocab);
        if (tokenizer_is_eog(m->tok, next)) break;
        size_t len = tokenizer_token_bytes(m->tok, next, o.special, buf, sizeof buf);
        fwrite(buf, 1, len < sizeof buf ? len : sizeof buf, stdout);
        fflush(stdout);
        n_gen++;
        if (n_gen == o.n_new) break;
        int drc = gpu ? backend_decode(gpu, &next, logits, err, sizeof err)
                      : forward_decode(m, &mask, next, &kv, logits, ws);
        if (drc != 0) {
            fprintf(stderr, "\nbosch generate: decode failed at position %d%s%s\n", (int)n_prompt + n_gen - 1,
                    gpu ? ": " : "", gpu ? err : "");
            goto done;
        }
    }
    double t_decode = base_now_s() - t0;
    fputc('\n', stdout);
    fprintf(stderr,
            "bosch generate: load %.2f s; prefill %zu tokens in %.3f s (%.1f tokens/s); "
            "decode %d tokens in %.3f s (%.1f tokens/s)\n",
            m->load_s, n_prompt, t_prefill, n_prompt / t_prefill, n_gen, t_decode,
            n_gen > 1 ? (n_gen - 1) / t_decode : 0.0);
    rc = 0;
done:
    free(logits);
    forward_ws_free(ws);
    backend_free(gpu);
    if (kv_ok) kv_cache_free(&kv);
    free(toks);
    if (mask.z) mask_free(&mask);
    model_free(m);
    return rc;
}
