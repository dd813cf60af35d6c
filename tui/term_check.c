/* term_check.c — can the terminal show the explorer (term_check.h). Kept apart from the explorer:
 * <term.h> defines a macro for every terminfo capability name. */
#include "term_check.h"

#include <curses.h>
#include <stdio.h>
#include <term.h>
#include <unistd.h>

int term_check_usable(const char *term, char *err, size_t errlen) {
    const char *t = term && *term ? term : "(unset)";
    int errret = 0;
    if (setupterm(NULL, STDOUT_FILENO, &errret) != OK) {
        snprintf(err, errlen,
                 errret == 0 ? "the terminal type '%s' (TERM) is not in the terminfo database; set TERM to "
                               "the terminal's type (e.g. xterm-256color)"
                             : "no terminfo database to look the terminal type '%s' (TERM) up in",
                 t);
        return -1;
    }
    const char *cup = tigetstr("cup");
    int usable = cup && cup != (const char *)-1;
    del_curterm(cur_term);
    if (!usable) {
        snprintf(
            err, errlen,
            "the terminal type '%s' (TERM) cannot move the cursor, which the explorer needs; run it in a "
            "terminal that can (xterm, tmux, ...) with TERM set to its type, or use a subcommand for "
            "headless runs (bosch --help)",
            t);
        return -1;
    }
    return 0;
}
