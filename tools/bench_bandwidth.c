/* The read-bandwidth probe of the benchmarks (the decode roofline): a
 * buffer in huge pages, as the weights are (src/base/large_alloc.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/large_alloc.h"
#include "cli.h"

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
