/* team.h — a barrier for the threads of one OpenMP parallel region that must meet many times in
 * a row (decode meets ~9 times per layer, ~300 times per token).
 *
 * Why not `#pragma omp barrier`: libgomp's waiting policy is fixed for the whole process at start-up.
 * The program runs with passive waiting (app main: a sleeping thread costs nothing on a busy
 * machine), which makes each of libgomp's barriers a futex sleep and wake-up (tens of
 * microseconds), too slow for decode's short phases. This barrier spins (with the CPU's pause hint)
 * for a budget of microseconds, which covers the phases of a quiet machine, then sleeps on a futex
 * until the last thread arrives, so on a busy machine a waiting thread does not hold a core another
 * thread needs. The budget adapts (kept by the caller across barriers): a wait that outlasts it
 * takes TEAM_SPIN_STEP_DOWN_US off (down to TEAM_SPIN_MIN_US), a wait within it adds 1 µs (up to
 * TEAM_SPIN_MAX_US). On a quiet machine, where a wait rarely outlasts 50 µs, it stays near the
 * maximum; on a busy one, where most waits do, it falls to the minimum within a few barriers.
 * Measured (docs/engine.md): decode after 2k, 2 threads on 2 cores, with and without one competing
 * busy loop.
 */
#ifndef BOSCH_TEAM_H
#define BOSCH_TEAM_H

#include <stdatomic.h>

#define TEAM_SPIN_MAX_US 50
#define TEAM_SPIN_MIN_US 2
#define TEAM_SPIN_STEP_DOWN_US 8

typedef struct {
    atomic_int arrived;    /* threads at the barrier in the current round */
    atomic_int generation; /* rounds completed */
    atomic_int sleepers;   /* threads asleep in futex_wait on generation */
    int n;                 /* threads that must arrive */
    atomic_int *spin_us;   /* the adaptive spin budget, owned by the caller (0: start at the max) */
} team_barrier;

/* For n >= 1 threads; call before the threads start (one thread initialises, all use). spin_us is
 * the caller's budget variable, which outlives the barrier (a workspace keeps it between steps). */
void team_barrier_init(team_barrier *b, int n, atomic_int *spin_us);

/* Wait until all n threads have called it for this round (acquire/release: writes before the
 * barrier are visible after it). */
void team_barrier_wait(team_barrier *b);

/* Rows [*lo, *hi) of thread `tid` of `nt` when `total` rows are cut into contiguous ranges of
 * ceil(total/nt) rows rounded up to a multiple of `align` (the last range takes what is left, so a
 * small total splits unevenly, e.g. 40 rows over 2 threads with align 16 give 32 and 8; a range
 * may be empty). */
void team_split(int total, int tid, int nt, int align, int *lo, int *hi);

#endif
