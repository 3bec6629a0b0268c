/* The AVX-512 attention and activation kernels of matmul.h (scalar twins in
 * kernels_scalar.c): register-blocked GQA attention, and vector exp / erf so
 * that neither the softmax nor the exact GELU costs a libm call per value. */
#include "kernels/vec_avx512.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/formats.h"
#include "kernels/reduce_avx512.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* exp(x): x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is
 * exact), exp(r) by its Taylor series to r^7 (truncation < 6e-9 relative),
 * then times 2^n by vscalefps, which also flushes to 0 below the range. */
INLINE __m512 exp_ps(__m512 x)
{
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.7f)), _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* erf(x) in two pieces, both least-squares fits made for ember in float64
 * (reference/fit_erf.py): |x| <= 1: x P(x^2), relative error 5e-9;
 * 1 < |x| < 4: 1 - exp(Q(|x| - 2.5)) with Q fitting log(erfc), error 6e-9
 * in the exponent; beyond 4, erfc < 2e-8 rounds away against 1. */
INLINE __m512 erf_ps(__m512 x)
{
    static const float P[7] = {1.1283792257e+00f, -3.7612628937e-01f, 1.1283634603e-01f, -2.6856070384e-02f, 5.1929578185e-03f, -8.0537504982e-04f, 8.0068726675e-05f};
    static const float Q[11] = {-7.8068151474e+00f, -5.3526806831e+00f, -9.4389373064e-01f, -1.0858145542e-02f, 2.1655161399e-03f, -4.2074391968e-04f, 7.6953008829e-05f, -1.2951772987e-05f, 1.8376233584e-06f, -7.1104061306e-08f, -3.9632961801e-08f};
    __m512 a = _mm512_abs_ps(x);
    __m512 t = _mm512_mul_ps(a, a), p = _mm512_set1_ps(P[6]);
    for (int i = 5; i >= 0; i--) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(P[i]));
    __m512 small = _mm512_mul_ps(a, p);
    __m512 z = _mm512_sub_ps(_mm512_min_ps(a, _mm512_set1_ps(4.0f)), _mm512_set1_ps(2.5f));
    __m512 q = _mm512_set1_ps(Q[10]);
    for (int i = 9; i >= 0; i--) q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(Q[i]));
    __m512 large = _mm512_sub_ps(_mm512_set1_ps(1.0f), exp_ps(q));
    __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_LE_OQ), large,
                                    small);
    /* copysign(r, x): imm 0xe4 takes a's bits where c is set, b's elsewhere */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(x), _mm512_castps_si512(r), _mm512_set1_epi32(INT32_MIN), 0xe4));
}

INLINE __m512 gelu_erf_ps(__m512 x)
{
    __m512 e = erf_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                         _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* 0.5 x (1 + tanh(y)) = x (1 - 1 / (exp(2y) + 1)), y = sqrt(2/pi)(x + 0.044715 x^3) */
INLINE __m512 gelu_tanh_ps(__m512 x)
{
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    __m512 y = _mm512_mul_ps(_mm512_set1_ps(0.79788456080286536f),
                             _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
    __m512 e = exp_ps(_mm512_add_ps(y, y));
    __m512 s = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
    return _mm512_mul_ps(x, _mm512_sub_ps(_mm512_set1_ps(1.0f), s));
}

/* x sigmoid(x) = x / (1 + exp(-x)) */
INLINE __m512 silu_ps(__m512 x)
{
    __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

TARGET void ek_glu_avx512(float *g, const float *u, int64_t n, ek_glu_act act)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        __m512 y = act == EK_GLU_SILU       ? silu_ps(x)
                   : act == EK_GLU_GELU_TANH ? gelu_tanh_ps(x)
                                             : gelu_erf_ps(x);
        if (u) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(m, u + i));
        _mm512_mask_storeu_ps(g + i, m, y);
    }
}

