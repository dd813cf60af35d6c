/* clock.c — see clock.h. */
#include "clock.h"

#include <time.h>

static double seconds(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double base_now_s(void) {
    return seconds(CLOCK_MONOTONIC);
}

double base_cpu_s(void) {
    return seconds(CLOCK_PROCESS_CPUTIME_ID);
}

double base_thread_cpu_s(void) {
    return seconds(CLOCK_THREAD_CPUTIME_ID);
}
