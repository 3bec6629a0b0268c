/* The AVX2 kernel set (AVX2 + FMA + F16C): every x86-64 of the last decade.
 * ek_kernels_by_name() checks those three flags before handing it out.
 *
 * Semantics are those of matmul_generic.c; only the order of the fp32
 * additions differs (the integer block dots are exact).
 *
 *  - float formats: an R rows x T tokens register tile of fp32
 *    accumulators, 8 columns per step; a weight vector loaded (and widened
 *    from f16/bf16) once serves T tokens. Columns past the last multiple of
 *    8 are added in scalar code (AVX2 has no 16-bit masked loads).
 *  - Q8_0/Q4_0/IQ4_NL: one block per vector, R rows x T tokens. Without
 *    VNNI the byte dot is vpmaddubsw (unsigned x signed bytes -> int16
 *    pairs) then vpmaddwd by ones (-> int32). vpmaddubsw saturates at
 *    int16, so Q8_0 uses the sign trick: |w| (unsigned, <= 127) times x with
 *    w's sign, pairs <= 2 * 127 * 127 < 32767. Q4_0 nibbles (0..15) are
 *    unsigned as they are; the -8 offset is taken off as 8 * x in int16,
 *    exactly. IQ4_NL is Q4_0's layout whose nibbles index 16 levels
 *    (-127..113): a vpshufb of the levels turns the nibbles into a Q8_0
 *    block in registers, which then takes the sign trick. Q4_1, Q5_0 and
 *    Q5_1 (q32.h) are Q4_0's nibbles plus a fifth bit (a byte mask from qh)
 *    and/or an fp32 offset term; Q5_0's -16 is taken off as Q4_0's -8.
 * Weights come from mmapped files: every load is unaligned. */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_avx2(void);

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/q32.h"
#include "kernels/simd_common.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
/* Tile bodies take R/T as parameters and are inlined with constants, so the
 * loops unroll and the accumulator arrays live in registers. */
#define INLINE static inline __attribute__((always_inline)) TARGET

/* Decode reads each weight byte once, from DRAM. A tile walks its rows as
 * R interleaved short streams, which the hardware prefetcher picks up late,
 * so it prefetches (into L2) the region two tiles further on at its own
 * pace, `step` bytes per step. */
#ifndef PF_AHEAD_TILES
#define PF_AHEAD_TILES 2
#endif
INLINE void prefetch_step(const char *p, const int step)
{
    _Pragma("GCC unroll 8") for (int o = 0; o < step; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
}

INLINE float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* ---- float formats ------------------------------------------------------- */

INLINE __m256 wload_f32(const void *row, int64_t c) { return _mm256_loadu_ps((const float *)row + c); }

INLINE __m256 wload_f16(const void *row, int64_t c)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)));
}

/* bf16 is the top half of an fp32: widen and shift, exact. */
INLINE __m256 wload_bf16(const void *row, int64_t c)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static inline float sload_f32(const void *row, int64_t c) { return ((const float *)row)[c]; }
static inline float sload_f16(const void *row, int64_t c) { return ek_f16_to_f32(((const uint16_t *)row)[c]); }
static inline float sload_bf16(const void *row, int64_t c) { return ek_bf16_to_f32(((const uint16_t *)row)[c]); }

#define FLOAT_TILE(NAME, WLOAD, SLOAD, ES)                                                   \
    INLINE void NAME(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const char *x,  \
                     size_t xs, int t0, int64_t n, const int R, const int T)                 \
    {                                                                                        \
        __m256 acc[4][2];                                                                    \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                  \
            _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) acc[i][j] = _mm256_setzero_ps(); \
        const char *wr = w + (size_t)r * rb;                                                 \
        const char *pf = wr + (size_t)R * rb * PF_AHEAD_TILES;                               \
        const float *xt = (const float *)(x + (size_t)t0 * xs);                              \
        size_t xf = xs / sizeof(float);                                                      \
        int64_t c = 0;                                                                       \
        for (; c + 8 <= n; c += 8) {                                                         \
            if (t0 == 0) prefetch_step(pf + (size_t)c * R * ES, 8 * R * ES);                \
            __m256 wv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) wv[i] = WLOAD(wr + (size_t)i * rb, c); \
            _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {                            \
                __m256 xv = _mm256_loadu_ps(xt + (size_t)j * xf + c);                        \
                _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                          \
                    acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);                       \
            }                                                                                \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                  \
            _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {                            \
                float s = hsum(acc[i][j]);                                                   \
                for (int64_t cc = c; cc < n; cc++)                                           \
                    s += SLOAD(wr + (size_t)i * rb, cc) * xt[(size_t)j * xf + cc];           \
                y[(t0 + j) * ys + r + i] = s;                                                \
            }                                                                                \
    }

FLOAT_TILE(tile_f32, wload_f32, sload_f32, 4)
FLOAT_TILE(tile_f16, wload_f16, sload_f16, 2)
FLOAT_TILE(tile_bf16, wload_bf16, sload_bf16, 2)

