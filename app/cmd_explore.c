/* cmd_explore.c — `bosch [MODEL]` / `bosch explore [MODEL] [OPTIONS]`: the ncurses explorer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
            "                     [--precision fp32|bf16|auto] [--ui-stats FILE] [--workspace DIR]\n"
            "Open the explorer: watch a BOSCH search, edit the head mask, evaluate it, ask the model.\n"
            "  MODEL      GGUF file (default: $BOSCH_MODEL, else %s)\n"
            "  --ctx N    context length in tokens for the KV-cache bytes line (default: the model's)\n"
            "  --ascii    ASCII glyphs ('#' full, '.' SWA) even in a UTF-8 locale\n"
            "  --mono     no colours (also when NO_COLOR is set or the terminal has none)\n"
            "  --device D where the search and held-out evaluators run: cpu, cuda or auto (default:\n"
            "             cuda when a GPU is visible)\n"
            "  --precision P  CPU GEMMs: fp32, bf16 or auto (default: bf16 where the CPU has it)\n"
            "  --kv T     CPU KV cache and attention, and the KV-bytes line: bf16 (default) or fp32\n"
            "  --workspace DIR  open a workspace saved with W (search state, mask, undo, evaluations), or\n"
            "             a `bosch search --out DIR` folder: its search is replayed, paused or finished\n"
            "  --ui-stats FILE  at exit, write how long the UI thread was busy per wake-up (CSV:\n"
            "             iterations,max_ms,p99_ms,p50_ms,mean_ms,over_200ms)\n"
            "Colours, palette (blue-red, blue-orange), mouse and keys: $XDG_CONFIG_HOME/bosch/explorer.conf\n"
            "(else ~/.config/bosch/explorer.conf; docs/explorer.md). Press ? inside for the keys.\n",
            cli_default_model());
}

static int explore_option(cmd_env *e, void *opts, const char *a, const char *v) {
    explorer_opts *o = opts;
    if (!strcmp(a, "--ascii") || !strcmp(a, "--mono")) {
        *(!strcmp(a, "--ascii") ? &o->ascii : &o->mono) = 1;
        return CMD_OPT_FLAG;
    }
    if (strcmp(a, "--ui-stats") && strcmp(a, "--ctx") && strcmp(a, "--workspace")) return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (!strcmp(a, "--workspace")) {
        o->workspace_dir = v;
        return cmd_value(cli_need_nonempty("explore", a, v, "a folder"));
    }
    if (!strcmp(a, "--ui-stats")) {
        o->ui_stats_path = v;
        return cmd_value(cli_need_nonempty("explore", a, v, "a file name"));
    }
    return cmd_value(cli_parse_int_in("explore", a, v, 1, 1 << 24, &o->ctx_tokens));
}

/* --workspace must name a folder (checked before the model loads). 0, or 2 (printed). */
static int explore_check(cmd_env *e, void *opts) {
    (void)e;
    const explorer_opts *o = opts;
    struct stat st;
    if (!o->workspace_dir || (stat(o->workspace_dir, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    fprintf(stderr,
            "bosch explore: --workspace %s: not a folder (give a folder saved with W, or a bosch search "
            "--out folder)\n",
            o->workspace_dir);
    return 2;
}

static int explore_run(cmd_env *e, void *opts) {
    explorer_opts *o = opts;
    o->model_path = e->model_path;
    o->precision = (int)e->mo.precision;
    o->kv_type = (int)e->mo.kv_type;
    o->backend = cli_backend_options(e->device, 0);
    const char *nc = getenv("NO_COLOR"); /* no-color.org: set and not empty */
    if (nc && *nc) o->mono = 1;
    o->term = getenv("TERM");
    static char export_dir[200]; /* the explorer's default export folder */
    const char *home = getenv("HOME");
    if (home && home[0] == '/' && strlen(home) < sizeof export_dir - 16) {
        snprintf(export_dir, sizeof export_dir, "%s/bosch-exports", home);
        o->export_dir = export_dir;
    }
    char cfg_path[4096], *cfg_text = NULL, err[4200]; /* $XDG_CONFIG_HOME/bosch/explorer.conf */
    if (cli_config_read(cfg_path, sizeof cfg_path, &o->config_path, &cfg_text, err, sizeof err)) {
        fprintf(stderr, "bosch: %s\n", err);
        return 2;
    }
    o->config_text = cfg_text;
    int rc = explorer_run(o);
    free(cfg_text);
    return rc;
}

const command cmd_explore = {
    .name = "explore",
    .help = "the ncurses explorer (default)",
    .flags = CMD_MODEL | CMD_PRECISION | CMD_DEVICE,
    .opts_size = sizeof(explorer_opts),
    .option = explore_option,
    .check = explore_check,
    .run = explore_run,
    .usage = usage,
};
