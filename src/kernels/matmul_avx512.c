/* The AVX-512 kernel set: F + BW + VL for the float formats and the
 * conversions, VNNI (vpdpbusd) for the Q8_0/Q4_0 integer dot products.
 * ek_kernels_by_name() only hands this set out when the CPU has all four,
 * so a CPU without VNNI (Skylake-X) gets the avx2 set instead.
 *
 * Semantics are those of matmul_generic.c; only the order of the fp32
 * additions differs (the integer block dots are exact). Three shapes of
 * kernel, chosen per call by the token count:
 *
 *  - float formats: an R rows x T tokens register tile of fp32 accumulators,
 *    16 columns per step; each weight vector loaded (and widened from
 *    f16/bf16) once is reused for T tokens, each activation vector for R rows.
 *  - Q8_0/Q4_0, few tokens (decode): one block per 256-bit vector, R rows at
 *    a time (8 for one token: the activation side of each block is then
 *    shared by 8 rows, ~10% faster than 4). This is memory-bound; the point
 *    is to keep several weight rows streaming and the per-block work small.
 *  - Q8_0/Q4_0, a few tokens (a server's batched decode step, 2..8): the
 *    activations are packed in pairs of tokens, 16 bytes of each of 2 tokens
 *    per 256-bit vector, so one broadcast weight half-block meets 2 tokens
 *    in one vpdpbusd ("pairs" below).
 *  - Q8_0/Q4_0, many tokens (prefill): compute-bound, so the activations are
 *    first repacked "token-major": for a block and 4-byte step k, one 512-bit
 *    vector holds bytes 4k..4k+3 of 16 tokens. A weight dword broadcast to
 *    all lanes then feeds one vpdpbusd per 16 tokens (a 4-row x 32-token
 *    tile: each loaded weight byte serves 32 tokens, each packed activation
 *    vector 4 rows), and no horizontal reduction is ever needed. Above
 *    PAIR_MAX_TOKENS tokens, in the row layout and in the rows8 layout the
 *    loader repacks Q8_0/Q4_0 into (rows8.h; there 8 rows x 32 tokens a
 *    tile), on every AVX-512 core: where 512-bit vpdpbusd runs in halves
 *    (Zen 4) these tiles still beat 256-bit ones (gemm_q_r8).
 *
 * vpdpbusd multiplies unsigned by signed bytes. The activations stay signed;
 * the weights are made unsigned by an offset (Q8_0: w + 128 via xor 0x80;
 * Q4_0: the raw nibble, i.e. w + 8) and the offset times the sum of the
 * activation block is subtracted, exactly, in int32. Weights come from
 * mmapped files, so every load is unaligned (Q blocks are 2-byte aligned). */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_avx512(void);

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/q32.h"
#include "kernels/rows8.h"
#include "kernels/simd_common.h"
#include "kernels/vec_avx512.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
/* Tile bodies are written once with R/T/G as parameters and inlined into
 * small wrappers with constants, so the loops unroll and the accumulator
 * arrays live in registers. */
#define INLINE static inline __attribute__((always_inline)) TARGET

#include "kernels/transpose_avx512.h"

/* Decode streams each weight byte once, from DRAM. Rows [r, r + R) are one
 * contiguous region, but a tile walks it as R interleaved short streams,
 * which the hardware prefetcher picks up late; so while a tile works through
 * its region it prefetches the next region (PF_AHEAD bytes further on) at
 * the same pace, `step` bytes per step, into L2 (a whole tile of long rows
 * would not fit in L1 alongside the current one). A few-token step (a
 * speculative verify, a batched decode) streams the weights just the same,
 * so a float tile prefetches whenever it is the first token tile of its
 * rows (t0 == 0), not only for one token: without it a 3-row bf16 step cost
 * about 6x a 1-row one on the demo model, with it about 1.4x. */
#ifndef PF_AHEAD_TILES
#define PF_AHEAD_TILES 2
#endif
INLINE void prefetch_step(const char *p, const int step)
{
    _Pragma("GCC unroll 8") for (int o = 0; o < step; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
}

/* ---- float formats ------------------------------------------------------- */

INLINE __m512 wload_f32(const void *row, int64_t c, __mmask16 m)
{
    return _mm512_maskz_loadu_ps(m, (const float *)row + c);
}

INLINE __m512 wload_f16(const void *row, int64_t c, __mmask16 m)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + c));
}

/* bf16 is the top half of an fp32: widen and shift, exact. */
INLINE __m512 wload_bf16(const void *row, int64_t c, __mmask16 m)
{
    __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + c));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

/* y[t][r + i] for i < R, t < T over all columns. Masked loads cover the
 * column tail without reading past the row. */
#define FLOAT_TILE(NAME, WLOAD, ES)                                                          \
    INLINE void NAME(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const char *x,  \
                     size_t xs, int t0, int64_t n, const int R, const int T)                 \
    {                                                                                        \
        __m512 acc[4][4];                                                                    \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                  \
            _Pragma("GCC unroll 4") for (int j = 0; j < T; j++) acc[i][j] = _mm512_setzero_ps(); \
        const char *wr = w + (size_t)r * rb;                                                 \
        const float *xt = (const float *)(x + (size_t)t0 * xs);                              \
        size_t xf = xs / sizeof(float);                                                      \
        const char *pf = wr + (size_t)R * rb * PF_AHEAD_TILES;                               \
        for (int64_t c = 0; c < n; c += 16) {                                                \
            __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - c)) - 1); \
            if (t0 == 0) prefetch_step(pf + (size_t)c * R * ES, 16 * R * ES);               \
            __m512 wv[4];                                                                    \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                              \
                wv[i] = WLOAD(wr + (size_t)i * rb, c, m);                                    \
            _Pragma("GCC unroll 4") for (int j = 0; j < T; j++) {                            \
                __m512 xv = _mm512_maskz_loadu_ps(m, xt + (size_t)j * xf + c);               \
                _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                          \
                    acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);                       \
            }                                                                                \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)                                  \
            _Pragma("GCC unroll 4") for (int j = 0; j < T; j++)                              \
                y[(t0 + j) * ys + r + i] = _mm512_reduce_add_ps(acc[i][j]);                  \
    }

FLOAT_TILE(tile_f32, wload_f32, 4)
FLOAT_TILE(tile_f16, wload_f16, 2)
FLOAT_TILE(tile_bf16, wload_bf16, 2)

EK_FLOAT_GEMM(gemm_f32, tile_f32, TARGET)
EK_FLOAT_GEMM(gemm_f16, tile_f16, TARGET)
EK_FLOAT_GEMM(gemm_bf16, tile_bf16, TARGET)

/* ---- Q8_0 / Q4_0, few tokens: row-oriented ------------------------------ */

/* One weight block as 32 unsigned bytes (the value plus its offset) in a
 * 256-bit vector, in the element order of the activation block. */
INLINE __m256i wblock_q8(const ek_block_q8_0 *b)
{
    return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)b->q), _mm256_set1_epi8(-128));
}

/* Q4_0 byte j holds elements j (low nibble) and j + 16 (high nibble): the
 * same 16 bytes in both halves, the upper half shifted down by 4. */
INLINE __m256i wblock_q4(const ek_block_q4_0 *b)
{
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)b->qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

INLINE __m256 half_bcast256(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16((short)h)); }

INLINE float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* R rows x T tokens, one block at a time. The activation side (block, its
 * scale, and minus offset x sum as the initial int32 accumulator) is
 * prepared once per block and token and reused for the R rows. */
