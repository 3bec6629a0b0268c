/* Q8_0 / Q4_0 gemm on the eight-row interleaved layout (rows8.h), for the
 * avx512 set; the scalar twins are in matmul_generic.c.
 *
 * A 256-bit vector of weights holds dword k of 8 rows; vpdpbusd against
 * dword k of a token's activation block broadcast to all 8 lanes adds row
 * i's partial dot to lane i. After a block's 8 (Q8_0) or 4 x 2 (Q4_0)
 * vpdpbusd the int32 lanes are the 8 rows' block dots, which convert, scale
 * (8 fp16 row scales in one vcvtph2ps, times the token's scale) and add into
 * 8 fp32 row sums in one go; a group's 8 results leave with one store. Per
 * 8 rows and block that is 12 vector operations for Q8_0 where the row
 * layout needed ~7 per row, so decode is bound by memory again.
 *
 * The activation side of a block (its scale, and minus the weight offset
 * times the sum of its bytes, which vpdpbusd's unsigned weights need) is
 * computed once per block and token into a small table.
 *
 * Up to 8 tokens (decode, a server's batched step) a thread walks its groups
 * one after the other, whole rows at a time: one sequential stream, which
 * the hardware prefetcher follows at full speed; the tokens go two at a time
 * over each group while it sits in L1. The avx512 set takes this path for
 * one token; 2..8 take the zmm form below (this one where their activation
 * table would not fit it), and prefill matmul_avx512.c's 512-bit
 * token-major tiles.
 * 256-bit vectors: one group's 8 rows of a dword fill one, and 256 bits
 * keep the same code valid for a future AVX-VNNI (VEX) set. */
#include "kernels/rows8.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/formats.h"
#include "kernels/simd_common.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* A token's block: its fp32 scale, and -offset * sum(q) to start the int32
 * dot at (offset 128 for Q8_0 weights stored as q + 128, 8 for Q4_0). */
typedef struct r8_act {
    float d;
    int32_t corr;
} r8_act;

/* The table holds this many (token, block) entries: 32 KiB on the stack. */
enum { R8_ACT_MAX = 4096 };
/* Groups side by side when tokens do not go one group at a time (32 rows),
 * and tokens per tile. */
enum { R8_G = 4, R8_T = 2 };

static TARGET void fill_act(r8_act *act, int kc, const char *x, size_t xs, int nt, int64_t b0,
                            int64_t nb, int q4)
{
    const __m256i ones = _mm256_set1_epi8(1);
    for (int t = 0; t < nt; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * xs) + b0;
        for (int64_t b = 0; b < nb; b++) {
            __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones,
                                            _mm256_loadu_si256((const __m256i *)xb[b].q));
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
            act[t * kc + b].d = _cvtsh_ss(xb[b].d);
            act[t * kc + b].corr = -_mm_cvtsi128_si32(h) * (q4 ? 8 : 128);
        }
    }
}

/* acc + the dot of w (unsigned bytes) with the 4 signed bytes at p, in all
 * 8 lanes, the broadcast being vpdpbusd's own memory operand (m32bcst): where
 * one group is walked each broadcast serves one vpdpbusd, and a separate
 * vpbroadcastd for it cost ~8% of the Q4_0 rate from L2 (the compiler does
 * not fold it). */
