/* The scalar kernel set: portable C, the reference every SIMD twin is
 * tested against (tests/unit/test_kernels.c). */
#include <math.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/matmul.h"
#include "kernels/q32.h"
#include "kernels/rows8.h"

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

/* Q8_0 x Q8_0: integer dot per block, scaled by both block scales. */
static float dot_q8_0(const ek_block_q8_0 *w, const ek_block_q8_0 *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        int32_t acc = 0;
        for (int j = 0; j < EK_QBLOCK; j++) acc += (int32_t)w[b].q[j] * x[b].q[j];
        sum += ek_f16_to_f32(w[b].d) * ek_f16_to_f32(x[b].d) * (float)acc;
    }
    return sum;
}

/* Q4_0 x Q8_0: low nibbles are elements 0..15, high nibbles 16..31. */
static float dot_q4_0(const ek_block_q4_0 *w, const ek_block_q8_0 *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        int32_t acc = 0;
        for (int j = 0; j < EK_QBLOCK / 2; j++) {
            acc += ((w[b].qs[j] & 15) - 8) * (int32_t)x[b].q[j];
            acc += ((w[b].qs[j] >> 4) - 8) * (int32_t)x[b].q[j + EK_QBLOCK / 2];
        }
        sum += ek_f16_to_f32(w[b].d) * ek_f16_to_f32(x[b].d) * (float)acc;
    }
    return sum;
}

/* Row-outer: a weight row is read once and reused for every token while it
 * sits in L1. */
#define GEMM_BODY(WTYPE, XTYPE, DOT)                                                  \
    size_t row_bytes = ek_row_bytes(w->dtype, w->cols);                               \
    for (int64_t r = r0; r < r1; r++) {                                               \
        const WTYPE *wr = (const WTYPE *)((const char *)w->data + (size_t)r * row_bytes); \
        for (int t = 0; t < n_tokens; t++)                                            \
            y[t * y_stride + r] =                                                     \
                DOT(wr, (const XTYPE *)((const char *)x + (size_t)t * x_stride), w->cols); \
    }

static void gemm_f32(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                     const void *x, size_t x_stride, int n_tokens)
{
    GEMM_BODY(float, float, dot_f32)
}

static void gemm_bf16(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                      const void *x, size_t x_stride, int n_tokens)
{
    GEMM_BODY(uint16_t, float, dot_bf16)
}

static void gemm_f16(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                     const void *x, size_t x_stride, int n_tokens)
{
    GEMM_BODY(uint16_t, float, dot_f16)
}

static void gemm_q8_0(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                      const void *x, size_t x_stride, int n_tokens)
{
    GEMM_BODY(ek_block_q8_0, ek_block_q8_0, dot_q8_0)
}

static void gemm_q4_0(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                      const void *x, size_t x_stride, int n_tokens)
{
    GEMM_BODY(ek_block_q4_0, ek_block_q8_0, dot_q4_0)
}

/* The interleaved layout's twins: each block is unpacked to the row layout
 * and goes through the same block dot, summed in the same order (equal to
 * the row-layout results but for where a compiler fuses a multiply-add). */
#define ROWS8_BODY(WTYPE, DOT)                                                        \
    for (int64_t r = r0; r < r1; r++)                                                 \
        for (int t = 0; t < n_tokens; t++) {                                          \
            const ek_block_q8_0 *xb = (const ek_block_q8_0 *)((const char *)x + (size_t)t * x_stride); \
            float sum = 0.0f;                                                         \
            for (int64_t b = 0; b < w->cols / EK_QBLOCK; b++) {                       \
                WTYPE blk;                                                            \
                ek_rows8_unpack_block(w, r, b, &blk);                                 \
                sum += DOT(&blk, xb + b, EK_QBLOCK);                                  \
            }                                                                         \
            y[t * y_stride + r] = sum;                                                \
        }

void ek_gemm_rows8_q8_0_scalar(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0,
                               int64_t r1, const void *x, size_t x_stride, int n_tokens)
{
    ROWS8_BODY(ek_block_q8_0, dot_q8_0)
}

void ek_gemm_rows8_q4_0_scalar(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0,
                               int64_t r1, const void *x, size_t x_stride, int n_tokens)
{
    ROWS8_BODY(ek_block_q4_0, dot_q4_0)
}

static void quantize_q8_0(const float *x, void *dst, int64_t n)
{
    ek_format_of(ET_Q8_0)->from_f32(x, dst, n);
}

float ek_dot_f32_scalar(const float *w, const float *x, int64_t n) { return dot_f32(w, x, n); }

static const ek_kernel_set scalar_set = {
    "scalar",
    {[ET_F32] = gemm_f32, [ET_F16] = gemm_f16, [ET_BF16] = gemm_bf16, [ET_Q8_0] = gemm_q8_0,
     [ET_Q4_0] = gemm_q4_0, EK_GEMM_KQUANTS(ek_gemm_kquant_scalar),
     EK_GEMM_Q32(ek_gemm_q32_scalar)},
    quantize_q8_0,
    ek_dot_f32_scalar,
    ek_axpy_f32_scalar,
    ek_attn_scores_scalar,
    ek_attn_accum_scalar,
    ek_exp_sum_scalar,
    ek_glu_scalar,
    {0}, /* row conversions: the format table's */
    {0}, /* convs: the scalar twins */
    NULL,
    {[ET_Q8_0] = ek_gemm_rows8_q8_0_scalar, [ET_Q4_0] = ek_gemm_rows8_q4_0_scalar},
    EK_NO_PREPARED,
};

const ek_kernel_set *ek_kernels_scalar(void) { return &scalar_set; }
