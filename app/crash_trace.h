/* crash_trace.h — a stack trace on stderr when the program dies of SIGABRT (glibc's heap checks,
 * a failed assertion in a library), SIGSEGV, SIGILL or SIGFPE, so a crash on a machine nobody can
 * log into (CI) names where it happened. The signal then ends the process as before (same exit
 * status, core dump where enabled). */
#ifndef BOSCH_CRASH_TRACE_H
#define BOSCH_CRASH_TRACE_H

/* Install the handlers (once, at the start of main). Under AddressSanitizer only SIGABRT is taken,
 * so ASan keeps reporting the others itself. The explorer replaces them with its own while it runs
 * (tui/explorer.c: the terminal is put back first, then the signal re-raised; no trace there). */
void crash_trace_install(void);

#endif