INLINE __m256i dpbusd_bcast(__m256i acc, __m256i w, const void *p)
{
    __asm__("vpdpbusd %2%{1to8%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const uint32_t *)p));
    return acc;
}

/* G groups (8G rows from w on, gbytes apart) x T tokens over blocks
 * [0, nb) of the chunk: y[t][8g + i] (+)= the sum over those blocks. w
 * points at the chunk's first block of the first group, x at the first
 * token's chunk start, act at the first token's table row. */
INLINE void r8_tile(float *y, int64_t ys, const uint8_t *w, size_t gbytes, const r8_act *act,
                    int kc, const char *x, size_t xs, int64_t nb, int add,
                    const int G, const int T, const int q4)
{
    const size_t bs = EK_ROWS8_SCALES + (q4 ? 128 : 256); /* block stride */
    __m256 acc[R8_G][R8_T];
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
            acc[g][j] = add ? _mm256_loadu_ps(y + j * ys + 8 * g) : _mm256_setzero_ps();
    const __m256i m0f = _mm256_set1_epi8(0x0f), mf0 = _mm256_set1_epi8((char)0xf0);
    for (int64_t b = 0; b < nb; b++) {
        /* two int32 chains per group and token (even and odd dwords, or low
         * and high nibbles), so a block's dot is 4 dependent vpdpbusd deep,
         * not 8: one group at a time would otherwise wait on their latency */
        const int8_t *xq[R8_T];
        __m256i ia[R8_G][R8_T], ib[R8_G][R8_T];
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {
            xq[j] = ((const ek_block_q8_0 *)(x + (size_t)j * xs))[b].q;
            _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
                ia[g][j] = _mm256_set1_epi32(act[j * kc + b].corr);
                ib[g][j] = _mm256_setzero_si256();
            }
        }
        const uint8_t *blk = w + (size_t)b * bs; /* group g's block at + g * gbytes */
        if (!q4) {
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
                __m256i xk[R8_T]; /* several groups share a broadcast */
                if (G > 1)
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
                        xk[j] = _mm256_set1_epi32((int)ld32(xq[j] + 4 * k));
                _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
                    __m256i wv = _mm256_loadu_si256(
                        (const __m256i *)(blk + (size_t)g * gbytes + EK_ROWS8_SCALES + 32 * k));
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {
                        __m256i *c = k & 1 ? &ib[g][j] : &ia[g][j];
                        *c = G > 1 ? _mm256_dpbusd_epi32(*c, wv, xk[j])
                                   : dpbusd_bcast(*c, wv, xq[j] + 4 * k);
                    }
                }
            }
        } else {
            /* dword k: low nibbles are elements 4k.., high ones 16 + 4k..;
             * the high nibbles stay in place (16x their value, one AND
             * instead of a shift and an AND) and their chain is divided by
             * 16 once per block, exactly */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                __m256i xl[R8_T], xh[R8_T];
                if (G > 1)
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {
                        xl[j] = _mm256_set1_epi32((int)ld32(xq[j] + 4 * k));
                        xh[j] = _mm256_set1_epi32((int)ld32(xq[j] + 16 + 4 * k));
                    }
                _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
                    __m256i v = _mm256_loadu_si256(
                        (const __m256i *)(blk + (size_t)g * gbytes + EK_ROWS8_SCALES + 32 * k));
                    /* one load for both ANDs: the compiler would fold it into
                     * each, and loads, not ALU operations, bound this loop */
                    __asm__("" : "+v"(v));
                    __m256i lo = _mm256_and_si256(v, m0f);
                    __m256i hi = _mm256_and_si256(v, mf0);
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) {
                        if (G > 1) {
                            ia[g][j] = _mm256_dpbusd_epi32(ia[g][j], lo, xl[j]);
                            ib[g][j] = _mm256_dpbusd_epi32(ib[g][j], hi, xh[j]);
                        } else {
                            ia[g][j] = dpbusd_bcast(ia[g][j], lo, xq[j] + 4 * k);
                            ib[g][j] = dpbusd_bcast(ib[g][j], hi, xq[j] + 16 + 4 * k);
                        }
                    }
                }
            }
        }
        _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) {
            __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + (size_t)g * gbytes)));
            _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
                acc[g][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(
                                                ia[g][j], q4 ? _mm256_srai_epi32(ib[g][j], 4) : ib[g][j])),
                                            _mm256_mul_ps(dw, _mm256_set1_ps(act[j * kc + b].d)),
                                            acc[g][j]);
        }
    }
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
            _mm256_storeu_ps(y + j * ys + 8 * g, acc[g][j]);
}