INLINE void qrow_tile(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const char *x,
                      size_t xs, int t0, int64_t nb, const int R, const int T, const int q4)
{
    __m256 acc[8][3];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 3") for (int j = 0; j < T; j++) acc[i][j] = _mm256_setzero_ps();
    const __m256i off = _mm256_set1_epi8(q4 ? 8 : (char)0x80);
    const size_t bb = q4 ? sizeof(ek_block_q4_0) : sizeof(ek_block_q8_0);
    const char *pf = w + (size_t)(r + R * PF_AHEAD_TILES) * rb;
    for (int64_t b = 0; b < nb; b++) {
        if (T == 1) prefetch_step(pf + (size_t)b * R * bb, (int)(R * bb));
        __m256i xq[3], xc[3];
        __m256 dx[3];
        _Pragma("GCC unroll 3") for (int j = 0; j < T; j++) {
            const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)(t0 + j) * xs) + b;
            xq[j] = _mm256_loadu_si256((const __m256i *)xb->q);
            /* offset * sum(x), negated: dpbusd on top of it gives the exact dot */
            xc[j] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                     _mm256_dpbusd_epi32(_mm256_setzero_si256(), off, xq[j]));
            dx[j] = half_bcast256(xb->d);
        }
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
            const char *wr = w + (size_t)(r + i) * rb;
            __m256i wq;
            __m256 dw;
            if (q4) {
                const ek_block_q4_0 *wb = (const ek_block_q4_0 *)wr + b;
                wq = wblock_q4(wb);
                dw = half_bcast256(ld16(&wb->d));
            } else {
                const ek_block_q8_0 *wb = (const ek_block_q8_0 *)wr + b;
                wq = wblock_q8(wb);
                dw = half_bcast256(ld16(&wb->d));
            }
            _Pragma("GCC unroll 3") for (int j = 0; j < T; j++) {
                __m256i dot = _mm256_dpbusd_epi32(xc[j], wq, xq[j]);
                acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, dx[j]),
                                            acc[i][j]);
            }
        }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 3") for (int j = 0; j < T; j++)
            y[(t0 + j) * ys + r + i] = hsum256(acc[i][j]);
}

/* Q4_0 nibble bytes in a 256-bit vector: the low nibbles (each 16-byte
 * half's elements 0..15) and the high ones (elements 16..31), as bytes. */
INLINE void nibbles256(__m256i v, __m256i *lo, __m256i *hi)
{
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    *lo = _mm256_and_si256(v, m0f);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
}

/* Two fp16 scales as fp32: the first in lanes 0-3, the second in lanes 4-7. */
INLINE __m256 half_pair256(uint16_t h0, uint16_t h1)
{
    __m128 f = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(h0), (short)h1, 1));
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(f), _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}

/* Q4_0, one token, R rows: two blocks per 256-bit step. A block's 16
 * nibble bytes fill only half a vector, so the one-block tile above spends
 * a whole vector's unpacking, scale conversion and float work on 16 bytes;
 * here blocks b and b+1 of a row share the vector (lanes 0-3: block b,
 * lanes 4-7: block b+1) and every operation serves both, ~25% fewer vector
 * operations per block, which is what bounds Q4_0 decode on two cores when
 * memory is fast (measured on a cache-resident matrix: 38-46 -> 44-56 GB/s
 * of weights; on DRAM-bound runs the two tie). The activation side (block b's low and high halves beside block b+1's, the
 * offset correction, the two scales) is built once per step for the R rows. */
INLINE void q4_row1_tile2(float *y, const char *w, size_t rb, int64_t r, const char *x, int64_t nb,
                          const int R)
{
    __m256 acc[8];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) acc[i] = _mm256_setzero_ps();
    const __m256i off = _mm256_set1_epi8(8);
    const size_t bb = sizeof(ek_block_q4_0);
    const char *pf = w + (size_t)(r + R * PF_AHEAD_TILES) * rb;
    const ek_block_q8_0 *xb = (const ek_block_q8_0 *)x;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        prefetch_step(pf + (size_t)b * R * bb, (int)(2 * R * bb));
        const __m256i xlo = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)xb[b].q)),
            _mm_loadu_si128((const __m128i *)xb[b + 1].q), 1);
        const __m256i xhi = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(xb[b].q + 16))),
            _mm_loadu_si128((const __m128i *)(xb[b + 1].q + 16)), 1);
        /* -8 x the sum of each 4-byte group of both halves: dpbusd on top
         * of it gives the exact dot of the signed nibbles */
        const __m256i xc = _mm256_sub_epi32(
            _mm256_setzero_si256(),
            _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), off, xlo), off, xhi));
        const __m256 dx = half_pair256(ld16(&xb[b].d), ld16(&xb[b + 1].d));
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
            const ek_block_q4_0 *wb = (const ek_block_q4_0 *)(w + (size_t)(r + i) * rb) + b;
            __m256i v = _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wb[0].qs)),
                _mm_loadu_si128((const __m128i *)wb[1].qs), 1);
            __m256i lo, hi;
            nibbles256(v, &lo, &hi);
            __m256i dot = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(xc, lo, xlo), hi, xhi);
            __m256 dw = half_pair256(ld16(&wb[0].d), ld16(&wb[1].d));
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, dx), acc[i]);
        }
    }
    /* an odd last block: one block in lanes 0-3 (bytes 16..31 zero) */
    if (b < nb) {
        const __m256i xlo = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)xb[b].q));
        const __m256i xhi = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(xb[b].q + 16)));
        const __m256i xl = _mm256_inserti128_si256(xlo, _mm_setzero_si128(), 1);
        const __m256i xh = _mm256_inserti128_si256(xhi, _mm_setzero_si128(), 1);
        const __m256i xc = _mm256_sub_epi32(
            _mm256_setzero_si256(),
            _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), off, xl), off, xh));
        const __m256 dx = _mm256_set1_ps(_cvtsh_ss(ld16(&xb[b].d)));
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
            const ek_block_q4_0 *wb = (const ek_block_q4_0 *)(w + (size_t)(r + i) * rb) + b;
            __m256i lo, hi;
            nibbles256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wb->qs)), &lo, &hi);
            __m256i dot = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(xc, lo, xl), hi, xh);
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                     _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(ld16(&wb->d))), dx), acc[i]);
        }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) y[r + i] = hsum256(acc[i]);
}

#define QROW_GEMM(NAME, Q4)                                                                  \
    static TARGET void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, \
                            const void *x, size_t xs, int nt)                                \
    {                                                                                        \
        size_t rb = ek_row_bytes(w->dtype, w->cols);                                         \
        const char *wd = w->data, *xd = x;                                                   \
        int64_t nb = w->cols / EK_QBLOCK;                                                    \
        int64_t r = r0;                                                                      \
        if (nt == 1 && Q4)                                                                   \
            for (; r + 8 <= r1; r += 8) q4_row1_tile2(y, wd, rb, r, xd, nb, 8);               \
        else if (nt == 1)                                                                    \
            for (; r + 8 <= r1; r += 8) qrow_tile(y, ys, wd, rb, r, xd, xs, 0, nb, 8, 1, Q4); \
        for (; r < r1;) {                                                                    \
            int R = r1 - r >= 4 ? 4 : 1;                                                     \
            for (int t = 0; t < nt; t += 3) {                                                \
                int T = nt - t >= 3 ? 3 : nt - t;                                            \
                if (R == 4) {                                                                \
                    if (T == 3) qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 4, 3, Q4);         \
                    else if (T == 2) qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 4, 2, Q4);    \
                    else qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 4, 1, Q4);                \
                } else {                                                                     \
                    if (T == 3) qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 1, 3, Q4);         \
                    else if (T == 2) qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 1, 2, Q4);    \
                    else qrow_tile(y, ys, wd, rb, r, xd, xs, t, nb, 1, 1, Q4);                \
                }                                                                            \
            }                                                                                \
            r += R;                                                                          \
        }                                                                                    \
    }

