/* AVX-512 causal conv kernels (conv.h) and SnakeBeta.
 *
 * A tile is R panels (R x 16 output channels) by T time steps; its R x T
 * accumulators stay in registers (2 x 12 = 24 of the 32 zmm). Per input
 * channel the tile loads R weight vectors and broadcasts T activations, so
 * each weight load feeds T FMAs and the loop is bound by the FMA unit, not
 * by loads. Taps and dilation only move the activation pointer, which is why
 * no im2col copy is needed. The fp32 kernel sums in the same order for every
 * tile shape, and so does the f16 one (halves widened as they load); the
 * bf16 kernel multiplies pairs of input channels with VDPBF16PS (fp32
 * accumulation). */
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/vec_avx512.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#define INLINE static inline __attribute__((always_inline))

#define TILE_T 12

INLINE TARGET void store_tile(float *y, int64_t ys, __m512 acc[2][TILE_T], int32_t c0,
                              int32_t cout, const int R, const int T)
{
    _Pragma("GCC unroll 2") for (int i = 0; i < R; i++) {
        int32_t c = c0 + 16 * i, left = cout - c;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        _Pragma("GCC unroll 12") for (int t = 0; t < T; t++)
            _mm512_mask_storeu_ps(y + (int64_t)t * ys + c, m, acc[i][t]);
    }
}

/* H: the weights are IEEE halves (EK_CONV_F16), widened as they are loaded;
 * the same sums in the same order as fp32 weights of those values. */
INLINE TARGET void tile_f32(float *y, int64_t ys, const ek_conv_weights *w, int32_t p,
                            const float *x, int64_t xs, int32_t dil, const int R, const int T,
                            const int H)
{
    __m512 acc[2][TILE_T];
    _Pragma("GCC unroll 2") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 12") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps();
    const int32_t cin = w->cin, taps = w->taps;
    const size_t es = H ? 2 : 4; /* bytes a weight */
    const char *w0 = (const char *)w->data + (size_t)p * w->panel_bytes;
    for (int32_t j = 0; j < taps; j++) {
        const float *xj = x - (int64_t)(taps - 1 - j) * dil * xs;
        const char *wj = w0 + (size_t)j * cin * 16 * es;
        for (int32_t ci = 0; ci < cin; ci++) {
            __m512 wv[2];
            _Pragma("GCC unroll 2") for (int i = 0; i < R; i++) {
                const char *at = wj + (size_t)i * w->panel_bytes + (size_t)ci * 16 * es;
                wv[i] = H ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)at))
                          : _mm512_load_ps((const float *)at);
            }
            _Pragma("GCC unroll 12") for (int t = 0; t < T; t++) {
                __m512 xb = _mm512_set1_ps(xj[(int64_t)t * xs + ci]);
                _Pragma("GCC unroll 2") for (int i = 0; i < R; i++)
                    acc[i][t] = _mm512_fmadd_ps(wv[i], xb, acc[i][t]);
            }
        }
    }
    store_tile(y, ys, acc, p * 16, w->cout, R, T);
}

INLINE TARGET_BF16 void tile_bf16(float *y, int64_t ys, const ek_conv_weights *w, int32_t p,
                                  const uint16_t *x, int64_t xs, int32_t dil, const int R,
                                  const int T, const int H)
{
    (void)H; /* bf16 weights are bf16; TILE_CASES passes every tile an H */
    __m512 acc[2][TILE_T];
    _Pragma("GCC unroll 2") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 12") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps();
    const int32_t pairs = w->cin / 2, taps = w->taps;
    const char *w0 = (const char *)w->data + (size_t)p * w->panel_bytes;
    for (int32_t j = 0; j < taps; j++) {
        const uint16_t *xj = x - (int64_t)(taps - 1 - j) * dil * xs;
        const char *wj = w0 + (size_t)j * pairs * 64;
        for (int32_t q = 0; q < pairs; q++) {
            __m512bh wv[2];
            _Pragma("GCC unroll 2") for (int i = 0; i < R; i++)
                wv[i] = (__m512bh)_mm512_load_si512(wj + (size_t)i * w->panel_bytes + (size_t)q * 64);
            _Pragma("GCC unroll 12") for (int t = 0; t < T; t++) {
                uint32_t two;
                memcpy(&two, xj + (int64_t)t * xs + 2 * q, sizeof two);
                __m512bh xb = (__m512bh)_mm512_set1_epi32((int)two);
                _Pragma("GCC unroll 2") for (int i = 0; i < R; i++)
                    acc[i][t] = _mm512_dpbf16_ps(acc[i][t], wv[i], xb);
            }
        }
    }
    store_tile(y, ys, acc, p * 16, w->cout, R, T);
}

