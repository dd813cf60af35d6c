/* cli_stop.c — the stop signals of the long commands (cli.h cli_stop): SIGINT, SIGTERM and SIGHUP set
 * cli_stop, and only a thread of their own ever takes them.
 *
 * Why a thread of their own: the kernel delivers a signal sent to the process to any one of its
 * threads that does not block it, and writes the handler's frame below that thread's stack pointer.
 * oneDNN's JIT fp32 GEMM kernels (its AVX2 and AVX-512 sgemm; Debian's oneDNN 2.6) point the stack
 * pointer into a heap buffer while they run, so a signal handled there, even by a handler that does
 * nothing, overwrites the heap (oneDNN issue 4845, fixed upstream in 2026 by pull request 4855).
 * `bosch compare` stopped with SIGINT died of "double free or corruption (!prev)" in CI that way
 * (a Zen 2 or 3: fp32 GEMMs on AVX2), and here, with ONEDNN_MAX_CPU_ISA=AVX2, SIGTERM sent in a
 * loop to `bosch search --precision fp32` aborted 4 runs of 4 (docs/testing.md "A crash where nobody
 * can look"). So cli_catch_stop_signals blocks the three signals in the calling thread before the
 * model is loaded, which every thread started afterwards inherits (OpenMP's team, CUDA's), and starts
 * one thread that unblocks them and waits: the handler runs there and nowhere else. A thread started
 * before (Open MPI's progress thread under mpirun) may still take one; it runs no GEMM.
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

volatile sig_atomic_t cli_stop;

static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
static sigset_t saved_mask; /* the calling thread's mask before cli_catch_stop_signals */
static int taker_started;

static void on_stop_signal(int sig) {
    (void)sig;
    cli_stop = 1;
}

static void stop_set(sigset_t *s) {
    sigemptyset(s);
    for (int i = 0; i < 3; i++) sigaddset(s, stop_sigs[i]);
}

/* The thread that takes the stop signals: the only one that does not block them. It waits for
 * signals until the process ends; after cli_restore_stop_signals their old actions apply here. */
static void *signal_taker(void *arg) {
    (void)arg;
    sigset_t s;
    stop_set(&s);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    for (;;) pause();
    return NULL;
}

void cli_catch_stop_signals(struct sigaction old[3]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    cli_stop = 0;
    for (int i = 0; i < 3; i++) {
        sigaction(stop_sigs[i], NULL, &old[i]);
        if (stop_sigs[i] != SIGHUP || old[i].sa_handler != SIG_IGN) sigaction(stop_sigs[i], &sa, NULL);
    }
    sigset_t s;
    stop_set(&s);
    pthread_sigmask(SIG_BLOCK, &s, &saved_mask);
    if (taker_started) return;
    pthread_attr_t a;
    pthread_t t;
    int ok = pthread_attr_init(&a) == 0;
    ok = ok && pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
         pthread_create(&t, &a, signal_taker, NULL) == 0;
    pthread_attr_destroy(&a);
    if (ok)
        taker_started = 1;
    else /* no thread to take them: this one does, as before (the stop still works) */
        pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}

void cli_restore_stop_signals(const struct sigaction old[3]) {
    for (int i = 0; i < 3; i++) sigaction(stop_sigs[i], &old[i], NULL);
    pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}