QROW_GEMM(gemm_q8_0_rows, 0)
QROW_GEMM(gemm_q4_0_rows, 1)

/* ---- Q8_0 / Q4_0, many tokens: token-major packed activations ------------ */

/* Per (block, group of 16 tokens): 8 vectors of activation bytes (vector k
 * = bytes 4k..4k+3 of each token), the int32 starting accumulators
 * (-128 * sum of the token's block: Q8_0's offset; the tile takes Q4_0's,
 * 8 times the sum, from it) and the fp32 token scales. Missing tokens of the
 * last group are zeros and contribute nothing. Block b's group g is at
 * (b PK_MAX_G + g) PK_BYTES whatever the pass's group count, so one packed
 * pass serves tiles of every G and a prepared chunk is packed the same way. */
enum { PK_VEC = 64, PK_CORR = 8, PK_SCALE = 9, PK_BYTES = 10 * PK_VEC };
/* Tokens are done in passes of up to PK_MAX_G groups (32 tokens): a tile of
 * 4 rows x 2 groups re-reads each packed byte for 4 rows, and keeps the
 * packed stream from L2 small enough per vpdpbusd (3 or 4 groups need
 * fewer rows to fit the registers, and measured ~15% slower). Blocks are
 * packed PK_KC at a time: 64 x 2 x 640 B = 80 KiB on the stack, which sits
 * in L2 while every row of the call passes over it. */
enum { PK_KC = 64, PK_MAX_G = 2, QPK_MAX_R = 8 };

static TARGET void pack_x(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0,
                          int64_t nb)
{
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)xs));
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    for (int g = 0; g < G; g++) {
        int left = nt - 16 * g;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        const char *xg = x + (size_t)(16 * g) * xs;
        for (int64_t b = 0; b < nb; b++) {
            const char *base = xg + (size_t)(b0 + b) * sizeof(ek_block_q8_0);
            uint8_t *o = xp + (size_t)(b * PK_MAX_G + g) * PK_BYTES;
            __m512i sum = zero;
            for (int k = 0; k < 8; k++) {
                __m512i v = _mm512_mask_i32gather_epi32(zero, m, idx, base + 2 + 4 * k, 1);
                _mm512_store_si512((__m512i *)(o + k * PK_VEC), v);
                sum = _mm512_dpbusd_epi32(sum, ones, v);
            }
            _mm512_store_si512((__m512i *)(o + PK_CORR * PK_VEC),
                               _mm512_sub_epi32(zero, _mm512_slli_epi32(sum, 7)));
            /* the dword at the block start is d plus two q bytes: keep d */
            __m512i d = _mm512_mask_i32gather_epi32(zero, m, idx, base, 1);
            _mm512_store_ps(o + PK_SCALE * PK_VEC, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d)));
        }
    }
}

/* Blocks ahead whose rows8 weights a tile fetches into L1 (0: none). The
 * tile reads the weights with broadcast loads from the panel in L2, while
 * its 80 KiB of packed activations stream through L1 and evict them; the
 * hardware prefetcher leaves those loads waiting. kernel_ab 6144x2048, 128
 * tokens, 2 threads: Q8_0 1.12x, Q4_0 1.04x (1 thread, 2 blocks ahead:
 * 1.06x, 1.02x; 4 ahead: 1.12x, 1.04x, and with the activations also
 * prefetched: 1.08x, 1.05x). Past the matrix's end a prefetch is a no-op. */
#ifndef QPK_W_AHEAD
#define QPK_W_AHEAD 8
#endif

/* R rows x 16G tokens over nb packed blocks into tile[i][t]. Per block: int32
 * accumulators start at the offset correction, take 8 vpdpbusd each (one
 * per weight dword), then are scaled by d_w * d_x into fp32.
 * vpdpbusd has a latency of ~4 cycles and two issue a cycle (Zen 5), so a
 * tile needs >= 8 independent int32 chains; the fp32 sums live in `tile`
 * (L1), not in registers, which leaves room for R * G = 16 of them. */
INLINE void qpk_tile(float *tile, const char *w, size_t rb, int64_t r, const uint8_t *xp,
                     int64_t b0, int64_t nb, const int R, const int G, const int q4, const int r8)
{
    __m512 acc[QPK_MAX_R][PK_MAX_G];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) acc[i][g] = _mm512_setzero_ps();
    const size_t bb = q4 ? sizeof(ek_block_q4_0) : sizeof(ek_block_q8_0);
    /* Where row r + i's block starts (its scale), how far its dword k is
     * from there, and the step to the next block: in the row layout each
     * row is its own run of blocks; in rows8 (rows8.h) a block of 8 rows
     * holds their 8 scales and then vector k = dword k of each row. */
    const int j0 = r8 ? (int)(r % EK_ROWS8) : 0;
    const char *wb = r8 ? w + (size_t)(r - j0) * rb + (size_t)b0 * EK_ROWS8 * bb
                        : w + (size_t)r * rb + (size_t)b0 * bb;
    const size_t step = r8 ? EK_ROWS8 * bb : bb;
#define QPK_SCALE(i) (r8 ? wb + 2 * (j0 + (i)) : wb + (size_t)(i) * rb)
#define QPK_DWORD(i, k) (r8 ? wb + EK_ROWS8_SCALES + 32 * (k) + 4 * (j0 + (i)) : wb + (size_t)(i) * rb + 2 + 4 * (k))
    const __m512i m80 = _mm512_set1_epi8((char)0x80), m0f = _mm512_set1_epi8(0x0f);
    alignas(32) float dws[EK_ROWS8];
    for (int64_t b = 0; b < nb; b++, wb += step) {
        const uint8_t *xb = xp + (size_t)b * PK_MAX_G * PK_BYTES;
        if (r8 && QPK_W_AHEAD > 0)
            _Pragma("GCC unroll 5") for (int o = 0; o < EK_ROWS8 * (int)bb; o += 64)
                _mm_prefetch((const char *)wb + QPK_W_AHEAD * step + o, _MM_HINT_T0);
#define QPK_X(g, v) _mm512_load_si512((const __m512i *)(xb + (g) * PK_BYTES + (v) * PK_VEC))
        /* -128 x sum for Q8_0; Q4_0's -8 x sum is that / 16, exactly */
        __m512i corr[PK_MAX_G];
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
            corr[g] = q4 ? _mm512_srai_epi32(QPK_X(g, PK_CORR), 4) : QPK_X(g, PK_CORR);
        __m512i ia[QPK_MAX_R][PK_MAX_G];
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
            _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) ia[i][g] = corr[g];
        if (!q4) {
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
                __m512i xv[PK_MAX_G];
                _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) xv[g] = QPK_X(g, k);
                _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
                    /* rows8 stores Q8_0 as q + 128 already */
                    __m512i wv = _mm512_set1_epi32((int)ld32(QPK_DWORD(i, k)));
                    if (!r8) wv = _mm512_xor_si512(wv, m80);
                    _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
                        ia[i][g] = _mm512_dpbusd_epi32(ia[i][g], wv, xv[g]);
                }
            }
        } else {
            /* dword k of qs: low nibbles are elements 4k.., high ones 16+4k.. */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                __m512i xl[PK_MAX_G], xh[PK_MAX_G];
                _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) {
                    xl[g] = QPK_X(g, k);
                    xh[g] = QPK_X(g, k + 4);
                }
                _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
                    __m512i v = _mm512_set1_epi32((int)ld32(QPK_DWORD(i, k)));
                    __m512i lo = _mm512_and_si512(v, m0f);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
                    _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) {
                        ia[i][g] = _mm512_dpbusd_epi32(ia[i][g], lo, xl[g]);
                        ia[i][g] = _mm512_dpbusd_epi32(ia[i][g], hi, xh[g]);
                    }
                }
            }
        }
        __m512 dx[PK_MAX_G];
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
            dx[g] = _mm512_load_ps(xb + g * PK_BYTES + PK_SCALE * PK_VEC);
        /* a whole rows8 group's 8 scales sit side by side: converted in one
         * instruction, then broadcast from memory, a load and no vector
         * operation (measured: 1.7B 6144x2048, 128 tokens, 1 thread, CPU time
         * min of 5 alternating: Q8_0 -2%, Q4_0 -4%) */
        const int scales8 = r8 && R == EK_ROWS8;
        if (scales8) {
            _mm256_store_ps(dws, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)wb)));
            __asm__("" : "+m"(dws)); /* read back from memory, not shuffled out of a register */
        }
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
            __m512 dw = scales8 ? _mm512_set1_ps(dws[i])
                                : _mm512_cvtph_ps(_mm256_set1_epi16((short)ld16(QPK_SCALE(i))));
            _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) {
                acc[i][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i][g]),
                                                   _mm512_mul_ps(dw, dx[g]), acc[i][g]);
            }
        }
