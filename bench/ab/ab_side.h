/* The interface between the A/B harness (kernel_ab.c) and one side of the
 * comparison (ab_side.c built against one revision of ember). Plain C types
 * only: the two sides may come from revisions whose internal headers differ,
 * so nothing of ember's own crosses it. */
#ifndef EMBER_BENCH_AB_SIDE_H
#define EMBER_BENCH_AB_SIDE_H

#include <stddef.h>
#include <stdint.h>

#define AB_SIDE_VERSION 1

typedef struct ab_matrix ab_matrix;

typedef struct ab_side {
    int version; /* AB_SIDE_VERSION */
    /* `copies` copies of a rows x cols weight matrix in format `dtype`
     * ("f32", "bf16", "f16", "q8_0", "q4_0"), from the fp32 values w (rows x
     * cols), in the layout the side's loader gives the kernel set `set`
     * ("best" or a name); x is max_tokens x cols fp32 activations; threads
     * as `ember --threads`. NULL with a message in err on failure. */
    ab_matrix *(*matrix_new)(const char *set, const char *dtype, int64_t rows, int64_t cols,
                             const float *w, int copies, const float *x, int max_tokens,
                             int threads, char *err, size_t err_len);
    /* weight bytes of one copy, the layout's name, the kernel set's name */
    size_t (*matrix_bytes)(const ab_matrix *m);
    const char *(*matrix_layout)(const ab_matrix *m);
    const char *(*matrix_set)(const ab_matrix *m);
    /* y = the first n_tokens of x times copy `copy`, as decode runs it
     * (activations quantized where the format wants, rows split over the
     * side's thread pool); returns y (n_tokens x rows), valid until the next
     * call */
    const float *(*matrix_run)(ab_matrix *m, int copy, int n_tokens);
    void (*matrix_free)(ab_matrix *m);
} ab_side;

#endif
