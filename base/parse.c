/* parse.c — strict text-to-number parsers (parse.h). */
#include "parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* An optional '-', then digits only, no blanks, no overflow. */
static int strict_long(const char *v, long *out) {
    const char *d = v && *v == '-' ? v + 1 : v;
    if (!d || !(*d >= '0' && *d <= '9')) return -1;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno) return -1;
    *out = x;
    return 0;
}

int base_parse_long(const char *v, long min, long max, long *out, char *err, size_t errlen) {
    long x;
    if (strict_long(v, &x) || x < min || x > max) {
        base_seterr(err, errlen, "bad value '%s' (need an integer in [%ld, %ld])", v ? v : "", min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int base_parse_u64(const char *v, unsigned long long *out, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || !(v[0] >= '0' && v[0] <= '9') || *end || errno) {
        base_seterr(err, errlen, "bad value '%s' (need an integer in [0, %llu])", v ? v : "", ULLONG_MAX);
        return -1;
    }
    *out = x;
    return 0;
}

int base_parse_tokens(const char *v, long min, long max, long *out, char *err, size_t errlen) {
    long x = 0;
    char *end = NULL;
    int ok = v && *v >= '0' && *v <= '9';
    if (ok) {
        errno = 0;
        x = strtol(v, &end, 10);
        ok = !errno;
        if (ok && (*end == 'k' || *end == 'K')) {
            ok = x <= LONG_MAX / 1024;
            if (ok) x *= 1024;
            end++;
        }
        ok = ok && !*end && x >= min && x <= max;
    }
    if (!ok) {
        base_seterr(err, errlen, "bad value '%s' (need a token count in [%ld, %ld], e.g. 512 or 1k)",
                    v ? v : "", min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int base_parse_real(const char *v, double min, double max, double *out, char *err, size_t errlen) {
    double x = NAN;
    char *end = NULL;
    int ok = v && *v && strchr("0123456789.-+", *v);
    if (ok) {
        errno = 0;
        x = strtod(v, &end);
        ok = end != v && !*end && !errno && isfinite(x) && x >= min && x <= max;
    }
    if (!ok) {
        base_seterr(err, errlen, "bad value '%s' (need a number in [%g, %g])", v ? v : "", min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int base_parse_choice(const char *v, const char *const *names, int n, int *index, char *err, size_t errlen) {
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i])) {
            *index = i;
            return 0;
        }
    char need[256] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof need; i++)
        len += (size_t)snprintf(need + len, sizeof need - len, "%s%s",
                                i == 0       ? ""
                                : i == n - 1 ? " or "
                                             : ", ",
                                names[i]);
    base_seterr(err, errlen, "bad value '%s' (need %s)", v ? v : "", need);
    return -1;
}