#undef QPK_X
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
            _mm512_store_ps(tile + i * 64 + g * 16, acc[i][g]);
#undef QPK_SCALE
#undef QPK_DWORD
}

typedef void (*qpk_fn)(float *tile, const char *w, size_t rb, int64_t r, const uint8_t *xp,
                       int64_t b0, int64_t nb);
/* Rows per tile for G token groups: as many as fit 32 registers with the
 * R*G int32 and R*G fp32 accumulators plus the broadcast weights. */
static const int qpk_rows[PK_MAX_G + 1] = {0, 6, 4};

#define QPK(R, G, Q4, R8)                                                                       \
    static TARGET void qpk_##R##_##G##_##Q4##_##R8(float *tile, const char *w, size_t rb,       \
                                                   int64_t r, const uint8_t *xp, int64_t b0,    \
                                                   int64_t nb)                                  \
    {                                                                                           \
        qpk_tile(tile, w, rb, r, xp, b0, nb, R, G, Q4, R8);                                     \
    }
QPK(6, 1, 0, 0) QPK(4, 2, 0, 0) QPK(1, 1, 0, 0) QPK(1, 2, 0, 0)
QPK(6, 1, 1, 0) QPK(4, 2, 1, 0) QPK(1, 1, 1, 0) QPK(1, 2, 1, 0)
QPK(8, 1, 0, 1) QPK(8, 2, 0, 1) QPK(8, 1, 1, 1) QPK(8, 2, 1, 1)

/* [q4][G - 1][full tile, single row] */
static const qpk_fn qpk_table[2][PK_MAX_G][2] = {
    {{qpk_6_1_0_0, qpk_1_1_0_0}, {qpk_4_2_0_0, qpk_1_2_0_0}},
    {{qpk_6_1_1_0, qpk_1_1_1_0}, {qpk_4_2_1_0, qpk_1_2_1_0}},
};
/* The same over the rows8 layout, whose row ranges are whole groups of 8:
 * no single-row tile is ever needed (the tile sizes divide 8). */
static const qpk_fn qpk_r8_table[2][PK_MAX_G][2] = {
    {{qpk_8_1_0_1, NULL}, {qpk_8_2_0_1, NULL}},
    {{qpk_8_1_1_1, NULL}, {qpk_8_2_1_1, NULL}},
};
static const int qpk_r8_rows[PK_MAX_G + 1] = {0, 8, 8};

/* ---- Q8_0 / Q4_0, a few tokens (batched decode): pairs ------------------- */

/* A server's decode step has one token per active sequence, 2 to 8 or so:
 * too few for the 16-token packing (most of its lanes would multiply
 * zeros) and too many for the row tiles (each token pays the per-block
 * activation work and the horizontal sums again). Pairs fill the lanes
 * instead: per block and 2 tokens, 256-bit vector XL holds bytes 0..15 of
 * each token's block (lane 4t + m = bytes 4m..4m+3 of token t) and XH bytes
 * 16..31. A weight half-block (Q8_0: bytes 0..15 or 16..31; Q4_0: the 16
 * low or the 16 high nibbles, which are elements 0..15 and 16..31)
 * broadcast to both 128-bit lanes meets dword m of both tokens in one
 * vpdpbusd: per block and row, 2 vpdpbusd per pair of tokens, and the
 * weight's unpacking and scale are shared by every pair. The four lanes of a
 * token are summed once per row at the end. CORR and SCALE are as in the
 * 16-token packing, spread over the token's lanes (the correction in parts
 * that add up to it).
 * 256-bit, not 512: this is bound by the vector ALUs, not by memory, and on
 * CPUs that execute 512-bit operations as two halves (AMD Zen 4) the
 * per-row work (nibbles, scale) costs half as much at 256 bits while the
 * dot products cost the same (measured 1.9x at two tokens). */
enum { PR_VEC = 32, PR_XL = 0, PR_XH = 1, PR_CORR = 2, PR_SCALE = 3, PR_BYTES = 4 * PR_VEC };
enum { PR_MAX_G = 4 }; /* pairs per pass: 8 tokens */

INLINE void pack_pairs(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0,
                       int64_t nb, const int off_shift)
{
    const __m256i ones = _mm256_set1_epi8(1), zero = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; b++)
        for (int g = 0; g < G; g++) {
            __m256i xl = zero, xh = zero;
            __m256 d = _mm256_setzero_ps();
            for (int t = 0; t < 2 && 2 * g + t < nt; t++) {
                const ek_block_q8_0 *xb =
                    (const ek_block_q8_0 *)(x + (size_t)(2 * g + t) * xs) + b0 + b;
                __mmask8 lanes = (__mmask8)(0xfu << (4 * t));
                xl = _mm256_mask_broadcast_i32x4(xl, lanes, _mm_loadu_si128((const __m128i *)xb->q));
                xh = _mm256_mask_broadcast_i32x4(xh, lanes,
                                                 _mm_loadu_si128((const __m128i *)(xb->q + 16)));
                d = _mm256_mask_broadcastss_ps(d, lanes, _mm_set_ss(_cvtsh_ss(ld16(&xb->d))));
            }
            uint8_t *o = xp + (size_t)(b * G + g) * PR_BYTES;
            __m256i sum = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, ones, xl), ones, xh);
            _mm256_store_si256((__m256i *)(o + PR_XL * PR_VEC), xl);
            _mm256_store_si256((__m256i *)(o + PR_XH * PR_VEC), xh);
            _mm256_store_si256((__m256i *)(o + PR_CORR * PR_VEC),
                               _mm256_sub_epi32(zero, _mm256_slli_epi32(sum, off_shift)));
            _mm256_store_ps((float *)(o + PR_SCALE * PR_VEC), d);
        }
}

/* The correction for each weight format: -128 or -8 times the sum. */
static TARGET void pack_pairs_q8(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0,
                                 int64_t nb)
{
    pack_pairs(xp, x, xs, nt, G, b0, nb, 7);
}
static TARGET void pack_pairs_q4(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0,
                                 int64_t nb)
{
    pack_pairs(xp, x, xs, nt, G, b0, nb, 3);
}

