/* cli.h — option-value parsers shared by the subcommands, beyond the three in commands.h (which
 * cli.c also implements): integer ranges, token counts and comma-separated lists.
 *
 * Every parser checks the whole text, prints one line on stderr naming the command, the option and
 * the text on a bad value, and returns -1 then (never a silent default):
 *   bosch CMD: OPT: bad value 'V' (need ...)
 *   bosch CMD: OPT: bad list 'V' (why, e.g. "item 2 is empty")
 * A list is items separated by single commas: an empty list or an empty item (",256", "256,",
 * "256,,512") is refused, as is a list longer than the caller's array.
 */
#ifndef BOSCH_CLI_H
#define BOSCH_CLI_H

#include <signal.h>

#include "commands.h"
#include "model.h"

/* Longest list item accepted by cli_split_list, bytes including the terminating NUL. */
#define CLI_ITEM_CAP 64

/* V a decimal integer in [min, max]. 0, or -1 with "need an integer in [min, max]". */
int cli_parse_int_range(const char *cmd, const char *opt, const char *v, long min, long max, long *out);

/* cli_parse_int_range into an int: V a decimal integer in [min, max]. 0 or -1. */
int cli_parse_int_in(const char *cmd, const char *opt, const char *v, int min, int max, int *out);

/* V a token count in [min, max]: decimal digits, optionally followed by k or K (x 1024), e.g.
 * "512", "1k", "8K". 0, or -1 with "need a token count in [min, max], e.g. 512 or 1k". */
int cli_parse_tokens(const char *cmd, const char *opt, const char *v, long min, long max, long *out);

/* Print "bosch CMD: OPT: bad list 'V' (WHY)" on stderr, WHY formatted like printf. For callers that
 * check list items themselves (names of tasks, methods). */
void cli_bad_list(const char *cmd, const char *opt, const char *v, const char *why_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Split V at commas into items[0..n) (each NUL-terminated). Refuses NULL or empty V, an empty item,
 * an item of CLI_ITEM_CAP bytes or more, and more than cap items. Returns n >= 1, or -1. */
int cli_split_list(const char *cmd, const char *opt, const char *v, char (*items)[CLI_ITEM_CAP], int cap);

/* Lists whose every item is checked like the single-value parsers above; out[0..n) gets the values.
 * Return n >= 1, or -1 with a "bad list" message naming the first bad item and the range. */
int cli_parse_int_list(const char *cmd, const char *opt, const char *v, long min, long max, int *out,
                       int cap);
int cli_parse_tokens_list(const char *cmd, const char *opt, const char *v, long min, long max, int *out,
                          int cap);
/* Items decimal numbers (strtod syntax, finite) in [min, max]. */
int cli_parse_real_list(const char *cmd, const char *opt, const char *v, double min, double max, double *out,
                        int cap);

/* V a finite decimal number in [min, max] (no blanks, nan or inf). 0, or -1 with
 * "bad value 'V' (need a number in [min, max])". */
int cli_parse_real(const char *cmd, const char *opt, const char *v, double min, double max, double *out);

/* V not empty: 0, or -1 with "bosch CMD: OPT: empty value (need WHAT)". */
int cli_need_nonempty(const char *cmd, const char *opt, const char *v, const char *what);

/* Output checks, made before any work starts; each prints "bosch CMD: PATH: why" and returns -1.
 * cli_out_dir_ready: DIR exists or is created (one level, mode 0777 minus the umask), is a
 * directory, and is writable (a probe file DIR/.bosch-probe.<pid>.XXXXXX is created and removed).
 * cli_out_file_ready: PATH resolves (formats/outpath.h: "-" and /dev/stdout are a stream; a symlink
 * is followed; a directory, device, FIFO or socket is refused), and the folder of the file it names
 * exists and is writable (same probe). */
int cli_out_dir_ready(const char *cmd, const char *dir);
int cli_out_file_ready(const char *cmd, const char *path);
/* Which of names[0..n) exist in dir: joined by ", " into found (cap bytes; "" when none). Returns
 * how many exist. */
int cli_out_dir_holds(const char *dir, const char *const *names, int n, char *found, size_t cap);

/* Set to 1 by SIGINT, SIGTERM or SIGHUP while cli_catch_stop_signals is in force; the long commands
 * (search, compare) read it between evaluations and stop cleanly, saving what they did. */
extern volatile sig_atomic_t cli_stop;
/* Clear cli_stop and catch SIGINT, SIGTERM and SIGHUP, keeping their previous actions in old[3].
 * SIGINT and SIGTERM are always caught (a shell starts background jobs with SIGINT ignored, and
 * `kill -INT` must still stop them); SIGHUP stays ignored under nohup. The three are blocked in the
 * calling thread and in every thread it starts afterwards, and taken by one thread of their own
 * (cli_stop.c says why): call it from the main thread before the model is loaded. */
void cli_catch_stop_signals(struct sigaction old[3]);
/* Put back the actions cli_catch_stop_signals saved, and the calling thread's signal mask. */
void cli_restore_stop_signals(const struct sigaction old[3]);

/* --precision V: "fp32", "bf16" or "auto" (gemm.h). 0, or -1 with "need fp32, bf16 or auto". */
int cli_parse_precision(const char *cmd, const char *v, engine_precision *out);

/* --kv V: "fp32" or "bf16" (attention.h: the KV cache's and attention's element type). 0, or -1
 * with "need fp32 or bf16". */
int cli_parse_kv(const char *cmd, const char *v, attn_kv_type *out);

/* --decode-weights V: "blocks" (decode reads the file's quantized blocks, the default) or "gemm" (decode
 * through the GEMM weights, the arithmetic of prefill). Sets opts->decode_fp32. 0 or -1. */
int cli_parse_decode(const char *cmd, const char *v, model_opts *opts);

/* The help lines of --precision and --decode-weights, for the commands' usage texts. */
#define CLI_PRECISION_HELP                                                                                   \
    "  --precision P    GEMM precision on the CPU: fp32 (the reference), bf16 (GEMM inputs rounded\n"        \
    "                   to bf16, fp32 accumulation) or auto (default: bf16 where the CPU has bf16\n"         \
    "                   hardware, else fp32)\n"
#define CLI_KV_HELP                                                                                          \
    "  --kv T           keys and values of attention and the KV cache: bf16 (default: rounded to\n"          \
    "                   nearest even when written, bf16 products, fp32 softmax) or fp32 (the reference)\n"
#define CLI_DECODE_HELP                                                                                      \
    "  --decode-weights D  blocks (default: decode reads the file's quantized weights with 8-bit\n"          \
    "                   activations) or gemm (decode through the GEMM weights, as prefill)\n"

/* model_load_opts, printing "bosch CMD: <message>" on failure. 0 or -1. */
int cli_load_model(const char *cmd, const char *path, const model_opts *opts, model **out);

#endif
