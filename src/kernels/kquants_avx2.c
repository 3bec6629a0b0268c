/* The AVX2 gemm for the K-quants and IQ4_XS against Q8_0 activations; the
 * semantics of ek_gemm_kquant_scalar (kquants.c), with the fp32 additions in
 * another order (the integer dots are exact). The engine of
 * kquants_avx512.c in 256-bit vectors and without VNNI.
 *
 * Per super-block of 256 weights a type's unpacker (below) makes
 *   W[c]   eight vectors of 32 bytes, weights 32c..32c+31: exactly the
 *          activation block 8b + c, so the activations are read in place;
 *   corr   per group of 16, what it subtracts: d * scale * offset + dmin * min;
 * and its scales in one of two forms:
 *   SC[c]  the types with a scale per 16 (Q2_K, Q3_K, Q6_K): the int16 scale
 *          of each byte pair's group (lanes 0-7: group 2c, 8-15: 2c + 1);
 *   scd    the types with a scale per 32 (Q4_K, Q5_K, IQ4_XS): d * scale
 *          of sub-block c, one fp32 lane each.
 * The byte products are vpmaddubsw (unsigned x signed -> int16 pair sums)
 * then vpmaddwd: against SC[c], which applies the group scales in integers,
 * or against ones, the scale then joining the activation block's (scd times
 * eight block scales: one multiply per token and super-block instead of the
 * shuffles that make SC). Eight int32 lanes are converted and multiplied by
 * the activation block's scale (for SC, the super-block's sum then by d);
 * the corrections meet the activations' per-16 scaled sums (kquants_simd.h).
 *
 * vpmaddubsw saturates each pair sum at int16, so no pair may exceed 32767
 * with activations anywhere in -128..127:
 *   Q2_K 0..3, Q3_K 0..7 (+4), Q4_K 0..15, Q5_K 0..31 and Q6_K 0..63 (+32)
 *   are unsigned as they are or after the offset: 2 * 63 * 128 = 16128;
 *   IQ4_XS's levels (-127..113) offset by 128 would reach 241 (2 * 241 *
 *   127 = 61214), so it takes matmul_avx2.c's sign trick instead: |w| <= 127
 *   times x with w's sign, 2 * 127 * 127 = 32258, and no correction. That
 *   needs x != -128 (whose negation wraps), which holds for every Q8_0 row
 *   a quantizer makes (|x| <= amax / d = 127), as the Q8_0 gemm assumes.
 * vpmaddwd then adds two pair sums times a scale (at most 128 in
 * magnitude): |2 * 16128 * 128| is far inside int32.
 *
 * Built with target attributes like matmul_avx2.c; the avx2 set hands it
 * out only on CPUs with AVX2, FMA and F16C. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/kquants_simd.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

typedef struct kq_unpacked {
    __m256i w[8];   /* unsigned bytes; IQ4_XS: the magnitudes */
    __m256i s[8];   /* IQ4_XS only: the signed values (their signs) */
    __m256i sc[8];  /* scales per 16 */
    __m256 scd;     /* scales per 32 */
    __m256 corr[2]; /* groups 0-7 and 8-15 */
    __m256 d;       /* scales per 16 */
} kq_unpacked;

/* ---- unpackers ------------------------------------------------------------- */

INLINE float half(uint16_t h) { return _cvtsh_ss(h); }

/* 8 bytes (one per sub-block of 32) to 16 (one per group of 16). */
INLINE __m128i dup_bytes(__m128i v)
{
    return _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
}

/* The 16 signed group scales (bytes) to SC[0..7]: the int16 scales of
 * groups 0-7 in both 128-bit lanes (then 8-15), and a byte shuffle that
 * repeats word 2c (low lane) and 2c + 1 (high lane). */
INLINE void pair_scales(__m128i g, __m256i sc[8])
{
    __m256i s16 = _mm256_cvtepi8_epi16(g);
    __m256i lo = _mm256_permute2x128_si256(s16, s16, 0x00), hi = _mm256_permute2x128_si256(s16, s16, 0x11);
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
        __m256i ctl = _mm256_set_m128i(_mm_set1_epi16((short)(((4 * c + 3) << 8) | (4 * c + 2))),
                                       _mm_set1_epi16((short)(((4 * c + 1) << 8) | (4 * c))));
        sc[c] = _mm256_shuffle_epi8(lo, ctl);
        sc[c + 4] = _mm256_shuffle_epi8(hi, ctl);
    }
}

