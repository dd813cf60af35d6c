/* infile.h — opening an input file without hanging (issue 30, item 4).
 *
 * A plain open(2) of a FIFO waits for a writer, forever if none comes: `bosch info FIFO`, `eval
 * --mask FIFO` and the explorer's `o` hung that way (the explorer could not even quit, one thread
 * blocked in open). infile_open opens with O_NONBLOCK, which returns at once whatever the file is,
 * checks with fstat that it is a regular file, and only then clears O_NONBLOCK. A FIFO, socket,
 * character or block device, or directory is refused with a message naming the path and what it
 * is. The descriptor is close-on-exec.
 */
#ifndef BOSCH_INFILE_H
#define BOSCH_INFILE_H

#include <stddef.h>
#include <stdio.h>

/* Open path for reading. The descriptor, or -1 with errno set (EISDIR for a directory, EINVAL for
 * another file that is not regular, open's own errno otherwise) and a message in err: "PATH: is a
 * FIFO, not a regular file" or "PATH: cannot open: No such file or directory". */
int infile_open(const char *path, char *err, size_t errlen);
/* infile_open as a stdio stream ("rb"). NULL with errno and err set as above. */
FILE *infile_fopen(const char *path, char *err, size_t errlen);

#endif
