/* outlock.h — one writer per output (issue 30, item 2): an exclusive flock(2) on a lock file that
 * a run holds from its check to its end.
 *
 * Two searches started together with the same --out both used to run, each logging every
 * evaluation into the one state file, so that neither could be resumed. Now the second is refused,
 * naming the first's pid. The lock file is DIR/.bosch-lock for an output folder (search, compare,
 * the explorer's workspace) and FILE.lock beside an output file (eval --out FILE); it holds the
 * holder's pid and is removed when the holder releases it. A holder killed with -9 leaves the file
 * behind but not the lock (the kernel drops a dead process's flock), so the next run takes it over.
 * The descriptor is close-on-exec: a child the program runs (gnuplot) does not keep the lock.
 */
#ifndef BOSCH_OUTLOCK_H
#define BOSCH_OUTLOCK_H

#include <stddef.h>

typedef struct outlock outlock;

/* Take the lock of output folder dir (DIR/.bosch-lock) or, with is_file, of output file path
 * (PATH.lock). *out is the lock (release with outlock_release). 0; or -1 with a message, e.g.
 * "out/: another bosch (pid 4242) is writing here (it holds out/.bosch-lock); wait for it to end,
 * or choose another output", or why the lock file cannot be made. */
int outlock_take(const char *path, int is_file, outlock **out, char *err, size_t errlen);
/* Remove the lock file and drop the lock (NULL: nothing). */
void outlock_release(outlock *l);

#endif