/* Rows outer, tokens inner: a 4-row strip of weights stays in cache while
 * every token passes over it, so weights stream from memory once per call. */
#define FLOAT_GEMM(NAME, TILE)                                                               \
    static TARGET void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, \
                            const void *x, size_t xs, int nt)                                \
    {                                                                                        \
        size_t rb = ek_row_bytes(w->dtype, w->cols);                                         \
        const char *wd = w->data, *xd = x;                                                   \
        int64_t n = w->cols;                                                                 \
        for (int64_t r = r0; r < r1;) {                                                      \
            int R = r1 - r >= 4 ? 4 : 1;                                                     \
            for (int t = 0; t < nt; t += 2) {                                                \
                int T = nt - t >= 2 ? 2 : 1;                                                 \
                if (R == 4 && T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 2);            \
                else if (R == 4) TILE(y, ys, wd, rb, r, xd, xs, t, n, 4, 1);                 \
                else if (T == 2) TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 2);                 \
                else TILE(y, ys, wd, rb, r, xd, xs, t, n, 1, 1);                             \
            }                                                                                \
            r += R;                                                                          \
        }                                                                                    \
    }

FLOAT_GEMM(gemm_f32, tile_f32)
FLOAT_GEMM(gemm_f16, tile_f16)
FLOAT_GEMM(gemm_bf16, tile_bf16)

/* ---- Q8_0 / Q4_0 ----------------------------------------------------------- */

INLINE __m256 half_bcast(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16((short)h)); }

/* Q4_0 byte j holds elements j (low nibble) and j + 16 (high nibble): the
 * same 16 bytes in both halves, the upper half shifted down by 4. */
INLINE __m256i nibbles(const ek_block_q4_0 *b)
{
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b->qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* The fifth bits of a Q5 block (q32.h: bit k of qh is element k, which is
 * byte k of nibbles()) as 0x10 in the bytes whose bit is set: each byte
 * picks its qh byte, keeps its own bit and compares. */
INLINE __m256i fifth_bits(const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                          3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), pick), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}


/* R rows x T tokens, one block at a time. Per block the activation side
 * (bytes, scale, and for Q4_0 and Q5_0 the 8 * x or 16 * x pairs) is loaded
 * once per token and reused for the R rows. Q4_1/Q5_1's values q (0..31)
 * are unsigned as they are; their offset m adds m * dx * sum(x), summed per
 * lane alongside the dot (the lanes' partial sums of x, once per token). */
INLINE void qtile(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const char *x,
                  size_t xs, int t0, int64_t nb, const int R, const int T, const int kind)
{
    const int q4 = kind == QK_Q4_0, q5 = kind == QK_Q5_0 || kind == QK_Q5_1;
    const int unsigned_q = q4 || kind == QK_Q4_1 || q5, offset = kind == QK_Q4_1 || kind == QK_Q5_1;
    __m256 acc[4][4];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int j = 0; j < T; j++) acc[i][j] = _mm256_setzero_ps();
    const __m256i ones16 = _mm256_set1_epi16(1), ones8 = _mm256_set1_epi8(1);
    const __m256i bias = _mm256_set1_epi8(kind == QK_Q5_0 ? 16 : 8); /* Q4_0: q - 8, Q5_0: q - 16 */
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ek_iq4_levels));
    const size_t bb = qk_bytes(kind);
    const char *pf = w + (size_t)(r + R * PF_AHEAD_TILES) * rb;
    for (int64_t b = 0; b < nb; b++) {
        if (T == 1) prefetch_step(pf + (size_t)b * R * bb, (int)(R * bb));
        __m256i xq[4], x8[4];
        __m256 dx[4], xsum[4];
        _Pragma("GCC unroll 4") for (int j = 0; j < T; j++) {
            const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + j) * xs) + b;
            xq[j] = _mm256_loadu_si256((const __m256i *)xb->q);
            dx[j] = half_bcast(xb->d);
            if (q4 || kind == QK_Q5_0) x8[j] = _mm256_maddubs_epi16(bias, xq[j]);
            if (offset) xsum[j] = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(ones8, xq[j]), ones16));
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
            const char *blk = w + (size_t)(r + i) * rb + (size_t)b * bb;
            __m256 dw = half_bcast(ld16(blk));
            __m256i wu, ws = _mm256_setzero_si256();
            if (q4) {
                wu = nibbles((const ek_block_q4_0 *)blk);
            } else if (kind == QK_Q4_1) {
                wu = nibbles((const ek_block_q4_0 *)(blk + 2)); /* d, m, then Q4_0's layout */
            } else if (q5) { /* d, (m,) qh[4], qs[16] */
                const char *qh = blk + (kind == QK_Q5_0 ? 2 : 4);
                wu = _mm256_or_si256(nibbles((const ek_block_q4_0 *)(qh + 2)), fifth_bits((const uint8_t *)qh));
            } else if (kind == QK_IQ4_NL) {
                ws = _mm256_shuffle_epi8(levels, nibbles((const ek_block_q4_0 *)blk));
                wu = _mm256_abs_epi8(ws);
            } else {
                ws = _mm256_loadu_si256((const __m256i *)(blk + 2));
                wu = _mm256_abs_epi8(ws);
            }
            const __m256 mw = offset ? half_bcast(ld16(blk + 2)) : dw;
            _Pragma("GCC unroll 4") for (int j = 0; j < T; j++) {
                /* |p| <= 2 * 31 * 128 for the unsigned 5-bit values */
                __m256i p = q4 || kind == QK_Q5_0 ? _mm256_sub_epi16(_mm256_maddubs_epi16(wu, xq[j]), x8[j])
                            : unsigned_q         ? _mm256_maddubs_epi16(wu, xq[j])
                                                 : _mm256_maddubs_epi16(wu, _mm256_sign_epi8(xq[j], ws));
                __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones16));
                acc[i][j] = _mm256_fmadd_ps(dot, _mm256_mul_ps(dw, dx[j]), acc[i][j]);
                if (offset) acc[i][j] = _mm256_fmadd_ps(xsum[j], _mm256_mul_ps(mw, dx[j]), acc[i][j]);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int j = 0; j < T; j++)
            y[(t0 + j) * ys + r + i] = hsum(acc[i][j]);
}

