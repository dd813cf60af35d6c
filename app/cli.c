/* cli.c — helpers shared by the headless subcommands: the default model path and the option-value
 * parsers of commands.h and cli.h. */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outpath.h"
#include "parse.h"

#define DEFAULT_MODEL_REL "models/SmolLM2-135M-Instruct.Q4_1.gguf"

/* $BOSCH_MODEL; else models/... under the current folder when it exists there; else models/...
 * beside the program's build folder (build/bosch -> ../models/...), so `build/bosch` works from any
 * folder; else the relative path (whose absence model_load reports with set-up advice). The path is
 * computed once into a write-once buffer and never changes afterwards. */
const char *cli_default_model(void) {
    static char exe_rel[PATH_MAX];
    const char *env = getenv("BOSCH_MODEL");
    if (env && *env) return env;
    if (access(DEFAULT_MODEL_REL, R_OK) == 0) return DEFAULT_MODEL_REL;
    if (!exe_rel[0]) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = '\0';
            char *slash = strrchr(exe, '/');
            if (slash) *slash = '\0';
            char cand[PATH_MAX];
            if (snprintf(cand, sizeof cand, "%s/../%s", exe, DEFAULT_MODEL_REL) < (int)sizeof cand &&
                access(cand, R_OK) == 0)
                snprintf(exe_rel, sizeof exe_rel, "%s", cand);
        }
        if (!exe_rel[0]) snprintf(exe_rel, sizeof exe_rel, "%s", DEFAULT_MODEL_REL);
    }
    return exe_rel;
}

/* Print "bosch CMD: OPT: WHY" for a parser's reason and return -1. */
static int bad_value(const char *cmd, const char *opt, const char *why) {
    fprintf(stderr, "bosch %s: %s: %s\n", cmd, opt, why);
    return -1;
}

int cli_parse_int(const char *cmd, const char *opt, const char *v, long min, long *out) {
    return cli_parse_int_range(cmd, opt, v, min, INT_MAX, out);
}

int cli_parse_seed(const char *cmd, const char *opt, const char *v, unsigned long long *out) {
    char why[256];
    return base_parse_u64(v, out, why, sizeof why) ? bad_value(cmd, opt, why) : 0;
}

int cli_parse_choice(const char *cmd, const char *opt, const char *v, const char *a, const char *b,
                     int *is_b) {
    const char *const names[2] = {a, b};
    char why[256];
    return base_parse_choice(v, names, 2, is_b, why, sizeof why) ? bad_value(cmd, opt, why) : 0;
}

int cli_parse_int_range(const char *cmd, const char *opt, const char *v, long min, long max, long *out) {
    char why[256];
    return base_parse_long(v, min, max, out, why, sizeof why) ? bad_value(cmd, opt, why) : 0;
}

int cli_parse_int_in(const char *cmd, const char *opt, const char *v, int min, int max, int *out) {
    long x;
    if (cli_parse_int_range(cmd, opt, v, min, max, &x)) return -1;
    *out = (int)x;
    return 0;
}

int cli_parse_tokens(const char *cmd, const char *opt, const char *v, long min, long max, long *out) {
    char why[256];
    return base_parse_tokens(v, min, max, out, why, sizeof why) ? bad_value(cmd, opt, why) : 0;
}

void cli_bad_list(const char *cmd, const char *opt, const char *v, const char *why_fmt, ...) {
    va_list ap;
    va_start(ap, why_fmt);
    fprintf(stderr, "bosch %s: %s: bad list '%s' (", cmd, opt, v ? v : "");
    vfprintf(stderr, why_fmt, ap);
    fprintf(stderr, ")\n");
    va_end(ap);
}

int cli_split_list(const char *cmd, const char *opt, const char *v, char (*items)[CLI_ITEM_CAP], int cap) {
    if (!v || !*v) {
        cli_bad_list(cmd, opt, v, "empty; need items separated by commas");
        return -1;
    }
    int n = 0;
    for (const char *p = v;; n++) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (n == cap) {
            cli_bad_list(cmd, opt, v, "more than %d items", cap);
            return -1;
        }
        if (len == 0) {
            cli_bad_list(cmd, opt, v, "item %d is empty; items are separated by single commas", n + 1);
            return -1;
        }
        if (len >= CLI_ITEM_CAP) {
            cli_bad_list(cmd, opt, v, "item %d is longer than %d characters", n + 1, CLI_ITEM_CAP - 1);
            return -1;
        }
        memcpy(items[n], p, len);
        items[n][len] = '\0';
        if (!c) return n + 1;
        p = c + 1;
    }
}

/* Split, then parse every item as an integer (tokens = 0) or a token count (tokens = 1). */
static int parse_long_list(const char *cmd, const char *opt, const char *v, long min, long max, int tokens,
                           int *out, int cap) {
    char(*items)[CLI_ITEM_CAP] = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *items);
    if (!items) {
        fprintf(stderr, "bosch %s: %s: out of memory\n", cmd, opt);
        return -1;
    }
    int n = cli_split_list(cmd, opt, v, items, cap);
    for (int i = 0; i < n; i++) {
        long x;
        if (tokens ? base_parse_tokens(items[i], min, max, &x, NULL, 0)
                   : base_parse_long(items[i], min, max, &x, NULL, 0)) {
            cli_bad_list(cmd, opt, v, "item '%s' is not %s in [%ld, %ld]%s", items[i],
                         tokens ? "a token count" : "an integer", min, max, tokens ? ", e.g. 512 or 1k" : "");
            n = -1;
            break;
        }
        out[i] = (int)x;
    }
    free(items);
    return n;
}