/* R rows x 2G tokens over nb packed blocks into tile[i][t] (t < 2G), the
 * layout qpk_tile writes. */
INLINE void qpair_tile(float *tile, const char *w, size_t rb, int64_t r, const uint8_t *xp,
                       int64_t b0, int64_t nb, const int R, const int G, const int q4)
{
    __m256 acc[4][PR_MAX_G];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) acc[i][g] = _mm256_setzero_ps();
    const size_t bb = q4 ? sizeof(ek_block_q4_0) : sizeof(ek_block_q8_0);
    const char *wb = w + (size_t)r * rb + (size_t)b0 * bb;
    const char *pf = wb + (size_t)R * PF_AHEAD_TILES * rb;
    const __m256i m80 = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++, wb += bb, pf += bb) {
        const uint8_t *xb = xp + (size_t)b * G * PR_BYTES;
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
            const char *wr = wb + (size_t)i * rb;
            /* one line per row every 64 bytes of it */
            if (((uintptr_t)(pf + (size_t)i * rb) & 63) < bb)
                _mm_prefetch(pf + (size_t)i * rb + bb, _MM_HINT_T1);
            __m256i lo, hi;
            if (q4) {
                nibbles256(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wr + 2))),
                           &lo, &hi);
            } else {
                lo = _mm256_xor_si256(
                    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wr + 2))), m80);
                hi = _mm256_xor_si256(
                    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wr + 18))), m80);
            }
            __m256 dw = half_bcast256(ld16(wr));
            _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
                const uint8_t *xg = xb + g * PR_BYTES;
                __m256i ia = _mm256_load_si256((const __m256i *)(xg + PR_CORR * PR_VEC));
                ia = _mm256_dpbusd_epi32(ia, lo, _mm256_load_si256((const __m256i *)(xg + PR_XL * PR_VEC)));
                ia = _mm256_dpbusd_epi32(ia, hi, _mm256_load_si256((const __m256i *)(xg + PR_XH * PR_VEC)));
                __m256 sc = _mm256_mul_ps(dw, _mm256_load_ps((const float *)(xg + PR_SCALE * PR_VEC)));
                acc[i][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia), sc, acc[i][g]);
            }
        }
    }
    /* lanes 4t..4t+3 -> token t: two in-lane pair sums leave it in lane 4t */
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
            __m256 v = acc[i][g];
            v = _mm256_add_ps(v, _mm256_permute_ps(v, 0x4e));
            v = _mm256_add_ps(v, _mm256_permute_ps(v, 0xb1));
            tile[i * 64 + 2 * g] = _mm256_cvtss_f32(v);
            tile[i * 64 + 2 * g + 1] = _mm_cvtss_f32(_mm256_extractf128_ps(v, 1));
        }
}

#define QPAIR(R, G, Q4)                                                                       \
    static TARGET void qpair_##R##_##G##_##Q4(float *tile, const char *w, size_t rb, int64_t r,\
                                              const uint8_t *xp, int64_t b0, int64_t nb)      \
    {                                                                                         \
        qpair_tile(tile, w, rb, r, xp, b0, nb, R, G, Q4);                                     \
    }
QPAIR(4, 1, 0) QPAIR(4, 2, 0) QPAIR(4, 3, 0) QPAIR(4, 4, 0)
QPAIR(1, 1, 0) QPAIR(1, 2, 0) QPAIR(1, 3, 0) QPAIR(1, 4, 0)
QPAIR(4, 1, 1) QPAIR(4, 2, 1) QPAIR(4, 3, 1) QPAIR(4, 4, 1)
QPAIR(1, 1, 1) QPAIR(1, 2, 1) QPAIR(1, 3, 1) QPAIR(1, 4, 1)

static const qpk_fn qpair_table[2][PR_MAX_G][2] = {
    {{qpair_4_1_0, qpair_1_1_0}, {qpair_4_2_0, qpair_1_2_0}, {qpair_4_3_0, qpair_1_3_0},
     {qpair_4_4_0, qpair_1_4_0}},
    {{qpair_4_1_1, qpair_1_1_1}, {qpair_4_2_1, qpair_1_2_1}, {qpair_4_3_1, qpair_1_3_1},
     {qpair_4_4_1, qpair_1_4_1}},
};
static const int qpair_rows[PR_MAX_G + 1] = {0, 4, 4, 4, 4};

/* The two activation layouts, as the driver below sees them. */
typedef struct pk_layout {
    int group;      /* tokens per group: 16 or 4 */
    int max_groups; /* per pass */
    int kc;         /* blocks packed at a time (a pass holds PK_BUF / PK_SPAN bytes) */
    /* tokens [0, nt) of x, blocks [b0, b0 + nb), into a pass at xp, by [q4] */
    void (*pack[2])(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0, int64_t nb);
    const qpk_fn *tiles; /* [q4][G - 1][full tile, single row], flattened */
    const int *rows;     /* rows per full tile, by G */
} pk_layout;

/* A span of up to PK_SPAN passes is packed at once, and each panel of
 * weight rows meets all of its passes before the next panel: the panel
 * (48 rows x PK_KC blocks, ~104 KiB of Q8_0) stays in L2 across them, so a
 * matrix is read from memory once per span, not once per pass (a 6144x2048
 * Q8_0 matrix is 13 MB, more than the L3 keeps between passes). */
enum { PK_SPAN = 2 };
/* Prepared activations (prepare_q) take no stack: a span of them is as
 * long as L2 holds it beside the panel, 4 passes (4 x 80 KiB + ~104 KiB),
 * so a 128-token prefill chunk reads each matrix once. */
enum { PK_PREP_SPAN = 4 }; /* at least PK_SPAN */
enum { PK_BUF = PK_SPAN * PK_KC * PK_MAX_G * PK_BYTES }; /* 160 KiB on the stack */

/* Tiles are gathered per panel of PK_PANEL rows into a token-major buffer
 * and written to y one contiguous run per token. Writing each 4x32 tile
 * straight into y costs a quarter of the kernel's time: y's token stride is
 * often a multiple of 4 KiB (rows = 2048, 6144, ...), so the 32 token rows
 * of a tile share one L1 set and every scalar store misses. */
enum { PK_PANEL = 48 }; /* a multiple of every qpk_rows[] and qpair_rows[] */

/* Spans of up to PK_SPAN passes of up to group * max_groups tokens. The
 * activations are packed here, a span's chunk of blocks at a time, unless
 * `prepared` holds all of them packed already (prepare_q below): pass p's
 * block b at prepared + (p nbt + b) PK_MAX_G PK_BYTES. */
