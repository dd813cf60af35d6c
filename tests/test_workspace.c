/* test_workspace.c — formats/workspace.h, the explorer's workspace.txt: a hand-written file read
 * field by field; what is written reads back the same (undo masks included) and is the text the
 * header comment describes, with no temporary file left; bad files are refused with the file, the
 * line and the field named.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mask.h"
#include "workspace.h"

static char dir[64];

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_read_hand_written(void **st) {
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "%s/hand.txt", dir);
    put(path,
        "bosch-workspace 1\nmodel SmolLM2 135M\nshape 2 3\nwindow 64\nsinks 4\ncursor 1 2\n"
        "follow 0\nedited 1\nheldout 00000000000000ff 0.5 0.25 1.5 8 512\nundo 111/101\nundo 000/011\n");
    workspace_info ws;
    char err[256];
    assert_int_equal(workspace_read(path, &ws, 2, 3, err, sizeof err), 0);
    assert_string_equal(ws.model, "SmolLM2 135M");
    assert_int_equal(ws.window, 64);
    assert_int_equal(ws.sinks, 4);
    assert_int_equal(ws.cur_layer, 1);
    assert_int_equal(ws.cur_head, 2);
    assert_int_equal(ws.follow, 0);
    assert_int_equal(ws.edited, 1);
    assert_int_equal(ws.have_heldout, 1);
    assert_true(ws.heldout_hash == 255);
    assert_true(ws.heldout_score == 0.5 && ws.heldout_accuracy == 0.25 && ws.heldout_seconds == 1.5);
    assert_int_equal(ws.heldout_samples, 8);
    assert_int_equal(ws.heldout_tokens, 512);
    assert_int_equal(ws.n_undo, 2);
    const uint8_t want[12] = {1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1};
    for (int i = 0; i < 12; i++) assert_int_equal(ws.undo[i], want[i] ? ATTN_FULL : ATTN_SWA);
    workspace_info_free(&ws);
}

static void test_round_trip(void **st) {
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "%s/ws.txt", dir);
    uint8_t undo[3 * 30 * 3];
    for (int i = 0; i < 3 * 90; i++) undo[i] = (i * 7 % 5) ? ATTN_FULL : ATTN_SWA;
    workspace_info w = {.model = "m",
                        .n_layer = 30,
                        .n_head_kv = 3,
                        .window = 128,
                        .sinks = 0,
                        .cur_layer = 29,
                        .cur_head = 0,
                        .follow = 1,
                        .edited = 0,
                        .have_heldout = 0,
                        .n_undo = 3,
                        .undo = undo};
    char err[256];
    assert_int_equal(workspace_write(path, &w, err, sizeof err), 0);
    workspace_info r;
    assert_int_equal(workspace_read(path, &r, 30, 3, err, sizeof err), 0);
    assert_int_equal(r.n_undo, 3);
    assert_memory_equal(r.undo, undo, sizeof undo);
    assert_int_equal(r.cur_layer, 29);
    assert_int_equal(r.follow, 1);
    assert_int_equal(r.have_heldout, 0);
    workspace_info_free(&r);
    /* the text itself: the first lines as the header comment gives them */
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_memory_equal(text, "bosch-workspace 1\nmodel m\nshape 30 3\nwindow 128\nsinks 0\ncursor 29 0\n",
                        strlen("bosch-workspace 1\nmodel m\nshape 30 3\nwindow 128\nsinks 0\ncursor 29 0\n"));
    /* atomic: nothing but the file in the folder (no PATH.tmp.*) */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) fail_msg("temporary file left: %s", e->d_name);
    closedir(d);
}

static void refused(const char *text, const char *want) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    put(path, text);
    workspace_info ws;
    assert_int_equal(workspace_read(path, &ws, 2, 3, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("'%s' lacks '%s'", err, want);
    assert_non_null(strstr(err, path));
}

static void test_refused(void **st) {
    (void)st;
    refused("", "line 1: empty file");
    refused("bosch-search-state 2\n", "line 1: not a workspace file");
    refused("bosch-workspace 1\nshape 30 3\n", "line 2: shape: bad value '30 3' (the model has 2 layers x 3");
    refused("bosch-workspace 1\ncursor 2 0\n", "line 2: cursor: bad value '2 0'");
    refused("bosch-workspace 1\nfollow yes\n", "line 2: follow: bad value 'yes'");
    refused("bosch-workspace 1\nmodel x\nundo 111/10\n", "line 3: undo: bad mask '111/10'");
    refused("bosch-workspace 1\nundo 111/1011\n", "line 2: undo: bad mask");
    refused("bosch-workspace 1\ncolour blue\n", "line 2: unknown key 'colour'");
    refused("bosch-workspace 1\nwindow 0\n", "line 2: window: bad value '0'");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_workspace.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_hand_written),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}