int cli_parse_int_list(const char *cmd, const char *opt, const char *v, long min, long max, int *out,
                       int cap) {
    return parse_long_list(cmd, opt, v, min < INT_MIN ? INT_MIN : min, max > INT_MAX ? INT_MAX : max, 0, out,
                           cap);
}

int cli_parse_tokens_list(const char *cmd, const char *opt, const char *v, long min, long max, int *out,
                          int cap) {
    return parse_long_list(cmd, opt, v, min < 0 ? 0 : min, max > INT_MAX ? INT_MAX : max, 1, out, cap);
}

int cli_parse_real_list(const char *cmd, const char *opt, const char *v, double min, double max, double *out,
                        int cap) {
    char(*items)[CLI_ITEM_CAP] = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *items);
    if (!items) {
        fprintf(stderr, "bosch %s: %s: out of memory\n", cmd, opt);
        return -1;
    }
    int n = cli_split_list(cmd, opt, v, items, cap);
    for (int i = 0; i < n; i++)
        if (base_parse_real(items[i], min, max, &out[i], NULL, 0)) {
            cli_bad_list(cmd, opt, v, "item '%s' is not a number in [%g, %g]", items[i], min, max);
            n = -1;
            break;
        }
    free(items);
    return n;
}

int cli_parse_real(const char *cmd, const char *opt, const char *v, double min, double max, double *out) {
    char why[256];
    return base_parse_real(v, min, max, out, why, sizeof why) ? bad_value(cmd, opt, why) : 0;
}

int cli_need_nonempty(const char *cmd, const char *opt, const char *v, const char *what) {
    if (v && *v) return 0;
    fprintf(stderr, "bosch %s: %s: empty value (need %s)\n", cmd, opt, what);
    return -1;
}

/* Create and remove a probe file in dir: 0 when dir is writable, else -1 with errno set. */
static int probe_writable(const char *dir) {
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.bosch-probe.%ld.XXXXXX", dir, (long)getpid()) >=
        (int)sizeof probe) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(probe);
    if (fd < 0) return -1;
    close(fd);
    return unlink(probe);
}

int cli_out_dir_ready(const char *cmd, const char *dir) {
    struct stat sb;
    if (!dir || !*dir) {
        fprintf(stderr, "bosch %s: empty output folder name\n", cmd);
        return -1;
    }
    char why[PATH_MAX + 256];
    if (outpath_name_ok(dir, why, sizeof why)) {
        fprintf(stderr, "bosch %s: %s\n", cmd, why);
        return -1;
    }
    if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "bosch %s: %s: cannot create the output folder: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "bosch %s: %s: not a directory (need a folder for the output)\n", cmd, dir);
        return -1;
    }
    if (probe_writable(dir)) {
        fprintf(stderr, "bosch %s: %s: output folder is not writable: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_out_file_ready(const char *cmd, const char *path) {
    struct stat sb;
    if (!path || !*path) {
        fprintf(stderr, "bosch %s: empty output file name\n", cmd);
        return -1;
    }
    char err[PATH_MAX + 256];
    outpath o;
    if (outpath_resolve(path, &o, err, sizeof err)) {
        fprintf(stderr, "bosch %s: %s\n", cmd, err);
        return -1;
    }
    if (o.stream) return 0;
    char dir[PATH_MAX];
    const char *t = o.target, *slash = strrchr(t, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash == t ? 1 : slash - t), t);
    int rc = -1;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        fprintf(stderr, "bosch %s: %s: its folder %s does not exist\n", cmd, path, dir);
    else if (probe_writable(dir))
        fprintf(stderr, "bosch %s: %s: folder %s is not writable: %s\n", cmd, path, dir, strerror(errno));
    else
        rc = 0;
    outpath_free(&o);
    return rc;
}

int cli_out_dir_holds(const char *dir, const char *const *names, int n, char *found, size_t cap) {
    int k = 0;
    size_t len = 0;
    if (cap) found[0] = '\0';
    for (int i = 0; i < n; i++) {
        char p[PATH_MAX];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (lstat(p, &sb) != 0) continue;
        if (len < cap) len += (size_t)snprintf(found + len, cap - len, "%s%s", k ? ", " : "", names[i]);
        k++;
    }
    return k;
}

int cli_parse_precision(const char *cmd, const char *v, engine_precision *out) {
    if (gemm_precision_parse(v, out) == 0) return 0;
    fprintf(stderr, "bosch %s: --precision: bad value '%s' (need fp32, bf16 or auto)\n", cmd, v ? v : "");
    return -1;
}

int cli_parse_kv(const char *cmd, const char *v, attn_kv_type *out) {
    if (attn_kv_type_parse(v, out) == 0) return 0;
    fprintf(stderr, "bosch %s: --kv: bad value '%s' (need fp32 or bf16)\n", cmd, v ? v : "");
    return -1;
}

int cli_parse_decode(const char *cmd, const char *v, model_opts *opts) {
    if (v && !strcmp(v, "blocks"))
        opts->decode_fp32 = 0;
    else if (v && !strcmp(v, "gemm"))
        opts->decode_fp32 = 1;
    else {
        fprintf(stderr, "bosch %s: --decode-weights: bad value '%s' (need blocks or gemm)\n", cmd,
                v ? v : "");
        return -1;
    }
    return 0;
}

int cli_load_model(const char *cmd, const char *path, const model_opts *opts, model **out) {
    char err[1024];
    if (model_load_opts(out, path, opts, err, sizeof err) != 0) {
        fprintf(stderr, "bosch %s: %s\n", cmd, err);
        return -1;
    }
    return 0;
}
