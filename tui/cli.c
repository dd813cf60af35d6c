/* cli.c — helpers shared by the headless subcommands. */
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
