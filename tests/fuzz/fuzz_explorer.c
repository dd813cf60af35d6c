/* fuzz_explorer.c — libFuzzer target for what the explorer parses from its user: the config file
 * (tui/ui_config.c, ui_config_parse, with the key and request names of tui/keymap.c) and the `:`
 * command line and `/` layer jump (tui/cmdline.c). The whole input is parsed as a config file,
 * then each of its lines as a command and as a layer number (30 layers, the default model's).
 * Checks beyond the sanitizers: a parsed config stays in bounds (bindings, colours), a parsed
 * command's values are in their documented ranges. Seeds: tests/fixtures/explorer.conf and
 * explorer_cmdlines.txt. Build and run: see tests/fuzz/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "ui_config.h"

static void check_command(const char *line) {
    cmdline_cmd c;
    char err[256];
    int layer, n;
    cmdline_exports(&n);
    if (cmdline_parse(line, 30, &c, err, sizeof err) == 0) {
        if (c.kind == CMDLINE_RATIO && !(c.ratio >= 0 && c.ratio <= 1)) abort();
        if (c.kind == CMDLINE_WINDOW && (c.window < 1 || c.window > CMDLINE_MAX_WINDOW)) abort();
        if (c.kind == CMDLINE_LAYER && (c.layer < 0 || c.layer >= 30)) abort();
        if (c.kind == CMDLINE_EXPORT && (c.export_i < 0 || c.export_i >= n)) abort();
        if (strlen(c.path) >= sizeof c.path) abort();
    } else if (!err[0] || strchr(err, '\n')) {
        abort(); /* a refusal says why, on one line */
    }
    if (cmdline_parse_layer(line, 30, &layer, err, sizeof err) == 0 && (layer < 0 || layer >= 30)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ui_config c;
    char err[512];
    if (ui_config_parse(&c, "fuzz.conf", text, err, sizeof err) == 0) {
        if (c.n_binds < 0 || c.n_binds > UI_MAX_BINDS) abort();
        for (int i = 0; i < UI_N_PARTS; i++)
            if (c.colour[i].fg < -1 || c.colour[i].fg > 255 || c.colour[i].bg < -1 || c.colour[i].bg > 255)
                abort();
    }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) check_command(line);
    free(text);
    return 0;
}
