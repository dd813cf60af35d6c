/* cmd_explore.c — `bosch [MODEL]` / `bosch explore [MODEL] [OPTIONS]`: the ncurses explorer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "backend.h"
#include "cli_backend.h"
#include "cli_config.h"
#include "explorer.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: bosch [MODEL]\n"
            "       bosch explore [MODEL] [--ctx N] [--ascii] [--mono] [--device cpu|cuda|auto]\n"
            "                     [--precision fp32|bf16|auto] [--ui-stats FILE]\n"
            "Open the explorer: watch a BOSCH search, edit the head mask, evaluate it, ask the model.\n"
            "  MODEL      GGUF file (default: $BOSCH_MODEL, else %s)\n"
            "  --ctx N    context length in tokens for the KV-cache bytes line (default: the model's)\n"
            "  --ascii    ASCII glyphs ('#' full, '.' SWA) even in a UTF-8 locale\n"
            "  --mono     no colours (also when NO_COLOR is set or the terminal has none)\n"
            "  --device D where the search and held-out evaluators run: cpu, cuda or auto (default:\n"
            "             cuda when a GPU is visible)\n"
            "  --precision P  CPU GEMMs: fp32, bf16 or auto (default: bf16 where the CPU has it)\n"
            "  --ui-stats FILE  at exit, write how long the UI thread was busy per wake-up (CSV:\n"
            "             iterations,max_ms,p99_ms,p50_ms,mean_ms,over_200ms)\n"
            "Colours, palette (blue-red, blue-orange), mouse and keys: $XDG_CONFIG_HOME/bosch/explorer.conf\n"
            "(else ~/.config/bosch/explorer.conf; docs/explorer.md). Press ? inside for the keys.\n",
            cli_default_model());
}

int cmd_explore(int argc, char **argv) {
    explorer_opts o = {0};
    o.precision = PRECISION_AUTO;
    const char *device_s = "auto";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!a) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--ascii")) {
            o.ascii = 1;
        } else if (!strcmp(a, "--mono")) {
            o.mono = 1;
        } else if (!strcmp(a, "--device")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bosch explore: --device needs cpu, cuda or auto\n");
                return 2;
            }
            device_s = argv[++i];
        } else if (!strcmp(a, "--precision")) {
            engine_precision p;
            if (i + 1 >= argc || cli_parse_precision("explore", argv[i + 1], &p)) return 2;
            o.precision = (int)p;
            i++;
        } else if (!strcmp(a, "--ui-stats")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "bosch explore: --ui-stats needs a file name\n");
                return 2;
            }
            o.ui_stats_path = argv[++i];
        } else if (!strcmp(a, "--ctx")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || !end || *end || v < 1 || v > (1L << 24)) {
                fprintf(stderr, "bosch explore: --ctx needs a number of tokens in 1..16777216\n");
                return 2;
            }
            o.ctx_tokens = (int)v;
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "bosch explore: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!o.model_path) {
            o.model_path = a;
        } else {
            fprintf(stderr, "bosch explore: more than one model given ('%s', '%s')\n", o.model_path, a);
            return 2;
        }
    }
    if (!o.model_path) o.model_path = cli_default_model();
    char err[256];
    backend_device d;
    if (backend_parse_device(device_s, &d, err, sizeof err)) {
        fprintf(stderr, "bosch explore: %s\n", err);
        return 2;
    }
    o.backend = cli_backend_options(d, 0);
    const char *nc = getenv("NO_COLOR"); /* no-color.org: set and not empty */
    if (nc && *nc) o.mono = 1;
    o.term = getenv("TERM");
    char cfg_path[4096], *cfg_text = NULL; /* $XDG_CONFIG_HOME/bosch/explorer.conf (docs/explorer.md) */
    if (cli_config_read(cfg_path, sizeof cfg_path, &o.config_path, &cfg_text, err, sizeof err)) {
        fprintf(stderr, "bosch: %s\n", err);
        return 2;
    }
    o.config_text = cfg_text;
    int rc = explorer_run(&o);
    free(cfg_text);
    return rc;
}
