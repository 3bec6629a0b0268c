/* Matrix products against weights stored in any format of formats.h.
 *
 * A weight matrix is row-major (PyTorch's [out_features, in_features]), so
 * y = x W^T is one dot product per row. For the float formats x is fp32; for
 * Q8_0/Q4_0 weights x is first quantized to Q8_0 blocks and the dot products
 * run on integers. Accumulation is fp32 (int32 within a block).
 *
 * The kernels come in sets, one per instruction set ("scalar" is the
 * reference every other set is tested against). A gemm kernel computes the
 * rows [r0, r1) for n_tokens activation rows, so the same call serves decode
 * (one token) and prefill (a chunk), and threads split the rows. */
#ifndef EMBER_KERNELS_MATMUL_H
#define EMBER_KERNELS_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "io/tensor.h"
#include "kernels/conv.h"

/* How a matrix's bytes are ordered: row after row (as in the file), or in
 * groups of eight interleaved rows (Q8_0/Q4_0, rows8.h), which the loader
 * makes when the kernel set has a gemm for it. */
typedef enum ek_layout { EK_LAYOUT_ROWS = 0, EK_LAYOUT_ROWS8 } ek_layout;

typedef struct ek_matrix {
    et_dtype dtype;
    const void *data; /* rows x ek_row_bytes(dtype, cols) bytes */
    int64_t rows, cols;
    ek_layout layout;
} ek_matrix;

/* Rows [first, first + n) of w as a matrix of their own (a free view); in
 * the eight-row layout first and n must be multiples of 8. */
ek_matrix ek_matrix_rows(const ek_matrix *w, int64_t first, int64_t n);
/* Row r of w converted to fp32 (an embedding lookup). */
void ek_row_to_f32(float *out, const ek_matrix *w, int64_t r);

/* y[t * y_stride + r] = dot(w row r, x row t) for r0 <= r < r1, t < n_tokens.
 * x rows are x_stride bytes apart, in the activation format of w's dtype. */
typedef void (*ek_gemm_fn)(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0,
                           int64_t r1, const void *x, size_t x_stride, int n_tokens);
/* fp32 -> Q8_0 blocks (n a multiple of 32), for activations. */
typedef void (*ek_quantize_fn)(const float *x, void *dst, int64_t n);

/* fp32 vector primitives for attention: sum a[i] b[i], and y += a x. */
typedef float (*ek_dot_fn)(const float *a, const float *b, int64_t n);
typedef void (*ek_axpy_fn)(float *y, float a, const float *x, int64_t n);

/* Attention over a group of nh query heads that share K/V rows (GQA), for
 * nk keys given as row pointers (ring slots are not contiguous):
 *   scores: s[h * s_stride + j] = scale * dot(q[h * d ..], k[j])
 *   accum:  o[h * d + i] += sum_j p[h * p_stride + j] * v[j][i]
 * Each K/V row is loaded once for all nh heads. */
/* A call of at most EK_ATTN_HOT_KEYS keys says its rows are in cache (a
 * prefill walks a tile in runs this long, each read by several queries): the
 * kernel may then order its loads for arithmetic, not for a DRAM stream.
 * The scores are the same either way. */
#define EK_ATTN_HOT_KEYS 16
typedef void (*ek_attn_scores_fn)(float *s, int64_t s_stride, const float *q, int nh,
                                  const float *const *k, int nk, int d, float scale);
typedef void (*ek_attn_accum_fn)(float *o, const float *p, int64_t p_stride, int nh,
                                 const float *const *v, int nk, int d);
/* x[i] = exp(x[i] - shift) for i < n; returns the sum of the new x. */
typedef float (*ek_exp_sum_fn)(float *x, int64_t n, float shift);
/* Gated linear units: g[i] = act(g[i]) * u[i] (GeGLU with the exact erf
 * GELU or its tanh form, SwiGLU with SiLU); u NULL: the activation alone. */
typedef enum ek_glu_act { EK_GLU_GELU_ERF, EK_GLU_GELU_TANH, EK_GLU_SILU } ek_glu_act;
typedef void (*ek_glu_fn)(float *g, const float *u, int64_t n, ek_glu_act act);
/* n elements of a row in some format to fp32 (exact, as formats.h's to_f32). */
typedef void (*ek_to_f32_fn)(const void *src, float *dst, int64_t n);

/* Prefill's Q8_0 activations prepared once for every matrix that shares
 * them. A set whose many-token gemms repack the activations (token-major
 * tiles) would otherwise repack the same x in every call and every row
 * range of it: once per thread's part, per matrix of Q/K/V or gate/up.
 * A set may have several prepared forms (its Q8_0/Q4_0 tiles take one, its
 * K-quant tiles another); each weight format names the one its gemm reads.
 *   bytes:          bytes the form of n_tokens x cols takes, 0 when the set
 *                   does not prepare that many tokens (at most
 *                   ek_prepared_max_bytes);
 *   prepare:        writes part `part` of n_parts of that form at xp (64-byte
 *                   aligned) from x's Q8_0 rows, x_stride bytes apart; the
 *                   parts may run on different threads;
 *   gemm_prepared:  as ek_gemm_fn, from the prepared form, same results. */
