/* outpath.c — resolving an output path before any work (outpath.h). */
#define _GNU_SOURCE
#include "outpath.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUTPATH_MAX_LINKS 40 /* the kernel's own limit (MAXSYMLINKS) */

int outpath_is_stream(const char *path) {
    return path && (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"));
}

/* What a file that is not regular is, for the message. */
static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* The file a symbolic link at cur names: its content, relative to cur's folder unless absolute
 * (malloc'd), or NULL with errno set. */
static char *follow(const char *cur) {
    char link[PATH_MAX];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0) return NULL;
    if (n == (ssize_t)sizeof link - 1) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    char *next = NULL;
    if (link[0] == '/' || !slash)
        next = strdup(link);
    else if (asprintf(&next, "%.*s/%s", (int)(slash - cur), cur, link) < 0)
        next = NULL;
    if (!next) errno = ENOMEM;
    return next;
}

int outpath_name_ok(const char *path, char *err, size_t errlen) {
    for (const unsigned char *p = (const unsigned char *)path; p && *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(err, errlen, "'%.*s' then %s (byte %d): an output name must not hold control characters",
                     (int)(p - (const unsigned char *)path), path,
                     *p == '\n'   ? "a newline"
                     : *p == '\r' ? "a carriage return"
                     : *p == '\t' ? "a tab"
                                  : "a control character",
                     (int)(p - (const unsigned char *)path) + 1);
            return -1;
        }
    return 0;
}

int outpath_resolve(const char *path, outpath *o, char *err, size_t errlen) {
    o->stream = 0;
    o->target = NULL;
    if (!path || !*path) {
        snprintf(err, errlen, "empty output file name");
        return -1;
    }
    if (outpath_name_ok(path, err, errlen)) return -1;
    if (outpath_is_stream(path)) {
        o->stream = 1;
        return 0;
    }
    char *cur = strdup(path);
    struct stat sb;
    int links = 0;
    while (cur && lstat(cur, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        if (++links > OUTPATH_MAX_LINKS) {
            snprintf(err, errlen, "%s: more than %d symbolic links in a row (a loop?)", path,
                     OUTPATH_MAX_LINKS);
            free(cur);
            return -1;
        }
        char *next = follow(cur);
        if (!next) {
            snprintf(err, errlen, "%s: reading the symbolic link %s: %s", path, cur, strerror(errno));
            free(cur);
            return -1;
        }
        free(cur);
        cur = next;
    }
    if (!cur) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    /* cur is now not a link: it exists (sb) or not (it is created; its folder is checked by the
     * temporary file's creation, which names it) */
    if (lstat(cur, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        const char *why = S_ISDIR(sb.st_mode) ? " (need a file name)"
                                              : ", not a regular file (an output is written to a new file "
                                                "and renamed over it; give a file name, or - for standard "
                                                "output)";
        if (links)
            snprintf(err, errlen, "%s -> %s: is %s%s", path, cur, kind_of(sb.st_mode), why);
        else
            snprintf(err, errlen, "%s: is %s%s", path, kind_of(sb.st_mode), why);
        free(cur);
        return -1;
    }
    o->target = cur;
    return 0;
}

void outpath_free(outpath *o) {
    if (!o) return;
    free(o->target);
    o->target = NULL;
}
