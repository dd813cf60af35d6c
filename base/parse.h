/* parse.h — strict text-to-number parsers, defined once for the command line, the explorer's forms
 * and the option table of search/search_options.h.
 *
 * Every parser reads the whole text: no leading or trailing blanks, no trailing characters, no
 * overflow. On a bad value it returns -1 and writes into err the reason in the one form every message
 * of the program uses after "OPT: ":
 *   bad value 'V' (need an integer in [MIN, MAX])
 * (err may be NULL). *out is written only on success.
 */
#ifndef BOSCH_PARSE_H
#define BOSCH_PARSE_H

#include <stddef.h>

/* A decimal integer (an optional '-', then digits) in [min, max]. 0 or -1. */
int base_parse_long(const char *v, long min, long max, long *out, char *err, size_t errlen);

/* An unsigned decimal integer that fits in 64 bits (no sign). 0 or -1, "need an integer in [0, 2^64-1]". */
int base_parse_u64(const char *v, unsigned long long *out, char *err, size_t errlen);

/* A token count in [min, max]: digits, then optionally k or K (x 1024), e.g. "512", "1k". 0 or -1,
 * "need a token count in [MIN, MAX], e.g. 512 or 1k". */
int base_parse_tokens(const char *v, long min, long max, long *out, char *err, size_t errlen);

/* A finite decimal number (strtod syntax starting with a digit, '.', '-' or '+'; no nan, no inf) in
 * [min, max]. 0 or -1, "need a number in [MIN, MAX]" (%g). */
int base_parse_real(const char *v, double min, double max, double *out, char *err, size_t errlen);

/* V equal to one of names[0..n) (case-sensitive); *index gets its position. 0, or -1 with
 * "bad value 'V' (need A, B or C)". */
int base_parse_choice(const char *v, const char *const *names, int n, int *index, char *err, size_t errlen);

#endif