typedef size_t (*ek_prepared_bytes_fn)(int n_tokens, int64_t cols);
typedef void (*ek_prepare_fn)(void *xp, const void *x, size_t x_stride, int n_tokens, int64_t cols,
                              int part, int n_parts);
typedef struct ek_prepared_form {
    ek_prepared_bytes_fn bytes;
    ek_prepare_fn prepare;
} ek_prepared_form;
typedef void (*ek_gemm_prepared_fn)(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0,
                                    int64_t r1, const void *xp, int n_tokens);
/* The most any set's prepared form of n_tokens x cols takes: 52 bytes per
 * token and block of 32, tokens counted in whole 128s (the K-quant tiles'
 * spans). */
static inline size_t ek_prepared_max_bytes(int n_tokens, int64_t cols)
{
    return (size_t)(n_tokens + 127) / 128 * 128 * (size_t)(cols / 32) * 52;
}

typedef struct ek_kernel_set {
    const char *name; /* "scalar", "avx2", "avx512", "neon" */
    ek_gemm_fn gemm[ET_DTYPE_COUNT];
    ek_quantize_fn quantize_q8_0;
    ek_dot_fn dot_f32;
    ek_axpy_fn axpy_f32;
    ek_attn_scores_fn attn_scores;
    ek_attn_accum_fn attn_accum;
    ek_exp_sum_fn exp_sum;
    ek_glu_fn glu;
    /* row conversions (KV cache rows); NULL: the format table's scalar one */
    ek_to_f32_fn to_f32[ET_DTYPE_COUNT];
    /* audio decoder kernels (conv.h); NULL: the scalar twin */
    ek_conv_fn conv[EK_CONV_FORMAT_COUNT];
    ek_snake_fn snake;
    /* gemms for the eight-row interleaved layout (rows8.h); NULL where the
     * set has none, and then the loader keeps the row layout */
    ek_gemm_fn gemm_rows8[ET_DTYPE_COUNT];
    /* prepared activations (above): the form each weight format's gemm
     * reads and those gemms; NULL where the set has none */
    const ek_prepared_form *prepared_form[ET_DTYPE_COUNT];
    ek_gemm_prepared_fn gemm_prepared[ET_DTYPE_COUNT];
    ek_gemm_prepared_fn gemm_prepared_rows8[ET_DTYPE_COUNT];
} ek_kernel_set;
/* The initializers of the prepared fields for a set without them. */
#define EK_NO_PREPARED {0}, {0}, {0}

/* The set's gemm for w's format and layout (NULL if it has none). */
ek_gemm_fn ek_kernels_gemm(const ek_kernel_set *k, const ek_matrix *w);
/* Its gemm on prepared activations for w, NULL if it has none. */
ek_gemm_prepared_fn ek_kernels_gemm_prepared(const ek_kernel_set *k, const ek_matrix *w);

/* The set's conversion of `dtype` rows to fp32, never NULL. */
ek_to_f32_fn ek_kernels_to_f32(const ek_kernel_set *k, et_dtype dtype);
/* The set's conv kernel for a weight format and its Snake, never NULL (the
 * scalar twin where the set or this CPU has none: bf16 products need
 * AVX512_BF16). */
ek_conv_fn ek_kernels_conv(const ek_kernel_set *k, ek_conv_format format);
ek_snake_fn ek_kernels_snake(const ek_kernel_set *k);

/* The scalar twins (kernels_scalar.c), for sets that have no faster version. */
float ek_dot_f32_scalar(const float *a, const float *b, int64_t n);
void ek_axpy_f32_scalar(float *y, float a, const float *x, int64_t n);
void ek_attn_scores_scalar(float *s, int64_t s_stride, const float *q, int nh,
                           const float *const *k, int nk, int d, float scale);
void ek_attn_accum_scalar(float *o, const float *p, int64_t p_stride, int nh,
                          const float *const *v, int nk, int d);
float ek_exp_sum_scalar(float *x, int64_t n, float shift);
void ek_glu_scalar(float *g, const float *u, int64_t n, ek_glu_act act);

const ek_kernel_set *ek_kernels_scalar(void);
/* The fastest set this CPU runs (from cpuid), never NULL. */
const ek_kernel_set *ek_kernels_best(void);
/* By name; NULL if unknown or not runnable on this CPU. */
const ek_kernel_set *ek_kernels_by_name(const char *name);

#endif
