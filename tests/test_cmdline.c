/* test_cmdline.c — the explorer's `:` command line and `/` layer jump (tui/cmdline.h), without a
 * terminal: every command with good and bad arguments and the exact one-line message of each
 * refusal, the layer bounds of the default model (30 layers), and the export table's names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cmdline.h"

#define L 30

static cmdline_cmd ok(const char *line) {
    cmdline_cmd c;
    char err[160] = "";
    if (cmdline_parse(line, L, &c, err, sizeof err)) fail_msg("'%s' refused: %s", line, err);
    return c;
}

static void refused(const char *line, const char *want) {
    cmdline_cmd c;
    char err[160] = "";
    assert_int_equal(cmdline_parse(line, L, &c, err, sizeof err), -1);
    assert_string_equal(err, want);
}

static void test_commands(void **st) {
    (void)st;
    cmdline_cmd c = ok("ratio 0.75");
    assert_int_equal(c.kind, CMDLINE_RATIO);
    assert_true(c.ratio == 0.75);
    c = ok("  :ratio 1  "); /* blanks and a second ':' */
    assert_true(c.ratio == 1.0);
    c = ok("window 64");
    assert_int_equal(c.kind, CMDLINE_WINDOW);
    assert_int_equal(c.window, 64);
    assert_int_equal(ok("window 16777216").window, 1 << 24);
    c = ok("load runs/my mask.csv"); /* the rest of the line: a path may hold blanks */
    assert_int_equal(c.kind, CMDLINE_LOAD);
    assert_string_equal(c.path, "runs/my mask.csv");
    c = ok("layer 12");
    assert_int_equal(c.kind, CMDLINE_LAYER);
    assert_int_equal(c.layer, 12);
    c = ok("29");
    assert_int_equal(c.kind, CMDLINE_LAYER);
    assert_int_equal(c.layer, 29);
    assert_int_equal(ok("q").kind, CMDLINE_QUIT);
    assert_int_equal(ok("quit").kind, CMDLINE_QUIT);
    assert_int_equal(ok("q!").kind, CMDLINE_QUIT_NOW);
    assert_int_equal(ok("help").kind, CMDLINE_HELP);
    assert_int_equal(ok("h").kind, CMDLINE_HELP);
    c = ok("all full"); /* issue 28: reset the working mask to either end */
    assert_int_equal(c.kind, CMDLINE_ALL);
    assert_int_equal(c.all_swa, 0);
    assert_int_equal(ok("all SWA").all_swa, 1);
    refused("all", "all: bad value '' (need full or swa)");
    refused("all half", "all: bad value 'half' (need full or swa)");
    c = ok("pin");
    assert_int_equal(c.kind, CMDLINE_PIN);
    assert_int_equal(c.pin, CMDLINE_PIN_WORKING);
    assert_int_equal(ok("pin full").pin, CMDLINE_PIN_FULL);
    assert_int_equal(ok("pin SWA").pin, CMDLINE_PIN_SWA);
    /* issue 28 item 4: any mask: a baseline of the method registry, with or without a ratio */
    c = ok("pin Fisher");
    assert_int_equal(c.pin, CMDLINE_PIN_METHOD);
    assert_string_equal(c.path, "fisher"); /* the registry's spelling */
    assert_true(c.ratio == -1);
    c = ok("pin bme 0.25");
    assert_int_equal(c.pin, CMDLINE_PIN_METHOD);
    assert_string_equal(c.path, "bme");
    assert_true(c.ratio == 0.25);
    c = ok("pin locality 1");
    assert_true(c.ratio == 1.0);
    refused("pin fisher 2", "pin: fisher: bad ratio '2' (need a number in [0, 1])");
    refused("pin nll half", "pin: nll: bad ratio 'half' (need a number in [0, 1])");
    refused("pin bosch",
            "pin: bosch is a search (s runs it); pin a baseline: rand, bme, intr, nll, locality, "
            "echo, ablation, fisher, or a file (./bosch)");
    /* ... or a mask file: any other word, the rest of the line (a path may hold blanks) */
    c = ok("pin runs/my mask.csv");
    assert_int_equal(c.pin, CMDLINE_PIN_FILE);
    assert_string_equal(c.path, "runs/my mask.csv");
    c = ok("pin ./fisher");
    assert_int_equal(c.pin, CMDLINE_PIN_FILE);
    assert_string_equal(c.path, "./fisher");
    c = ok("pin full.csv");
    assert_int_equal(c.pin, CMDLINE_PIN_FILE);
    c = ok("pin full swa"); /* not the keyword alone: a file named so */
    assert_int_equal(c.pin, CMDLINE_PIN_FILE);
    assert_string_equal(c.path, "full swa");
}

