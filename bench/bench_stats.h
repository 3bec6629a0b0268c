/* Timing and order statistics shared by the benchmark programs (the C files
 * of bench/ and bench/ab/kernel_ab.c): a monotonic clock and quantiles. */
#ifndef EMBER_BENCH_STATS_H
#define EMBER_BENCH_STATS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of CPU this process used (all its threads): on a machine shared
 * with other work, a single-threaded run's CPU time is steadier than its
 * wall time (a descheduled process does not count). */
static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (0.5: the median), interpolated between the two
 * nearest order statistics; v is left as it was. NaN when out of memory. */
static inline double bench_quantile(const double *v, int n, double q)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, bench_cmp_double);
    const double pos = q * (n - 1);
    const int i = (int)pos;
    double m = s[i];
    if (i + 1 < n) m += (pos - i) * (s[i + 1] - s[i]);
    free(s);
    return m;
}

static inline double bench_median(const double *v, int n) { return bench_quantile(v, n, 0.5); }

#endif
