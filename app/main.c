/* main.c — `bosch`: dispatch to a subcommand, or open the explorer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} commands[] = {
    {"info", cmd_info, "print a model's architecture, shapes and tensor types"},
    {"generate", cmd_generate, "greedy generation with an optional head mask"},
    {"eval", cmd_eval, "accuracy of a mask on probe tasks (held-out split)"},
    {"search", cmd_search, "run a BOSCH search (or a baseline) headless"},
    {"compare", cmd_compare, "BOSCH against baselines at several ratios"},
    {"bench", cmd_bench, "prefill / decode speed, KV bytes, evaluator cost"},
    {"explore", cmd_explore, "the ncurses explorer (default)"},
    {"export", cmd_export, "write a mask for another tool (DuoAttention, HF, TensorRT-LLM, scores)"},
    {"import", cmd_import, "read a DuoAttention head pattern as a mask"},
    {"mkmodel", cmd_mkmodel, "write a random-weight llama GGUF of a real model's shape"},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: bosch [MODEL] [OPTIONS]  open the explorer (default model: %s;\n"
            "                                 options: bosch explore --help)\n"
            "       bosch COMMAND [MODEL] [OPTIONS]\ncommands:\n",
            cli_default_model());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "run 'bosch COMMAND --help' for a command's options\n");
}

/* OpenMP threads of this program wait passively (sleep) between parallel regions, so on a machine
 * shared with other busy processes they do not hold cores that those processes, or our own other
 * thread, need (measured in docs/engine.md: a 2k prefill beside one competing busy loop). libgomp
 * reads OMP_WAIT_POLICY only when it starts, before main, so when the user has not chosen a policy
 * the program sets it and executes itself again (once: BOSCH_REEXEC marks the second start). Decode,
 * whose threads meet ~300 times per token, does not use libgomp's barriers (engine/team.h). */
static void passive_openmp(char **argv) {
    if (getenv("BOSCH_REEXEC")) { /* the second start: leave no marker for child processes */
        unsetenv("BOSCH_REEXEC");
        return;
    }
    if (getenv("OMP_WAIT_POLICY")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv("BOSCH_REEXEC", "1", 1)) return;
    execv("/proc/self/exe", argv);
    /* no /proc, or exec refused: run on with libgomp's default policy */
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("BOSCH_REEXEC");
}

int main(int argc, char **argv) {
    passive_openmp(argv);
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2) {
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
        /* A MODEL is an existing file or a name ending in ".gguf"; anything else that is not an
         * option is a mistyped command. */
        struct stat sb;
        size_t n = strlen(argv[1]);
        int is_gguf = n >= 5 && !strcmp(argv[1] + n - 5, ".gguf");
        if (argv[1][0] != '-' && !is_gguf && !(stat(argv[1], &sb) == 0 && S_ISREG(sb.st_mode))) {
            fprintf(stderr, "bosch: unknown command '%s'\n", argv[1]);
            usage(stderr);
            return 2;
        }
    }
    /* `bosch [MODEL] [OPTIONS]`: the explorer, with every argument (explore checks the options). */
    char **explore_argv = malloc(sizeof(char *) * (size_t)(argc + 1));
    if (!explore_argv) {
        fprintf(stderr, "bosch: out of memory\n");
        return 1;
    }
    explore_argv[0] = "explore";
    for (int i = 1; i < argc; i++) explore_argv[i] = argv[i];
    explore_argv[argc] = NULL;
    int rc = cmd_explore(argc, explore_argv);
    free(explore_argv);
    return rc;
}