typedef void (*r8_tile_fn)(float *y, int64_t ys, const uint8_t *w, size_t gbytes,
                           const r8_act *act, int kc, const char *x, size_t xs, int64_t nb,
                           int add);
#define R8_TILE(G, T, Q4)                                                                      \
    static TARGET void r8_##G##_##T##_##Q4(float *y, int64_t ys, const uint8_t *w, size_t gbytes, \
                                           const r8_act *act, int kc, const char *x, size_t xs, \
                                           int64_t nb, int add)                                 \
    {                                                                                          \
        r8_tile(y, ys, w, gbytes, act, kc, x, xs, nb, add, G, T, Q4);                          \
    }
R8_TILE(4, 2, 0) R8_TILE(4, 1, 0) R8_TILE(1, 2, 0) R8_TILE(1, 1, 0)
R8_TILE(4, 2, 1) R8_TILE(4, 1, 1) R8_TILE(1, 2, 1) R8_TILE(1, 1, 1)
/* [q4][4 groups?][two tokens?] */
static const r8_tile_fn r8_tiles[2][2][2] = {
    {{r8_1_1_0, r8_1_2_0}, {r8_4_1_0, r8_4_2_0}},
    {{r8_1_1_1, r8_1_2_1}, {r8_4_1_1, r8_4_2_1}},
};
/* Groups per tile by token count: one at a time up to R8_STREAM_TOKENS
 * (the single stream that decode, memory bound, wants), else 4 side by side,
 * so each activation broadcast serves 4 groups: a batched step of 3..8
 * tokens is bound by those operations more than by memory (measured, 1.7B
 * q4_0, 8 rows: 106 tok/s one group at a time, 121 four). */
#ifndef R8_STREAM_TOKENS
#define R8_STREAM_TOKENS 2
#endif

/* Few tokens stream each group from memory once, and the hardware
 * prefetcher alone follows that stream. No software prefetch: one group
 * ahead to L2 (_MM_HINT_T1) cost 8-34% of the streaming rate from DRAM and
 * 10% from L3 (Zen 4; in-process A/B alternating both builds, 6144x2048 and
 * 2048x6144, Q8_0 and Q4_0, 2 threads: with it 0.69-0.93 of a plain read,
 * without it 0.94-1.00); T0, NTA and half the distance were no better. */

/* 1..8 tokens: whole rows (1-2 tokens one group at a time,
 * 3..8 four side by side), in chunks of blocks whose activation table fits. */
static TARGET void gemm_rows8(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                              const void *xv, size_t xs, int nt, int q4)
{
    r8_act act[R8_ACT_MAX];
    const char *x = xv;
    const int64_t nbt = w->cols / EK_QBLOCK;
    const size_t gbytes = EK_ROWS8 * ek_row_bytes(w->dtype, w->cols);
    const size_t bs = EK_ROWS8_SCALES + ek_rows8_block_quants(w->dtype);
    const uint8_t *data = w->data;
    const int64_t kc = nbt < R8_ACT_MAX / nt ? nbt : R8_ACT_MAX / nt;
    for (int64_t b0 = 0; b0 < nbt; b0 += kc) {
        const int64_t nb = nbt - b0 < kc ? nbt - b0 : kc;
        fill_act(act, (int)kc, x, xs, nt, b0, nb, q4);
        for (int64_t r = r0; r < r1;) {
            const int G = nt > R8_STREAM_TOKENS && r1 - r >= 8 * R8_G ? R8_G : 1;
            const uint8_t *wb = data + (size_t)(r / EK_ROWS8) * gbytes + (size_t)b0 * bs;
            for (int t = 0; t < nt; t += R8_T)
                r8_tiles[q4][G == R8_G][nt - t >= 2](
                    y + (int64_t)t * ys + r, ys, wb, gbytes, act + t * kc, (int)kc,
                    x + (size_t)t * xs + (size_t)b0 * sizeof(ek_block_q8_0), xs, nb, b0 > 0);
            r += 8 * G;
        }
    }
}