static TARGET void gemm_q_packed(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                 int64_t r1, const char *x, size_t xs, int nt, int q4,
                                 const pk_layout *L, const uint8_t *prepared)
{
    alignas(64) uint8_t xp[PK_BUF];
    alignas(64) float tile[QPK_MAX_R * 64];
    alignas(64) float panel[16 * PK_MAX_G * PK_PANEL];
    const size_t rb = ek_row_bytes(w->dtype, w->cols), pass_bytes = PK_BUF / PK_SPAN;
    const int64_t nbt = w->cols / EK_QBLOCK;
    const int per_pass = L->group * L->max_groups;
    const int span_max = (prepared ? PK_PREP_SPAN : PK_SPAN) * per_pass;
    for (int s0 = 0; s0 < nt; s0 += span_max) {
        const int span = nt - s0 < span_max ? nt - s0 : span_max;
        const int passes = (span + per_pass - 1) / per_pass;
        for (int64_t b0 = 0; b0 < nbt; b0 += L->kc) {
            const int64_t nb = nbt - b0 < L->kc ? nbt - b0 : L->kc;
            const uint8_t *pass_x[PK_PREP_SPAN]; /* >= PK_SPAN */
            for (int p = 0; p < passes; p++) {
                const int t0 = s0 + p * per_pass, T = nt - t0 < per_pass ? nt - t0 : per_pass;
                if (prepared) {
                    pass_x[p] = prepared + ((size_t)(t0 / per_pass) * (size_t)nbt + (size_t)b0) *
                                               PK_MAX_G * PK_BYTES;
                    continue;
                }
                pass_x[p] = xp + (size_t)p * pass_bytes;
                L->pack[q4](xp + (size_t)p * pass_bytes, x + (size_t)t0 * xs, xs, T,
                            (T + L->group - 1) / L->group, b0, nb);
            }
            for (int64_t rp = r0; rp < r1; rp += PK_PANEL) {
                const int64_t rend = r1 - rp < PK_PANEL ? r1 : rp + PK_PANEL;
                const int width = (int)(rend - rp);
                for (int p = 0; p < passes; p++) {
                    const int t0 = s0 + p * per_pass, T = nt - t0 < per_pass ? nt - t0 : per_pass;
                    const int G = (T + L->group - 1) / L->group, R = L->rows[G];
                    const qpk_fn *tiles =
                        L->tiles + ((size_t)q4 * L->max_groups + (size_t)(G - 1)) * 2;
                    for (int64_t r = rp; r < rend;) {
                        const int full = rend - r >= R, n = full ? R : 1;
                        tiles[!full](tile, w->data, rb, r, pass_x[p], b0, nb);
                        if (n == 8) { /* 16 tokens at a time, transposed in registers */
                            for (int g = 0; g * 16 < T; g++) {
                                __m512 v[8];
                                for (int i = 0; i < 8; i++) v[i] = _mm512_load_ps(tile + i * 64 + 16 * g);
                                ek_store_rows8_t16(panel + 16 * g * PK_PANEL + (r - rp), PK_PANEL, v,
                                                   T - 16 * g < 16 ? T - 16 * g : 16, 0);
                            }
                        } else {
                            for (int i = 0; i < n; i++)
                                for (int t = 0; t < T; t++)
                                    panel[t * PK_PANEL + (r - rp) + i] = tile[i * 64 + t];
                        }
                        r += n;
                    }
                    for (int t = 0; t < T; t++)
                        ek_store_run(&y[(int64_t)(t0 + t) * ys + rp], &panel[t * PK_PANEL], width, b0 > 0);
                }
            }
        }
    }
}

static const pk_layout pk_sixteens = {16, PK_MAX_G, PK_KC, {pack_x, pack_x}, &qpk_table[0][0][0],
                                      qpk_rows};
static const pk_layout pk_sixteens_r8 = {16, PK_MAX_G, PK_KC, {pack_x, pack_x},
                                         &qpk_r8_table[0][0][0], qpk_r8_rows};
static const pk_layout pk_pairs = {2, PR_MAX_G, PK_BUF / (PK_SPAN * PR_MAX_G * PR_BYTES),
                                   {pack_pairs_q8, pack_pairs_q4}, &qpair_table[0][0][0],
                                   qpair_rows};

/* Token counts: the row tiles below PAIR_MIN_TOKENS, pairs up to
 * PAIR_MAX_TOKENS, the 16-token packing above (measured: build/bench/kernels
 * --batch=N). */
#ifndef PAIR_MIN_TOKENS
#define PAIR_MIN_TOKENS 2
#endif
#ifndef PAIR_MAX_TOKENS
#define PAIR_MAX_TOKENS 8
#endif

static TARGET void gemm_q(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                          const void *x, size_t xs, int nt, int q4)
{
    if (nt > PAIR_MAX_TOKENS)
        gemm_q_packed(y, ys, w, r0, r1, x, xs, nt, q4, &pk_sixteens, NULL);
    else if (nt >= PAIR_MIN_TOKENS)
        gemm_q_packed(y, ys, w, r0, r1, x, xs, nt, q4, &pk_pairs, NULL);
    else if (q4)
        gemm_q4_0_rows(y, ys, w, r0, r1, x, xs, nt);
    else
        gemm_q8_0_rows(y, ys, w, r0, r1, x, xs, nt);
}

/* The rows8 layout (rows8.h): one token streams it with the interleaved
 * kernels of matmul_rows8_avx512.c, 2..8 with their two-groups-per-zmm
 * form; many (prefill) take the same 512-bit
 * token-major tiles as the row layout, reading each row's dwords where
 * rows8 puts them. Measured on Zen 5 (1.7B shapes 6144x2048, 2048x6144,
 * 2560x2048, 128 tokens, one thread, in one process alternating): the
 * interleaved 256-bit tiles 285-311 GOP/s, these 408-581. On Zen 4, whose
 * 512-bit vpdpbusd runs as two halves, they still win (bench/prefill_gemm,
 * 6144x2048 and 2048x6144, one thread, alternating: Q4_0 128 tokens 281-311
 * vs 228-293 GOP/s, Q8_0 324-340 vs 220-307; 4, 8 and 32 tokens 1.03-1.4x;
 * 16 equal) and the 1.7B prefill of 512 tokens runs 1.17x (q8_0) and 1.19x
 * (q4_0) the 256-bit tiles': fewer instructions per int8 operation, and
 * the token-major tiles' activations prepared once per chunk. */
static TARGET void gemm_q_r8(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                             const void *x, size_t xs, int nt, int q4)
{
    if (nt > PAIR_MAX_TOKENS)
        gemm_q_packed(y, ys, w, r0, r1, x, xs, nt, q4, &pk_sixteens_r8, NULL);
    else if (nt >= 2)
        (q4 ? ek_gemm_rows8_q4_0_avx512_zmm : ek_gemm_rows8_q8_0_avx512_zmm)(y, ys, w, r0, r1, x, xs, nt);
    else if (q4)
        ek_gemm_rows8_q4_0_avx512(y, ys, w, r0, r1, x, xs, nt);
    else
        ek_gemm_rows8_q8_0_avx512(y, ys, w, r0, r1, x, xs, nt);
}

/* K-quants: the decode engines up to PAIR_MAX_TOKENS tokens, the
 * token-major prefill tiles above (kquants_prefill_avx512.c). The types
 * scaled per sub-block of 32 (Q4_K, Q5_K, IQ4_XS) decode on their own engine
 * (kquants_sb32_avx512.c), measured faster than both the general avx512
 * engine and the avx2 one at 1 to 8 tokens (one thread, 2048x2048 warm, 1
 * token: Q4_K 31 vs 20 GB/s on the avx2 engine, Q5_K 32 vs 18, IQ4_XS 29
 * vs 16 on the general engine). Q2_K and Q3_K have theirs too
 * (kquants_lowbit_avx512.c: 1 token 1.4-1.6x the general engine, 0.86-0.91
 * of the read bandwidth, 2 threads, DRAM). */
static TARGET void gemm_kq(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                           const void *x, size_t xs, int nt)
{
    if (nt > PAIR_MAX_TOKENS && ek_kquant_prefill_avx512_covers(w->dtype))
        ek_gemm_kquant_prefill_avx512(y, ys, w, r0, r1, x, xs, nt);
    else if (ek_kquant_sb32_avx512_covers(w->dtype))
        ek_gemm_kquant_sb32_avx512(y, ys, w, r0, r1, x, xs, nt);
    else if (nt <= PAIR_MAX_TOKENS && ek_kquant_lowbit_avx512_covers(w->dtype))
        ek_gemm_kquant_lowbit_avx512(y, ys, w, r0, r1, x, xs, nt);
    else
        ek_gemm_kquant_avx512(y, ys, w, r0, r1, x, xs, nt);
}

