/* Clocks, medians, resident memory and the read-bandwidth probe for the
 * commands that time things (bench, generate, chat, quantize): see cli.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/large_alloc.h"
#include "cli.h"

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

/* ---- read bandwidth: every thread sums its own part of one buffer ---- */

typedef struct bw_part {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} bw_part;

static void *bw_read(void *arg)
{
    bw_part *b = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= b->n; i += 4) {
        s0 += b->p[i];
        s1 += b->p[i + 1];
        s2 += b->p[i + 2];
        s3 += b->p[i + 3];
    }
    b->sum = s0 + s1 + s2 + s3;
    return NULL;
}

/* The best of 7 runs, since the roofline is what the memory can deliver,
 * and a shared machine only ever makes a run slower. The buffer is in huge
 * pages, as the weights and the KV cache are (src/base/large_alloc.c): in
 * 4 KiB pages the probe read ~15-40% slower than q8_0 decode streamed its
 * weights, a roofline fraction above 1. */
double cli_read_bandwidth_gbs(size_t bytes, int n_threads)
{
    size_t words = bytes / sizeof(uint64_t);
    uint64_t *buf = ember_large_alloc(words * sizeof *buf);
    double runs[7], best = 0.0;
    if (!buf) return 0.0;
    for (size_t i = 0; i < words; i++) buf[i] = i; /* touch every page */
    pthread_t th[64];
    bw_part parts[64];
    if (n_threads > 64) n_threads = 64;
    for (int r = 0; r < 7; r++) {
        double t0 = cli_now_s();
        for (int i = 0; i < n_threads; i++) {
            parts[i].p = buf + words / (size_t)n_threads * (size_t)i;
            parts[i].n = words / (size_t)n_threads;
            if (i) pthread_create(&th[i], NULL, bw_read, &parts[i]);
        }
        bw_read(&parts[0]);
        for (int i = 1; i < n_threads; i++) pthread_join(th[i], NULL);
        runs[r] = (double)(words / (size_t)n_threads * (size_t)n_threads * sizeof(uint64_t)) /
                  (cli_now_s() - t0) / 1e9;
    }
    free(buf);
    for (int r = 0; r < 7; r++) best = runs[r] > best ? runs[r] : best;
    return best;
}