/* ---- a few tokens at full 512-bit width ----------------------------------
 *
 * 2..8 tokens (a server's batched decode step, a speculative verify) are
 * bound by the vector operations, not by memory: two groups' vector k
 * (16 rows' dword k) join in one zmm, and a token's dword k broadcast from
 * memory (vpdpbusd's m32bcst operand) meets 16 rows per instruction: half
 * the instructions of the 256-bit tiles above for the dot products, and the
 * weights' joining (and Q4_0's nibble masks) are shared by every token
 * (a pass of 8 tokens measured 1.15-1.3x passes of 4 at 5 and 8 tokens).
 * Even where 512-bit operations run as two halves (Zen 4) this beats the
 * 256-bit tiles: 4 and 8 tokens of 6144x2048, one thread, 1.03-1.4x.
 * Per block and token: 8 vpdpbusd in two chains, then one conversion and
 * one multiply-add into 16 fp32 row sums. */
enum { Z_TOKENS = 8 }; /* tokens per pass over a pair of groups: every few-token step */
#ifndef Z_PF
#define Z_PF 4 /* blocks prefetched ahead */
#endif

INLINE __m512i dpbusd_bcast16(__m512i acc, __m512i w, const void *p)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const uint32_t *)p));
    return acc;
}

INLINE __m512i join256(const uint8_t *a, const uint8_t *b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* Rows [8g, 8g + 16) (group b = group a + 1, or a itself for a lone last
 * group, whose upper half is not stored) x T tokens over all blocks. */
INLINE void z_tile(float *y, int64_t ys, const uint8_t *ga, const uint8_t *gb, int64_t nbt,
                   const r8_act *act, int kc, const char *x, size_t xs, const int T, const int q4,
                   int two_groups)
{
    const size_t bs = EK_ROWS8_SCALES + (q4 ? 128 : 256);
    __m512 acc[Z_TOKENS];
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    const __m512i m0f = _mm512_set1_epi8(0x0f), mf0 = _mm512_set1_epi8((char)0xf0);
    for (int64_t b = 0; b < nbt; b++) {
        const uint8_t *pa = ga + (size_t)b * bs, *pb = gb + (size_t)b * bs;
        /* Z_PF blocks ahead in both groups: with several tokens' work per
         * byte the hardware prefetcher alone left the stream at about half
         * the rate one token reads (measured, 1.7B shapes from DRAM) */
        if (b + Z_PF < nbt)
            for (size_t o = 0; o < bs; o += 64) {
                _mm_prefetch((const char *)pa + Z_PF * bs + o, _MM_HINT_T0);
                _mm_prefetch((const char *)pb + Z_PF * bs + o, _MM_HINT_T0);
            }
        const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)pa)),
            _mm_loadu_si128((const __m128i *)pb), 1));
        __m512i wv[8];
        if (!q4) {
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                wv[k] = join256(pa + EK_ROWS8_SCALES + 32 * k, pb + EK_ROWS8_SCALES + 32 * k);
        } else {
            /* low nibbles are elements 4k.., high ones 16 + 4k.. kept in
             * place (16x), the chain divided by 16 once, exactly */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                __m512i v = join256(pa + EK_ROWS8_SCALES + 32 * k, pb + EK_ROWS8_SCALES + 32 * k);
                wv[k] = _mm512_and_si512(v, m0f);
                wv[4 + k] = _mm512_and_si512(v, mf0);
            }
        }
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            const int8_t *xq = ((const ek_block_q8_0 *)(x + (size_t)t * xs))[b].q;
            __m512i ia = _mm512_set1_epi32(act[t * kc + b].corr), ib = _mm512_setzero_si512();
            if (!q4) {
                _Pragma("GCC unroll 4") for (int k = 0; k < 8; k += 2) {
                    ia = dpbusd_bcast16(ia, wv[k], xq + 4 * k);
                    ib = dpbusd_bcast16(ib, wv[k + 1], xq + 4 * k + 4);
                }
            } else {
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                    ia = dpbusd_bcast16(ia, wv[k], xq + 4 * k);
                    ib = dpbusd_bcast16(ib, wv[4 + k], xq + 16 + 4 * k);
                }
                ib = _mm512_srai_epi32(ib, 4);
            }
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(ia, ib)),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(act[t * kc + b].d)), acc[t]);
        }
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
        if (two_groups)
            _mm512_storeu_ps(y + t * ys, acc[t]);
        else
            _mm256_storeu_ps(y + t * ys, _mm512_castps512_ps256(acc[t]));
    }
}

