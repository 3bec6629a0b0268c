/* The NEON kernel set for AArch64 (NEON is mandatory there). Q8_0/Q4_0 dot
 * products use the dotprod extension (sdot: 16 signed byte products into 4
 * int32 lanes) when the CPU has it (ek_cpu.dotprod, from the auxiliary
 * vector) and widening multiplies (smull + sadalp) otherwise; the two are
 * separate sets under the one name "neon", picked at run time, so one
 * binary runs on a Cortex-A53 and uses sdot on an A76. The K-quants have
 * the same two variants in kquants_neon.c.
 *
 * Semantics are those of matmul_generic.c; only the order of the fp32
 * additions differs (the integer block dots are exact). Unlike x86's
 * vpdpbusd, sdot is signed x signed, so no offset tricks are needed: Q4_0
 * nibbles just have 8 subtracted, and IQ4_NL (Q4_0's layout, its nibbles
 * indexing 16 levels) looks its nibbles up with one tbl per 16; Q4_1, Q5_0
 * and Q5_1 (q32.h) are Q4_0's nibbles plus a fifth bit (a tst mask from qh)
 * and/or an offset term. Tiles: R rows x T tokens of accumulators,
 * so each weight vector loaded serves T tokens. Weights come from mmapped
 * files: all loads are unaligned (vld1 has no alignment requirement).
 *
 * Built and tested with Debian's aarch64 cross compiler under qemu-user
 * (make neon-test); this file is a stub returning NULL elsewhere. */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_neon(void);

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/cpu.h"
#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/q32.h"
#include "kernels/simd_common.h"

#define INLINE static inline __attribute__((always_inline))
/* The sdot intrinsics are declared for armv8.2-a+dotprod, and GCC only
 * inlines them into functions with at least those features. Any CPU that
 * reports asimddp implements ARMv8.2, so these functions run only there. */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

/* f16 -> f32 in hardware (fcvt): every half is exact in fp32. */
static inline float half_to_f32(const void *p)
{
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (float)h;
}

/* ---- float formats ------------------------------------------------------- */

INLINE float32x4_t wload_f32(const void *row, int64_t c) { return vld1q_f32((const float *)row + c); }

INLINE float32x4_t wload_f16(const void *row, int64_t c)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)row + c)));
}

/* bf16 is the top half of an fp32: widen by shifting left 16, exact. */
INLINE float32x4_t wload_bf16(const void *row, int64_t c)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)row + c), 16));
}

static inline float sload_f32(const void *row, int64_t c) { return ((const float *)row)[c]; }
static inline float sload_f16(const void *row, int64_t c) { return ek_f16_to_f32(((const uint16_t *)row)[c]); }
static inline float sload_bf16(const void *row, int64_t c) { return ek_bf16_to_f32(((const uint16_t *)row)[c]); }

/* y[t][r + i] for i < R, t < T: 4 columns per step (two accumulators per
 * pair would hide more latency, but 4 x 4 tiles already give 16 chains);
 * the columns past the last multiple of 4 are added in scalar code. */
#define FLOAT_TILE(NAME, WLOAD, SLOAD)                                                       \
    INLINE void NAME(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const char *x,  \
                     size_t xs, int t0, int64_t n, const int R, const int T)                 \
    {                                                                                        \
        float32x4_t acc[4][4];                                                               \
        for (int i = 0; i < R; i++)                                                          \
            for (int j = 0; j < T; j++) acc[i][j] = vdupq_n_f32(0.0f);                       \
        const char *wr = w + (size_t)r * rb;                                                 \
        const float *xt = (const float *)(x + (size_t)t0 * xs);                              \
        size_t xf = xs / sizeof(float);                                                      \
        int64_t c = 0;                                                                       \
        for (; c + 4 <= n; c += 4) {                                                         \
            float32x4_t wv[4];                                                               \
            for (int i = 0; i < R; i++) wv[i] = WLOAD(wr + (size_t)i * rb, c);               \
            for (int j = 0; j < T; j++) {                                                    \
                float32x4_t xv = vld1q_f32(xt + (size_t)j * xf + c);                         \
                for (int i = 0; i < R; i++) acc[i][j] = vfmaq_f32(acc[i][j], wv[i], xv);     \
            }                                                                                \
        }                                                                                    \
        for (int i = 0; i < R; i++)                                                          \
            for (int j = 0; j < T; j++) {                                                    \
                float s = vaddvq_f32(acc[i][j]);                                             \
                for (int64_t cc = c; cc < n; cc++)                                           \
                    s += SLOAD(wr + (size_t)i * rb, cc) * xt[(size_t)j * xf + cc];           \
                y[(t0 + j) * ys + r + i] = s;                                                \
            }                                                                                \
    }

