/* Portable scalar matmul: the reference every SIMD twin is tested against. */
#include "kernels/matmul.h"

#include "kernels/convert.h"

ek_matrix ek_matrix_rows(const ek_matrix *w, int64_t first, int64_t n)
{
    ek_matrix m = *w;
    m.data = (const char *)w->data + (size_t)(first * w->cols) * et_dtype_size(w->dtype);
    m.rows = n;
    return m;
}

/* Eight partial sums break the dependency chain so the compiler can keep
 * several multiply-adds in flight; the final sum is done pairwise. */
#define DOT_BODY(LOAD)                                                        \
    float acc[8] = {0};                                                       \
    int64_t i = 0;                                                            \
    for (; i + 8 <= n; i += 8)                                                \
        for (int k = 0; k < 8; k++) acc[k] += LOAD(i + k) * x[i + k];         \
    for (; i < n; i++) acc[i & 7] += LOAD(i) * x[i];                          \
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));

static float dot_f32(const float *w, const float *x, int64_t n)
{
#define LOAD_F32(j) w[j]
    DOT_BODY(LOAD_F32)
#undef LOAD_F32
}

static float dot_bf16(const uint16_t *w, const float *x, int64_t n)
{
#define LOAD_BF16(j) ek_bf16_to_f32(w[j])
    DOT_BODY(LOAD_BF16)
#undef LOAD_BF16
}

static float dot_f16(const uint16_t *w, const float *x, int64_t n)
{
#define LOAD_F16(j) ek_f16_to_f32(w[j])
    DOT_BODY(LOAD_F16)
#undef LOAD_F16
}

float ek_dot_row(const ek_matrix *w, int64_t r, const float *x)
{
    size_t off = (size_t)(r * w->cols);
    switch (w->dtype) {
    case ET_F32: return dot_f32((const float *)w->data + off, x, w->cols);
    case ET_BF16: return dot_bf16((const uint16_t *)w->data + off, x, w->cols);
    case ET_F16: return dot_f16((const uint16_t *)w->data + off, x, w->cols);
    case ET_DTYPE_COUNT: break;
    }
    return 0.0f;
}

void ek_matmul(float *y, int64_t y_stride, const float *x, int n_tokens, const ek_matrix *w,
               const float *bias)
{
    /* Row-outer: a weight row is read from memory once and reused for every
     * token of the chunk while it sits in L1. */
    for (int64_t r = 0; r < w->rows; r++) {
        float b = bias ? bias[r] : 0.0f;
        for (int t = 0; t < n_tokens; t++)
            y[t * y_stride + r] = ek_dot_row(w, r, x + (int64_t)t * w->cols) + b;
    }
}

void ek_row_to_f32(float *out, const ek_matrix *w, int64_t r)
{
    size_t off = (size_t)(r * w->cols);
    for (int64_t c = 0; c < w->cols; c++) {
        switch (w->dtype) {
        case ET_F32: out[c] = ((const float *)w->data)[off + c]; break;
        case ET_BF16: out[c] = ek_bf16_to_f32(((const uint16_t *)w->data)[off + c]); break;
        case ET_F16: out[c] = ek_f16_to_f32(((const uint16_t *)w->data)[off + c]); break;
        case ET_DTYPE_COUNT: break;
        }
    }
}
