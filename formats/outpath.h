/* outpath.h — where an output file really goes, decided before any work (issue 30, item 1).
 *
 * Atomic writes (csvio.h, search_io.c) write PATH.tmp.<pid>.XXXXXX and rename it over PATH. Renaming
 * over a device node, a FIFO or a socket would replace it with a regular file (`--out /dev/null` run
 * as root made /dev/null a file), and renaming over a symbolic link replaces the link and leaves its
 * target unchanged. outpath_resolve says, once, what PATH is:
 *  - "-" and "/dev/stdout": standard output, written as a stream (never renamed over);
 *  - a symbolic link (or a chain of them, at most 40): followed to the file it names, which is
 *    replaced atomically (the link stays); a dangling link names the file to create;
 *  - a regular file, or a name that does not exist: replaced (created) atomically;
 *  - a directory, character or block device, FIFO, socket: refused with a message naming the path
 *    (and where a link led) and what it is.
 */
#ifndef BOSCH_OUTPATH_H
#define BOSCH_OUTPATH_H

#include <stddef.h>

typedef struct {
    int stream;   /* 1: write to standard output as a stream ("-" or "/dev/stdout") */
    char *target; /* not a stream: the regular file (or new name) to replace atomically, symlinks
                     followed (malloc'd); NULL for a stream */
} outpath;

/* Resolve path (see the top of this file) into *o. 0, or -1 with a message in err, e.g.
 * "l.csv -> /tmp/x: is a character device, not a regular file (an output is written to a new file
 * and renamed over it; give a file name, or - for standard output)". Free with outpath_free. */
int outpath_resolve(const char *path, outpath *o, char *err, size_t errlen);
void outpath_free(outpath *o);

/* An output name must not hold a control character: a newline in --out split the one-line summary
 * (`status=... state=PATH`) that scripts read. 0, or -1 with e.g. "'out' then a newline (byte 4):
 * an output name must not hold control characters". */
int outpath_name_ok(const char *path, char *err, size_t errlen);

/* 1 when path names standard output as a stream ("-" or "/dev/stdout"), else 0. */
int outpath_is_stream(const char *path);

#endif
