/* term_check.h — whether the terminal can show the explorer, asked before it starts (issue 30,
 * item 5: with TERM=dumb the screen stayed blank but for the footer, with no word why).
 */
#ifndef BOSCH_TERM_CHECK_H
#define BOSCH_TERM_CHECK_H

#include <stddef.h>

/* Look TERM (term: its value, for the message) up in terminfo for standard output: the explorer
 * needs cursor addressing (the "cup" capability). 0 when the terminal has it; -1 with a message
 * when TERM is unknown or the terminal cannot address the cursor (dumb, a hard-copy terminal),
 * e.g. "the terminal type 'dumb' (TERM) cannot move the cursor, which the explorer needs; ...". */
int term_check_usable(const char *term, char *err, size_t errlen);

#endif
