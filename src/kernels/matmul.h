/* Matrix-vector products against weights stored in the checkpoint's own
 * dtype. A weight matrix is row-major (PyTorch's [out_features, in_features]),
 * so y = x W^T is one dot product per row. Accumulation is fp32. */
#ifndef EMBER_KERNELS_MATMUL_H
#define EMBER_KERNELS_MATMUL_H

#include <stdint.h>

#include "io/tensor.h"

typedef struct ek_matrix {
    et_dtype dtype;
    const void *data; /* rows x cols elements, row-major, aligned to dtype */
    int64_t rows, cols;
} ek_matrix;

/* Rows [first, first + n) of w as a matrix of their own (a free view). */
ek_matrix ek_matrix_rows(const ek_matrix *w, int64_t first, int64_t n);

/* y[t][r] = sum_c w[r][c] * x[t][c] (+ bias[r]) for t < n_tokens.
 * x is n_tokens x cols, y is n_tokens x rows (row stride = y_stride). */
void ek_matmul(float *y, int64_t y_stride, const float *x, int n_tokens, const ek_matrix *w,
               const float *bias);

/* One dot product of row r of w with x (length w->cols). */
float ek_dot_row(const ek_matrix *w, int64_t r, const float *x);

/* Row r of w converted to fp32 (an embedding lookup). */
void ek_row_to_f32(float *out, const ek_matrix *w, int64_t r);

#endif
