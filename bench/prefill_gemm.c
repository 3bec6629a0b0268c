/* Prefill matmul benchmark: how close one chunk's matrix product comes to
 * the CPU's int8 peak. Prints one JSON document on stdout.
 *
 *   build/bench/prefill_gemm [--dtype q8_0] [--shape 2048x6144] [--tokens 512]
 *                            [--outs N] [--reps N] [--set NAME]
 *
 * N matrices of ROWSxCOLS (--outs, default 1; 2 is an MLP's gate and up)
 * share one input of --tokens rows and run as forward.c runs them: one
 * ek_matmul_many call, in the layout the loader gives the kernel set
 * (rows8 for Q8_0/Q4_0 where the set has it). With 1 and 2 threads it
 * reports the best of --reps calls (min of N: on a shared machine a slow
 * call was interrupted, never faster), as wall seconds and as CPU seconds of
 * the process, and GOP/s (2 * rows * cols * tokens per matrix) against
 * ek_cpu_int8_peak_gops() times the thread count. Nothing asserts on time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/large_alloc.h"
#include "base/pool.h"
#include "bench_stats.h"
#include "kernels/cpu.h"
#include "kernels/exec.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"
#include "kernels/rows8.h"

enum { MAX_OUTS = 8 };

static unsigned rng = 1;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

/* One weight matrix in `dt`, in the loader's layout for kernel set k. */
static int make_matrix(const ek_kernel_set *k, et_dtype dt, int64_t rows, int64_t cols,
                       ek_matrix *out)
{
    const ek_format *f = ek_format_of(dt);
    const size_t rb = ek_row_bytes(dt, cols), bytes = (size_t)rows * rb;
    const int r8 = k->gemm_rows8[dt] && ek_rows8_fits(dt, rows, cols);
    char *plain = malloc(bytes), *data = ember_large_alloc(bytes);
    float *row = malloc((size_t)cols * sizeof *row);
    if (!plain || !data || !row) {
        free(plain), free(row);
        return -1;
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) row[c] = 0.05f * frand();
        f->from_f32(row, plain + (size_t)r * rb, cols);
    }
    if (r8)
        for (int64_t g = 0; g < rows / EK_ROWS8; g++)
            ek_rows8_pack(dt, cols, plain + (size_t)g * EK_ROWS8 * rb, rb,
                          data + (size_t)g * EK_ROWS8 * rb);
    else
        memcpy(data, plain, bytes);
    free(plain), free(row);
    *out = (ek_matrix){dt, data, rows, cols, r8 ? EK_LAYOUT_ROWS8 : EK_LAYOUT_ROWS};
    return 0;
}

int main(int argc, char **argv)
{
    const char *dtype = "q8_0", *set = NULL;
    long long rows = 2048, cols = 6144;
    int tokens = 512, n_outs = 1, reps = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--dtype")) dtype = v, i++;
        else if (!strcmp(a, "--set")) set = v, i++;
        else if (!strcmp(a, "--shape") && sscanf(v, "%lldx%lld", &rows, &cols) == 2) i++;
        else if (!strcmp(a, "--tokens")) tokens = atoi(v), i++;
        else if (!strcmp(a, "--outs")) n_outs = atoi(v), i++;
        else if (!strcmp(a, "--reps")) reps = atoi(v), i++;
        else {
            fprintf(stderr,
                    "usage: %s [--dtype q8_0] [--shape 2048x6144] [--tokens 512] [--outs N] "
                    "[--reps N] [--set NAME]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rows < 16 || cols < 32 || tokens < 1 || tokens > 4096 || n_outs < 1 ||
        n_outs > MAX_OUTS || reps < 1) {
        fprintf(stderr, "prefill_gemm: bad shape, --tokens, --outs or --reps\n");
        return 2;
    }
    const ek_kernel_set *k = set ? ek_kernels_by_name(set) : ek_kernels_best();
    int dt = -1;
    for (int d = 0; d < ET_DTYPE_COUNT; d++)
        if (!strcmp(ek_format_of((et_dtype)d)->name, dtype)) dt = d;
    if (!k || dt < 0 || cols % ek_format_of((et_dtype)dt)->block) {
        fprintf(stderr, "prefill_gemm: unknown set or format, or cols not a multiple of its block\n");
        return 2;
    }
    ek_matrix w[MAX_OUTS];
    ek_matmul_out outs[MAX_OUTS];
    float *x = malloc((size_t)tokens * (size_t)cols * sizeof *x);
    void *qbuf = malloc(ek_exec_qbuf_bytes(tokens, cols));
    if (!x || !qbuf) return 1;
    for (long long i = 0; i < tokens * cols; i++) x[i] = frand();
    for (int o = 0; o < n_outs; o++) {
        float *y = malloc((size_t)tokens * (size_t)rows * sizeof *y);
        if (!y || make_matrix(k, (et_dtype)dt, rows, cols, &w[o])) return 1;
        outs[o] = (ek_matmul_out){y, rows, &w[o], NULL};
    }
    const double peak1 = ek_cpu_int8_peak_gops();
    const double gop = 2.0 * (double)rows * (double)cols * tokens * n_outs / 1e9;
    printf("{\"set\": \"%s\", \"dtype\": \"%s\", \"layout\": \"%s\", \"rows\": %lld, "
           "\"cols\": %lld, \"tokens\": %d, \"outs\": %d, \"reps\": %d, "
           "\"int8_peak_gops_1thread\": %.0f, \"runs\": [",
           k->name, dtype, w[0].layout == EK_LAYOUT_ROWS8 ? "rows8" : "rows", rows, cols, tokens,
           n_outs, reps, peak1);
    for (int th = 1; th <= 2; th++) {
        ember_pool *pool = NULL;
        if (th > 1 && pool_create(th, &pool) != EMBER_OK) return 1;
        ek_exec ex = {k, pool};
        ek_matmul_many(&ex, x, tokens, outs, n_outs, qbuf); /* warm */
        double wall = 1e9, cpu = 1e9;
        for (int r = 0; r < reps; r++) {
            double w0 = bench_now_s(), c0 = bench_cpu_s();
            ek_matmul_many(&ex, x, tokens, outs, n_outs, qbuf);
            double dw = bench_now_s() - w0, dc = bench_cpu_s() - c0;
            if (dw < wall) wall = dw;
            if (dc < cpu) cpu = dc;
        }
        pool_free(pool);
        printf("%s{\"threads\": %d, \"wall_s\": %.5f, \"cpu_s\": %.5f, \"gops\": %.1f, "
               "\"gops_per_cpu_s\": %.1f, \"peak_fraction\": %.3f}",
               th > 1 ? ", " : "", th, wall, cpu, gop / wall, gop / cpu, gop / wall / (peak1 * th));
    }
    printf("]}\n");
    return 0;
}