/* The ek_gemm_fn entry points: one per format and layout. */
#define Q_GEMM(NAME, IMPL, Q4)                                                                   \
    static TARGET void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,   \
                            const void *x, size_t xs, int nt)                                   \
    {                                                                                           \
        IMPL(y, ys, w, r0, r1, x, xs, nt, Q4);                                                  \
    }
Q_GEMM(gemm_q8_0, gemm_q, 0)
Q_GEMM(gemm_q4_0, gemm_q, 1)
Q_GEMM(gemm_r8_q8_0, gemm_q_r8, 0)
Q_GEMM(gemm_r8_q4_0, gemm_q_r8, 1)

/* Prepared activations (matmul.h): the 16-token packing of every pass and
 * block, done once per input for all of a prefill chunk's matrices that
 * share it instead of in each gemm call (per matrix and thread's part).
 * Only where the gemms above would take that packing: above
 * PAIR_MAX_TOKENS tokens. */
static size_t prepared_bytes_q(int nt, int64_t cols)
{
    const size_t passes = (size_t)(nt + 31) / 32;
    return nt > PAIR_MAX_TOKENS ? passes * (size_t)(cols / EK_QBLOCK) * PK_MAX_G * PK_BYTES : 0;
}

static TARGET void prepare_q(void *xp, const void *x, size_t xs, int nt, int64_t cols, int part,
                             int n_parts)
{
    const int64_t nbt = cols / EK_QBLOCK;
    int64_t p0, p1;
    pool_split((nt + 31) / 32, 1, part, n_parts, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) {
        const int t0 = (int)p * 32, T = nt - t0 < 32 ? nt - t0 : 32;
        pack_x((uint8_t *)xp + (size_t)p * (size_t)nbt * PK_MAX_G * PK_BYTES,
               (const char *)x + (size_t)t0 * xs, xs, T, (T + 15) / 16, 0, nbt);
    }
}

static const ek_prepared_form prepared_q = {prepared_bytes_q, prepare_q};

/* The K-quants' prepared form, for the prefill engine gemm_kq runs above
 * PAIR_MAX_TOKENS tokens (kquants_prefill_avx512.c). */
static size_t prepared_bytes_kq(int nt, int64_t cols)
{
    return nt > PAIR_MAX_TOKENS ? ek_kquant_prefill_prepared_bytes_avx512(nt, cols) : 0;
}
static const ek_prepared_form prepared_kq = {prepared_bytes_kq, ek_kquant_prefill_prepare_avx512};

#define Q_GEMM_PREPARED(NAME, LAYOUT, Q4)                                                        \
    static TARGET void NAME(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,   \
                            const void *xp, int nt)                                             \
    {                                                                                           \
        gemm_q_packed(y, ys, w, r0, r1, NULL, 0, nt, Q4, &LAYOUT, xp);                          \
    }
Q_GEMM_PREPARED(gemm_prepared_q8_0, pk_sixteens, 0)
Q_GEMM_PREPARED(gemm_prepared_q4_0, pk_sixteens, 1)
Q_GEMM_PREPARED(gemm_prepared_r8_q8_0, pk_sixteens_r8, 0)
Q_GEMM_PREPARED(gemm_prepared_r8_q4_0, pk_sixteens_r8, 1)

/* The "_1" types' offsets term for one span of rows (prefill): y[t][i] +=
 * sum_b m[b][i] sx[t][b], m transposed ([block][row], stride ms) so that 16
 * rows take one vector, sx[t][b] = dx sum(qx) of token t's block b. A tile
 * is V vectors of rows x T tokens: per block V loads of m and T broadcasts
 * feed V x T fmas (loads, not fmas, bounded the one-vector form). k masks
 * the last vector's rows. */
INLINE void offsets_tile(float *y, int64_t ys, const float *m, int64_t ms, const float *sx, int64_t nb, int t0,
                         int64_t i, __mmask16 k, const int V, const int T)
{
    __m512 acc[2][8];
    _Pragma("GCC unroll 2") for (int v = 0; v < V; v++)
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[v][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512 mv[2];
        _Pragma("GCC unroll 2") for (int v = 0; v < V; v++)
            mv[v] = _mm512_maskz_loadu_ps(v == V - 1 ? k : (__mmask16)0xffff, m + b * ms + i + 16 * v);
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            const __m512 s = _mm512_set1_ps(sx[(int64_t)(t0 + t) * nb + b]);
            _Pragma("GCC unroll 2") for (int v = 0; v < V; v++) acc[v][t] = _mm512_fmadd_ps(mv[v], s, acc[v][t]);
        }
    }
    _Pragma("GCC unroll 2") for (int v = 0; v < V; v++) {
        const __mmask16 kv = v == V - 1 ? k : (__mmask16)0xffff;
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            float *o = y + (int64_t)(t0 + t) * ys + i + 16 * v;
            _mm512_mask_storeu_ps(o, kv, _mm512_add_ps(_mm512_maskz_loadu_ps(kv, o), acc[v][t]));
        }
    }
}

static TARGET void add_offsets(float *y, int64_t ys, const float *m, int64_t ms, const float *sx, int64_t nb,
                               int nt, int64_t n)
{
    for (int64_t i = 0; i < n; i += 32) {
        const int64_t left = n - i < 32 ? n - i : 32; /* rows of this tile: two vectors, or one */
        const __mmask16 k = (__mmask16)(left % 16 ? (1u << (left % 16)) - 1 : 0xffff);
        int t = 0;
        if (left > 16) {
            for (; t + 8 <= nt; t += 8) offsets_tile(y, ys, m, ms, sx, nb, t, i, k, 2, 8);
            for (; t < nt; t++) offsets_tile(y, ys, m, ms, sx, nb, t, i, k, 2, 1);
        } else {
            for (; t + 8 <= nt; t += 8) offsets_tile(y, ys, m, ms, sx, nb, t, i, k, 1, 8);
            for (; t < nt; t++) offsets_tile(y, ys, m, ms, sx, nb, t, i, k, 1, 1);
        }
    }
}

/* dx sum(qx) of every token's every block, sx[t * nb + b]. */
static TARGET void block_sums(float *sx, const char *x, size_t xs, int nt, int64_t nb)
{
    const __m256i ones = _mm256_set1_epi8(1);
    for (int t = 0; t < nt; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * xs);
        for (int64_t b = 0; b < nb; b++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)xb[b].q);
            const __m256i s8 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, q);
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
            sx[(int64_t)t * nb + b] = _cvtsh_ss(xb[b].d) * (float)_mm_cvtsi128_si32(s);
        }
    }
}

/* The other 32-value block formats: IQ4_NL, Q4_1, Q5_0, Q5_1
 * (blocks32_avx512.c). Decode and a few tokens on their own kernel; many
 * tokens on the Q8_0 tiles above, into which each block turns exactly
 * (IQ4_NL: q = level; Q5_0: q - 16; Q4_1/Q5_1: q, the offset m kept aside,
 * same d): the activations are packed once, then each span of rows is
 * turned into Q8_0 (IQ_SPAN_BYTES, in L2) and meets all of them; for the
 * "_1" types the span's offsets term follows, an fp32 product of its m
 * (blocks x rows) and the tokens' dx sum(qx) (add_offsets). Out of memory:
 * the decode kernel. */
