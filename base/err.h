/* err.h — the error-message convention of every library function, defined once.
 *
 * A function that can fail takes (char *err, size_t errlen) and, on failure, writes one line
 * naming the file, field and value into err (no trailing newline) and returns -1 (or NULL).
 * err may be NULL or errlen 0: the message is then dropped.
 */
#ifndef BOSCH_ERR_H
#define BOSCH_ERR_H

#include <stddef.h>

/* printf into err[errlen] (truncated, always NUL-terminated); nothing when err is NULL or errlen 0. */
void base_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
