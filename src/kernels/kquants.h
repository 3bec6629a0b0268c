/* llama.cpp's K-quant and IQ4 block formats, byte for byte as GGUF stores
 * them (ggml types 10-14, 20, 23), so that the files people download load as
 * they are. A super-block holds 256 values (IQ4_NL: 32) cut into sub-blocks
 * of 16 or 32 that each carry a small integer scale (and, for the "with
 * minimum" types, an integer offset) under one or two f16 super-block scales:
 *
 *   type    bytes  sub-blocks   value
 *   Q2_K      84   16 x 16      d * sc * q - dmin * m       q 0..3,  sc, m 4-bit
 *   Q3_K     110   16 x 16      d * (sc - 32) * q           q -4..3, sc 6-bit
 *   Q4_K     144    8 x 32      d * sc * q - dmin * m       q 0..15, sc, m 6-bit
 *   Q5_K     176    8 x 32      d * sc * q - dmin * m       q 0..31, sc, m 6-bit
 *   Q6_K     210   16 x 16      d * sc * q                  q -32..31, sc int8
 *   IQ4_NL    18    1 x 32      d * kv[q]                   q 4-bit index, kv below
 *   IQ4_XS   136    8 x 32      d * (sc - 32) * kv[q]       sc 6-bit
 *
 * Every type decodes (ek_kq_unpack) into one common integer form: 256 int8
 * values, an integer scale and offset per 16 values and the two float
 * super-block scales. The scalar dot products, the conversions to fp32 and
 * the tests all go through that form, so each type's bit layout lives in one
 * function; the SIMD kernels unpack the same way in registers. */
#ifndef EMBER_KERNELS_KQUANTS_H
#define EMBER_KERNELS_KQUANTS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/formats.h"

struct ek_matrix;

#define EK_QK_K 256

typedef struct ek_block_q2_k {
    uint8_t scales[16]; /* low nibble: scale, high nibble: offset */
    uint8_t qs[64];     /* 2-bit values, four per byte */
    uint16_t d, dmin;   /* f16 */
} ek_block_q2_k;

typedef struct ek_block_q3_k {
    uint8_t hmask[32];  /* the third bit of each value */
    uint8_t qs[64];     /* the low two bits */
    uint8_t scales[12]; /* sixteen 6-bit scales */
    uint16_t d;
} ek_block_q3_k;

typedef struct ek_block_q4_k {
    uint16_t d, dmin;
    uint8_t scales[12]; /* eight 6-bit scales and eight 6-bit offsets */
    uint8_t qs[128];
} ek_block_q4_k;

typedef struct ek_block_q5_k {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];     /* the fifth bit */
    uint8_t qs[128];
} ek_block_q5_k;

typedef struct ek_block_q6_k {
    uint8_t ql[128];    /* low four bits */
    uint8_t qh[64];     /* high two bits */
    int8_t scales[16];
    uint16_t d;
} ek_block_q6_k;

typedef struct ek_block_iq4_nl {
    uint16_t d;
    uint8_t qs[16];
} ek_block_iq4_nl;

typedef struct ek_block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;  /* high two bits of the eight scales */
    uint8_t scales_l[4]; /* low four bits */
    uint8_t qs[128];
} ek_block_iq4_xs;

/* The sixteen non-uniform levels of IQ4_NL and IQ4_XS. */
extern const int8_t ek_iq4_levels[16];

/* One super-block decoded to integers: element i is
 *   d * scale[i / 16] * q[i] - dmin * min[i / 16]
 * evaluated as (d * scale) * q - (dmin * min) in fp32, which is exactly how
 * llama.cpp's reference dequantizes (so to_f32 matches it bit for bit). */
typedef struct ek_kq_ints {
    int8_t q[EK_QK_K];
    int16_t scale[EK_QK_K / 16];
    int16_t min[EK_QK_K / 16]; /* all zero for the types without offsets */
    float d, dmin;
} ek_kq_ints;

/* Decodes block `b` (0-based) of a row of `dtype` blocks; false for a dtype
 * that is not a 256-value K-quant (IQ4_NL's 32-value blocks use their own
 * path). */
int ek_kq_unpack(et_dtype dtype, const void *row, int64_t b, ek_kq_ints *out);

/* The format table's conversions (n a multiple of the block size). */
void ek_q2_k_to_f32(const void *src, float *dst, int64_t n);
void ek_q3_k_to_f32(const void *src, float *dst, int64_t n);
void ek_q4_k_to_f32(const void *src, float *dst, int64_t n);
void ek_q5_k_to_f32(const void *src, float *dst, int64_t n);
void ek_q6_k_to_f32(const void *src, float *dst, int64_t n);
void ek_iq4_nl_to_f32(const void *src, float *dst, int64_t n);
void ek_iq4_xs_to_f32(const void *src, float *dst, int64_t n);

void ek_q2_k_from_f32(const float *src, void *dst, int64_t n);
void ek_q3_k_from_f32(const float *src, void *dst, int64_t n);
void ek_q4_k_from_f32(const float *src, void *dst, int64_t n);
void ek_q5_k_from_f32(const float *src, void *dst, int64_t n);
void ek_q6_k_from_f32(const float *src, void *dst, int64_t n);
void ek_iq4_nl_from_f32(const float *src, void *dst, int64_t n);
void ek_iq4_xs_from_f32(const float *src, void *dst, int64_t n);

