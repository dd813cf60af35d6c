/* test_outpath.c — output paths resolved before any write (formats/outpath.h, issue 30 item 1), and
 * the atomic writers that use them (formats/csvio.c csv_out_* and csv_write_*, search_save):
 *  - a FIFO, a socket, a character device (mknod c 1 3, made here when permitted), a directory:
 *    refused with a message naming the path and what it is, the node left as it was (the old code
 *    renamed its temporary file over it: a regular file in its place);
 *  - a symbolic link (relative, absolute, a chain, a dangling one): its target is written, the link
 *    stays a link; a loop is refused;
 *  - "-" and "/dev/stdout": standard output as a stream (here redirected to a file), written whole
 *    at the commit; an aborted stream writes nothing.
 * Every node is made by the test in its own folder, never the system's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "csvio.h"
#include "outpath.h"
#include "search.h"

static char dir[] = "/tmp/test_outpathXXXXXX";

static const char *at(const char *name) {
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static mode_t type_of(const char *path) {
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    return sb.st_mode & S_IFMT;
}

/* Every writer refuses path with a message holding want; the node's type stays `type`. */
static void refused_by_all(const char *path, const char *want, mode_t type) {
    char err[1024];
    outpath o;
    assert_int_equal(outpath_resolve(path, &o, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("outpath_resolve(%s): '%s' lacks '%s'", path, err, want);
    const char *hdr[] = {"x"};
    assert_null(csv_out_open(path, hdr, 1, err, sizeof err));
    if (!strstr(err, want)) fail_msg("csv_out_open(%s): '%s' lacks '%s'", path, err, want);
    assert_int_equal(csv_write_text(path, "x\n", err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("csv_write_text(%s): '%s' lacks '%s'", path, err, want);
    assert_int_equal(type_of(path), type);
}

static void test_fifo_socket_directory_refused(void **state) {
    (void)state;
    const char *fifo = at("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char want[600];
    snprintf(want, sizeof want, "%s: is a FIFO, not a regular file", fifo);
    refused_by_all(fifo, want, S_IFIFO);

    const char *sock = at("sock");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    snprintf(want, sizeof want, "%s: is a socket, not a regular file", sock);
    refused_by_all(sock, want, S_IFSOCK);
    close(s);

    const char *d = at("adir");
    assert_int_equal(mkdir(d, 0700), 0);
    snprintf(want, sizeof want, "%s: is a directory (need a file name)", d);
    refused_by_all(d, want, S_IFDIR);
}

/* A character device of our own (the null device's numbers, in the test's folder): needs the right
 * to mknod (root in most containers); skipped with a message otherwise. */
static void test_char_device_refused(void **state) {
    (void)state;
    const char *node = at("null");
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        fprintf(stderr, "skip: mknod %s c 1 3: %s (the device sub-case is not tested)\n", node,
                strerror(errno));
        return;
    }
    char want[600];
    snprintf(want, sizeof want, "%s: is a character device, not a regular file", node);
    refused_by_all(node, want, S_IFCHR);
    /* through a link: the message says where it led */
    const char *link = at("to-null");
    assert_int_equal(symlink(node, link), 0);
    snprintf(want, sizeof want, "%s -> %s: is a character device", link, node);
    refused_by_all(link, want, S_IFLNK);
    assert_int_equal(type_of(node), S_IFCHR);
}

static void test_symlink_followed(void **state) {
    (void)state;
    char err[1024];
    /* relative link in a subfolder, pointing into another subfolder */
    assert_int_equal(mkdir(at("a"), 0700), 0);
    assert_int_equal(mkdir(at("b"), 0700), 0);
    put(at("b/t.csv"), "old\n");
    assert_int_equal(symlink("../b/t.csv", at("a/l.csv")), 0);
    outpath o;
    assert_int_equal(outpath_resolve(at("a/l.csv"), &o, err, sizeof err), 0);
    assert_false(o.stream);
    char want[600];
    snprintf(want, sizeof want, "%s/a/../b/t.csv", dir);
    assert_string_equal(o.target, want);
    outpath_free(&o);

    assert_int_equal(csv_write_text(at("a/l.csv"), "new\n", err, sizeof err), 0);
    assert_int_equal(type_of(at("a/l.csv")), S_IFLNK);
    char *got = slurp(at("b/t.csv"));
    assert_string_equal(got, "new\n");
    free(got);
    /* csv_out through a chain of two links, one absolute */
    assert_int_equal(symlink(at("a/l.csv"), at("l2.csv")), 0);
    const char *hdr[] = {"x", "y"};
    csv_out *w = csv_out_open(at("l2.csv"), hdr, 2, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(csv_out_rowf(w, "1\x1f"
                                     "2"),
                     0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    assert_int_equal(type_of(at("l2.csv")), S_IFLNK);
    assert_int_equal(type_of(at("a/l.csv")), S_IFLNK);
    got = slurp(at("b/t.csv"));
    assert_string_equal(got, "x,y\n1,2\n");
    free(got);
    /* no temporary file left beside the link or the target */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' '%s/a' '%s/b' | grep -q '[.]tmp[.]'", dir, dir, dir);
    assert_int_not_equal(system(cmd), 0);

    /* a dangling link: the file it names is created, the link stays */
    assert_int_equal(symlink("new.csv", at("b/dangling")), 0);
    assert_int_equal(csv_write_text(at("b/dangling"), "made\n", err, sizeof err), 0);
    assert_int_equal(type_of(at("b/dangling")), S_IFLNK);
    got = slurp(at("b/new.csv"));
    assert_string_equal(got, "made\n");
    free(got);

    /* a loop */
    assert_int_equal(symlink("loop2", at("loop1")), 0);
    assert_int_equal(symlink("loop1", at("loop2")), 0);
    assert_int_equal(csv_write_text(at("loop1"), "x\n", err, sizeof err), -1);
    if (!strstr(err, "more than 40 symbolic links")) fail_msg("loop: '%s'", err);
    assert_int_equal(type_of(at("loop1")), S_IFLNK);
}

static int no_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                    size_t errlen) {
    (void)ctx, (void)m, (void)make_base, (void)out;
    snprintf(err, errlen, "not called");
    return -1;
}

/* The search state (search_save, its own atomic write) follows a link and refuses a FIFO too. */
static void test_search_state(void **state) {
    (void)state;
    search_state *st = NULL;
    search_config cfg;
    search_config_default(&cfg);
    cfg.ratio = 0.5;
    search_objective obj = {.score = no_score};
    char err[1024];
    assert_int_equal(search_create(&st, &cfg, 2, 2, &obj, NULL, NULL, NULL, err, sizeof err), 0);
    put(at("st.real"), "old\n");
    assert_int_equal(symlink("st.real", at("st.link")), 0);
    assert_int_equal(search_save(st, at("st.link"), err, sizeof err), 0);
    assert_int_equal(type_of(at("st.link")), S_IFLNK);
    char *got = slurp(at("st.real"));
    assert_non_null(strstr(got, "bosch-search-state 2\n"));
    free(got);
    assert_int_equal(mkfifo(at("st.fifo"), 0600), 0);
    assert_int_equal(search_save(st, at("st.fifo"), err, sizeof err), -1);
    if (!strstr(err, "is a FIFO")) fail_msg("search_save onto a FIFO: '%s'", err);
    assert_int_equal(type_of(at("st.fifo")), S_IFIFO);
    search_free(st);
}

/* Run f with standard output redirected to file; return what it wrote there. */
static char *capture_stdout(void (*f)(void)) {
    const char *file = at("stdout.txt");
    fflush(stdout);
    int saved = dup(1);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    f();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return slurp(file);
}

static void write_streams(void) {
    char err[1024];
    const char *hdr[] = {"a"};
    /* an aborted stream (the commands' check before work) writes nothing */
    csv_out *w = csv_out_open("-", hdr, 1, err, sizeof err);
    assert_non_null(w);
    csv_out_abort(w);
    w = csv_out_open("/dev/stdout", hdr, 1, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(csv_out_rowf(w, "1"), 0);
    assert_int_equal(csv_out_commit(w, err, sizeof err), 0);
    assert_int_equal(csv_write_text("-", "text\n", err, sizeof err), 0);
}

static void test_streams(void **state) {
    (void)state;
    outpath o;
    char err[256];
    assert_int_equal(outpath_resolve("-", &o, err, sizeof err), 0);
    assert_true(o.stream && !o.target);
    assert_int_equal(outpath_resolve("/dev/stdout", &o, err, sizeof err), 0);
    assert_true(o.stream && !o.target);
    assert_int_equal(outpath_resolve("", &o, err, sizeof err), -1);
    char *got = capture_stdout(write_streams);
    assert_string_equal(got, "a\n1\ntext\n");
    free(got);
    /* no file called "-" was made in the working folder's place */
    assert_int_equal(access("-", F_OK), -1);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_socket_directory_refused),
        cmocka_unit_test(test_char_device_refused),
        cmocka_unit_test(test_symlink_followed),
        cmocka_unit_test(test_search_state),
        cmocka_unit_test(test_streams),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) rc = rc ? rc : 1;
    return rc;
}