/* :export NAME dispatches through the table: each row by its name, with or without a file. */
static void test_export_table(void **st) {
    (void)st;
    int n;
    const cmdline_export *e = cmdline_exports(&n);
    assert_int_equal(n, 7);
    const char *names[] = {"mask", "trace", "layers", "duo", "hf", "trtllm", "scores"};
    const ex_io_kind io[] = {EX_IO_EXPORT_MASK, EX_IO_EXPORT_TRACE,  EX_IO_EXPORT_LAYERS, EX_IO_EXPORT_DUO,
                             EX_IO_EXPORT_HF,   EX_IO_EXPORT_TRTLLM, EX_IO_EXPORT_SCORES};
    for (int i = 0; i < n; i++) {
        char line[64];
        snprintf(line, sizeof line, "export %s", names[i]);
        cmdline_cmd c = ok(line);
        assert_int_equal(c.kind, CMDLINE_EXPORT);
        assert_int_equal(c.export_i, i);
        assert_string_equal(c.path, "");
        assert_string_equal(e[i].name, names[i]);
        assert_int_equal(e[i].io, io[i]);
    }
    assert_int_equal(e[1].needs_search, 1);
    cmdline_cmd c = ok("export layers /tmp/l.csv");
    assert_int_equal(c.export_i, 2);
    assert_string_equal(c.path, "/tmp/l.csv");
}

static void test_refusals(void **st) {
    (void)st;
    refused("", "empty command (:help lists them)");
    refused("   ", "empty command (:help lists them)");
    refused("frob 3", "unknown command 'frob' (:help lists them)");
    refused("ratio", "ratio: bad value '' (need a number in [0, 1])");
    refused("ratio 2", "ratio: bad value '2' (need a number in [0, 1])");
    refused("ratio -0.1", "ratio: bad value '-0.1' (need a number in [0, 1])");
    refused("ratio 0.5x", "ratio: bad value '0.5x' (need a number in [0, 1])");
    refused("ratio nan", "ratio: bad value 'nan' (need a number in [0, 1])");
    refused("window 0", "window: bad value '0' (need tokens in [1, 16777216])");
    refused("window 64.5", "window: bad value '64.5' (need tokens in [1, 16777216])");
    refused("window -3", "window: bad value '-3' (need tokens in [1, 16777216])");
    refused("window 16777217", "window: bad value '16777217' (need tokens in [1, 16777216])");
    refused("load", "load: give a file name (:load FILE)");
    refused("export", "export: say what to export: mask, trace, layers, duo, hf, trtllm or scores");
    refused("export gguf", "export: unknown 'gguf' (mask, trace, layers, duo, hf, trtllm or scores)");
    refused("layer 30", "no layer 30 (the model has layers 0-29)");
    refused("40", "no layer 40 (the model has layers 0-29)");
    refused("layer x", "layer: bad value 'x' (need a layer number, 0-29)");
    refused("q now", "quit takes no argument (got 'now')");
    refused("help me", "help takes no argument (got 'me')");
}

static void test_layer_jump(void **st) {
    (void)st;
    int layer = -1;
    char err[160];
    assert_int_equal(cmdline_parse_layer("12", L, &layer, err, sizeof err), 0);
    assert_int_equal(layer, 12);
    assert_int_equal(cmdline_parse_layer(" L7 ", L, &layer, err, sizeof err), 0);
    assert_int_equal(layer, 7);
    assert_int_equal(cmdline_parse_layer("0", L, &layer, err, sizeof err), 0);
    assert_int_equal(layer, 0);
    assert_int_equal(cmdline_parse_layer("30", L, &layer, err, sizeof err), -1);
    assert_string_equal(err, "no layer 30 (the model has layers 0-29)");
    assert_int_equal(cmdline_parse_layer("", L, &layer, err, sizeof err), -1);
    assert_string_equal(err, "layer: bad value '' (need a layer number, 0-29)");
    assert_int_equal(cmdline_parse_layer("1 2", L, &layer, err, sizeof err), -1);
    assert_int_equal(cmdline_parse_layer("+3", L, &layer, err, sizeof err), -1);
    assert_int_equal(layer, 0); /* refusals leave it alone */
}

static void test_help_lines(void **st) {
    (void)st;
    int n;
    const cmdline_help_line *h = cmdline_help(&n);
    assert_int_equal(n, 9);
    for (int i = 0; i < n; i++) {
        char line[160];
        snprintf(line, sizeof line, "  :%-19s %s", h[i].usage, h[i].help); /* as the help box draws it */
        assert_true(strlen(line) <= 74);
    }
    assert_string_equal(h[0].usage, "ratio R");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands),   cmocka_unit_test(test_export_table),
        cmocka_unit_test(test_refusals),   cmocka_unit_test(test_layer_jump),
        cmocka_unit_test(test_help_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
