/* Clocks, medians and resident memory for the commands that time things
 * (bench, generate, chat, quantize): see cli_public.h. The read-bandwidth
 * probe is the benchmarks' own (bench_bandwidth.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli_public.h"

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

cli_rss cli_rss_now(void)
{
    cli_rss r = {0, 0};
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    if (!f) return r;
    while (fgets(line, sizeof line, f)) {
        unsigned long kb;
        if (sscanf(line, "RssAnon: %lu kB", &kb) == 1) r.anon = (size_t)kb * 1024;
        if (sscanf(line, "RssFile: %lu kB", &kb) == 1) r.file = (size_t)kb * 1024;
    }
    fclose(f);
    return r;
}

void cli_rss_peak(cli_rss *peak)
{
    cli_rss r = cli_rss_now();
    if (r.anon > peak->anon) peak->anon = r.anon;
    if (r.file > peak->file) peak->file = r.file;
}