EK_QUANT_GEMM(gemm_q8_0, TARGET, qtile, QK_Q8_0)
EK_QUANT_GEMM(gemm_q4_0, TARGET, qtile, QK_Q4_0)
EK_QUANT_GEMM(gemm_iq4_nl, TARGET, qtile, QK_IQ4_NL)
EK_QUANT_GEMM(gemm_q4_1, TARGET, qtile, QK_Q4_1)
EK_QUANT_GEMM(gemm_q5_0, TARGET, qtile, QK_Q5_0)
EK_QUANT_GEMM(gemm_q5_1, TARGET, qtile, QK_Q5_1)

/* ---- activation quantization -------------------------------------------- */

/* Bit-identical to q8_0_from_f32 in formats.c (see matmul_avx512.c for the
 * argument): NaN-ignoring amax, the same fp32 divisions, vcvtps2ph's round
 * to nearest even for d, roundf as trunc plus a step at a fraction >= 0.5,
 * and cvttps2dq's 0x80000000 for NaN/out of range, of which the low byte is
 * kept as the scalar (int8_t) cast keeps it. */
INLINE __m256i round_q8(__m256 v)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    t = _mm256_add_ps(t, _mm256_and_ps(up, step));
    return _mm256_and_si256(_mm256_cvttps_epi32(t), _mm256_set1_epi32(0xff));
}

static TARGET void quantize_q8_0(const float *x, void *dst, int64_t n)
{
    ek_block_q8_0 *out = dst;
    const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        __m256 v[4], a = zero;
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + b * EK_QBLOCK + 8 * k);
            /* max_ps returns its second operand when the first is NaN */
            a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[k]), zero), a);
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        float amax = _mm_cvtss_f32(m);
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; k++) q[k] = round_q8(_mm256_mul_ps(v[k], vid));
        /* bytes 0..255 pack without saturation; the packs interleave the
         * 128-bit lanes, the final permute puts the dwords back in order */
        __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)out[b].q, p);
    }
}

/* Attention primitives: two 8-lane accumulators, scalar tail. */
TARGET static float dot_f32_avx2(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    __m256 s = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

TARGET static void axpy_f32_avx2(float *y, float a, const float *x, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

EK_ATTN_FROM_DOT_AXPY(attn_scores_avx2, attn_accum_avx2, dot_f32_avx2, axpy_f32_avx2, TARGET)

static const ek_kernel_set avx2_set = {
    "avx2",
    {[ET_F32] = gemm_f32, [ET_F16] = gemm_f16, [ET_BF16] = gemm_bf16, [ET_Q8_0] = gemm_q8_0,
     [ET_Q4_0] = gemm_q4_0, [ET_IQ4_NL] = gemm_iq4_nl, EK_GEMM_KQUANTS_256(ek_gemm_kquant_avx2),
     [ET_Q4_1] = gemm_q4_1, [ET_Q5_0] = gemm_q5_0, [ET_Q5_1] = gemm_q5_1},
    quantize_q8_0,
    dot_f32_avx2,
    axpy_f32_avx2,
    attn_scores_avx2,
    attn_accum_avx2,
    ek_exp_sum_scalar,
    ek_glu_scalar,
    {0}, /* row conversions: the format table's */
    {0}, /* convs: the scalar twins */
    NULL,
    {0}, /* no interleaved-layout gemms: weights keep the row layout */
    EK_NO_PREPARED,
};

const ek_kernel_set *ek_kernels_avx2(void) { return &avx2_set; }

#else /* not x86-64 */
const ek_kernel_set *ek_kernels_avx2(void) { return NULL; }
#endif
