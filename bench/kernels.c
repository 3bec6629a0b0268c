/* Kernel benchmark: prints one JSON document on stdout.
 *
 *   build/bench/kernels [--quick] [--set=NAME] [--dtype=NAME] [--batch=N]
 *                       [--shape=ROWSxCOLS]   (instead of the two MLP shapes)
 *
 * - "bandwidth": the machine's read bandwidth, a plain sum over a 1 GiB
 *   buffer with 1 and 2 threads (median of 5), the roofline for decode.
 * - "gemm": for every kernel set this CPU runs, every weight format, the two
 *   Spark-X2.5 1.7B MLP shapes (6144x2048 up/gate, 2048x6144 down):
 *   n_tokens = 1 as GB/s of weight bytes streamed (and as a fraction of the
 *   measured bandwidth at the same thread count), n_tokens = --batch (8; a
 *   server's batched decode step) on the same cold matrices as GB/s, and
 *   n_tokens = 32 as GFLOP/s; and decode_warm_gbs, one token on the same
 *   matrix every call (L3-resident where it fits): the kernel's own ceiling
 *   (2 * rows * cols * tokens per call). Threads split rows as
 *   src/kernels/exec.c does (4 parts per thread). Decode rotates over enough
 *   copies of the matrix (>= 512 MiB) that every call streams from DRAM, not L3.
 * Q8_0/Q4_0 are measured in both layouts where the set has an interleaved
 * gemm ("layout": "rows" as in the file, "rows8" as the loader repacks them,
 * src/kernels/rows8.h), on the same values.
 * Medians of several repetitions; nothing asserts on time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/large_alloc.h"
#include "base/pool.h"
#include "bench_stats.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"
#include "kernels/rows8.h"

/* ---- read bandwidth ------------------------------------------------------ */

typedef struct sum_task {
    const uint64_t *buf;
    int64_t n;
    uint64_t out[64]; /* per worker, far apart enough for two workers */
} sum_task;

static void run_sum(void *p, int part, int n_parts, int worker)
{
    sum_task *t = p;
    int64_t b, e;
    pool_split(t->n, 1024, part, n_parts, &b, &e);
    /* four chains so the adds are not the bottleneck */
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t i = b; i + 4 <= e; i += 4) {
        s0 += t->buf[i];
        s1 += t->buf[i + 1];
        s2 += t->buf[i + 2];
        s3 += t->buf[i + 3];
    }
    t->out[worker * 8] += s0 + s1 + s2 + s3;
}

static double read_bandwidth(ember_pool *pool, uint64_t *buf, int64_t n)
{
    sum_task t = {buf, n, {0}};
    double v[5];
    run_sum(&t, 0, 1, 0); /* fault everything in */
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_s();
        pool_run(pool, run_sum, &t, 4 * pool_size(pool));
        v[r] = (double)n * 8 / (bench_now_s() - t0) / 1e9;
    }
    return bench_median(v, 5);
}

/* ---- gemm ---------------------------------------------------------------- */

typedef struct gemm_task {
    const ek_kernel_set *k;
    float *y;
    const ek_matrix *w;
    const void *x;
    size_t x_stride;
    int n_tokens;
} gemm_task;

static void run_gemm(void *p, int part, int n_parts, int worker)
{
    const gemm_task *t = p;
    int64_t r0, r1;
    (void)worker;
    pool_split(t->w->rows, 16, part, n_parts, &r0, &r1);
    if (r0 < r1)
        ek_kernels_gemm(t->k, t->w)(t->y, t->w->rows, t->w, r0, r1, t->x, t->x_stride, t->n_tokens);
}

static unsigned rng = 1;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

/* GB/s of weight bytes for calls of nt tokens, each on a cold copy of the
 * matrix (median of reps). */
static double cold_gbs(const ek_kernel_set *k, ember_pool *pool, int th, const char *w, int copies,
                       size_t mbytes, et_dtype dt, ek_layout layout, int64_t R, int64_t C, float *y,
                       const void *xin, size_t xs, int nt, int reps)
{
    double v[16];
    for (int rep = 0; rep < reps; rep++) {
        int calls = copies < 8 ? 8 : copies;
        double t0 = bench_now_s();
        for (int c = 0; c < calls; c++) {
            ek_matrix m = {dt, w + (size_t)(c % copies) * mbytes, R, C, layout};
            gemm_task t = {k, y, &m, xin, xs, nt};
            pool_run(pool, run_gemm, &t, 4 * (th + 1));
        }
        v[rep] = (double)mbytes * calls / (bench_now_s() - t0) / 1e9;
    }
    return bench_median(v, reps);
}

