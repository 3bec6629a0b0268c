/* IQ4_NL on AVX-512 VNNI: Q4_0's 32-value blocks (an fp16 scale, 16 bytes
 * of nibbles: element l the low nibble of byte l, element 16 + l its high
 * nibble) whose nibbles index the 16 IQ4 levels instead of standing for
 * q - 8. The semantics of ek_dot_iq4_nl_scalar (kquants.c), with the fp32
 * additions in another order: the integer dot of each block is exact.
 *
 * Decode and a few tokens (ek_gemm_iq4_nl_avx512): four blocks make one
 * zmm pair. Each block's 16 nibble bytes fill a 128-bit lane (four loads),
 * low and high nibbles are split (elements 0-15 | 16-31) and looked up by
 * vpshufb in the levels plus 128, unsigned bytes for vpdpbusd. The
 * activations are packed once per call into the same shape, per group of
 * four blocks and token: their low and high halves, the offset correction
 * (-128 x the sum of each dword's bytes, the accumulator vpdpbusd starts
 * from) and the block scales spread to the four lanes of each block. The
 * four weight scales come from one 64-byte load at the group's start (the
 * fp16 d's are words 0, 9, 18, 27 of it) by one vpermw and one vcvtph2ps.
 * Per row and group: two vpdpbusd, then one conversion, multiply and fma
 * per token, so the work per byte of weights stays well under what memory
 * delivers. R rows x T tokens per tile: each packed activation vector is
 * loaded once for the R rows, each unpacked weight group serves T tokens.
 * The blocks past the last multiple of four take the scalar kernel.
 *
 * Many tokens (prefill): ek_iq4_nl_to_q8_0_avx512 turns rows into Q8_0
 * exactly (an IQ4_NL block is a Q8_0 block with q = level and the same d),
 * which matmul_avx512.c feeds to its Q8_0 token-major tiles span by span.
 *
 * Built with target attributes like matmul_avx512.c; the set hands it out
 * only on CPUs with AVX-512 F/BW/VL/VNNI. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* Tokens per pass over a row; rows per tile for one token and for more
 * (measured with kernel_ab, 6144x2048, 2 threads, DRAM). */
enum { IQ_KT = 4 };
#ifndef IQ_ROWS_1
#define IQ_ROWS_1 4
#endif
#ifndef IQ_ROWS_N
#define IQ_ROWS_N 2
#endif
/* Tiles ahead whose rows are prefetched (0: none). A tile's R rows are R
 * streams, which the hardware prefetcher alone leaves behind: measured
 * below at one token. */
#ifndef IQ_PF_TILES
#define IQ_PF_TILES 2
#endif

/* One token's four activation blocks, packed as the weights are. */
typedef struct iq_xgroup {
    __m512i lo, hi; /* bytes 0-15 | 16-31 of blocks 0..3, one 128-bit lane each */
    __m512i corr;   /* -128 x the sum of each dword lane's 8 bytes (lo and hi) */
    __m512 dx;      /* block j's scale in lanes 4j..4j+3 */
} iq_xgroup;
/* The packed activations live on the stack: 64 KiB, 256 groups (32768
 * columns of one token); longer rows are done in column chunks. */
enum { IQ_PACK_GROUPS = 256 };

/* The levels plus 128 (a flipped sign bit), as unsigned bytes, in every lane. */
INLINE __m512i levels_u8(void)
{
    return _mm512_broadcast_i32x4(
        _mm_xor_si128(_mm_loadu_si128((const __m128i *)ek_iq4_levels), _mm_set1_epi8((char)0x80)));
}

INLINE __m512i four_lanes(const void *p0, const void *p1, const void *p2, const void *p3)
{
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p0));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p1), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p2), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p3), 3);
}

