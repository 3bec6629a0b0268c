/* The AVX-512 unpackers of the K-quant super-blocks, shared by the decode
 * engine (kquants_avx512.c) and the prefill engine
 * (kquants_prefill_avx512.c). Per super-block of 256 weights a type's
 * unpacker makes
 *   w[c]     four 512-bit vectors of unsigned bytes, weights 64c..64c+63 in
 *            order, each the value plus a fixed offset (Q6_K +32, Q3_K +4,
 *            IQ4 +128, none for the types with a minimum) so that
 *            vpdpbusd's unsigned x signed product applies;
 *   scale16  d * scale of each group of 16 weights, as fp32 lanes;
 *   corr16   what each group subtracts per unit of activation sum:
 *            d * scale * offset + dmin * min.
 * Include after defining TARGET and INLINE (the includer's target
 * attributes), and optionally KQ_UNPACK_LOOP as a pragma for the unpackers'
 * loops (the decode engine unrolls them: left as loops, GCC kept the
 * vectors on the stack, a store and reload per super-block that decode, one
 * unpack per token, feels and prefill, many tokens per unpack, does not);
 * x86-64 only. */
#ifndef EMBER_KERNELS_KQUANTS_UNPACK_AVX512_H
#define EMBER_KERNELS_KQUANTS_UNPACK_AVX512_H

#include <immintrin.h>

#include "kernels/convert.h"
#include "kernels/kquants.h"
#include "kernels/kquants_simd.h"

#ifndef KQ_UNPACK_LOOP
#define KQ_UNPACK_LOOP
#endif

typedef struct kq_unpacked {
    __m512i w[4];
    __m512 scale16, corr16;
} kq_unpacked;

INLINE __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* An fp16 scale to fp32 in one instruction (F16C), exactly. */
INLINE float half(uint16_t h) { return _cvtsh_ss(h); }

INLINE __m512 bytes_to_ps(__m128i v, int is_signed)
{
    return _mm512_cvtepi32_ps(is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

/* 8 bytes (one per sub-block of 32) to 16 lanes (one per group of 16). */
INLINE __m128i dup_bytes(__m128i v)
{
    return _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
}

/* Four words of four bytes (kquants_simd.h) as 16 bytes. */
INLINE __m128i words(const uint32_t k[4]) { return _mm_setr_epi32((int)k[0], (int)k[1], (int)k[2], (int)k[3]); }

INLINE void unpack_q45(const uint8_t *scales, uint16_t d16, uint16_t dmin16, const uint8_t *qs, const uint8_t *qh,
                       kq_unpacked *u)
{
    __m128i sm = ek_kq_scales_k4_v(scales); /* sc0..7, m0..7 */
    u->scale16 = _mm512_mul_ps(_mm512_set1_ps(half(d16)), bytes_to_ps(dup_bytes(sm), 0));
    u->corr16 = _mm512_mul_ps(_mm512_set1_ps(half(dmin16)),
                              bytes_to_ps(dup_bytes(_mm_srli_si128(sm, 8)), 0));
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256i h = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    KQ_UNPACK_LOOP for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (qh) { /* the fifth bit of sub-block j is bit j of qh[l] */
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * c), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * c + 1), one), 4));
        }
        u->w[c] = join(lo, hi);
    }
}

/* Q6_K: ql byte 64h + l holds weight 128h + l (low nibble) and 128h + 64 + l
 * (high), so one 64-byte load's nibbles are two whole vectors; qh byte
 * 32h + l holds the top two bits of weights 128h + l, +32, +64, +96 (bit
 * pairs 0..3). Broadcast to both halves, qh is shifted right by 0 in the
 * low half and 2 in the high one (16-bit shifts: the bits they pull in from
 * the next byte are masked off), so no lanes ever move: measured 5.5 -> 4.3
 * ns a super-block (one row in L1) against unpacking halves and joining
 * them. */
