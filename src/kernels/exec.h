/* Running a matrix product on a kernel set and a thread pool: activations are
 * quantized when the weight format wants it, rows are split over workers. */
#ifndef EMBER_KERNELS_EXEC_H
#define EMBER_KERNELS_EXEC_H

#include "base/pool.h"
#include "kernels/matmul.h"

typedef struct ek_exec {
    const ek_kernel_set *kernels;
    ember_pool *pool; /* NULL: single-threaded */
} ek_exec;

/* Scratch bytes ek_matmul needs for up to max_tokens rows of max_cols. */
size_t ek_exec_qbuf_bytes(int max_tokens, int64_t max_cols);

/* y[t][r] = x[t] . w[r] (+ bias[r]); x is n_tokens x w->cols fp32, y rows are
 * y_stride floats apart. qbuf holds ek_exec_qbuf_bytes(n_tokens, w->cols). */
void ek_matmul(const ek_exec *ex, float *y, int64_t y_stride, const float *x, int n_tokens,
               const ek_matrix *w, const float *bias, void *qbuf);

/* Several products of the same x (Q, K and V; gate and up) in one pool run,
 * so the threads meet at one barrier instead of one per matrix. All w must
 * have x's width and one activation format (else they run one by one). */
typedef struct ek_matmul_out {
    float *y;
    int64_t y_stride;
    const ek_matrix *w;
    const float *bias; /* or NULL */
} ek_matmul_out;
void ek_matmul_many(const ek_exec *ex, const float *x, int n_tokens, const ek_matmul_out *outs,
                    int n_outs, void *qbuf);

/* The gated half of an MLP: g[t][r] = act(x[t] . gate[r] + b_gate[r]) *
 * (x[t] . up[r] + b_up[r]), g rows gate->rows floats apart. u is scratch of
 * n_tokens x gate->rows floats (the unfused path's up output). A prefill
 * computes it in strips: a worker's strip of gate rows, the same strip of up
 * rows, then the activation, while both are in cache. */
typedef struct ek_glu_mats {
    const ek_matrix *gate, *up;
    const float *b_gate, *b_up; /* or NULL */
    ek_glu_act act;
} ek_glu_mats;
void ek_matmul_glu(const ek_exec *ex, float *g, float *u, const float *x, int n_tokens,
                   const ek_glu_mats *m, void *qbuf);

/* A causal conv (conv.h) on the pool: y[t][co] = conv(x)[t][co] + bias[co]
 * for t < nt; x is row 0 of the input (history rows before it), in the
 * activation format of w (fp32, or bf16 for EK_CONV_BF16). */
void ek_conv_run(const ek_exec *ex, float *y, int64_t ys, const ek_conv_weights *w,
                 const float *bias, const void *x, int64_t xs, int32_t nt, int32_t dilation);

#endif