/* Scalar dot products of a weight row against Q8_0 activations (n a
 * multiple of the weight's block): per 32 activations with scale dx,
 *   dx * (d * sum_h scale_h * sum(q * qx)  -  dmin * sum_h min_h * sum(qx))
 * with the integer sums exact. The reference for every SIMD twin. */
float ek_dot_kquant_scalar(et_dtype dtype, const void *w, const ek_block_q8_0 *x, int64_t n);
float ek_dot_iq4_nl_scalar(const void *w, const ek_block_q8_0 *x, int64_t n);

/* The scalar gemm (matmul.h's ek_gemm_fn) for any K-quant or IQ4 matrix:
 * each super-block is decoded once and used for every token; each result
 * equals the dot product above. */
void ek_gemm_kquant_scalar(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                           const void *x, size_t x_stride, int n_tokens);

/* The AVX-512 VNNI twin (kquants_avx512.c): only for CPUs the avx512 set
 * runs on. */
void ek_gemm_kquant_avx512(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                           const void *x, size_t x_stride, int n_tokens);

/* The 32-value block formats IQ4_NL, Q4_1, Q5_0 and Q5_1 (q32.h) on
 * AVX-512 VNNI (blocks32_avx512.c), only for CPUs the avx512 set runs on:
 * the gemm, any number of tokens (the set takes it for decode and a few),
 * and, for its prefill on the Q8_0 tiles, n blocks of `dtype` turned into
 * Q8_0 blocks exactly (the same d; q = the IQ4 level, the 4/5-bit value, or
 * Q5_0's value - 16) with the "_1" types' offsets m as fp32 at
 * m[b * m_stride] (unless m is NULL; nothing for the others). */
void ek_gemm_blocks32_avx512(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                             const void *x, size_t x_stride, int n_tokens);
void ek_blocks32_to_q8_0_avx512(et_dtype dtype, const void *src, void *dst, float *m, int64_t m_stride, int64_t n);

/* The AVX-512 decode engine for the types scaled per sub-block of 32
 * (kquants_sb32_avx512.c: Q4_K, Q5_K, IQ4_XS; any other type takes the
 * scalar kernel): one to a few tokens, only for CPUs the avx512 set runs
 * on. */
int ek_kquant_sb32_avx512_covers(et_dtype dtype);
void ek_gemm_kquant_sb32_avx512(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                                const void *x, size_t x_stride, int n_tokens);

/* The AVX-512 decode engine for Q2_K and Q3_K (kquants_lowbit_avx512.c:
 * one lane per group of 16; any other type takes the scalar kernel): one to
 * a few tokens, only for CPUs the avx512 set runs on. */
int ek_kquant_lowbit_avx512_covers(et_dtype dtype);
void ek_gemm_kquant_lowbit_avx512(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                                  const void *x, size_t x_stride, int n_tokens);

/* The AVX-512 prefill engine (kquants_prefill_avx512.c): token-major tiles
 * for many tokens; it covers the 256-value types (not IQ4_NL). */
int ek_kquant_prefill_avx512_covers(et_dtype dtype);
void ek_gemm_kquant_prefill_avx512(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t x_stride, int n_tokens);
/* Its prepared activations (matmul.h's ek_prepared_form), shared by every
 * type it covers, and its gemm on them: x86-64 only, for the avx512 set. */
size_t ek_kquant_prefill_prepared_bytes_avx512(int n_tokens, int64_t cols);
void ek_kquant_prefill_prepare_avx512(void *xp, const void *x, size_t x_stride, int n_tokens, int64_t cols,
                                      int part, int n_parts);
void ek_gemm_kquant_prefill_prepared_avx512(float *y, int64_t y_stride, const struct ek_matrix *w,
                                            int64_t r0, int64_t r1, const void *xp, int n_tokens);

/* The AVX2 twin (kquants_avx2.c: vpmaddubsw, no VNNI): only for CPUs the
 * avx2 set runs on. */
void ek_gemm_kquant_avx2(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                         const void *x, size_t x_stride, int n_tokens);

/* The NEON twins (kquants_neon.c) for the two neon sets: sdot (only for
 * CPUs with the dotprod extension) and widening multiplies (any AArch64). */
void ek_gemm_kquant_neon_sdot(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                              const void *x, size_t x_stride, int n_tokens);
void ek_gemm_kquant_neon_mull(float *y, int64_t y_stride, const struct ek_matrix *w, int64_t r0, int64_t r1,
                              const void *x, size_t x_stride, int n_tokens);

/* Designated initializers for a kernel set's gemm table: one kernel for
 * every K-quant and IQ4 format, or for those of 256-value super-blocks (the
 * sets whose IQ4_NL runs on their Q4_0 tiles). */
#define EK_GEMM_KQUANTS_256(fn) \
    [ET_Q2_K] = fn, [ET_Q3_K] = fn, [ET_Q4_K] = fn, [ET_Q5_K] = fn, [ET_Q6_K] = fn, [ET_IQ4_XS] = fn
#define EK_GEMM_KQUANTS(fn) EK_GEMM_KQUANTS_256(fn), [ET_IQ4_NL] = fn

#endif