INLINE void unpack_q6_k(const ek_block_q6_k *b, kq_unpacked *u)
{
    u->scale16 = _mm512_mul_ps(_mm512_set1_ps(half(b->d)), bytes_to_ps(_mm_loadu_si128((const __m128i *)b->scales), 1));
    u->corr16 = _mm512_mul_ps(u->scale16, _mm512_set1_ps(32.0f));
    const __m512i m4 = _mm512_set1_epi8(15), top = _mm512_set1_epi8(0x30);
    const __m512i by_half = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    KQ_UNPACK_LOOP for (int h = 0; h < 2; h++) {
        const __m512i ql = _mm512_loadu_si512((const void *)(b->ql + 64 * h));
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qh + 32 * h)));
        const __m512i hi0 = _mm512_and_si512(_mm512_srlv_epi16(_mm512_slli_epi16(qh, 4), by_half), top);
        const __m512i hi1 = _mm512_and_si512(_mm512_srlv_epi16(qh, by_half), top);
        u->w[2 * h] = _mm512_ternarylogic_epi32(ql, m4, hi0, 0xea); /* (a & b) | c */
        u->w[2 * h + 1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), m4, hi1, 0xea);
    }
}

/* Q2_K and Q3_K: weight 128h + 32s + l is bits 2s of qs[32h + l]; Q3_K adds
 * four when bit 4h + s of hmask[l] is set (value + 4, in 0..7). */
INLINE void unpack_q23_lows(const uint8_t *qs, const uint8_t *hmask, kq_unpacked *u)
{
    const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256i hm = hmask ? _mm256_loadu_si256((const __m256i *)hmask) : _mm256_setzero_si256();
    KQ_UNPACK_LOOP for (int h = 0; h < 2; h++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
        __m256i e[4];
        KQ_UNPACK_LOOP for (int s = 0; s < 4; s++) {
            e[s] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m2);
            if (hmask)
                e[s] = _mm256_or_si256(e[s], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + s), one), 2));
        }
        u->w[2 * h] = join(e[0], e[1]);
        u->w[2 * h + 1] = join(e[2], e[3]);
    }
}

INLINE void unpack_q3_k(const ek_block_q3_k *b, kq_unpacked *u)
{
    uint32_t k[4];
    ek_kq_scales_k3(b->scales, k);
    __m128i sc = _mm_sub_epi8(words(k), _mm_set1_epi8(32));
    u->scale16 = _mm512_mul_ps(_mm512_set1_ps(half(b->d)), bytes_to_ps(sc, 1));
    u->corr16 = _mm512_mul_ps(u->scale16, _mm512_set1_ps(4.0f));
    unpack_q23_lows(b->qs, b->hmask, u);
}

INLINE void unpack_q2_k(const ek_block_q2_k *b, kq_unpacked *u)
{
    __m128i s = _mm_loadu_si128((const __m128i *)b->scales), m4 = _mm_set1_epi8(15);
    u->scale16 = _mm512_mul_ps(_mm512_set1_ps(half(b->d)), bytes_to_ps(_mm_and_si128(s, m4), 0));
    u->corr16 = _mm512_mul_ps(_mm512_set1_ps(half(b->dmin)),
                              bytes_to_ps(_mm_and_si128(_mm_srli_epi16(s, 4), m4), 0));
    unpack_q23_lows(b->qs, NULL, u);
}

INLINE void unpack_iq4_xs(const ek_block_iq4_xs *b, kq_unpacked *u)
{
    __m128i sc = _mm_sub_epi8(_mm_cvtsi64_si128((long long)ek_kq_scales_iq4_xs(b)), _mm_set1_epi8(32));
    u->scale16 = _mm512_mul_ps(_mm512_set1_ps(half(b->d)), bytes_to_ps(dup_bytes(sc), 1));
    u->corr16 = _mm512_mul_ps(u->scale16, _mm512_set1_ps(128.0f));
    /* the levels plus 128 as unsigned bytes, looked up by nibble */
    __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                                       (char)153, (char)166, (char)181, (char)197, (char)217,
                                                       (char)241));
    const __m256i m4 = _mm256_set1_epi8(15);
    KQ_UNPACK_LOOP for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
        __m512i v = join(_mm256_and_si256(q, m4), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
        /* [lo 0-15, lo 16-31, hi 0-15, hi 16-31] -> [lo 0-15, hi 0-15, lo 16-31, hi 16-31] */
        v = _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
        u->w[c] = _mm512_shuffle_epi8(lut, v);
    }
}

EK_KQ_DEFINE_UNPACK(INLINE, kq_unpacked)

#endif
