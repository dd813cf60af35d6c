/* cli.c — helpers shared by the headless subcommands. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

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

int cli_parse_int(const char *cmd, const char *opt, const char *v, long min, long *out) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < min || x > INT_MAX) {
        fprintf(stderr, "bosch %s: %s: bad value '%s' (need an integer >= %ld)\n", cmd, opt, v, min);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_parse_seed(const char *cmd, const char *opt, const char *v, unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!(v[0] >= '0' && v[0] <= '9') || *end || errno) {
        fprintf(stderr, "bosch %s: %s: bad value '%s' (need an unsigned integer)\n", cmd, opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_parse_choice(const char *cmd, const char *opt, const char *v, const char *a, const char *b,
                     int *is_b) {
    if (strcmp(v, a) && strcmp(v, b)) {
        fprintf(stderr, "bosch %s: %s: bad value '%s' (need %s or %s)\n", cmd, opt, v, a, b);
        return -1;
    }
    *is_b = !strcmp(v, b);
    return 0;
}
