/* The NEON gemms for the K-quants and IQ4_XS against Q8_0 activations; the
 * semantics of ek_gemm_kquant_scalar (kquants.c), with the fp32 additions in
 * another order (the integer dots are exact). The engine of
 * kquants_avx512.c for AArch64, in two variants like matmul_neon.c's sets:
 * sdot (the dotprod extension) and widening multiplies (every ARMv8).
 *
 * Both multiply signed by signed bytes, so a type's unpacker (below) makes
 * its values as they are (-127..113 for IQ4_XS's levels, -32..31 for Q6_K,
 * ...) and no offsets or corrections are needed; per super-block of 256
 * weights it makes
 *   W[g]   sixteen vectors of 16 signed bytes, group g = weights 16g..16g+15:
 *          activation block 8b + c is W[2c], W[2c + 1], read in place;
 *   sc[g]  the integer scale of group g;
 *   cm     the types with minimums: dmin * min of each group, as fp32.
 * Per activation block the two group dots (4 int32 lanes each) are scaled
 * by their integer scales, converted once and multiplied by d times the
 * block's scale; the minimums meet the activations' per-16 scaled sums
 * (kquants_simd.h) once per super-block.
 *
 * Ranges: the widening variant adds two byte products in int16 before
 * widening: |w| <= 127 for every type and |x| <= 128, so |sum| <= 32512.
 * A group dot is at most 16 * 127 * 128 = 260096 and a scale at most 128 in
 * magnitude: two scaled groups stay far inside int32.
 *
 * Built and tested with Debian's aarch64 cross compiler under qemu-user
 * (make neon-test); elsewhere these are stubs for the scalar kernel. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#include "kernels/kquants_simd.h"

#define INLINE static inline __attribute__((always_inline))
/* As in matmul_neon.c: the sdot intrinsics need armv8.2-a+dotprod, and
 * these run only where the CPU reports it. */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

typedef struct kq_unpacked {
    int8x16_t w[16];
    int32_t sc[16];
    float32x4_t cm[4]; /* groups 4k..4k+3; only the types with minimums */
    float d;
} kq_unpacked;

/* ---- unpackers ------------------------------------------------------------- */

/* f16 -> f32 in hardware (fcvt): every half is exact in fp32. */
INLINE float half(uint16_t h)
{
    __fp16 f;
    memcpy(&f, &h, sizeof f);
    return (float)f;
}

/* cm = dmin * (16 unsigned bytes, one per group). */
INLINE void group_mins(uint8x16_t m, float dmin, kq_unpacked *u)
{
    uint16x8_t lo = vmovl_u8(vget_low_u8(m)), hi = vmovl_high_u8(m);
    u->cm[0] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), dmin);
    u->cm[1] = vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(lo)), dmin);
    u->cm[2] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), dmin);
    u->cm[3] = vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(hi)), dmin);
}

/* Q4_K/Q5_K: 32 bytes hold sub-block 2c in their low nibbles and 2c + 1 in
 * their high ones; Q5_K's fifth bit of sub-block j is bit j of qh[l]. */
INLINE void unpack_q45(const uint8_t *scales, uint16_t d, uint16_t dmin, const uint8_t *qs, const uint8_t *qh,
                       kq_unpacked *u)
{
    uint32_t k[4];
    ek_kq_scales_k4(scales, k);
    const uint8_t *sb = (const uint8_t *)k; /* scales 0-7, mins 0-7 */
    for (int j = 0; j < 8; j++) u->sc[2 * j] = u->sc[2 * j + 1] = sb[j];
    uint8x8_t m = vld1_u8(sb + 8);
    group_mins(vzip1q_u8(vcombine_u8(m, m), vcombine_u8(m, m)), half(dmin), u);
    u->d = half(d);
    const uint8x16_t m4 = vdupq_n_u8(15), b16 = vdupq_n_u8(16);
    uint8x16_t h[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
    if (qh) {
        h[0] = vld1q_u8(qh);
        h[1] = vld1q_u8(qh + 16);
    }
    for (int c = 0; c < 4; c++)
        for (int k2 = 0; k2 < 2; k2++) {
            uint8x16_t q = vld1q_u8(qs + 32 * c + 16 * k2);
            uint8x16_t lo = vandq_u8(q, m4), hi = vshrq_n_u8(q, 4);
            if (qh) {
                lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h[k2], vdupq_n_u8((uint8_t)(1u << (2 * c)))), b16));
                hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h[k2], vdupq_n_u8((uint8_t)(2u << (2 * c)))), b16));
            }
            u->w[4 * c + k2] = vreinterpretq_s8_u8(lo);
            u->w[4 * c + 2 + k2] = vreinterpretq_s8_u8(hi);
        }
}

