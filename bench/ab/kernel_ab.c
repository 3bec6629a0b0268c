/* In-process A/B of two builds of ember's matmul kernels: prints one JSON
 * object. bench/kernel_ab.sh builds it; see there for the usage.
 *
 * Why in one process: this host's memory bandwidth moves between phases
 * minute to minute (a plain 2-thread read gives ~35 or ~60 GB/s), so two
 * benchmark runs minutes apart compare phases, not kernels. Here A and B
 * take turns pass by pass (the order flips every round), each round also
 * reads a plain buffer (the probe), and the result is the median over rounds
 * of B's rate over A's: both sides of a ratio ran within milliseconds.
 *
 * A pass is one matmul on each of `copies` copies of the matrix, enough
 * copies to exceed --mb MiB, so that every call streams its weights from
 * DRAM as decode does (a small --mb keeps them in cache instead), repeated
 * until the pass has streamed 64 MiB. Both sides
 * get the same weights and activations, and their outputs are compared: a
 * variant that is fast because it is wrong shows up. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_side.h"
#include "bench_stats.h"

const ab_side *ab_side_a(void);
const ab_side *ab_side_b(void);

enum { MAX_ROUNDS = 1000 };

/* ---- the probe: a plain read of a buffer by `threads` threads ----------- */

typedef struct probe_part {
    const uint64_t *buf;
    size_t n;
    uint64_t sum;
} probe_part;

static void *probe_thread(void *p)
{
    probe_part *t = p;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0; /* four chains: adds are not the bound */
    for (size_t i = 0; i + 4 <= t->n; i += 4) {
        s0 += t->buf[i];
        s1 += t->buf[i + 1];
        s2 += t->buf[i + 2];
        s3 += t->buf[i + 3];
    }
    t->sum = s0 + s1 + s2 + s3;
    return NULL;
}

static double probe_gbs(const uint64_t *buf, size_t n, int threads)
{
    pthread_t th[64];
    probe_part parts[64];
    double t0 = bench_now_s();
    for (int i = 0; i < threads; i++) {
        parts[i] = (probe_part){buf + n / (size_t)threads * (size_t)i, n / (size_t)threads, 0};
        if (i && pthread_create(&th[i], NULL, probe_thread, &parts[i])) return NAN;
    }
    probe_thread(&parts[0]);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
    return (double)n * 8 / (bench_now_s() - t0) / 1e9;
}

/* ---- main ----------------------------------------------------------------- */

static unsigned rng_state = 12345;
static float frand(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--dtype q4_0] [--shape 6144x2048] [--tokens 1] [--threads 2] "
            "[--set best] [--mb 512] [--rounds 20] [--verbose]\n",
            argv0);
    return 2;
}

