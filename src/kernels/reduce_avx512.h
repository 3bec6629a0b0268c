/* Horizontal sums of AVX-512 vectors, shared by the kernels that end with
 * one sum per vector: the attention scores (vec_avx512.c) and the K-quant
 * decode engines (kquants_avx512.c, kquants_sb32_avx512.c). x86 only; the
 * target attribute is the least these need and inlines into any AVX-512
 * kernel's own. */
#ifndef EMBER_KERNELS_REDUCE_AVX512_H
#define EMBER_KERNELS_REDUCE_AVX512_H

#include <immintrin.h>

/* The sums of four vectors' lanes, {sum a[0], .., sum a[3]}: interleaving
 * pairs halves the vectors at every step, where four separate reductions
 * would each shuffle a whole vector down to one lane. */
__attribute__((target("avx512f"), always_inline)) static inline __m128 ek_reduce4_ps(const __m512 *a)
{
    /* per 128-bit lane: {a0 0+2, a1 0+2, a0 1+3, a1 1+3} and the same for a2, a3 */
    __m512 b0 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
    __m512 b1 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
    /* per 128-bit lane: {a0, a1, a2, a3}, each a quarter of the lane's sum */
    __m512 c = _mm512_add_ps(_mm512_shuffle_ps(b0, b1, 0x44), _mm512_shuffle_ps(b0, b1, 0xee));
    /* the four 128-bit lanes added */
    __m256 d = _mm256_add_ps(_mm512_castps512_ps256(c),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
}

#endif