TARGET float ek_exp_sum_avx512(float *x, int64_t n, float shift)
{
    __m512 sum = _mm512_setzero_ps(), sh = _mm512_set1_ps(shift);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), sh));
        _mm512_mask_storeu_ps(x + i, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

/* The cache rows a decode step reads come from DRAM once, in runs the
 * hardware prefetcher does not run far enough ahead of: the kernels spend
 * their arithmetic, then wait for the rows (measured at 32k keys, 2 KV heads
 * of 256: scores took the time of their arithmetic plus that of reading K).
 * So rows ATTN_PREFETCH_KEYS keys ahead are fetched into L2 as they go (16
 * KiB ahead at 256 floats; 16 measured best, 64 no better than none). */
#ifndef ATTN_PREFETCH_KEYS
#define ATTN_PREFETCH_KEYS 16
#endif
INLINE void prefetch_rows(const float *const *rows, int n, int d)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < d; i += 16) _mm_prefetch((const char *)(rows[j] + i), _MM_HINT_T1);
}

/* H heads x J keys of scores, d a multiple of 16: each K vector is loaded
 * once for the H heads. Keys from DRAM (a decode step reads the whole cache
 * once) go row by row: walking J rows in lockstep, 64 bytes of each in turn,
 * hides the stream from the hardware prefetcher (measured at 32k keys: 1.5x
 * the time of reading the rows front to back); the Q vectors are reloaded
 * from L1 instead. Keys already in cache (`hot`: a prefill's short runs,
 * read by several queries) go in lockstep: H x J independent fma chains
 * instead of H, which left the fma pipes waiting on their latency. Each
 * score sums the same products in the same order either way. */
INLINE void scores_block(float *s, int64_t ss, const float *q, const float *const *k, int d,
                         float scale, const int H, const int J, int hot)
{
    __m512 acc[4][4];
    _Pragma("GCC unroll 4") for (int h = 0; h < H; h++)
        _Pragma("GCC unroll 4") for (int j = 0; j < J; j++) acc[h][j] = _mm512_setzero_ps();
#define SCORES_STEP(j, i)                                                                                      \
    do {                                                                                                       \
        __m512 kv = _mm512_loadu_ps(k[j] + (i));                                                               \
        _Pragma("GCC unroll 4") for (int h = 0; h < H; h++)                                                    \
            acc[h][j] = _mm512_fmadd_ps(_mm512_loadu_ps(q + (int64_t)h * d + (i)), kv, acc[h][j]);             \
    } while (0)
    if (hot)
        for (int i = 0; i < d; i += 16) _Pragma("GCC unroll 4") for (int j = 0; j < J; j++) SCORES_STEP(j, i);
    else
        _Pragma("GCC unroll 4") for (int j = 0; j < J; j++) for (int i = 0; i < d; i += 16) SCORES_STEP(j, i);
#undef SCORES_STEP
    _Pragma("GCC unroll 4") for (int h = 0; h < H; h++) {
        if (J == 4) {
            _mm_storeu_ps(s + h * ss, _mm_mul_ps(ek_reduce4_ps(acc[h]), _mm_set1_ps(scale)));
            continue;
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < J; j++)
            s[h * ss + j] = _mm512_reduce_add_ps(acc[h][j]) * scale;
    }
}

TARGET void ek_attn_scores_avx512(float *s, int64_t s_stride, const float *q, int nh,
                                  const float *const *k, int nk, int d, float scale)
{
    if (d % 16) {
        ek_attn_scores_scalar(s, s_stride, q, nh, k, nk, d, scale);
        return;
    }
    const int hot = nk <= EK_ATTN_HOT_KEYS; /* matmul.h */
    for (int h = 0; h < nh;) {
        int H = nh - h >= 4 ? 4 : nh - h >= 2 ? 2 : 1;
        const float *qh = q + (int64_t)h * d;
        float *sh = s + h * s_stride;
        int j = 0;
        for (; j + 4 <= nk; j += 4) {
            /* the first heads' pass reads the rows from memory */
            if (h == 0 && j + ATTN_PREFETCH_KEYS + 4 <= nk) prefetch_rows(k + j + ATTN_PREFETCH_KEYS, 4, d);
            if (H == 4) scores_block(sh + j, s_stride, qh, k + j, d, scale, 4, 4, hot);
            else if (H == 2) scores_block(sh + j, s_stride, qh, k + j, d, scale, 2, 4, hot);
            else scores_block(sh + j, s_stride, qh, k + j, d, scale, 1, 4, hot);
        }
        for (; j < nk; j++) {
            if (H == 4) scores_block(sh + j, s_stride, qh, k + j, d, scale, 4, 1, hot);
            else if (H == 2) scores_block(sh + j, s_stride, qh, k + j, d, scale, 2, 1, hot);
            else scores_block(sh + j, s_stride, qh, k + j, d, scale, 1, 1, hot);
        }
        h += H;
    }
}

