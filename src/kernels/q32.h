/* ggml's other 32-value block formats, byte for byte as GGUF stores them
 * (ggml types 3, 6, 7): older llama.cpp files are made of them, and its K
 * mixes write them where a row is not whole 256-value super-blocks
 * (Q4_K -> Q5_0, Q5_K -> Q5_1). Element l of a block is the low nibble of
 * qs[l], element 16 + l its high nibble; the Q5 types keep each element's
 * fifth bit in bit l of the little-endian 32-bit qh:
 *
 *   type   bytes  layout                          value
 *   Q4_1    20    f16 d, f16 m, qs[16]            d * q + m          q 0..15
 *   Q5_0    22    f16 d, qh[4], qs[16]            d * (q - 16)       q 0..31
 *   Q5_1    24    f16 d, f16 m, qh[4], qs[16]     d * q + m          q 0..31
 *
 * Each block is a Q8_0 block exactly (the same d, q as stored, minus 16 for
 * Q5_0) plus, for the "_1" types, the offset m on every value. That is how
 * they run: the dot of a block with Q8_0 activations (scale dx, values qx)
 * is dx * d * sum(q * qx) + dx * m * sum(qx), both sums exact integers. The
 * SIMD sets run them on their Q4_0/IQ4_NL tiles (a fifth bit and an offset
 * term more: matmul_avx2.c, matmul_neon.c, blocks32_avx512.c), and the
 * avx512 prefill on its Q8_0 tiles, rows turned into Q8_0 span by span. */
#ifndef EMBER_KERNELS_Q32_H
#define EMBER_KERNELS_Q32_H

#include <stdint.h>

#include "kernels/formats.h"
#include "kernels/matmul.h"

typedef struct ek_block_q4_1 {
    uint16_t d, m; /* f16 */
    uint8_t qs[EK_QBLOCK / 2];
} ek_block_q4_1;

typedef struct ek_block_q5_0 {
    uint16_t d;
    uint8_t qh[4]; /* the fifth bits, element l in bit l */
    uint8_t qs[EK_QBLOCK / 2];
} ek_block_q5_0;

typedef struct ek_block_q5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[EK_QBLOCK / 2];
} ek_block_q5_1;

/* True for the three types above. */
int ek_q32_is(et_dtype dtype);

/* The format table's conversions (n a multiple of 32). to_f32 computes
 * d * q + m (Q5_0: d * (q - 16)) in fp32 as llama.cpp does; from_f32 is
 * llama.cpp's reference quantizer (min and max of the block for the "_1"
 * types, the value of largest magnitude mapped to -16 for Q5_0), so both
 * agree with llama.cpp bit for bit. */
void ek_q4_1_to_f32(const void *src, float *dst, int64_t n);
void ek_q5_0_to_f32(const void *src, float *dst, int64_t n);
void ek_q5_1_to_f32(const void *src, float *dst, int64_t n);
void ek_q4_1_from_f32(const float *src, void *dst, int64_t n);
void ek_q5_0_from_f32(const float *src, void *dst, int64_t n);
void ek_q5_1_from_f32(const float *src, void *dst, int64_t n);

/* n blocks of `dtype` starting at src to Q8_0 blocks at dst (the same d,
 * the integer values), and, when m is not NULL, each block's offset as fp32
 * (0 for Q5_0). */
void ek_q32_to_q8_0(et_dtype dtype, const void *src, ek_block_q8_0 *dst, float *m, int64_t n);

/* The scalar dot of a row of n values against Q8_0 activations: per block
 * dx * d * sum(q * qx) + dx * m * sum(qx) (Q5_0: dx * d * sum((q - 16) * qx)),
 * the integer sums exact. The reference for every SIMD twin. */
float ek_dot_q32_scalar(et_dtype dtype, const void *w, const ek_block_q8_0 *x, int64_t n);

/* The scalar set's gemm (matmul.h's ek_gemm_fn) for the three types. */
void ek_gemm_q32_scalar(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                        size_t x_stride, int n_tokens);

/* Designated initializers for a kernel set's gemm table. */
#define EK_GEMM_Q32(fn) [ET_Q4_1] = fn, [ET_Q5_0] = fn, [ET_Q5_1] = fn

#endif