/* Tokens t0..t0+T-1, groups g0..g0+ng-1 into xp[g * T + t]. */
static TARGET void pack_x(iq_xgroup *xp, const char *x, size_t xs, int t0, int T, int64_t g0, int64_t ng)
{
    const __m512i m80 = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    for (int64_t g = 0; g < ng; g++)
        for (int t = 0; t < T; t++) {
            const ek_block_q8_0 *b = (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + 4 * (g0 + g);
            iq_xgroup *o = &xp[g * T + t];
            o->lo = four_lanes(b[0].q, b[1].q, b[2].q, b[3].q);
            o->hi = four_lanes(b[0].q + 16, b[1].q + 16, b[2].q + 16, b[3].q + 16);
            o->corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, m80, o->lo), m80, o->hi));
            const __m128 d4 = _mm_cvtph_ps(_mm_setr_epi16((short)b[0].d, (short)b[1].d, (short)b[2].d,
                                                          (short)b[3].d, 0, 0, 0, 0));
            o->dx = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(d4));
        }
}

/* Row blocks b[0..3] as level + 128, low halves and high halves, and their
 * scales spread like the activations'. */
INLINE void w_group(const ek_block_iq4_nl *b, __m512i lut, __m512i *lo, __m512i *hi, __m512 *dw)
{
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    const __m512i v = four_lanes(b[0].qs, b[1].qs, b[2].qs, b[3].qs);
    *lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m0f));
    *hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f));
    /* the d of block j is word 9j of the 72-byte group */
    const __m512i words = _mm512_setr_epi32(0, 0, 9 | 9 << 16, 9 | 9 << 16, 18 | 18 << 16, 18 | 18 << 16,
                                            27 | 27 << 16, 27 | 27 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i d = _mm512_permutexvar_epi16(words, _mm512_loadu_si512(b));
    *dw = _mm512_cvtph_ps(_mm512_castsi512_si256(d));
}

/* y[t * ys + r + i] (i < R, t < T) over groups [g0, g0 + ng) of rows r..,
 * the activations packed at xp; `first`: store, else add to y; `last`: also
 * add the scalar kernel's blocks from 4 * (g0 + ng) to nb. */
INLINE void iq_tile(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const iq_xgroup *xp, int64_t g0,
                    int64_t ng, const char *x, size_t xs, int t0, int64_t nb, int first, int last, const int R,
                    const int T)
{
    const __m512i lut = levels_u8();
    __m512 acc[4][IQ_KT];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps();
    /* rows r.. r + R are one run of bytes: its successor two tiles on is
     * prefetched at the same pace, R groups' bytes per group */
    const char *pf = w + (size_t)(r + IQ_PF_TILES * R) * rb + (size_t)(4 * g0) * sizeof(ek_block_iq4_nl) * R;
    for (int64_t g = 0; g < ng; g++) {
        if (IQ_PF_TILES)
            _Pragma("GCC unroll 8") for (int o = 0; o < 4 * R * (int)sizeof(ek_block_iq4_nl); o += 64)
                _mm_prefetch(pf + (size_t)g * 4 * R * sizeof(ek_block_iq4_nl) + o, _MM_HINT_T1);
        const iq_xgroup *xg = &xp[g * T];
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
            const ek_block_iq4_nl *b = (const ek_block_iq4_nl *)(w + (size_t)(r + i) * rb) + 4 * (g0 + g);
            __m512i lo, hi;
            __m512 dw;
            w_group(b, lut, &lo, &hi, &dw);
            _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
                const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(xg[t].corr, lo, xg[t].lo), hi, xg[t].hi);
                acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, xg[t].dx), acc[i][t]);
            }
        }
    }
    const int64_t bt = 4 * (g0 + ng);
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
        const ek_block_iq4_nl *row = (const ek_block_iq4_nl *)(w + (size_t)(r + i) * rb);
        _Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
            float *out = &y[(int64_t)(t0 + t) * ys + r + i];
            float s = _mm512_reduce_add_ps(acc[i][t]);
            if (!first) s += *out;
            if (last && bt < nb)
                s += ek_dot_iq4_nl_scalar(&row[bt], (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + bt,
                                          (nb - bt) * EK_QBLOCK);
            *out = s;
        }
    }
}