/* corr = m * (16 signed bytes, one per group). */
INLINE void group_corr(__m128i g, float m, __m256 corr[2])
{
    __m256 vm = _mm256_set1_ps(m);
    corr[0] = _mm256_mul_ps(vm, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(g)));
    corr[1] = _mm256_mul_ps(vm, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(g, 8))));
}

/* Bit j of every byte of v moved to bit `to` (and nothing else kept): one
 * 16-bit shift, which carries no other bit of either byte to that place. */
INLINE __m256i bit_to(__m256i v, const int j, const int to)
{
    v = j <= to ? _mm256_slli_epi16(v, to - j) : _mm256_srli_epi16(v, j - to);
    return _mm256_and_si256(v, _mm256_set1_epi8((char)(1 << to)));
}

INLINE void unpack_q45(const uint8_t *scales, uint16_t d, uint16_t dmin, const uint8_t *qs, const uint8_t *qh,
                       kq_unpacked *u)
{
    __m128i sm = ek_kq_scales_k4_v(scales); /* scales 0-7, mins 0-7 */
    u->scd = _mm256_mul_ps(_mm256_set1_ps(half(d)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
    group_corr(dup_bytes(_mm_srli_si128(sm, 8)), half(dmin), u->corr);
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i h = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (qh) { /* the fifth bit of sub-block j is bit j of qh[l] */
            lo = _mm256_or_si256(lo, bit_to(h, 2 * c, 4));
            hi = _mm256_or_si256(hi, bit_to(h, 2 * c + 1, 4));
        }
        u->w[2 * c] = lo;
        u->w[2 * c + 1] = hi;
    }
}

/* Per 128 weights: ql[l] and ql[l + 32] give four low nibbles, qh[l] their
 * four pairs of high bits (each shifted to bits 4-5 and masked); +32 makes
 * them 0..63. */
INLINE void unpack_q6_k(const ek_block_q6_k *b, kq_unpacked *u)
{
    __m128i sc = _mm_loadu_si128((const __m128i *)b->scales);
    float d = half(b->d);
    pair_scales(sc, u->sc);
    group_corr(sc, 32.0f * d, u->corr);
    u->d = _mm256_set1_ps(d);
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
        __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
        __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        u->w[4 * h] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
        u->w[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
        u->w[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m30));
        u->w[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    }
}

/* Q2_K and Q3_K: weight 128h + 32s + l is bits 2s of qs[32h + l]; Q3_K adds
 * four when bit 4h + s of hmask[l] is set (value + 4, in 0..7). */
INLINE void unpack_q23_lows(const uint8_t *qs, const uint8_t *hmask, kq_unpacked *u)
{
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256i hm = hmask ? _mm256_loadu_si256((const __m256i *)hmask) : _mm256_setzero_si256();
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
        _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) {
            __m256i e = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m2);
            if (hmask) e = _mm256_or_si256(e, bit_to(hm, 4 * h + s, 2));
            u->w[4 * h + s] = e;
        }
    }
}

INLINE void unpack_q3_k(const ek_block_q3_k *b, kq_unpacked *u)
{
    uint32_t k[4];
    ek_kq_scales_k3(b->scales, k);
    __m128i sc = _mm_sub_epi8(_mm_setr_epi32((int)k[0], (int)k[1], (int)k[2], (int)k[3]), _mm_set1_epi8(32));
    float d = half(b->d);
    pair_scales(sc, u->sc);
    group_corr(sc, 4.0f * d, u->corr);
    u->d = _mm256_set1_ps(d);
    unpack_q23_lows(b->qs, b->hmask, u);
}