#ifndef IQ_SPAN_BYTES
#define IQ_SPAN_BYTES (256 * 1024)
#endif
static TARGET void gemm_blocks32(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                 const void *x, size_t xs, int nt)
{
    const et_dtype dt = w->dtype;
    if (nt <= PAIR_MAX_TOKENS || r1 <= r0) {
        ek_gemm_blocks32_avx512(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    const int64_t nb = w->cols / EK_QBLOCK;
    const int offsets = dt == ET_Q4_1 || dt == ET_Q5_1;
    const size_t q8rb = ek_row_bytes(ET_Q8_0, w->cols), rb = ek_row_bytes(dt, w->cols);
    const size_t prep = prepared_bytes_q(nt, w->cols);
    int64_t span = (int64_t)(IQ_SPAN_BYTES / q8rb) / 12 * 12; /* whole tiles of 4 and 6 rows */
    if (span < 12) span = 12;
    if (span > r1 - r0) span = r1 - r0;
    const int64_t ms = (span + 15) / 16 * 16; /* the span's offsets, m[b * ms + i] */
    const size_t q8_bytes = ((size_t)span * q8rb + 63) / 64 * 64;
    const size_t m_bytes = offsets ? ((size_t)nb * (size_t)ms + (size_t)nt * (size_t)nb) * sizeof(float) : 0;
    uint8_t *buf = aligned_alloc(64, (prep + q8_bytes + m_bytes + 63) / 64 * 64);
    if (!buf) {
        ek_gemm_blocks32_avx512(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    prepare_q(buf, x, xs, nt, w->cols, 0, 1);
    char *q8 = (char *)buf + prep;
    float *m = (float *)(q8 + q8_bytes), *sx = m + (size_t)nb * (size_t)ms;
    if (offsets) block_sums(sx, x, xs, nt, nb);
    for (int64_t r = r0; r < r1; r += span) {
        const int64_t n = r1 - r < span ? r1 - r : span;
        const char *src = (const char *)w->data + (size_t)r * rb;
        if (!offsets) /* rows follow each other in both layouts: one run of blocks */
            ek_blocks32_to_q8_0_avx512(dt, src, q8, NULL, 0, n * nb);
        else /* row by row, each row's offsets a column of m */
            for (int64_t i = 0; i < n; i++)
                ek_blocks32_to_q8_0_avx512(dt, src + (size_t)i * rb, q8 + (size_t)i * q8rb, m + i, ms, nb);
        const ek_matrix q = {ET_Q8_0, q8, n, w->cols, EK_LAYOUT_ROWS};
        gemm_q_packed(y + r, ys, &q, 0, n, NULL, 0, nt, 0, &pk_sixteens, buf);
        if (offsets) add_offsets(y + r, ys, m, ms, sx, nb, nt, n);
    }
    free(buf);
}

/* ---- activation quantization -------------------------------------------- */

/* Bit-identical to q8_0_from_f32 in formats.c: amax ignores NaN as fmaxf
 * does (max_ps returns its second operand when the first is NaN), d and 1/d
 * are the same IEEE fp32 divisions, f16 rounding is vcvtps2ph's round to
 * nearest even, and roundf's half-away-from-zero is trunc plus a step when
 * the dropped fraction is >= 0.5. Out-of-range and NaN products convert to
 * 0x80000000 as cvttss2si does, and vpmovdb keeps the low byte as the
 * scalar (int8_t) cast does. */
INLINE __m128i round_q8(__m512 v)
{
    __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
    __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    /* copysign(1, v): 1.0f's bits with v's sign bit */
    __m512 step = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(v), _mm512_set1_epi32(0x3f800000), _mm512_set1_epi32(INT32_MIN),
        0xe4)); /* sign from a (mask c), the rest from b */
    t = _mm512_mask_add_ps(t, up, t, step);
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(t));
}

static TARGET void quantize_q8_0(const float *x, void *dst, int64_t n)
{
    ek_block_q8_0 *out = dst;
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        __m512 v0 = _mm512_loadu_ps(x + b * EK_QBLOCK), v1 = _mm512_loadu_ps(x + b * EK_QBLOCK + 16);
        __m512 a = _mm512_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), zero),
                                 _mm512_max_ps(_mm512_abs_ps(v1), zero));
        float amax = _mm512_reduce_max_ps(a);
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        __m512 vid = _mm512_set1_ps(id);
        _mm_storeu_si128((__m128i *)out[b].q, round_q8(_mm512_mul_ps(v0, vid)));
        _mm_storeu_si128((__m128i *)(out[b].q + 16), round_q8(_mm512_mul_ps(v1, vid)));
    }
}

/* Attention primitives: two 16-lane accumulators, masked tail. */
TARGET static float dot_f32_avx512(const float *a, const float *b, int64_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

TARGET static void axpy_f32_avx512(float *y, float a, const float *x, int64_t n)
{
    __m512 va = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i),
                                                        _mm512_maskz_loadu_ps(m, y + i)));
    }
}

#define GEMM_PREP_KQ ek_gemm_kquant_prefill_prepared_avx512

static const ek_kernel_set avx512_set = {
    "avx512",
    {[ET_F32] = gemm_f32, [ET_F16] = gemm_f16, [ET_BF16] = gemm_bf16, [ET_Q8_0] = gemm_q8_0,
     [ET_Q4_0] = gemm_q4_0, [ET_Q2_K] = gemm_kq, [ET_Q3_K] = gemm_kq, [ET_Q4_K] = gemm_kq,
     [ET_Q5_K] = gemm_kq, [ET_Q6_K] = gemm_kq, [ET_IQ4_XS] = gemm_kq, [ET_IQ4_NL] = gemm_blocks32,
     EK_GEMM_Q32(gemm_blocks32)},
    quantize_q8_0,
    dot_f32_avx512,
    axpy_f32_avx512,
    ek_attn_scores_avx512,
    ek_attn_accum_avx512,
    ek_exp_sum_avx512,
    ek_glu_avx512,
    {[ET_F16] = ek_f16_to_f32_avx512, [ET_BF16] = ek_bf16_to_f32_avx512,
     [ET_Q8_0] = ek_q8_0_to_f32_avx512},
    {[EK_CONV_F32] = ek_conv_f32_avx512, [EK_CONV_BF16] = ek_conv_bf16_avx512,
     [EK_CONV_F16] = ek_conv_f16_avx512},
    ek_snake_avx512,
    {[ET_Q8_0] = gemm_r8_q8_0, [ET_Q4_0] = gemm_r8_q4_0},
    {[ET_Q8_0] = &prepared_q, [ET_Q4_0] = &prepared_q, [ET_Q2_K] = &prepared_kq,
     [ET_Q3_K] = &prepared_kq, [ET_Q4_K] = &prepared_kq, [ET_Q5_K] = &prepared_kq,
     [ET_Q6_K] = &prepared_kq, [ET_IQ4_XS] = &prepared_kq},
    {[ET_Q8_0] = gemm_prepared_q8_0, [ET_Q4_0] = gemm_prepared_q4_0,
     [ET_Q2_K] = GEMM_PREP_KQ, [ET_Q3_K] = GEMM_PREP_KQ, [ET_Q4_K] = GEMM_PREP_KQ,
     [ET_Q5_K] = GEMM_PREP_KQ, [ET_Q6_K] = GEMM_PREP_KQ, [ET_IQ4_XS] = GEMM_PREP_KQ},
    {[ET_Q8_0] = gemm_prepared_r8_q8_0, [ET_Q4_0] = gemm_prepared_r8_q4_0},
};

const ek_kernel_set *ek_kernels_avx512(void) { return &avx512_set; }

#else /* not x86-64 */
const ek_kernel_set *ek_kernels_avx512(void) { return NULL; }
#endif