#define Z_TILE(T, Q4)                                                                            \
    static TARGET void z_##T##_##Q4(float *y, int64_t ys, const uint8_t *ga, const uint8_t *gb,  \
                                    int64_t nbt, const r8_act *act, int kc, const char *x,       \
                                    size_t xs, int two_groups)                                   \
    {                                                                                            \
        z_tile(y, ys, ga, gb, nbt, act, kc, x, xs, T, Q4, two_groups);                           \
    }
Z_TILE(1, 0) Z_TILE(2, 0) Z_TILE(3, 0) Z_TILE(4, 0)
Z_TILE(5, 0) Z_TILE(6, 0) Z_TILE(7, 0) Z_TILE(8, 0)
Z_TILE(1, 1) Z_TILE(2, 1) Z_TILE(3, 1) Z_TILE(4, 1)
Z_TILE(5, 1) Z_TILE(6, 1) Z_TILE(7, 1) Z_TILE(8, 1)
typedef void (*z_tile_fn)(float *, int64_t, const uint8_t *, const uint8_t *, int64_t,
                          const r8_act *, int, const char *, size_t, int);
static const z_tile_fn z_tiles[2][Z_TOKENS] = {
    {z_1_0, z_2_0, z_3_0, z_4_0, z_5_0, z_6_0, z_7_0, z_8_0},
    {z_1_1, z_2_1, z_3_1, z_4_1, z_5_1, z_6_1, z_7_1, z_8_1},
};

static TARGET void gemm_rows8_zmm(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                  int64_t r1, const void *xv, size_t xs, int nt, int q4)
{
    r8_act act[R8_ACT_MAX];
    const char *x = xv;
    const int64_t nbt = w->cols / EK_QBLOCK;
    const size_t gbytes = EK_ROWS8 * ek_row_bytes(w->dtype, w->cols);
    if ((int64_t)nt * nbt > R8_ACT_MAX) { /* more than this path is for */
        gemm_rows8(y, ys, w, r0, r1, xv, xs, nt, q4);
        return;
    }
    fill_act(act, (int)nbt, x, xs, nt, 0, nbt, q4);
    for (int64_t r = r0; r < r1; r += 16) {
        const int two = r1 - r >= 16;
        const uint8_t *ga = (const uint8_t *)w->data + (size_t)(r / EK_ROWS8) * gbytes;
        for (int t0 = 0; t0 < nt; t0 += Z_TOKENS) {
            const int T = nt - t0 < Z_TOKENS ? nt - t0 : Z_TOKENS;
            z_tiles[q4][T - 1](y + (int64_t)t0 * ys + r, ys, ga, two ? ga + gbytes : ga, nbt,
                               act + (size_t)t0 * (size_t)nbt, (int)nbt, x + (size_t)t0 * xs, xs, two);
        }
    }
}

void ek_gemm_rows8_q8_0_avx512_zmm(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t xs, int nt)
{
    gemm_rows8_zmm(y, ys, w, r0, r1, x, xs, nt, 0);
}

void ek_gemm_rows8_q4_0_avx512_zmm(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t xs, int nt)
{
    gemm_rows8_zmm(y, ys, w, r0, r1, x, xs, nt, 1);
}

void ek_gemm_rows8_q8_0_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt)
{
    gemm_rows8(y, ys, w, r0, r1, x, xs, nt, 0);
}

void ek_gemm_rows8_q4_0_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt)
{
    gemm_rows8(y, ys, w, r0, r1, x, xs, nt, 1);
}

#endif
