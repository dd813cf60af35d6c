/* crash_trace.c — see crash_trace.h. The handler calls write(2), backtrace_symbols_fd (which
 * writes without malloc) and backtrace; backtrace is not async-signal-safe on its first call only
 * (it loads libgcc's unwinder, which may allocate), so that call is made at install time. This is
 * the use glibc's manual describes for a fatal-signal trace. Frames of this program are named
 * when the executable exports its symbols (app/CMakeLists.txt: ENABLE_EXPORTS); static functions
 * appear as bosch(+OFFSET), which `addr2line -f -e build/bosch OFFSET` resolves on the same build. */
#include "crash_trace.h"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CRASH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CRASH_UNDER_ASAN 1
#endif
#endif

static void say(const char *s) {
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void on_fatal(int sig) {
    void *frames[64];
    const int n = backtrace(frames, 64);
    say("\nbosch: died of ");
    say(sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGILL ? "SIGILL" : "SIGFPE");
    say("; stack (innermost first):\n");
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    signal(sig, SIG_DFL); /* then die of it as before */
    raise(sig);
}

void crash_trace_install(void) {
    void *warm[2];
    (void)backtrace(warm, 2);
#ifdef CRASH_UNDER_ASAN
    static const int sigs[] = {SIGABRT};
#else
    static const int sigs[] = {SIGABRT, SIGSEGV, SIGILL, SIGFPE};
#endif
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}
