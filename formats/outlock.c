/* outlock.c — the exclusive lock of an output folder or file (outlock.h). */
#define _GNU_SOURCE
#include "outlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct outlock {
    int fd;
    char *path; /* the lock file */
};

/* The pid written in the lock file at fd, or 0 when none can be read (a holder that has not
 * written it yet). */
static long holder_pid(int fd) {
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

int outlock_take(const char *path, int is_file, outlock **out, char *err, size_t errlen) {
    *out = NULL;
    char *lock = NULL;
    if (asprintf(&lock, is_file ? "%s.lock" : "%s/.bosch-lock", path) < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    /* A holder removes the file as it releases: the file opened may be gone by the time the lock is
     * ours; then open the new one (a few tries: each failure means another run came and went). */
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot make the lock file %s: %s", path, lock, strerror(errno));
            free(lock);
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            long pid = holder_pid(fd);
            close(fd);
            if (e == EWOULDBLOCK) {
                char who[48] = "another bosch";
                if (pid) snprintf(who, sizeof who, "another bosch (pid %ld)", pid);
                snprintf(err, errlen,
                         "%s: %s is writing %s (it holds %s); wait for it to end, or choose another output",
                         path, who, is_file ? "this file" : "in this folder", lock);
            } else {
                snprintf(err, errlen, "%s: cannot lock %s: %s", path, lock, strerror(e));
            }
            free(lock);
            return -1;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lock, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            /* the pid only names the holder in messages: on a full disk the lock is still ours */
            int written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n;
            (void)written;
            outlock *l = malloc(sizeof *l);
            if (!l) {
                close(fd);
                snprintf(err, errlen, "%s: out of memory", path);
                free(lock);
                return -1;
            }
            l->fd = fd;
            l->path = lock;
            *out = l;
            return 0;
        }
        close(fd); /* removed (or replaced) under us: try the new file */
    }
    snprintf(err, errlen, "%s: cannot take the lock %s: it keeps being replaced", path, lock);
    free(lock);
    return -1;
}

void outlock_release(outlock *l) {
    if (!l) return;
    unlink(l->path); /* while still locked: a run waiting on this file then tries the next one */
    close(l->fd);
    free(l->path);
    free(l);
}
