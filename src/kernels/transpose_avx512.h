/* Eight rows of 16 token lanes (the accumulators of a token-major tile) out
 * to token-major memory: token l's 8 results as one 256-bit access at
 * dst + l * stride; and a token's run of a panel of such results out to y.
 * Used by the prefill tiles of matmul_avx512.c and kquants_prefill_avx512.c.
 * Include after defining TARGET (the includer's target attributes, AVX-512
 * F); x86-64 only. */
#ifndef EMBER_KERNELS_TRANSPOSE_AVX512_H
#define EMBER_KERNELS_TRANSPOSE_AVX512_H

#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>

/* dst[l * stride + i] (+)= v[i] lane l for l < n (<= 16), i < 8: pairs of
 * rows interleaved, then quads, so that quad[m] lane q holds rows 0-3 of
 * token 4q + m and quad[4 + m] lane q rows 4-7; each token is then two
 * 128-bit loads from L1. */
static inline __attribute__((always_inline)) TARGET void ek_store_rows8_t16(float *dst, int64_t stride,
                                                                           const __m512 v[8], int n,
                                                                           int add)
{
    alignas(64) float quad[8][16];
    __m512 a[8];
    for (int i = 0; i < 8; i += 2) {
        a[i / 2] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        a[4 + i / 2] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    /* a[p] (p < 4): rows 2p, 2p+1 of tokens 4q + 0, 1; a[4 + p]: tokens 4q + 2, 3 */
    for (int h = 0; h < 2; h++) {
        const __m512 *lo = &a[4 * h];
        _mm512_store_ps(quad[2 * h], _mm512_shuffle_ps(lo[0], lo[1], 0x44));
        _mm512_store_ps(quad[2 * h + 1], _mm512_shuffle_ps(lo[0], lo[1], 0xee));
        _mm512_store_ps(quad[4 + 2 * h], _mm512_shuffle_ps(lo[2], lo[3], 0x44));
        _mm512_store_ps(quad[4 + 2 * h + 1], _mm512_shuffle_ps(lo[2], lo[3], 0xee));
    }
    for (int l = 0; l < n; l++) {
        const int m = l % 4, q = l / 4;
        __m256 t = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(&quad[m][4 * q])),
                                        _mm_load_ps(&quad[4 + m][4 * q]), 1);
        float *o = dst + l * stride;
        _mm256_storeu_ps(o, add ? _mm256_add_ps(_mm256_loadu_ps(o), t) : t);
    }
}

/* dst[j] (+)= src[j] for j < n: a panel's run for one token into y (GCC's
 * -O2 leaves the plain loop scalar, a load, add and store per float). */
static inline __attribute__((always_inline)) TARGET void ek_store_run(float *dst, const float *src,
                                                                      int64_t n, int add)
{
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 v = _mm512_loadu_ps(src + j);
        _mm512_storeu_ps(dst + j, add ? _mm512_add_ps(_mm512_loadu_ps(dst + j), v) : v);
    }
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, src + j);
        _mm512_mask_storeu_ps(dst + j, m, add ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + j), v) : v);
    }
}

#endif
