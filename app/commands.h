/* commands.h — the `bosch` subcommands. Each returns the process exit status (0 ok, 1 runtime
 * error, 2 usage error) and prints errors on stderr; only main() exits. Machine-readable output
 * goes to stdout, progress to stderr. argv[0] is the subcommand name. */
#ifndef BOSCH_COMMANDS_H
#define BOSCH_COMMANDS_H

int cmd_info(int argc, char **argv);     /* bosch info [MODEL] */
int cmd_generate(int argc, char **argv); /* bosch generate [MODEL] --prompt TEXT [--chat] [-n N] [--mask F] */
int cmd_bench(int argc, char **argv);    /* bosch bench [MODEL] ... */
int cmd_eval(int argc, char **argv);     /* bosch eval [MODEL] ... */
int cmd_search(int argc, char **argv);   /* bosch search [MODEL] --ratio R ... */
int cmd_compare(int argc, char **argv);  /* bosch compare [MODEL] ... */
int cmd_explore(int argc, char **argv);  /* bosch [MODEL]: the ncurses explorer */
int cmd_export(int argc, char **argv);   /* bosch export MASK.csv --format F --out PATH */
int cmd_import(int argc, char **argv);   /* bosch import FILE --format duo --out MASK.csv */
int cmd_mkmodel(int argc,
                char **argv); /* bosch mkmodel OUT ...: a random-weight GGUF (engine/gguf_write.h) */

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
