/* test_tmpfiles.c — the temporary files of atomic writes (formats/tmpfiles.h, formats/csvio.c):
 * their name carries the writer's pid; the next writer of the same target removes exactly those of
 * dead writers (a write killed before its rename) and nothing else; csv_out refuses a directory as
 * target when it opens, before any row. The expected sets are written out by hand below. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "csvio.h"
#include "tmpfiles.h"

static char dir[] = "/tmp/test_tmpfilesXXXXXX";

static void touch(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("partial", f);
    fclose(f);
}

static int exists(const char *name) {
    char p[512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &sb) == 0;
}

/* A pid that surely belonged to a process and is now free: a child that has exited and been reaped. */
static long dead_pid(void) {
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) _exit(0);
    assert_int_equal(waitpid(p, NULL, 0), p);
    return (long)p;
}

static void test_template_names_pid(void **state) {
    (void)state;
    char *t = tmpfile_template("/a/b.csv");
    char want[64];
    snprintf(want, sizeof want, "/a/b.csv.tmp.%ld.XXXXXX", (long)getpid());
    assert_string_equal(t, want);
    free(t);
    assert_null(tmpfile_template(""));
    assert_null(tmpfile_template(NULL));
}

static void test_remove_stale_exactly(void **state) {
    (void)state;
    long dead = dead_pid();
    char target[512], n_dead[128], n_dead2[128], n_self[128], n_live[128], n_long[128], n_other[128],
        n_short[128];
    snprintf(target, sizeof target, "%s/out.csv", dir);
    snprintf(n_dead, sizeof n_dead, "out.csv.tmp.%ld.Ab3xYz", dead);
    snprintf(n_dead2, sizeof n_dead2, "out.csv.tmp.%ld.000000", dead);
    snprintf(n_self, sizeof n_self, "out.csv.tmp.%ld.Ab3xYz", (long)getpid());  /* this process: alive */
    snprintf(n_live, sizeof n_live, "out.csv.tmp.%ld.Ab3xYz", (long)getppid()); /* alive */
    snprintf(n_long, sizeof n_long, "out.csv.tmp.%ld.Ab3xYz7", dead);           /* not mkstemp's 6 */
    snprintf(n_short, sizeof n_short, "out.csv.tmp.%ld.Ab3x", dead);
    snprintf(n_other, sizeof n_other, "other.csv.tmp.%ld.Ab3xYz", dead); /* another target's */
    const char *keep[] = {n_self,
                          n_live,
                          n_long,
                          n_short,
                          n_other,
                          "out.csv",            /* the target itself */
                          "out.csv.tmp.Ab3xYz", /* the old pid-less name: cannot tell if live */
                          "out.csv.tmp",        /* search_save's old name */
                          "out.csv.tmp.x12.Ab3xYz",
                          "out.csvx.tmp.1.Ab3xYz"};
    touch(n_dead);
    touch(n_dead2);
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) touch(keep[i]);
    /* a directory with a stale name is not a file: left alone */
    char d[512], n_dir[128];
    snprintf(n_dir, sizeof n_dir, "out.csv.tmp.%ld.dIrEct", dead);
    snprintf(d, sizeof d, "%s/%s", dir, n_dir);
    assert_int_equal(mkdir(d, 0700), 0);

    assert_int_equal(tmpfile_remove_stale(target), 2);
    assert_false(exists(n_dead));
    assert_false(exists(n_dead2));
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) assert_true(exists(keep[i]));
    assert_true(exists(n_dir));
    assert_int_equal(tmpfile_remove_stale(target), 0); /* nothing more */

    /* csv_out_open removes them too: a new dead writer's file goes, the rest stays */
    touch(n_dead);
    const char *hdr[] = {"x"};
    char err[512];
    csv_out *w = csv_out_open(target, hdr, 1, err, sizeof err);
    assert_non_null(w);
    assert_false(exists(n_dead));
    assert_true(exists(n_self));
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    /* and csv_write_text */
    touch(n_dead);
    assert_int_equal(csv_write_text(target, "x\n", err, sizeof err), 0);
    assert_false(exists(n_dead));
    rmdir(d);
}

static void test_directory_target_refused(void **state) {
    (void)state;
    char d[512], err[512];
    snprintf(d, sizeof d, "%s/adir", dir);
    assert_int_equal(mkdir(d, 0700), 0);
    const char *hdr[] = {"x"};
    assert_null(csv_out_open(d, hdr, 1, err, sizeof err));
    char want[600];
    snprintf(want, sizeof want, "%s: is a directory (need a file name)", d);
    assert_string_equal(err, want);
    assert_int_equal(csv_write_text(d, "x\n", err, sizeof err), -1);
    assert_string_equal(err, want);
    rmdir(d);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_names_pid),
        cmocka_unit_test(test_remove_stale_exactly),
        cmocka_unit_test(test_directory_target_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) rc = rc ? rc : 1;
    return rc;
}
