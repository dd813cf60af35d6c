/* tmpfiles.c — temporary-file names of atomic writes and removal of stale ones (tmpfiles.h). */
#define _GNU_SOURCE
#include "tmpfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *tmpfile_template(const char *path) {
    char *t = NULL;
    if (!path || !*path || asprintf(&t, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) < 0) return NULL;
    return t;
}

static int is_alnum(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The pid of name when it is "base.tmp.<pid>.XXXXXX", else -1. */
static long stale_pid(const char *name, const char *base) {
    size_t nb = strlen(base);
    if (strncmp(name, base, nb) || strncmp(name + nb, ".tmp.", 5)) return -1;
    const char *p = name + nb + 5, *d = p;
    long pid = 0;
    while (*d >= '0' && *d <= '9' && d - p < 10) pid = pid * 10 + (*d++ - '0');
    if (d == p || *d != '.' || pid <= 0 || pid > 2147483647L) return -1;
    d++;
    for (int i = 0; i < 6; i++)
        if (!is_alnum(d[i])) return -1;
    return d[6] ? -1 : pid;
}

int tmpfile_remove_stale(const char *path) {
    if (!path || !*path) return 0;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    const char *base = slash ? slash + 1 : path;
    if (!dir) return 0;
    int removed = 0;
    DIR *d = *base ? opendir(dir) : NULL;
    int dfd = d ? dirfd(d) : -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        long pid = stale_pid(e->d_name, base);
        if (pid < 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours to judge) */
        struct stat sb;
        if (fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode)) continue;
        if (unlinkat(dfd, e->d_name, 0) == 0) removed++;
    }
    if (d) closedir(d);
    free(dir);
    return removed;
}
