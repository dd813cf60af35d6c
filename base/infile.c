/* infile.c — opening an input file without hanging (infile.h). */
#include "infile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "of an unknown kind";
}

int infile_open(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        base_seterr(err, errlen, "%s: cannot open: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        base_seterr(err, errlen, "%s: cannot open: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        base_seterr(err, errlen, "%s: is %s, not a regular file", path, kind_of(sb.st_mode));
        close(fd);
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        base_seterr(err, errlen, "%s: cannot open: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *infile_fopen(const char *path, char *err, size_t errlen) {
    int fd = infile_open(path, err, errlen);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        base_seterr(err, errlen, "%s: cannot open: %s", path, strerror(e));
        close(fd);
        errno = e;
    }
    return f;
}