int main(int argc, char **argv)
{
    const char *dtype = "q4_0", *set = "best";
    long long rows = 6144, cols = 2048;
    int tokens = 1, threads = 2, mb = 512, rounds = 20, verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--verbose")) verbose = 1;
        else if (!v) return usage(argv[0]);
        else if (!strcmp(a, "--dtype")) dtype = v, i++;
        else if (!strcmp(a, "--set")) set = v, i++;
        else if (!strcmp(a, "--shape") && sscanf(v, "%lldx%lld", &rows, &cols) == 2) i++;
        else if (!strcmp(a, "--tokens")) tokens = atoi(v), i++;
        else if (!strcmp(a, "--threads")) threads = atoi(v), i++;
        else if (!strcmp(a, "--mb")) mb = atoi(v), i++;
        else if (!strcmp(a, "--rounds")) rounds = atoi(v), i++;
        else return usage(argv[0]);
    }
    if (rows < 1 || cols < 1 || rows * cols > (1LL << 31) || tokens < 1 || tokens > 512 ||
        threads < 1 || threads > 64 || mb < 1 || rounds < 1 || rounds > MAX_ROUNDS)
        return usage(argv[0]);

    const ab_side *side[2] = {ab_side_a(), ab_side_b()};
    if (side[0]->version != AB_SIDE_VERSION || side[1]->version != AB_SIDE_VERSION) {
        fprintf(stderr, "kernel_ab: the two sides were built from different ab_side.h\n");
        return 1;
    }
    float *w = malloc((size_t)rows * (size_t)cols * sizeof(float));
    float *x = malloc((size_t)tokens * (size_t)cols * sizeof(float));
    if (!w || !x) return 1;
    for (long long i = 0; i < rows * cols; i++) w[i] = frand();
    for (long long i = 0; i < tokens * cols; i++) x[i] = frand();

    ab_matrix *m[2] = {NULL, NULL};
    int copies = 1;
    for (int s = 0; s < 2; s++) {
        char err[256] = "";
        /* the copy count from side A's bytes, so both stream the same amount */
        m[s] = side[s]->matrix_new(set, dtype, rows, cols, w, copies, x, tokens, threads, err,
                                   sizeof err);
        if (m[s] && !s) {
            size_t bytes = side[0]->matrix_bytes(m[0]);
            copies = (int)(((size_t)mb << 20) / bytes);
            if (copies < 1) copies = 1;
            side[0]->matrix_free(m[0]);
            m[0] = side[0]->matrix_new(set, dtype, rows, cols, w, copies, x, tokens, threads, err,
                                       sizeof err);
        }
        if (!m[s]) {
            fprintf(stderr, "kernel_ab: side %c: %s\n", "AB"[s], err);
            return 1;
        }
    }
    free(w);
    free(x);

    /* agreement: same inputs, both outputs (each side's own rounding) */
    double err2 = 0, ref2 = 0;
    {
        const float *ya = side[0]->matrix_run(m[0], 0, tokens);
        float *keep = malloc((size_t)tokens * (size_t)rows * sizeof(float));
        if (!keep) return 1;
        memcpy(keep, ya, (size_t)tokens * (size_t)rows * sizeof(float));
        const float *yb = side[1]->matrix_run(m[1], 0, tokens);
        for (long long i = 0; i < tokens * rows; i++) {
            err2 += ((double)yb[i] - keep[i]) * ((double)yb[i] - keep[i]);
            ref2 += (double)keep[i] * keep[i];
        }
        free(keep);
    }
    const double snr_db = err2 > 0 ? 10 * log10(ref2 / err2) : INFINITY;

    size_t probe_n = (size_t)256 << 17; /* 256 MiB of uint64 */
    uint64_t *probe = malloc(probe_n * 8);
    if (!probe) return 1;
    for (size_t i = 0; i < probe_n; i++) probe[i] = i;

    /* a pass streams at least 64 MiB, so that it is long against the clock
     * and the pool's start even when a small --mb keeps the matrix in cache */
    int calls = copies;
    while ((size_t)calls * side[0]->matrix_bytes(m[0]) < ((size_t)64 << 20)) calls += copies;
    static double gbs[2][MAX_ROUNDS], frac[2][MAX_ROUNDS], ratio[MAX_ROUNDS], bw[MAX_ROUNDS];
    for (int s = 0; s < 2; s++) side[s]->matrix_run(m[s], 0, tokens); /* warm the code */
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            int s = r & 1 ? 1 - k : k;
            double t0 = bench_now_s();
            for (int c = 0; c < calls; c++) side[s]->matrix_run(m[s], c % copies, tokens);
            const double bytes = (double)side[s]->matrix_bytes(m[s]) * calls;
            gbs[s][r] = bytes / (bench_now_s() - t0) / 1e9;
        }
        bw[r] = probe_gbs(probe, probe_n, threads);
        for (int s = 0; s < 2; s++) frac[s][r] = gbs[s][r] / bw[r];
        ratio[r] = gbs[1][r] / gbs[0][r];
        if (verbose)
            fprintf(stderr, "round %d: A %.2f B %.2f GB/s, probe %.2f\n", r, gbs[0][r], gbs[1][r],
                    bw[r]);
    }
    printf("{\"dtype\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"tokens\": %d, \"threads\": %d, "
           "\"copies\": %d, \"calls_per_pass\": %d, \"rounds\": %d,\n",
           dtype, rows, cols, tokens, threads, copies, calls, rounds);
    for (int s = 0; s < 2; s++)
        printf(" \"%c\": {\"set\": \"%s\", \"layout\": \"%s\", \"bytes\": %zu, \"gbs\": %.2f, "
               "\"probe_fraction\": %.3f},\n",
               "AB"[s], side[s]->matrix_set(m[s]), side[s]->matrix_layout(m[s]),
               side[s]->matrix_bytes(m[s]), bench_median(gbs[s], rounds),
               bench_median(frac[s], rounds));
    /* the outputs' agreement: B against A in dB (null: bit-identical) */
    char snr[32] = "null";
    if (isfinite(snr_db)) snprintf(snr, sizeof snr, "%.1f", snr_db);
    printf(" \"probe_gbs\": %.2f, \"b_over_a\": %.3f, \"b_over_a_q25\": %.3f, "
           "\"b_over_a_q75\": %.3f, \"snr_db\": %s}\n",
           bench_median(bw, rounds), bench_median(ratio, rounds),
           bench_quantile(ratio, rounds, 0.25), bench_quantile(ratio, rounds, 0.75), snr);
    for (int s = 0; s < 2; s++) side[s]->matrix_free(m[s]);
    free(probe);
    return 0;
}