/* One wrapper per (R, T) so every tile is fully unrolled with constants. */
#define TILE_CASES(TILE, R, H)                                                                 \
    switch (T) {                                                                               \
    case 12: TILE(y, ys, w, p, x, xs, dil, R, 12, H); break;                                   \
    case 11: TILE(y, ys, w, p, x, xs, dil, R, 11, H); break;                                   \
    case 10: TILE(y, ys, w, p, x, xs, dil, R, 10, H); break;                                   \
    case 9: TILE(y, ys, w, p, x, xs, dil, R, 9, H); break;                                     \
    case 8: TILE(y, ys, w, p, x, xs, dil, R, 8, H); break;                                     \
    case 7: TILE(y, ys, w, p, x, xs, dil, R, 7, H); break;                                     \
    case 6: TILE(y, ys, w, p, x, xs, dil, R, 6, H); break;                                     \
    case 5: TILE(y, ys, w, p, x, xs, dil, R, 5, H); break;                                     \
    case 4: TILE(y, ys, w, p, x, xs, dil, R, 4, H); break;                                     \
    case 3: TILE(y, ys, w, p, x, xs, dil, R, 3, H); break;                                     \
    case 2: TILE(y, ys, w, p, x, xs, dil, R, 2, H); break;                                     \
    default: TILE(y, ys, w, p, x, xs, dil, R, 1, H); break;                                    \
    }

/* A tile of R panels by T steps with both constant (TILE_CASES) */
#define RUN_TILES(NAME, ATTR, TILE, XTYPE, H)                                                  \
    static ATTR void NAME(float *y, int64_t ys, const ek_conv_weights *w, int32_t p,            \
                          const XTYPE *x, int64_t xs, int32_t dil, int R, int T)                \
    {                                                                                          \
        if (R == 2) {                                                                          \
            TILE_CASES(TILE, 2, H)                                                             \
        } else {                                                                               \
            TILE_CASES(TILE, 1, H)                                                             \
        }                                                                                      \
    }
RUN_TILES(run_f32, TARGET, tile_f32, float, 0)
RUN_TILES(run_f16, TARGET, tile_f32, float, 1)
RUN_TILES(run_bf16, TARGET_BF16, tile_bf16, uint16_t, 0)

/* Panels in pairs, time steps in tiles of TILE_T; the remainders take the
 * narrower tiles. */
#define CONV_DRIVER(NAME, RUN, XTYPE)                                                          \
    void NAME(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,          \
              const void *x, int64_t xs, int32_t nt, int32_t dilation)                         \
    {                                                                                          \
        for (int32_t p = p0; p < p1; p += 2) {                                                 \
            int R = p1 - p >= 2 ? 2 : 1;                                                       \
            for (int32_t t = 0; t < nt; t += TILE_T) {                                         \
                int T = nt - t >= TILE_T ? TILE_T : nt - t;                                    \
                RUN(y + (int64_t)t * ys, ys, w, p, (const XTYPE *)x + (int64_t)t * xs, xs,     \
                    dilation, R, T);                                                           \
            }                                                                                  \
        }                                                                                      \
    }
CONV_DRIVER(ek_conv_f32_avx512, run_f32, float)
CONV_DRIVER(ek_conv_bf16_avx512, run_bf16, uint16_t)
CONV_DRIVER(ek_conv_f16_avx512, run_f16, float)

/* sin(v)^2 for any v: v = n*pi + r with |r| <= pi/2 (pi split in three parts
 * so r stays exact for |v| up to ~1e5), and sin^2 does not depend on the
 * sign (-1)^n. sin(r) is its Taylor series to r^13 (error < 1e-9 at pi/2). */
static inline __attribute__((always_inline)) TARGET __m512 sin_squared_ps(__m512 v)
{
    const __m512 inv_pi = _mm512_set1_ps(0.318309886183790671f);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, inv_pi),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(3.140625f), v);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(9.67502593994140625e-4f), r);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.509957990978376432e-7f), r);
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 p = _mm512_set1_ps(1.6059043836821614e-10f);   /* 1/13! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-2.5052108385441720e-8f)); /* -1/11! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(2.7557319223985893e-6f));  /* 1/9! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-1.9841269841269841e-4f)); /* -1/7! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(8.3333333333333333e-3f));  /* 1/5! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-1.6666666666666667e-1f)); /* -1/3! */
    __m512 s = _mm512_fmadd_ps(_mm512_mul_ps(p, r2), r, r);
    return _mm512_mul_ps(s, s);
}

TARGET void ek_snake_avx512(float *x, int64_t n_rows, int32_t c, const float *a, const float *inv_b)
{
    for (int64_t t = 0; t < n_rows; t++) {
        float *row = x + t * c;
        for (int32_t i = 0; i < c; i += 16) {
            __mmask16 m = c - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (c - i)) - 1);
            __m512 v = _mm512_maskz_loadu_ps(m, row + i);
            __m512 s = sin_squared_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + i), v));
            v = _mm512_fmadd_ps(s, _mm512_maskz_loadu_ps(m, inv_b + i), v);
            _mm512_mask_storeu_ps(row + i, m, v);
        }
    }
}

#endif
