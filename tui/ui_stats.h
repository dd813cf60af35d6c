/* ui_stats.h — how long the explorer's UI thread is busy per wake-up (`bosch explore --ui-stats
 * FILE`): from poll() returning (a key, a worker snapshot, a signal or the 100 ms tick) to the next
 * poll() call, i.e. the time a key can wait behind the UI thread's own work. Two clocks: the wall
 * time (what a user waits; longer on a busy machine, where other processes run in between) and
 * the UI thread's own CPU time (the work it does; about the same on a busy machine, so the test
 * bounds it, issue 30 item 7). */
#ifndef BOSCH_UI_STATS_H
#define BOSCH_UI_STATS_H

#include <stddef.h>
#include <stdint.h>

#define UI_STATS_BIN_MS 0.1 /* histogram bin width, ms */
#define UI_STATS_BINS 20000 /* bins cover 0..2000 ms; longer times go to the last bin (max is exact) */

typedef struct {
    long n;            /* wake-ups measured */
    double max_ms;     /* longest, ms */
    double sum_ms;     /* total, ms */
    long over_200;     /* wake-ups longer than 200 ms */
    double max_cpu_ms; /* longest UI-thread CPU time of one wake-up, ms */
    uint32_t hist[UI_STATS_BINS];
} ui_stats;

/* Add one wake-up: its wall time ms and the UI thread's CPU time cpu_ms in it (both >= 0). */
void ui_stats_add(ui_stats *s, double ms, double cpu_ms);
/* The q-quantile (0 < q <= 1) in ms: the upper edge of the histogram bin that holds it (the exact
 * max when it falls in the last bin); 0 when nothing was measured. */
double ui_stats_quantile(const ui_stats *s, double q);
/* Write one CSV row (iterations,max_ms,p99_ms,p50_ms,mean_ms,over_200ms,max_cpu_ms) to path, atomically
 * (csvio.h). 0, or -1 with a message naming the path. */
int ui_stats_write(const ui_stats *s, const char *path, char *err, size_t errlen);

#endif