/* Per 128 weights: ql[l] and ql[l + 32] give four low nibbles, qh[l] their
 * four pairs of high bits (vsli puts them above the nibble); minus 32. */
INLINE void unpack_q6_k(const ek_block_q6_k *b, kq_unpacked *u)
{
    for (int g = 0; g < 16; g++) u->sc[g] = b->scales[g];
    u->d = half(b->d);
    const uint8x16_t m2 = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++) {
            uint8x16_t l0 = vld1q_u8(b->ql + 64 * h + 16 * k), l1 = vld1q_u8(b->ql + 64 * h + 32 + 16 * k);
            uint8x16_t qh = vld1q_u8(b->qh + 32 * h + 16 * k);
            uint8x16_t e0 = vsliq_n_u8(l0, vandq_u8(qh, m2), 4);
            uint8x16_t e1 = vsliq_n_u8(l1, vandq_u8(vshrq_n_u8(qh, 2), m2), 4);
            uint8x16_t e2 = vsliq_n_u8(vshrq_n_u8(l0, 4), vandq_u8(vshrq_n_u8(qh, 4), m2), 4);
            uint8x16_t e3 = vsliq_n_u8(vshrq_n_u8(l1, 4), vshrq_n_u8(qh, 6), 4);
            u->w[8 * h + k] = vsubq_s8(vreinterpretq_s8_u8(e0), m32);
            u->w[8 * h + 2 + k] = vsubq_s8(vreinterpretq_s8_u8(e1), m32);
            u->w[8 * h + 4 + k] = vsubq_s8(vreinterpretq_s8_u8(e2), m32);
            u->w[8 * h + 6 + k] = vsubq_s8(vreinterpretq_s8_u8(e3), m32);
        }
}

/* Q2_K and Q3_K: weight 128h + 32s + l is bits 2s of qs[32h + l] (shifted
 * by a vector count: s is a loop variable); Q3_K's value is that plus four
 * when bit 4h + s of hmask[l] is set, minus four. */
INLINE void unpack_q23_lows(const uint8_t *qs, const uint8_t *hmask, kq_unpacked *u)
{
    const uint8x16_t m2 = vdupq_n_u8(3), b4 = vdupq_n_u8(4);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++) {
            uint8x16_t q = vld1q_u8(qs + 32 * h + 16 * k);
            uint8x16_t hm = hmask ? vld1q_u8(hmask + 16 * k) : vdupq_n_u8(0);
            for (int s = 0; s < 4; s++) {
                uint8x16_t e = vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)(-2 * s))), m2);
                int8x16_t v = vreinterpretq_s8_u8(e);
                if (hmask) {
                    e = vorrq_u8(e, vandq_u8(vtstq_u8(hm, vdupq_n_u8((uint8_t)(1u << (4 * h + s)))), b4));
                    v = vsubq_s8(vreinterpretq_s8_u8(e), vreinterpretq_s8_u8(b4));
                }
                u->w[8 * h + 2 * s + k] = v;
            }
        }
}

INLINE void unpack_q3_k(const ek_block_q3_k *b, kq_unpacked *u)
{
    uint32_t k[4];
    ek_kq_scales_k3(b->scales, k);
    const uint8_t *s = (const uint8_t *)k;
    for (int g = 0; g < 16; g++) u->sc[g] = (int32_t)s[g] - 32;
    u->d = half(b->d);
    unpack_q23_lows(b->qs, b->hmask, u);
}

INLINE void unpack_q2_k(const ek_block_q2_k *b, kq_unpacked *u)
{
    for (int g = 0; g < 16; g++) u->sc[g] = b->scales[g] & 15;
    group_mins(vshrq_n_u8(vld1q_u8(b->scales), 4), half(b->dmin), u);
    u->d = half(b->d);
    unpack_q23_lows(b->qs, NULL, u);
}

/* Sub-block j's 16 bytes: weights 32j..32j+15 in the low nibbles,
 * 32j+16..32j+31 in the high ones, each looked up in the levels. */
INLINE void unpack_iq4_xs(const ek_block_iq4_xs *b, kq_unpacked *u)
{
    uint64_t ls = ek_kq_scales_iq4_xs(b);
    for (int j = 0; j < 8; j++) u->sc[2 * j] = u->sc[2 * j + 1] = (int32_t)((ls >> (8 * j)) & 63) - 32;
    u->d = half(b->d);
    const int8x16_t lut = vld1q_s8(ek_iq4_levels);
    const uint8x16_t m4 = vdupq_n_u8(15);
    for (int j = 0; j < 8; j++) {
        uint8x16_t q = vld1q_u8(b->qs + 16 * j);
        u->w[2 * j] = vqtbl1q_s8(lut, vandq_u8(q, m4));
        u->w[2 * j + 1] = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
    }
}