INLINE void unpack_q2_k(const ek_block_q2_k *b, kq_unpacked *u)
{
    __m128i s = _mm_loadu_si128((const __m128i *)b->scales), m4 = _mm_set1_epi8(15);
    pair_scales(_mm_and_si128(s, m4), u->sc);
    group_corr(_mm_and_si128(_mm_srli_epi16(s, 4), m4), half(b->dmin), u->corr);
    u->d = _mm256_set1_ps(half(b->d));
    unpack_q23_lows(b->qs, NULL, u);
}

/* Sub-block j's 16 bytes hold weights 32j..32j+15 in their low nibbles and
 * 32j+16..32j+31 in their high ones: one vector, both nibbles looked up in
 * the levels (signed, and their magnitudes). */
INLINE void unpack_iq4_xs(const ek_block_iq4_xs *b, kq_unpacked *u)
{
    __m128i sc = _mm_sub_epi8(_mm_cvtsi64_si128((long long)ek_kq_scales_iq4_xs(b)), _mm_set1_epi8(32));
    u->scd = _mm256_mul_ps(_mm256_set1_ps(half(b->d)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)));
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ek_iq4_levels));
    const __m256i shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4), m4 = _mm256_set1_epi8(15);
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) {
        __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b->qs + 16 * j)));
        v = _mm256_and_si256(_mm256_srlv_epi32(v, shift), m4);
        u->s[j] = _mm256_shuffle_epi8(lut, v);
        u->w[j] = _mm256_abs_epi8(u->s[j]);
    }
}

EK_KQ_DEFINE_UNPACK(INLINE, kq_unpacked)

/* ---- the engine -------------------------------------------------------------- */

INLINE float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Row r for tokens t0..t0+T-1, dt and T constants. Two partial sums per
 * super-block and token (even and odd activation blocks) halve the chain of
 * dependent multiply-adds; super-blocks overlap in the out-of-order core. */
INLINE void row_tokens(float *y, int64_t ys, const et_dtype dt, const char *row, int64_t r, const ek_kq_acts *a,
                       const char *x, size_t xs, int t0, const int T)
{
    const int by32 = dt == ET_Q4_K || dt == ET_Q5_K || dt == ET_IQ4_XS, sign_trick = dt == ET_IQ4_XS;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EK_KQ_KT];
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = a->n / EK_QK_K, blocks = a->n / EK_QBLOCK;
    for (int64_t b = 0; b < nb; b++) {
        kq_unpacked u;
        unpack(dt, row, b, &u);
        _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
            const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + 8 * b;
            const float *dx = a->dx + (size_t)(t0 + t) * (size_t)blocks + 8 * b;
            _Alignas(32) float f[8]; /* per 32: d * scale * block scale */
            if (by32) _mm256_store_ps(f, _mm256_mul_ps(u.scd, _mm256_loadu_ps(dx)));
            __m256 sb[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
            _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {
                __m256i xv = _mm256_loadu_si256((const __m256i *)xb[c].q);
                if (sign_trick) xv = _mm256_sign_epi8(xv, u.s[c]);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u.w[c], xv), by32 ? ones : u.sc[c]);
                sb[c & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(by32 ? f + c : dx + c), sb[c & 1]);
            }
            __m256 s = _mm256_add_ps(sb[0], sb[1]);
            acc[t] = by32 ? _mm256_add_ps(acc[t], s) : _mm256_fmadd_ps(s, u.d, acc[t]);
            if (!sign_trick) {
                const float *ds = a->ds16 + (size_t)(t0 + t) * (size_t)(2 * blocks) + 16 * b;
                acc[t] = _mm256_fnmadd_ps(u.corr[0], _mm256_loadu_ps(ds), acc[t]);
                acc[t] = _mm256_fnmadd_ps(u.corr[1], _mm256_loadu_ps(ds + 8), acc[t]);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) y[(t0 + t) * ys + r] = hsum(acc[t]);
}

EK_KQ_DEFINE_ROWS(avx2_rows, TARGET, row_tokens)

void ek_gemm_kquant_avx2(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x, size_t xs,
                         int nt)
{
    ek_kq_gemm_rows(avx2_rows(w->dtype), y, ys, w, r0, r1, x, xs, nt);
}

#else
void ek_gemm_kquant_avx2(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                         size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
