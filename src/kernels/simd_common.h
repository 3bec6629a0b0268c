/* Pieces shared by the SIMD kernel sets (matmul_avx2.c, matmul_avx512.c,
 * matmul_neon.c). Each set compiles them under its own target attribute. */
#ifndef EMBER_KERNELS_SIMD_COMMON_H
#define EMBER_KERNELS_SIMD_COMMON_H

#include <stdint.h>
#include <string.h>

#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/matmul.h"
#include "kernels/q32.h"

/* A 16-bit load from a possibly unaligned address (f16 block scales). */
static inline uint16_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A 32-bit load from a possibly unaligned address (4 quant bytes). */
static inline uint32_t ld32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The float-format gemm driver: rows outer, tokens inner, so a 4-row strip
 * of weights stays in L1/L2 while every token passes over it and the weights
 * stream from memory once per call. TILE(y, ys, wd, rb, r, xd, xs, t, n, R, T)
 * computes an R x T block with R and T compile-time constants (1/4 rows,
 * 1..4 tokens). ATTR carries the set's target attribute. */
#define EK_FLOAT_GEMM(NAME, TILE, ATTR)                                                      \
    static ATTR void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,  \
                          const void *x, size_t xs, int nt)                                  \
    {                                                                                        \
        size_t rb = ek_row_bytes(w->dtype, w->cols);                                         \
        const char *wd = w->data, *xd = x;                                                   \
        int64_t n = w->cols;                                                                 \
        for (int64_t r = r0; r < r1;) {                                                      \
            int R = r1 - r >= 4 ? 4 : 1;                                                     \
            for (int t = 0; t < nt; t += 4) {                                                \
                int T = nt - t >= 4 ? 4 : nt - t;                                            \
                if (R == 4) {                                                                \
                    if (T == 4) TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 4);                  \
                    else if (T == 3) TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 3);             \
                    else if (T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 2);             \
                    else TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 1);                         \
                } else {                                                                     \
                    if (T == 4) TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 4);                  \
                    else if (T == 3) TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 3);             \
                    else if (T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 2);             \
                    else TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 1);                         \
                }                                                                            \
            }                                                                                \
            r += R;                                                                          \
        }                                                                                    \
    }

/* The 32-value weight formats of the avx2 and neon quantized tiles (the
 * kind EK_QUANT_GEMM passes on; Q4_1, Q5_0, Q5_1: q32.h), and the bytes of
 * one block of each. */
enum { QK_Q8_0, QK_Q4_0, QK_IQ4_NL, QK_Q4_1, QK_Q5_0, QK_Q5_1 };
static inline size_t qk_bytes(int kind)
{
    static const size_t bytes[] = {sizeof(ek_block_q8_0), sizeof(ek_block_q4_0), sizeof(ek_block_iq4_nl),
                                   sizeof(ek_block_q4_1), sizeof(ek_block_q5_0), sizeof(ek_block_q5_1)};
    return bytes[kind];
}

/* The quantized-format gemm driver (32-value block weights, Q8_0
 * activations): decode (one token) runs 4 rows per tile so four weight
 * streams are in flight; more tokens run 2 rows x up to 4 tokens, each
 * weight block reused by every token of the tile. TILE(y, ys, wd, rb, r,
 * xd, xs, t, nb, R, T, Q4) computes an R x T block over nb blocks; Q4 is
 * the weights' kind (QK_ above). */
#define EK_QUANT_GEMM(NAME, ATTR, TILE, Q4)                                                  \
    static ATTR void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,  \
                          const void *x, size_t xs, int nt)                                  \
    {                                                                                        \
        size_t rb = ek_row_bytes(w->dtype, w->cols);                                         \
        const char *wd = w->data, *xd = x;                                                   \
        int64_t nb = w->cols / EK_QBLOCK, r = r0;                                            \
        if (nt == 1) {                                                                       \
            for (; r + 4 <= r1; r += 4) TILE(y, ys, wd, rb, r, xd, xs, 0, nb, 4, 1, Q4);    \
            for (; r < r1; r++) TILE(y, ys, wd, rb, r, xd, xs, 0, nb, 1, 1, Q4);            \
            return;                                                                          \
        }                                                                                    \
        for (; r < r1;) {                                                                    \
            int R = r1 - r >= 2 ? 2 : 1;                                                     \
            for (int t = 0; t < nt; t += 4) {                                                \
                int T = nt - t >= 4 ? 4 : nt - t;                                            \
                if (R == 2) {                                                                \
                    if (T == 4) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 2, 4, Q4);             \
                    else if (T == 3) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 2, 3, Q4);        \
                    else if (T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 2, 2, Q4);        \
                    else TILE(y, ys, wd, rb, r, xd, xs, t, nb, 2, 1, Q4);                    \
                } else {                                                                     \
                    if (T == 4) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 1, 4, Q4);             \
                    else if (T == 3) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 1, 3, Q4);        \
                    else if (T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, nb, 1, 2, Q4);        \
                    else TILE(y, ys, wd, rb, r, xd, xs, t, nb, 1, 1, Q4);                    \
                }                                                                            \
            }                                                                                \
            r += R;                                                                          \
        }                                                                                    \
    }

/* Attention kernels (matmul.h) built on a set's own dot and axpy: each
 * K/V row is used for the nh heads while it is hot in L1. For the sets
 * without a register-blocked version of their own. */
#define EK_ATTN_FROM_DOT_AXPY(SCORES, ACCUM, DOT, AXPY, ATTR)                                \
    static ATTR void SCORES(float *s, int64_t s_stride, const float *q, int nh,              \
                            const float *const *k, int nk, int d, float scale)               \
    {                                                                                        \
        for (int j = 0; j < nk; j++)                                                         \
            for (int h = 0; h < nh; h++)                                                     \
                s[h * s_stride + j] = DOT(q + (int64_t)h * d, k[j], d) * scale;              \
    }                                                                                        \
    static ATTR void ACCUM(float *o, const float *p, int64_t p_stride, int nh,               \
                           const float *const *v, int nk, int d)                             \
    {                                                                                        \
        for (int j = 0; j < nk; j++)                                                         \
            for (int h = 0; h < nh; h++) AXPY(o + (int64_t)h * d, p[h * p_stride + j], v[j], d); \
    }

#endif
