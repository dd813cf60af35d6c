/* tmpfiles.h — the temporary files of atomic writes (write PATH.tmp.<pid>.XXXXXX, then rename over
 * PATH): their name, and the removal of those a killed process left behind.
 */
#ifndef BOSCH_TMPFILES_H
#define BOSCH_TMPFILES_H

/* The mkstemp template for an atomic write of path, "PATH.tmp.<pid>.XXXXXX" with this process's
 * pid (malloc'd; free it). NULL when out of memory or path is NULL or empty. */
char *tmpfile_template(const char *path);

/* Remove the stale temporary files of path: regular files beside it named exactly
 * "BASENAME.tmp.<pid>.XXXXXX" (6 characters [A-Za-z0-9]) whose pid is neither this process nor a
 * live one (kill(pid, 0) fails with ESRCH). Anything else (other names, the old pid-less
 * PATH.tmp.XXXXXX, a live writer's file) is left alone. Returns the number removed. */
int tmpfile_remove_stale(const char *path);

#endif
