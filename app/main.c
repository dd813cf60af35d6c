/* main.c — `bosch`: dispatch to a subcommand, or open the explorer. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_dist.h"
#include "crash_trace.h"
#include "gguf.h"
#include "commands.h"

/* The subcommands, in the order `bosch --help` lists them. */
static const command *const commands[] = {&cmd_info,  &cmd_generate, &cmd_eval,   &cmd_search, &cmd_compare,
                                          &cmd_bench, &cmd_explore,  &cmd_export, &cmd_import, &cmd_mkmodel};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
    fprintf(f,
            "usage: bosch [MODEL] [OPTIONS]  open the explorer (default model: %s;\n"
            "                                 options: bosch explore --help)\n"
            "       bosch COMMAND [MODEL] [OPTIONS]\ncommands:\n",
            cli_default_model());
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->help);
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

static int dispatch(int argc, char **argv);

/* A bus error in the mapped model (engine/gguf.h gguf_mapping_path: the file shrank while in use)
 * ends the program with a message naming the file and exit status 1, not a bare SIGBUS (status
 * 135). Async-signal-safe calls only. Any other bus error dies of the signal as before. */
static void on_bus_error(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    gguf_bus_error_exit(si->si_addr, "\n"); /* returns when addr is not in the model's mapping */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_bus_error(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus_error;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

int main(int argc, char **argv) {
    passive_openmp(argv);
    crash_trace_install();
    catch_bus_error();
    if (cli_dist_init(&argc, &argv)) return 1;
    return cli_dist_end(dispatch(argc, argv));
}

/* The subcommand named by argv[1], or the explorer. The exit status. */
static int dispatch(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2) {
        for (int i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[1], commands[i]->name)) return command_run(commands[i], argc - 1, argv + 1);
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
    int rc = command_run(&cmd_explore, argc, explore_argv);
    free(explore_argv);
    return rc;
}