typedef struct shape {
    int64_t rows, cols;
} shape;

int main(int argc, char **argv)
{
    int quick = 0, batch = 8;
    shape only_shape = {0, 0};
    const char *only_set = NULL, *only_dtype = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strncmp(argv[i], "--set=", 6)) only_set = argv[i] + 6;
        else if (!strncmp(argv[i], "--dtype=", 8)) only_dtype = argv[i] + 8;
        else if (!strncmp(argv[i], "--shape=", 8) &&
                 sscanf(argv[i] + 8, "%lldx%lld", (long long *)&only_shape.rows,
                        (long long *)&only_shape.cols) == 2 &&
                 only_shape.rows > 0 && only_shape.cols > 0)
            ;
        else if (!strncmp(argv[i], "--batch=", 8) && atoi(argv[i] + 8) >= 1 &&
                 atoi(argv[i] + 8) <= 32)
            batch = atoi(argv[i] + 8);
        else {
            fprintf(stderr,
                    "usage: %s [--quick] [--set=NAME] [--dtype=NAME] [--batch=1..32] "
                    "[--shape=ROWSxCOLS]\n",
                    argv[0]);
            return 2;
        }
    }
    ember_pool *pool2 = NULL;
    if (pool_create(2, &pool2) != EMBER_OK) return 1;
    ember_pool *pools[2] = {NULL, pool2};

    /* bandwidth over 1 GiB (256 MiB with --quick) */
    int64_t bw_n = ((int64_t)1 << (quick ? 25 : 27));
    uint64_t *bw_buf = ember_large_alloc((size_t)bw_n * 8); /* huge pages, as the weights */
    if (!bw_buf) return 1;
    for (int64_t i = 0; i < bw_n; i++) bw_buf[i] = (uint64_t)i;
    double bw[2] = {read_bandwidth(NULL, bw_buf, bw_n), read_bandwidth(pool2, bw_buf, bw_n)};
    free(bw_buf);
    printf("{\n  \"bandwidth_gbs\": {\"threads1\": %.2f, \"threads2\": %.2f},\n", bw[0], bw[1]);
    printf("  \"gemm\": [\n");

    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    static const shape shapes[] = {{6144, 2048}, {2048, 6144}};
    enum { PREFILL_TOKENS = 32 };
    const size_t rot_bytes = quick ? ((size_t)128 << 20) : ((size_t)512 << 20);
    int first = 1;
    for (int dt = 0; dt < ET_DTYPE_COUNT; dt++) {
        const ek_format *fmt = ek_format_of((et_dtype)dt);
        if (only_dtype && strcmp(only_dtype, fmt->name)) continue;
        const size_t n_shapes = only_shape.rows ? 1 : sizeof shapes / sizeof *shapes;
        for (size_t si = 0; si < n_shapes; si++) {
            int64_t R = only_shape.rows ? only_shape.rows : shapes[si].rows;
            int64_t C = only_shape.rows ? only_shape.cols : shapes[si].cols;
            if (C % fmt->block) continue;
            size_t mbytes = (size_t)R * ek_row_bytes((et_dtype)dt, C);
            int copies = (int)((rot_bytes + mbytes - 1) / mbytes);
            char *w = malloc(mbytes * (size_t)copies);
            float *row = malloc((size_t)C * sizeof(float));
            float *x = malloc((size_t)PREFILL_TOKENS * C * sizeof(float));
            void *xq = malloc((size_t)PREFILL_TOKENS * ek_row_bytes(ET_Q8_0, C));
            float *y = malloc((size_t)PREFILL_TOKENS * R * sizeof(float));
            if (!w || !row || !x || !xq || !y) return 1;
            for (int64_t r = 0; r < R; r++) {
                for (int64_t c = 0; c < C; c++) row[c] = frand();
                fmt->from_f32(row, w + (size_t)r * ek_row_bytes((et_dtype)dt, C), C);
            }
            for (int c = 1; c < copies; c++) memcpy(w + (size_t)c * mbytes, w, mbytes);
            /* the same values in the interleaved layout, where it applies */
            char *w8 = ek_rows8_fits((et_dtype)dt, R, C) ? malloc(mbytes * (size_t)copies) : NULL;
            size_t rb = ek_row_bytes((et_dtype)dt, C);
            for (int c = 0; w8 && c < copies; c++)
                for (int64_t g = 0; g < R / 8; g++)
                    ek_rows8_pack((et_dtype)dt, C, w + (size_t)g * 8 * rb, rb,
                                  w8 + (size_t)c * mbytes + (size_t)g * 8 * rb);
            for (int64_t i = 0; i < PREFILL_TOKENS * C; i++) x[i] = frand();
            for (size_t ki = 0; ki < sizeof sets / sizeof *sets; ki++) {
                const ek_kernel_set *k = ek_kernels_by_name(sets[ki]);
                if (!k || (only_set && strcmp(only_set, k->name))) continue;
                const void *xin = x;
                size_t xs = (size_t)C * sizeof(float);
                if (fmt->act == ET_Q8_0) {
                    xs = ek_row_bytes(ET_Q8_0, C);
                    for (int t = 0; t < PREFILL_TOKENS; t++)
                        k->quantize_q8_0(x + t * C, (char *)xq + (size_t)t * xs, C);
                    xin = xq;
                }
                for (int li = 0; li < 2; li++) {
                    const ek_layout lay = li ? EK_LAYOUT_ROWS8 : EK_LAYOUT_ROWS;
                    if (lay == EK_LAYOUT_ROWS8 && !(k->gemm_rows8[dt] && w8)) continue;
                    const char *wl = lay == EK_LAYOUT_ROWS8 ? w8 : w;
                    for (int th = 0; th < 2; th++) {
                        /* decode: rotate over the copies, each call a cold matrix */
                        int reps = quick ? 3 : 7;
                        double gbs = cold_gbs(k, pools[th], th, wl, copies, mbytes, (et_dtype)dt,
                                              lay, R, C, y, xin, xs, 1, reps);
                        double bgbs = cold_gbs(k, pools[th], th, wl, copies, mbytes, (et_dtype)dt,
                                               lay, R, C, y, xin, xs, batch, reps);
                        /* the same matrix every call: as cache-resident as its size allows,
                         * the kernel's own ceiling where DRAM is not the bound */
                        double wgbs = cold_gbs(k, pools[th], th, wl, 1, mbytes, (et_dtype)dt, lay,
                                               R, C, y, xin, xs, 1, reps);
                        double v[16];
                        /* prefill: one matrix, warm; the scalar set is slow, fewer reps */
                        int preps = !strcmp(k->name, "scalar") || quick ? 3 : 5;
                        ek_matrix m = {(et_dtype)dt, wl, R, C, lay};
                        gemm_task t = {k, y, &m, xin, xs, PREFILL_TOKENS};
                        pool_run(pools[th], run_gemm, &t, 4 * (th + 1));
                        for (int rep = 0; rep < preps; rep++) {
                            double t0 = bench_now_s();
                            pool_run(pools[th], run_gemm, &t, 4 * (th + 1));
                            const double flops = 2.0 * (double)R * (double)C * PREFILL_TOKENS;
                            v[rep] = flops / (bench_now_s() - t0) / 1e9;
                        }
                        double gflops = bench_median(v, preps);
                        printf("%s    {\"set\": \"%s\", \"dtype\": \"%s\", \"rows\": %lld, "
                               "\"cols\": %lld, \"layout\": \"%s\", \"threads\": %d, "
                               "\"decode_gbs\": %.2f, \"roofline_frac\": %.3f, "
                               "\"decode_warm_gbs\": %.2f, \"batch%d_gbs\": %.2f, "
                               "\"prefill%d_gflops\": %.1f}",
                               first ? "" : ",\n", k->name, fmt->name, (long long)R, (long long)C,
                               lay == EK_LAYOUT_ROWS8 ? "rows8" : "rows", th + 1, gbs, gbs / bw[th],
                               wgbs, batch, bgbs, PREFILL_TOKENS, gflops);
                        first = 0;
                        fflush(stdout);
                    }
                }
            }
            free(w);
            free(w8);
            free(row);
            free(x);
            free(xq);
            free(y);
        }
    }
    printf("\n  ]\n}\n");
    pool_free(pool2);
    return 0;
}
