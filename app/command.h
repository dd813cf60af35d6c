/* command.h — one `bosch` subcommand as a table entry, and the driver that runs it.
 *
 * The driver (command_run) does what every command shares, once, in this order:
 *   1. the command's defaults (init), then the arguments: -h/--help prints usage; MODEL (the one
 *      argument not starting with '-', anywhere among the options) for CMD_MODEL; --precision
 *      and --kv (CMD_PRECISION), --decode-weights (CMD_DECODE) and --device (CMD_DEVICE) into the env; every
 *      other option goes to the command's option callback;
 *   2. --device parsed (CMD_DEVICE; default auto), MODEL defaulted (cli_default_model());
 *   3. the command's check (everything that needs no model: combinations, output folders);
 *   4. SIGINT, SIGTERM and SIGHUP caught into cli_stop (CMD_STOP), until the end;
 *   5. the model loaded (CMD_LOAD) and the backend created on the device (CMD_BACKEND);
 *   6. run; then the backend, the model and the signal actions are released.
 * Exit status: 0 ok, 1 runtime error, 2 usage error (bad option, value or combination); a command's
 * check and run return the status themselves. Messages start with "bosch NAME: ".
 */
#ifndef BOSCH_COMMAND_H
#define BOSCH_COMMAND_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "backend.h"
#include "model.h"

enum {
    CMD_MODEL = 1 << 0,     /* takes MODEL */
    CMD_PRECISION = 1 << 1, /* takes --precision and --kv */
    CMD_DECODE = 1 << 2,    /* takes --decode-weights */
    CMD_DEVICE = 1 << 3,    /* takes --device cpu|cuda|auto */
    CMD_LOAD = 1 << 4,      /* the driver loads MODEL before run (needs CMD_MODEL) */
    CMD_BACKEND = 1 << 5,   /* the driver creates the backend on the device before run (needs CMD_LOAD) */
    CMD_STOP = 1 << 6,      /* stop signals set cli_stop from the check on (cli.h) */
};

/* What the driver shares with a command. */
typedef struct {
    const char *name;           /* "search": messages say "bosch search: ..." */
    const char *model_path;     /* MODEL, else the default model */
    model_opts mo;              /* --precision, --kv (default bf16), --decode-weights */
    const char *device_name;    /* --device as given (default "auto") */
    backend_device device;      /* parsed */
    model *m;                   /* CMD_LOAD: the loaded model during run */
    backend *be;                /* CMD_BACKEND: the backend during run */
    struct sigaction old_sa[3]; /* CMD_STOP */
    struct outlock *lock;       /* the output's lock (cmd_lock_output), released after run */
    char *made_dir;             /* the output folder this run created (cmd_out_dir), or NULL */
} cmd_env;

/* Returned by an option callback. */
enum { CMD_OPT_FLAG = 0, CMD_OPT_VALUE = 1, CMD_OPT_BAD = -1, CMD_OPT_UNKNOWN = -2 };

typedef struct {
    const char *name; /* "search" */
    const char *help; /* one line for `bosch --help` */
    unsigned flags;   /* CMD_* */
    size_t opts_size; /* bytes of the command's options struct (zeroed, then init) */
    void (*init)(void *opts);
    /* Option `opt` with the next argument `val` (NULL at the end of the line): CMD_OPT_FLAG (opt
     * alone used), CMD_OPT_VALUE (val used too), CMD_OPT_BAD (message printed) or CMD_OPT_UNKNOWN.
     * A command without CMD_MODEL also gets its positional arguments here (CMD_OPT_FLAG: taken).
     * May be NULL (no options of its own). */
    int (*option)(cmd_env *e, void *opts, const char *opt, const char *val);
    int (*check)(cmd_env *e, void *opts); /* 0, or the exit status (may be NULL) */
    int (*run)(cmd_env *e, void *opts);   /* the exit status */
    /* Under mpirun (app/cli_dist.h), ranks > 0 run this instead of check and run, after the model
     * load and the backend (on the GPU of the rank's local index): a worker serving rank 0's
     * evaluations. NULL: such ranks do nothing (exit 0). */
    int (*worker)(cmd_env *e, void *opts);
    void (*usage)(FILE *f);
} command;

/* Run c on argv[0..argc) (argv[0] the command's name). The exit status. */
int command_run(const command *c, int argc, char **argv);

/* For checks: take the exclusive lock of the output (formats/outlock.h: folder path, or with
 * is_file the file path names, symlinks followed; "-" and /dev/stdout need none) for the rest of
 * the run: a second run writing there is refused, naming this one's pid. 0, or -1 after printing
 * "bosch NAME: ..." (another run holds it, or the lock file cannot be made). */
int cmd_lock_output(cmd_env *e, const char *path, int is_file);

/* For checks: cli_out_dir_ready (the folder exists or is created, and is writable), then with lock
 * cmd_lock_output on it. A folder this created is removed again when the command fails and leaves
 * it empty (a search refused after the model load, e.g. for --sinks past the context, left an
 * empty folder). 0, or -1 after printing the reason. */
int cmd_out_dir(cmd_env *e, const char *dir, int lock);

/* For option callbacks: print "bosch NAME: option OPT needs a value" and return CMD_OPT_BAD. */
int cmd_need_value(const cmd_env *e, const char *opt);

/* For option callbacks: the result of a cli_* parser (0 or -1) as CMD_OPT_VALUE or CMD_OPT_BAD. */
static inline int cmd_value(int parse_rc) {
    return parse_rc ? CMD_OPT_BAD : CMD_OPT_VALUE;
}

#endif