/* o[h][i0 .. i0 + 16C) += sum_j p[h][j] v[j][..] for H heads: the output
 * stays in registers over the nk keys, each V vector is loaded once. */
INLINE void accum_block(float *o, const float *p, int64_t ps, const float *const *v, int nk, int d,
                        int i0, const int H, const int C)
{
    __m512 acc[2][8];
    _Pragma("GCC unroll 4") for (int h = 0; h < H; h++)
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            acc[h][c] = _mm512_loadu_ps(o + (int64_t)h * d + i0 + 16 * c);
    for (int j = 0; j < nk; j++) {
        __m512 vv[8];
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            vv[c] = _mm512_loadu_ps(v[j] + i0 + 16 * c);
        _Pragma("GCC unroll 4") for (int h = 0; h < H; h++) {
            __m512 pb = _mm512_set1_ps(p[h * ps + j]);
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
                acc[h][c] = _mm512_fmadd_ps(pb, vv[c], acc[h][c]);
        }
    }
    _Pragma("GCC unroll 4") for (int h = 0; h < H; h++)
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            _mm512_storeu_ps(o + (int64_t)h * d + i0 + 16 * c, acc[h][c]);
}

/* Keys per round of ek_attn_accum_avx512: their V rows (16 KiB at 256
 * floats) stay in L1 while every head and column range passes over them, so
 * the rows still come in from DRAM front to back. */
enum { ACC_KEYS = 16 };

TARGET void ek_attn_accum_avx512(float *o, const float *p, int64_t p_stride, int nh,
                                 const float *const *v, int nk, int d)
{
    if (d % 16) {
        ek_attn_accum_scalar(o, p, p_stride, nh, v, nk, d);
        return;
    }
    for (int j0 = 0; j0 < nk; j0 += ACC_KEYS) {
        int n = nk - j0 < ACC_KEYS ? nk - j0 : ACC_KEYS;
        if (j0 + ATTN_PREFETCH_KEYS + ACC_KEYS <= nk)
            prefetch_rows(v + j0 + ATTN_PREFETCH_KEYS, ACC_KEYS, d);
        /* two heads x 128 columns: 16 accumulators, the most the registers hold */
        for (int h = 0; h < nh;) {
            int H = nh - h >= 2 ? 2 : 1;
            float *oh = o + (int64_t)h * d;
            const float *ph = p + h * p_stride + j0;
            int i = 0;
            if (H == 2) {
                for (; i + 128 <= d; i += 128) accum_block(oh, ph, p_stride, v + j0, n, d, i, 2, 8);
                for (; i + 64 <= d; i += 64) accum_block(oh, ph, p_stride, v + j0, n, d, i, 2, 4);
                for (; i < d; i += 16) accum_block(oh, ph, p_stride, v + j0, n, d, i, 2, 1);
            } else {
                for (; i + 128 <= d; i += 128) accum_block(oh, ph, p_stride, v + j0, n, d, i, 1, 8);
                for (; i + 64 <= d; i += 64) accum_block(oh, ph, p_stride, v + j0, n, d, i, 1, 4);
                for (; i < d; i += 16) accum_block(oh, ph, p_stride, v + j0, n, d, i, 1, 1);
            }
            h += H;
        }
    }
}

/* ---- row conversions (KV cache rows) -------------------------------------- */

TARGET void ek_f16_to_f32_avx512(const void *src, float *dst, int64_t n)
{
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + i)));
    }
}

TARGET void ek_bf16_to_f32_avx512(const void *src, float *dst, int64_t n)
{
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i));
        _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
    }
}

/* d * q in fp32, as the scalar: both products are exact roundings of the
 * same real number. */
TARGET void ek_q8_0_to_f32_avx512(const void *src, float *dst, int64_t n)
{
    const ek_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        uint16_t h;
        memcpy(&h, &b[i].d, sizeof h);
        __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16((short)h));
        __m128i q0 = _mm_loadu_si128((const __m128i *)b[i].q);
        __m128i q1 = _mm_loadu_si128((const __m128i *)(b[i].q + 16));
        _mm512_storeu_ps(dst + i * EK_QBLOCK, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0))));
        _mm512_storeu_ps(dst + i * EK_QBLOCK + 16,
                         _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1))));
    }
}

#endif
