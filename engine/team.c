/* team.c — spin-then-sleep barrier for one parallel region (see team.h). */
#include "team.h"
#include "clock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TEAM_PAUSE() _mm_pause()
#else
#define TEAM_PAUSE() ((void)0)
#endif

void team_barrier_init(team_barrier *b, int n, atomic_int *spin_us) {
    atomic_init(&b->arrived, 0);
    atomic_init(&b->generation, 0);
    atomic_init(&b->sleepers, 0);
    b->n = n < 1 ? 1 : n;
    b->spin_us = spin_us;
    if (atomic_load_explicit(spin_us, memory_order_relaxed) <= 0)
        atomic_store_explicit(spin_us, TEAM_SPIN_MAX_US, memory_order_relaxed);
}

void team_barrier_wait(team_barrier *b) {
    if (b->n == 1) return;
    const int gen = atomic_load_explicit(&b->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->n - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->generation, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0)
            syscall(SYS_futex, (int *)&b->generation, FUTEX_WAKE_PRIVATE, b->n, NULL, NULL, 0);
        return;
    }
    const int spin = atomic_load_explicit(b->spin_us, memory_order_relaxed);
    const long t0 = (long)(base_now_s() * 1e6);
    int slept = 0;
    for (unsigned i = 1; atomic_load_explicit(&b->generation, memory_order_acquire) == gen; i++) {
        TEAM_PAUSE();
        if ((i & 31) != 0 || (long)(base_now_s() * 1e6) - t0 < spin) continue;
        /* past the spin budget: sleep until the last thread arrives (it wakes the sleepers) */
        atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
        while (atomic_load_explicit(&b->generation, memory_order_seq_cst) == gen)
            syscall(SYS_futex, (int *)&b->generation, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
        atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
        slept = 1;
        break;
    }
    /* adapt the budget: a wait that outlasts it (a busy machine: the other thread is descheduled)
     * takes TEAM_SPIN_STEP_DOWN_US off, down to TEAM_SPIN_MIN_US; a wait within it adds 1 µs back */
    if (slept) {
        int s = spin - TEAM_SPIN_STEP_DOWN_US;
        atomic_store_explicit(b->spin_us, s < TEAM_SPIN_MIN_US ? TEAM_SPIN_MIN_US : s, memory_order_relaxed);
    } else if (spin < TEAM_SPIN_MAX_US) {
        atomic_store_explicit(b->spin_us, spin + 1, memory_order_relaxed);
    }
}

void team_split(int total, int tid, int nt, int align, int *lo, int *hi) {
    int per = ((total + nt - 1) / nt + align - 1) / align * align;
    long a = (long)tid * per, z = a + per;
    *lo = a < total ? (int)a : total;
    *hi = z < total ? (int)z : total;
}