FLOAT_TILE(tile_f32, wload_f32, sload_f32)
FLOAT_TILE(tile_f16, wload_f16, sload_f16)
FLOAT_TILE(tile_bf16, wload_bf16, sload_bf16)

EK_FLOAT_GEMM(gemm_f32, tile_f32, )
EK_FLOAT_GEMM(gemm_f16, tile_f16, )
EK_FLOAT_GEMM(gemm_bf16, tile_bf16, )

/* ---- Q8_0 / Q4_0 ----------------------------------------------------------- */


/* 0x10 in lane k where bit k of the two bytes h0, h1 (a Q5 block's qh, as
 * elements 0..15 or 16..31) is set. */
INLINE uint8x16_t fifth_bits(uint8_t h0, uint8_t h1)
{
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vcombine_u8(vdup_n_u8(h0), vdup_n_u8(h1));
    return vandq_u8(vtstq_u8(v, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

/* A weight block as two vectors of signed values in the activation block's
 * element order (Q4_0, IQ4_NL: low nibbles are elements 0..15, high
 * 16..31). */
INLINE void wblock(const char *blk, int kind, int8x16_t *w0, int8x16_t *w1)
{
    if (kind == QK_IQ4_NL) {
        const int8x16_t levels = vld1q_s8(ek_iq4_levels);
        uint8x16_t qs = vld1q_u8((const uint8_t *)blk + 2);
        *w0 = vqtbl1q_s8(levels, vandq_u8(qs, vdupq_n_u8(0x0f)));
        *w1 = vqtbl1q_s8(levels, vshrq_n_u8(qs, 4));
    } else if (kind == QK_Q4_0) {
        uint8x16_t qs = vld1q_u8((const uint8_t *)blk + 2);
        int8x16_t eight = vdupq_n_s8(8);
        *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(0x0f))), eight);
        *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(qs, 4)), eight);
    } else if (kind == QK_Q4_1) { /* d, m, qs: the values 0..15 as they are */
        uint8x16_t qs = vld1q_u8((const uint8_t *)blk + 4);
        *w0 = vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(0x0f)));
        *w1 = vreinterpretq_s8_u8(vshrq_n_u8(qs, 4));
    } else if (kind == QK_Q5_0 || kind == QK_Q5_1) { /* d, (m,) qh[4], qs[16] */
        const uint8_t *qh = (const uint8_t *)blk + (kind == QK_Q5_0 ? 2 : 4);
        uint8x16_t qs = vld1q_u8(qh + 4);
        uint8x16_t lo = vorrq_u8(vandq_u8(qs, vdupq_n_u8(0x0f)), fifth_bits(qh[0], qh[1]));
        uint8x16_t hi = vorrq_u8(vshrq_n_u8(qs, 4), fifth_bits(qh[2], qh[3]));
        int8x16_t bias = vdupq_n_s8(kind == QK_Q5_0 ? 16 : 0);
        *w0 = vsubq_s8(vreinterpretq_s8_u8(lo), bias);
        *w1 = vsubq_s8(vreinterpretq_s8_u8(hi), bias);
    } else {
        *w0 = vld1q_s8((const int8_t *)blk + 2);
        *w1 = vld1q_s8((const int8_t *)blk + 18);
    }
}