typedef void (*iq_tile_fn)(float *, int64_t, const char *, size_t, int64_t, const iq_xgroup *, int64_t, int64_t,
                           const char *, size_t, int, int64_t, int, int);
#define IQ_TILE(R, T)                                                                                            \
    static TARGET void iq_tile_##R##_##T(float *y, int64_t ys, const char *w, size_t rb, int64_t r,               \
                                         const iq_xgroup *xp, int64_t g0, int64_t ng, const char *x, size_t xs,  \
                                         int t0, int64_t nb, int first, int last)                               \
    {                                                                                                            \
        iq_tile(y, ys, w, rb, r, xp, g0, ng, x, xs, t0, nb, first, last, R, T);                                  \
    }
IQ_TILE(1, 1) IQ_TILE(2, 1) IQ_TILE(4, 1)
IQ_TILE(1, 2) IQ_TILE(2, 2) IQ_TILE(4, 2)
IQ_TILE(1, 3) IQ_TILE(2, 3) IQ_TILE(4, 3)
IQ_TILE(1, 4) IQ_TILE(2, 4) IQ_TILE(4, 4)
/* [T - 1][rows 1, 2, 4] */
static const iq_tile_fn iq_tiles[IQ_KT][3] = {
    {iq_tile_1_1, iq_tile_2_1, iq_tile_4_1},
    {iq_tile_1_2, iq_tile_2_2, iq_tile_4_2},
    {iq_tile_1_3, iq_tile_2_3, iq_tile_4_3},
    {iq_tile_1_4, iq_tile_2_4, iq_tile_4_4},
};

TARGET void ek_gemm_iq4_nl_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                  const void *x, size_t xs, int nt)
{
    alignas(64) iq_xgroup xp[IQ_PACK_GROUPS];
    const int64_t nb = w->cols / EK_QBLOCK, ng = nb / 4;
    const size_t rb = ek_row_bytes(ET_IQ4_NL, w->cols);
    const char *wd = w->data, *xd = x;
    for (int t0 = 0; t0 < nt; t0 += IQ_KT) {
        const int T = nt - t0 < IQ_KT ? nt - t0 : IQ_KT;
        const int R = T == 1 ? IQ_ROWS_1 : IQ_ROWS_N;
        const iq_tile_fn full = iq_tiles[T - 1][R == 4 ? 2 : R - 1], one = iq_tiles[T - 1][0];
        const int64_t chunk = IQ_PACK_GROUPS / T;
        for (int64_t g0 = 0;; g0 += chunk) {
            const int64_t n = ng - g0 < chunk ? ng - g0 : chunk;
            const int first = g0 == 0, last = g0 + n >= ng;
            pack_x(xp, xd, xs, t0, T, g0, n);
            int64_t r = r0;
            for (; r + R <= r1; r += R) full(y, ys, wd, rb, r, xp, g0, n, xd, xs, t0, nb, first, last);
            for (; r < r1; r++) one(y, ys, wd, rb, r, xp, g0, n, xd, xs, t0, nb, first, last);
            if (last) break;
        }
    }
}

/* n blocks to Q8_0: the same d, q = the level of each nibble. */
TARGET void ek_iq4_nl_to_q8_0_avx512(void *dst, const void *src, int64_t n)
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ek_iq4_levels));
    const __m256i shift = _mm256_setr_epi64x(0, 0, 4, 4), m0f = _mm256_set1_epi8(0x0f);
    const ek_block_iq4_nl *b = src;
    ek_block_q8_0 *o = dst;
    for (int64_t i = 0; i < n; i++) {
        const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b[i].qs));
        const __m256i nib = _mm256_and_si256(_mm256_srlv_epi64(both, shift), m0f);
        o[i].d = b[i].d;
        _mm256_storeu_si256((__m256i *)o[i].q, _mm256_shuffle_epi8(lut, nib));
    }
}

#else
void ek_gemm_iq4_nl_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                           size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
void ek_iq4_nl_to_q8_0_avx512(void *dst, const void *src, int64_t n)
{
    (void)dst, (void)src, (void)n;
}
#endif
