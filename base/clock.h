/* clock.h — the program's clocks, defined once (POSIX clock_gettime).
 *
 * base_now_s: CLOCK_MONOTONIC in seconds (wall time between two calls; never goes back, unaffected
 * by date changes). base_cpu_s: CLOCK_PROCESS_CPUTIME_ID in seconds (CPU time of every thread of
 * the process). base_thread_cpu_s: CLOCK_THREAD_CPUTIME_ID in seconds (CPU time of the calling
 * thread: what a thread's own work costs, whatever else the machine runs). Only differences of two
 * values mean anything.
 */
#ifndef BOSCH_CLOCK_H
#define BOSCH_CLOCK_H

double base_now_s(void);
double base_cpu_s(void);
double base_thread_cpu_s(void);

#endif
