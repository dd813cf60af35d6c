/* read-bandwidth.c — the machine's read bandwidth, the bound of a decode step that streams its
 * weights and KV cache once per token (docs/engine.md, "Speed against llama.cpp"): OpenMP threads
 * sum disjoint parts of a 1 GiB buffer of floats, 10 passes, the best pass reported in GB/s.
 *   gcc -O3 -march=native -fopenmp scripts/read-bandwidth.c -o /tmp/rbw && /tmp/rbw
 *   OMP_NUM_THREADS=1 /tmp/rbw      one core */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(void) {
    size_t n = (size_t)1 << 28; /* 256 Mi floats = 1 GiB */
    float *a = aligned_alloc(64, n * sizeof(float));
    if (!a) {
        fprintf(stderr, "read-bandwidth: cannot allocate the 1 GiB buffer\n");
        return 1;
    }
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) a[i] = (float)(i & 7);
    double best = 1e9, total = 0;
    for (int pass = 0; pass < 10; pass++) {
        double t0 = now(), s = 0;
#pragma omp parallel for reduction(+ : s)
        for (size_t i = 0; i < n; i += 16) {
            float acc = 0;
            for (int j = 0; j < 16; j++) acc += a[i + j];
            s += acc;
        }
        double dt = now() - t0;
        total += s;
        if (dt < best) best = dt;
    }
    printf("threads %d: best %.2f GB/s (checksum %.0f)\n", omp_get_max_threads(), n * 4.0 / best / 1e9,
           total);
    return 0;
}
