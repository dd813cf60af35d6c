/* commands.h — the `bosch` subcommands, one table entry each (command.h: the driver does the shared
 * set-up). Each entry's run returns the process exit status (0 ok, 1 runtime error, 2 usage error)
 * and prints errors on stderr; only main() exits. Machine-readable output goes to stdout, progress
 * to stderr. */
#ifndef BOSCH_COMMANDS_H
#define BOSCH_COMMANDS_H

#include "command.h"

extern const command cmd_info;     /* bosch info [MODEL] */
extern const command cmd_generate; /* bosch generate [MODEL] --prompt TEXT [--chat] [-n N] [--mask F] */
extern const command cmd_eval;     /* bosch eval [MODEL] ... */
extern const command cmd_search;   /* bosch search [MODEL] --ratio R --out DIR ... */
extern const command cmd_compare;  /* bosch compare [MODEL] --out DIR ... */
extern const command cmd_bench;    /* bosch bench [MODEL] ... */
extern const command cmd_explore;  /* bosch [MODEL]: the ncurses explorer */
extern const command cmd_export;   /* bosch export MASK.csv --format F --out PATH */
extern const command cmd_import;   /* bosch import FILE --format duo --out MASK.csv */
extern const command cmd_mkmodel;  /* bosch mkmodel OUT ...: a random-weight GGUF (engine/gguf_write.h) */

/* Default model path: $BOSCH_MODEL, else models/SmolLM2-135M-Instruct.Q4_1.gguf. */
const char *cli_default_model(void);

/* Option-value parsers shared by the subcommands. Each prints
 * "bosch CMD: OPT: bad value 'V' (need ...)" on stderr and returns -1 on a bad value, else 0. */
/* V an integer in [min, INT_MAX]. */
int cli_parse_int(const char *cmd, const char *opt, const char *v, long min, long *out);
/* V an unsigned decimal integer (no sign, fits in 64 bits). */
int cli_parse_seed(const char *cmd, const char *opt, const char *v, unsigned long long *out);
/* V equal to a or b; *is_b = (V == b). */
int cli_parse_choice(const char *cmd, const char *opt, const char *v, const char *a, const char *b,
                     int *is_b);

#endif