/* 32 signed byte products summed into 4 int32 lanes, with sdot. */
DOTPROD INLINE int32x4_t bdot_sdot(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
{
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
}

/* The same without dotprod: widening multiplies (|w x| <= 128 * 127 fits
 * int16) pairwise-added into int32. */
INLINE int32x4_t bdot_mull(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
{
    int32x4_t acc = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    acc = vpadalq_s16(acc, vmull_high_s8(w0, x0));
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(acc, vmull_high_s8(w1, x1));
}

/* R rows x T tokens, block by block; the scale product d_w * d_x is a
 * scalar multiply-add onto the converted int32 lanes. Q4_1/Q5_1's offset m
 * adds m * dx * sum(x) per block, in a scalar beside the lanes (the sum
 * once per token and block). */
#define QTILE(NAME, ATTR, BDOT)                                                              \
    ATTR INLINE void NAME(float *y, int64_t ys, const char *w, size_t rb, int64_t r,          \
                          const char *x, size_t xs, int t0, int64_t nb, const int R,         \
                          const int T, const int kind)                                       \
    {                                                                                        \
        float32x4_t acc[4][4];                                                               \
        float off[4][4] = {{0}};                                                             \
        const int offset = kind == QK_Q4_1 || kind == QK_Q5_1;                              \
        for (int i = 0; i < R; i++)                                                          \
            for (int j = 0; j < T; j++) acc[i][j] = vdupq_n_f32(0.0f);                       \
        const size_t bb = qk_bytes(kind);                                                    \
        for (int64_t b = 0; b < nb; b++) {                                                   \
            int8x16_t x0[4], x1[4];                                                          \
            float dx[4], sx[4];                                                              \
            for (int j = 0; j < T; j++) {                                                    \
                const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + j) * xs) + b; \
                x0[j] = vld1q_s8(xb->q);                                                     \
                x1[j] = vld1q_s8(xb->q + 16);                                                \
                dx[j] = half_to_f32(&xb->d);                                                 \
                if (offset)                                                                  \
                    sx[j] = dx[j] * (float)(vaddlvq_s8(x0[j]) + vaddlvq_s8(x1[j]));          \
            }                                                                                \
            for (int i = 0; i < R; i++) {                                                    \
                const char *blk = w + (size_t)(r + i) * rb + (size_t)b * bb;                 \
                int8x16_t w0, w1;                                                            \
                wblock(blk, kind, &w0, &w1);                                                 \
                float dw = half_to_f32(blk), mw = offset ? half_to_f32(blk + 2) : 0.0f;       \
                for (int j = 0; j < T; j++) {                                                \
                    acc[i][j] = vfmaq_n_f32(acc[i][j],                                       \
                                            vcvtq_f32_s32(BDOT(w0, w1, x0[j], x1[j])),       \
                                            dw * dx[j]);                                     \
                    if (offset) off[i][j] += mw * sx[j];                                     \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        for (int i = 0; i < R; i++)                                                          \
            for (int j = 0; j < T; j++)                                                      \
                y[(t0 + j) * ys + r + i] = vaddvq_f32(acc[i][j]) + off[i][j];               \
    }

QTILE(qtile_sdot, DOTPROD, bdot_sdot)
QTILE(qtile_mull, , bdot_mull)

/* Each format's gemm on both tiles: gemm_<f>_sdot (dot-product CPUs) and
 * gemm_<f>_mull (plain Armv8). */
#define GEMM_BOTH_TILES(F, KIND)                                                               \
    EK_QUANT_GEMM(gemm_##F##_sdot, DOTPROD, qtile_sdot, KIND)                                  \
    EK_QUANT_GEMM(gemm_##F##_mull, , qtile_mull, KIND)
GEMM_BOTH_TILES(q8_0, QK_Q8_0)
GEMM_BOTH_TILES(q4_0, QK_Q4_0)
GEMM_BOTH_TILES(iq4_nl, QK_IQ4_NL)
GEMM_BOTH_TILES(q4_1, QK_Q4_1)
GEMM_BOTH_TILES(q5_0, QK_Q5_0)
GEMM_BOTH_TILES(q5_1, QK_Q5_1)

/* ---- activation quantization -------------------------------------------- */

/* Bit-identical to q8_0_from_f32 in formats.c: fmaxnm ignores NaN as fmaxf
 * does, d and 1/d are the same fp32 divisions, d goes through the same
 * ek_f32_to_f16, and fcvtas is roundf (half away from zero) fused with the
 * saturating conversion the scalar (int8_t) cast compiles to here (fcvtzs
 * of the rounded value); xtn keeps the low byte as the cast does. */
static void quantize_q8_0(const float *x, void *dst, int64_t n)
{
    ek_block_q8_0 *out = dst;
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        float32x4_t v[8], a = vdupq_n_f32(0.0f);
        for (int k = 0; k < 8; k++) {
            v[k] = vld1q_f32(x + b * EK_QBLOCK + 4 * k);
            a = vmaxnmq_f32(a, vabsq_f32(v[k]));
        }
        float amax = vmaxnmvq_f32(a);
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = ek_f32_to_f16(d);
        for (int k = 0; k < 8; k += 2) {
            int32x4_t q0 = vcvtaq_s32_f32(vmulq_n_f32(v[k], id));
            int32x4_t q1 = vcvtaq_s32_f32(vmulq_n_f32(v[k + 1], id));
            int16x8_t h = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
            vst1_s8(out[b].q + 4 * k, vmovn_s16(h));
        }
    }
}

/* Attention primitives: four-lane fused multiply-adds, scalar tail. */
static float dot_f32_neon(const float *a, const float *b, int64_t n)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    float r = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

static void axpy_f32_neon(float *y, float a, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++) y[i] += a * x[i];
}

EK_ATTN_FROM_DOT_AXPY(attn_scores_neon, attn_accum_neon, dot_f32_neon, axpy_f32_neon, )

/* The two neon sets differ only in their integer dot products: sdot where
 * the CPU has the dotprod extension, widening multiplies elsewhere. */
#define NEON_SET(NAME, GEMM_Q8_0, GEMM_Q4_0, GEMM_IQ4_NL, GEMM_KQUANT, V)                     \
    static const ek_kernel_set NAME = {                                                        \
        "neon",                                                                                \
        {[ET_F32] = gemm_f32, [ET_F16] = gemm_f16, [ET_BF16] = gemm_bf16,                       \
         [ET_Q8_0] = GEMM_Q8_0, [ET_Q4_0] = GEMM_Q4_0, [ET_IQ4_NL] = GEMM_IQ4_NL,              \
         EK_GEMM_KQUANTS_256(GEMM_KQUANT), [ET_Q4_1] = gemm_q4_1_##V,                          \
         [ET_Q5_0] = gemm_q5_0_##V, [ET_Q5_1] = gemm_q5_1_##V},                                 \
        quantize_q8_0,                                                                         \
        dot_f32_neon,                                                                          \
        axpy_f32_neon,                                                                         \
        attn_scores_neon,                                                                      \
        attn_accum_neon,                                                                       \
        ek_exp_sum_scalar,                                                                     \
        ek_glu_scalar,                                                                         \
        {0}, /* row conversions: the format table's */                                         \
        {0}, /* convs: the scalar twins */                                                     \
        NULL,                                                                                  \
        {0}, /* no interleaved-layout gemms: weights keep the row layout */                    \
        EK_NO_PREPARED,                                                                        \
    };
NEON_SET(neon_dot_set, gemm_q8_0_sdot, gemm_q4_0_sdot, gemm_iq4_nl_sdot, ek_gemm_kquant_neon_sdot, sdot)
NEON_SET(neon_set, gemm_q8_0_mull, gemm_q4_0_mull, gemm_iq4_nl_mull, ek_gemm_kquant_neon_mull, mull)

const ek_kernel_set *ek_kernels_neon(void)
{
    return ek_cpu_detect().dotprod ? &neon_dot_set : &neon_set;
}

#else /* not AArch64 */
const ek_kernel_set *ek_kernels_neon(void) { return NULL; }
#endif