EK_KQ_DEFINE_UNPACK(INLINE, kq_unpacked)

/* ---- byte dots: 16 products into 4 int32 lanes ----------------------------- */

DOTPROD INLINE int32x4_t dot16_sdot(int32x4_t acc, int8x16_t w, int8x16_t x) { return vdotq_s32(acc, w, x); }

/* smull + smlal2 add two products in int16 (bounded above), sadalp widens. */
INLINE int32x4_t dot16_mull(int32x4_t acc, int8x16_t w, int8x16_t x)
{
    return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x));
}

/* ---- the engine -------------------------------------------------------------- */

/* Row r for tokens t0..t0+T-1, dt and T constants. The sub-blocks of 32 of
 * Q4_K, Q5_K and IQ4_XS share one scale: one dot chain for the block. */
#define ROW_TOKENS(NAME, ATTR, DOT16)                                                                          \
    ATTR INLINE void NAME(float *y, int64_t ys, const et_dtype dt, const char *row, int64_t r,                  \
                          const ek_kq_acts *a, const char *x, size_t xs, int t0, const int T)                   \
    {                                                                                                          \
        const int has_min = dt == ET_Q2_K || dt == ET_Q4_K || dt == ET_Q5_K;                                  \
        const int by32 = dt == ET_Q4_K || dt == ET_Q5_K || dt == ET_IQ4_XS;                                   \
        float32x4_t acc[EK_KQ_KT];                                                                             \
        for (int t = 0; t < T; t++) acc[t] = vdupq_n_f32(0.0f);                                                \
        const int64_t nb = a->n / EK_QK_K, blocks = a->n / EK_QBLOCK;                                         \
        for (int64_t b = 0; b < nb; b++) {                                                                     \
            kq_unpacked u;                                                                                     \
            unpack(dt, row, b, &u);                                                                            \
            for (int t = 0; t < T; t++) {                                                                      \
                const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + 8 * b;         \
                const float *dx = a->dx + (size_t)(t0 + t) * (size_t)blocks + 8 * b;                          \
                for (int c = 0; c < 8; c++) {                                                                  \
                    int8x16_t x0 = vld1q_s8(xb[c].q), x1 = vld1q_s8(xb[c].q + 16);                             \
                    const int32x4_t z = vdupq_n_s32(0);                                                        \
                    int32x4_t i = by32 ? vmulq_n_s32(DOT16(DOT16(z, u.w[2 * c], x0), u.w[2 * c + 1], x1),      \
                                                     u.sc[2 * c])                                              \
                                       : vmlaq_n_s32(vmulq_n_s32(DOT16(z, u.w[2 * c], x0), u.sc[2 * c]),       \
                                                     DOT16(z, u.w[2 * c + 1], x1), u.sc[2 * c + 1]);           \
                    acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(i), u.d * dx[c]);                               \
                }                                                                                              \
                if (has_min) {                                                                                 \
                    const float *ds = a->ds16 + (size_t)(t0 + t) * (size_t)(2 * blocks) + 16 * b;             \
                    for (int k = 0; k < 4; k++) acc[t] = vfmsq_f32(acc[t], u.cm[k], vld1q_f32(ds + 4 * k));    \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        for (int t = 0; t < T; t++) y[(t0 + t) * ys + r] = vaddvq_f32(acc[t]);                                 \
    }

ROW_TOKENS(row_tokens_sdot, DOTPROD, dot16_sdot)
ROW_TOKENS(row_tokens_mull, , dot16_mull)

EK_KQ_DEFINE_ROWS(sdot_rows, DOTPROD, row_tokens_sdot)
EK_KQ_DEFINE_ROWS(mull_rows, , row_tokens_mull)

void ek_gemm_kquant_neon_sdot(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                              size_t xs, int nt)
{
    ek_kq_gemm_rows(sdot_rows(w->dtype), y, ys, w, r0, r1, x, xs, nt);
}

void ek_gemm_kquant_neon_mull(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                              size_t xs, int nt)
{
    ek_kq_gemm_rows(mull_rows(w->dtype), y, ys, w, r0, r1, x, xs, nt);
}

#else /* not AArch64: never in a kernel set, kept linkable */
void ek_gemm_kquant_neon_sdot(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                              size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}

void ek_gemm_kquant_neon_mull(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                              size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
