/* IQ4_NL on AVX-512 VNNI, any number of tokens: Q4_0's 32-value blocks
 * (an fp16 scale, 16 bytes of nibbles: element l the low nibble of byte l,
 * element 16 + l its high nibble) whose nibbles index the 16 IQ4 levels
 * instead of standing for q - 8. The semantics of ek_dot_iq4_nl_scalar
 * (kquants.c), with the fp32 additions in another order: the integer dot
 * of each block is exact.
 *
 * Two blocks make one 512-bit vector: each block's 16 bytes are loaded
 * into both halves of a ymm, the upper half shifted right by 4, masked to
 * nibbles (elements 0-15 | 16-31, the order of the Q8_0 activation's q),
 * and the pair looked up by vpshufb in the levels plus 128, unsigned bytes
 * for vpdpbusd. A second vpdpbusd of 128s against the same activation
 * bytes gives the offset to subtract, 128 x the sum of each dword's 4
 * activations. Lanes 0-7 then hold block 2p's partial dots, lanes 8-15
 * block 2p+1's; converted, they meet each block's d_w x d_x in their lanes.
 * Rows outer, up to IQ_KT tokens inner: a row's pair is unpacked once for
 * them while the row sits in L1.
 *
 * Built with target attributes like matmul_avx512.c; the set hands it out
 * only on CPUs with AVX-512 F/BW/VL/VNNI. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/convert.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

enum { IQ_KT = 4 }; /* tokens per pass over a row */

/* Block b's 32 weights as level + 128, in element order, in a ymm. */
INLINE __m256i iq4_nl_block(const ek_block_iq4_nl *b, __m256i lut)
{
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b->qs));
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4)),
                                         _mm256_set1_epi8(15));
    return _mm256_shuffle_epi8(lut, nib);
}

/* The 32 activation bytes of a Q8_0 block. */
INLINE __m256i q8_block(const ek_block_q8_0 *x) { return _mm256_loadu_si256((const __m256i *)x->q); }

INLINE __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* y[t * ys + r] for tokens t0 .. t0 + T - 1 of row r (its blocks at w). */
INLINE void iq4_nl_row(float *y, int64_t ys, const ek_block_iq4_nl *w, int64_t r, const char *x, size_t xs,
                       int64_t nb, int t0, const int T)
{
    /* the levels plus 128 (a flipped sign bit), as unsigned bytes */
    const __m256i lut = _mm256_broadcastsi128_si256(
        _mm_xor_si128(_mm_loadu_si128((const __m128i *)ek_iq4_levels), _mm_set1_epi8((char)0x80)));
    const __m512i m128 = _mm512_set1_epi8((char)0x80);
    const __mmask16 upper = 0xff00;
    __m512 acc[IQ_KT];
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i wv = _mm512_castsi256_si512(iq4_nl_block(&w[b], lut));
        const __m512i wp = _mm512_inserti64x4(wv, iq4_nl_block(&w[b + 1], lut), 1);
        const float d0 = ek_f16_to_f32(w[b].d), d1 = ek_f16_to_f32(w[b + 1].d);
        _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
            const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + b;
            const __m512i xv = join(q8_block(&xb[0]), q8_block(&xb[1]));
            const __m512i off = _mm512_dpbusd_epi32(_mm512_setzero_si512(), m128, xv);
            const __m512i dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wp, xv), off);
            const __m512 s = _mm512_mask_blend_ps(upper, _mm512_set1_ps(d0 * ek_f16_to_f32(xb[0].d)),
                                                  _mm512_set1_ps(d1 * ek_f16_to_f32(xb[1].d)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), s, acc[t]);
        }
    }
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
        float sum = _mm512_reduce_add_ps(acc[t]);
        if (b < nb) /* an odd last block: the scalar kernel's */
            sum += ek_dot_iq4_nl_scalar(&w[b], (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + b, EK_QBLOCK);
        y[(int64_t)(t0 + t) * ys + r] = sum;
    }
}

#define IQ_ROW(T)                                                                                           \
    static TARGET void iq4_nl_row_##T(float *y, int64_t ys, const ek_block_iq4_nl *w, int64_t r,         \
                                      const char *x, size_t xs, int64_t nb, int t0)                       \
    {                                                                                                       \
        iq4_nl_row(y, ys, w, r, x, xs, nb, t0, T);                                                          \
    }
IQ_ROW(1)
IQ_ROW(2)
IQ_ROW(3)
IQ_ROW(4)
typedef void (*iq_row_fn)(float *, int64_t, const ek_block_iq4_nl *, int64_t, const char *, size_t, int64_t,
                          int);
static const iq_row_fn iq_rows[IQ_KT + 1] = {NULL, iq4_nl_row_1, iq4_nl_row_2, iq4_nl_row_3, iq4_nl_row_4};

TARGET void ek_gemm_iq4_nl_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                  const void *x, size_t xs, int nt)
{
    const int64_t nb = w->cols / EK_QBLOCK;
    const size_t rb = ek_row_bytes(ET_IQ4_NL, w->cols);
    for (int64_t r = r0; r < r1; r++) {
        const ek_block_iq4_nl *row = (const ek_block_iq4_nl *)((const char *)w->data + (size_t)r * rb);
        for (int t0 = 0; t0 < nt; t0 += IQ_KT)
            iq_rows[nt - t0 < IQ_KT ? nt - t0 : IQ_KT](y, ys, row, r, x, xs, nb, t0);
    }
}

#else
void ek_gemm_iq4_nl_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                           size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
