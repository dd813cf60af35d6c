/* test_ui_config.c — the explorer's config file (tui/ui_config.h) and the key and request names it
 * uses (tui/keymap.h): a full file as docs/explorer.md shows it, the defaults of an empty one, the
 * (tests/fixtures/explorer.conf), exact message of each kind of bad line (file, line, setting, value), a
 * later binding of a key replacing an earlier one, and bindings taking effect in UI_NORMAL only.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "keymap.h"
#include "ui_config.h"

/* The example file of docs/explorer.md ("Config file"), tests/fixtures/explorer.conf. */
static char example[4096];

static void read_example(void) {
    FILE *f = fopen(BOSCH_SOURCE_DIR "/tests/fixtures/explorer.conf", "r");
    assert_non_null(f);
    size_t n = fread(example, 1, sizeof example - 1, f);
    example[n] = '\0';
    fclose(f);
}

static void test_example(void **st) {
    (void)st;
    read_example();
    ui_config c;
    char err[256] = "";
    if (ui_config_parse(&c, "explorer.conf", example, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(c.palette, UI_PALETTE_BLUE_ORANGE);
    assert_int_equal(c.mouse, 1);
    assert_int_equal(c.colour[3].set, 1); /* title */
    assert_int_equal(c.colour[3].fg, COLOR_WHITE);
    assert_int_equal(c.colour[3].bg, COLOR_BLUE);
    assert_int_equal(c.colour[6].fg, 244); /* dim */
    assert_int_equal(c.colour[6].bg, -1);
    assert_int_equal(c.colour[7].fg, COLOR_MAGENTA); /* accent */
    assert_int_equal(c.colour[0].set, 0);            /* full: the palette's */
    assert_int_equal(c.n_binds, 5);
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, KEY_F(5)), REQ_START_FORM);
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, 'J'), REQ_PAGE_DOWN);
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, 5), REQ_EXPORT_MENU); /* C-e */
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, 'x'), REQ_NONE);
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, 's'),
                     REQ_START_FORM); /* the table's */
    /* dialogs keep the table: x still closes the quit question into the export menu */
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_CONFIRM_QUIT, 'x'), REQ_EXPORT_MENU);
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_START, 'J'), REQ_NONE);
}

static void test_defaults(void **st) {
    (void)st;
    ui_config c;
    char err[256] = "";
    assert_int_equal(ui_config_parse(&c, "e.conf", "", err, sizeof err), 0);
    assert_int_equal(c.palette, UI_PALETTE_BLUE_RED);
    assert_int_equal(c.mouse, 1);
    assert_int_equal(c.n_binds, 0);
    assert_int_equal(ui_config_parse(&c, "e.conf", "# only a comment\n\n  \nmouse=off", err, sizeof err), 0);
    assert_int_equal(c.mouse, 0);
    assert_int_equal(ui_config_parse(&c, "e.conf", "bind.j = up\nbind.j = down\n", err, sizeof err), 0);
    assert_int_equal(c.n_binds, 1); /* the later line wins */
    assert_int_equal(keymap_lookup_binds(c.binds, c.n_binds, UI_NORMAL, 'j'), REQ_MOVE_DOWN);
}

static void bad(const char *text, const char *want) {
    ui_config c;
    char err[256] = "";
    assert_int_equal(ui_config_parse(&c, "/h/.config/bosch/explorer.conf", text, err, sizeof err), -1);
    assert_string_equal(err, want);
}

static void test_bad_lines(void **st) {
    (void)st;
    bad("mouse = on\npalette = green\n",
        "/h/.config/bosch/explorer.conf: line 2: palette: bad value 'green' (blue-red or blue-orange)");
    bad("mouse = yes", "/h/.config/bosch/explorer.conf: line 1: mouse: bad value 'yes' (on or off)");
    bad("\n\ncolor.swa = 300\n",
        "/h/.config/bosch/explorer.conf: line 3: color.swa: bad value '300' (a colour "
        "name, default or 0-255, then optionally ,BACKGROUND)");
    bad("color.swa = red,", "/h/.config/bosch/explorer.conf: line 1: color.swa: bad value 'red,' (a colour "
                            "name, default or 0-255, then optionally ,BACKGROUND)");
    bad("color.grid = red",
        "/h/.config/bosch/explorer.conf: line 1: unknown setting 'color.grid' (a part: full, "
        "swa, probe, title, good, bad, dim or accent)");
    bad("bind.F13 = quit", "/h/.config/bosch/explorer.conf: line 1: unknown setting 'bind.F13' (KEY: a "
                           "character, space, Tab, Enter, Esc, Up, PgUp, Home, F1-F12, C-x ...)");
    bad("bind.j = jump_around", "/h/.config/bosch/explorer.conf: line 1: bind.j: bad value 'jump_around' (a "
                                "request name (docs/explorer.md), or none)");
    bad("pallete = blue-red",
        "/h/.config/bosch/explorer.conf: line 1: unknown setting 'pallete' (palette, mouse, "
        "color.PART or bind.KEY)");
    bad("palette blue-red",
        "/h/.config/bosch/explorer.conf: line 1: 'palette blue-red': not a 'name = value' line");
}

static void test_key_names(void **st) {
    (void)st;
    assert_int_equal(keymap_key_parse("a"), 'a');
    assert_int_equal(keymap_key_parse("/"), '/');
    assert_int_equal(keymap_key_parse("space"), ' ');
    assert_int_equal(keymap_key_parse("F1"), KEY_F(1));
    assert_int_equal(keymap_key_parse("F10"), KEY_F(10));
    assert_int_equal(keymap_key_parse("F12"), KEY_F(12));
    assert_int_equal(keymap_key_parse("F13"), -1);
    assert_int_equal(keymap_key_parse("F1x"), -1);
    assert_int_equal(keymap_key_parse("C-a"), 1);
    assert_int_equal(keymap_key_parse("Ctrl-Z"), 26);
    assert_int_equal(keymap_key_parse("PgDn"), KEY_NPAGE);
    assert_int_equal(keymap_key_parse("up"), KEY_UP);
    assert_int_equal(keymap_key_parse("ab"), -1);
    assert_int_equal(keymap_key_parse(""), -1);
    char label[32];
    int keys[] = {' ', KEY_F(5), 'J', 5, KEY_NPAGE};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) { /* labels read back as the same key */
        keymap_key_label(keys[i], label, sizeof label);
        assert_int_equal(keymap_key_parse(label), keys[i]);
    }
    /* every request name reads back to its request */
    const char *names[] = {"help", "quit", "search", "toggle", "eval", "export", "jump", "command", "none"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_string_equal(keymap_request_name((ui_request)keymap_request_parse(names[i])), names[i]);
    assert_int_equal(keymap_request_parse("fly"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_key_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
