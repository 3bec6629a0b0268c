/* ggml's 32-value block formats other than Q8_0/Q4_0 on AVX-512 VNNI:
 * IQ4_NL and Q4_1, Q5_0, Q5_1 (q32.h). Each block is an fp16 scale d (the
 * "_1" types an fp16 offset m after it), for the Q5 types a 32-bit word qh
 * of fifth bits, and 16 bytes of nibbles: element l the low nibble of byte
 * l, element 16 + l its high nibble (and bit l, resp. 16 + l, of qh).
 *
 *   kind     bytes  d  m  qh  qs   integer q per element       block dot
 *   IQ4_NL    18    0  -  -   2    level[nibble]                d dx sum(q qx)
 *   Q4_1      20    0  2  -   4    nibble                       + m dx sum(qx)
 *   Q5_0      22    0  -  2   6    nibble + 16 bit - 16
 *   Q5_1      24    0  2  4   8    nibble + 16 bit              + m dx sum(qx)
 *
 * The semantics of ek_dot_iq4_nl_scalar (kquants.c) and ek_dot_q32_scalar
 * (q32.c), with the fp32 additions in another order: each block's integer
 * dot is exact.
 *
 * Decode and a few tokens (ek_gemm_blocks32_avx512): four
 * blocks make one zmm pair. Each block's 16 nibble bytes fill a 128-bit
 * lane (four loads); low and high nibbles are split (elements 0-15 | 16-31)
 * into unsigned bytes for vpdpbusd: IQ4_NL's looked up by vpshufb in the
 * levels plus 128, the Q5 types' fifth bits added as 16 by a byte-masked
 * add whose masks are the four qh words. The signed offsets are corrected
 * exactly in int32: vpdpbusd starts from -128 (IQ4_NL) or -16 (Q5_0) times
 * the sum of each dword's activation bytes. The "_1" types' m term is fp32,
 * m times dx times those sums, per dword lane (summed over a block's four
 * lanes it is m dx sum(qx)). The activations are packed once per call into
 * the same shape, per group of four blocks and token: their low and high
 * halves, the correction (or the scaled sums), and the block scales spread
 * to the four lanes of each block. The four blocks' d (and m) come from
 * one or two 64-byte loads at the group's start by one word permutation
 * and one conversion. Per row and group: two vpdpbusd, then one
 * conversion, multiply and fma per token (and one more fma for m), so the
 * work per byte of weights stays well under what memory delivers. R rows x
 * T tokens per tile: each packed activation vector is loaded once for the
 * R rows, each unpacked weight group serves T tokens. The kind is a
 * constant of each tile, like R and T: no branch on it in the loops. The
 * blocks past the last multiple of four take the scalar kernel.
 *
 * Many tokens (prefill): ek_blocks32_to_q8_0_avx512 turns rows into Q8_0
 * exactly (IQ4_NL: q = level; Q5_0: q - 16; the "_1"
 * types: q with their offsets kept aside), which matmul_avx512.c feeds to
 * its Q8_0 token-major tiles span by span.
 *
 * Built with target attributes like matmul_avx512.c; the set hands it out
 * only on CPUs with AVX-512 F/BW/VL/VNNI. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"
#include "kernels/q32.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* Tokens per pass over a row; rows per tile for one token and for more
 * (measured with kernel_ab, 6144x2048, 2 threads, DRAM, IQ4_NL). Passes of
 * up to 8 tokens, so that 5-8 tokens unpack each weight group once, where
 * all their packed activations fit IQ_PACK_GROUPS; where rows go in column
 * chunks, passes of 4 (8 tokens of 6144 columns in passes of 8 ran
 * 0.91-0.95x). kernel_ab against passes of 4, 2 threads, DRAM: 5 tokens
 * 1.06-1.35x (IQ4_NL, Q4_1, Q5_0, Q5_1 at 6144x2048, 2048x6144,
 * 2048x2048), 8 tokens 1.0-1.12x. */
enum { IQ_KT = 8, IQ_KT_CHUNKED = 4 };
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

/* The formats, in the order of the table above. */
enum { K_IQ4_NL, K_Q4_1, K_Q5_0, K_Q5_1, K_COUNT };

/* The layout of each kind; constants once a tile is inlined. */
INLINE int block_bytes(const int kind)
{
    return kind == K_IQ4_NL ? 18 : kind == K_Q4_1 ? 20 : kind == K_Q5_0 ? 22 : 24;
}
_Static_assert(sizeof(ek_block_iq4_nl) == 18 && sizeof(ek_block_q4_1) == 20 && sizeof(ek_block_q5_0) == 22 &&
                   sizeof(ek_block_q5_1) == 24,
               "the block layouts above");
INLINE int qs_at(const int kind) { return kind == K_IQ4_NL ? 2 : kind == K_Q4_1 ? 4 : kind == K_Q5_0 ? 6 : 8; }
INLINE int qh_at(const int kind) { return kind == K_Q5_0 ? 2 : 4; }
INLINE int has_qh(const int kind) { return kind == K_Q5_0 || kind == K_Q5_1; }
INLINE int has_m(const int kind) { return kind == K_Q4_1 || kind == K_Q5_1; }

/* One token's four activation blocks, packed as the weights are. */
typedef struct iq_xgroup {
    __m512i lo, hi; /* bytes 0-15 | 16-31 of blocks 0..3, one 128-bit lane each */
    union {
        __m512i corr; /* IQ4_NL, Q5_0: -128 or -16 x the sum of each dword lane's 8 bytes (lo and hi) */
        __m512 sx;    /* Q4_1, Q5_1: dx x that sum, for the m term */
    };
    __m512 dx; /* block j's scale in lanes 4j..4j+3 */
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
INLINE void pack_x(iq_xgroup *xp, const char *x, size_t xs, int t0, int T, int64_t g0, int64_t ng, const int kind)
{
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    for (int64_t g = 0; g < ng; g++)
        for (int t = 0; t < T; t++) {
            const ek_block_q8_0 *b = (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + 4 * (g0 + g);
            iq_xgroup *o = &xp[g * T + t];
            o->lo = four_lanes(b[0].q, b[1].q, b[2].q, b[3].q);
            o->hi = four_lanes(b[0].q + 16, b[1].q + 16, b[2].q + 16, b[3].q + 16);
            const __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, ones, o->lo), ones, o->hi);
            const __m128 d4 = _mm_cvtph_ps(_mm_setr_epi16((short)b[0].d, (short)b[1].d, (short)b[2].d,
                                                          (short)b[3].d, 0, 0, 0, 0));
            o->dx = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(d4));
            if (has_m(kind))
                o->sx = _mm512_mul_ps(_mm512_cvtepi32_ps(s), o->dx);
            else
                o->corr = _mm512_sub_epi32(zero, _mm512_slli_epi32(s, kind == K_IQ4_NL ? 7 : 4));
        }
}

/* Word i of the permutation that gathers a group's scales: 0-15 block
 * i / 4's d, 16-31 its m. A group is 72 to 96 bytes: words past the first
 * 64 bytes come from a second load that ends where the group ends. */
#define SCALE_WORD(bs, i) ((i) % 16 / 4 * (bs) / 2 + (i) / 16)
#define SCALE_IDX(bs, i) (SCALE_WORD(bs, i) < 32 ? SCALE_WORD(bs, i) : 32 + SCALE_WORD(bs, i) - (2 * (bs) - 32))
#define SCALE_IDX8(bs, i) SCALE_IDX(bs, i), SCALE_IDX(bs, i + 1), SCALE_IDX(bs, i + 2), SCALE_IDX(bs, i + 3), \
                          SCALE_IDX(bs, i + 4), SCALE_IDX(bs, i + 5), SCALE_IDX(bs, i + 6), SCALE_IDX(bs, i + 7)
#define SCALE_IDX32(bs) {SCALE_IDX8(bs, 0), SCALE_IDX8(bs, 8), SCALE_IDX8(bs, 16), SCALE_IDX8(bs, 24)}
static const alignas(64) uint16_t scale_words[K_COUNT][32] = {SCALE_IDX32(18), SCALE_IDX32(20), SCALE_IDX32(22),
                                                               SCALE_IDX32(24)};

/* Row blocks b[0..3] as unsigned bytes for vpdpbusd, low halves and high
 * halves, and their d (and m) spread like the activations' scales. */
INLINE void w_group(const char *b, __m512i lut, __m512i *lo, __m512i *hi, __m512 *dw, __m512 *mw, const int kind)
{
    const int bs = block_bytes(kind), qs = qs_at(kind);
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    const __m512i v = four_lanes(b + qs, b + bs + qs, b + 2 * bs + qs, b + 3 * bs + qs);
    *lo = _mm512_and_si512(v, m0f);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
    if (kind == K_IQ4_NL) {
        *lo = _mm512_shuffle_epi8(lut, *lo);
        *hi = _mm512_shuffle_epi8(lut, *hi);
    }
    if (has_qh(kind)) {
        /* byte i of lane j: bit i of block j's qh (lo), bit 16 + i (hi) */
        uint32_t q[4];
        for (int j = 0; j < 4; j++) memcpy(&q[j], b + j * bs + qh_at(kind), 4);
        const __mmask64 mlo = (uint64_t)(q[0] & 0xffff) | (uint64_t)(q[1] & 0xffff) << 16 |
                              (uint64_t)(q[2] & 0xffff) << 32 | (uint64_t)(q[3] & 0xffff) << 48;
        const __mmask64 mhi = (uint64_t)(q[0] >> 16) | (uint64_t)(q[1] >> 16) << 16 | (uint64_t)(q[2] >> 16) << 32 |
                              (uint64_t)(q[3] >> 16) << 48;
        const __m512i s16 = _mm512_set1_epi8(16);
        *lo = _mm512_mask_add_epi8(*lo, mlo, *lo, s16);
        *hi = _mm512_mask_add_epi8(*hi, mhi, *hi, s16);
    }
    const __m512i idx = _mm512_load_si512(scale_words[kind]);
    const __m512i head = _mm512_loadu_si512(b);
    __m512i s;
    if (3 * bs / 2 + has_m(kind) < 32)
        s = _mm512_permutexvar_epi16(idx, head); /* every d (and m) within the first 64 bytes */
    else
        s = _mm512_permutex2var_epi16(head, idx, _mm512_loadu_si512(b + 4 * bs - 64));
    *dw = _mm512_cvtph_ps(_mm512_castsi512_si256(s));
    if (has_m(kind)) *mw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(s, 1));
}

/* The scalar kernel for blocks b.. of a row. */
INLINE float tail_dot(const char *blocks, const ek_block_q8_0 *x, int64_t n, const int kind)
{
    if (kind == K_IQ4_NL) return ek_dot_iq4_nl_scalar(blocks, x, n);
    return ek_dot_q32_scalar(kind == K_Q4_1 ? ET_Q4_1 : kind == K_Q5_0 ? ET_Q5_0 : ET_Q5_1, blocks, x, n);
}

/* y[t * ys + r + i] (i < R, t < T) over groups [g0, g0 + ng) of rows r..,
 * the activations packed at xp; `first`: store, else add to y; `last`: also
 * add the scalar kernel's blocks from 4 * (g0 + ng) to nb. */
INLINE void iq_tile(float *y, int64_t ys, const char *w, size_t rb, int64_t r, const iq_xgroup *xp, int64_t g0,
                    int64_t ng, const char *x, size_t xs, int t0, int64_t nb, int first, int last, const int R,
                    const int T, const int kind)
{
    const int bs = block_bytes(kind);
    const __m512i lut = kind == K_IQ4_NL ? levels_u8() : _mm512_setzero_si512();
    __m512 acc[4][IQ_KT];
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[i][t] = _mm512_setzero_ps();
    /* rows r.. r + R are one run of bytes: its successor two tiles on is
     * prefetched at the same pace, R groups' bytes per group */
    const char *pf = w + (size_t)(r + IQ_PF_TILES * R) * rb + (size_t)(4 * g0) * (size_t)bs * R;
    for (int64_t g = 0; g < ng; g++) {
        if (IQ_PF_TILES)
            _Pragma("GCC unroll 8") for (int o = 0; o < 4 * R * bs; o += 64)
                _mm_prefetch(pf + (size_t)g * 4 * R * bs + o, _MM_HINT_T1);
        const iq_xgroup *xg = &xp[g * T];
        _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
            const char *b = w + (size_t)(r + i) * rb + (size_t)(4 * (g0 + g)) * bs;
            __m512i lo, hi;
            __m512 dw, mw;
            w_group(b, lut, &lo, &hi, &dw, &mw, kind);
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
                const __m512i c = has_m(kind) ? _mm512_setzero_si512() : xg[t].corr;
                const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c, lo, xg[t].lo), hi, xg[t].hi);
                acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, xg[t].dx), acc[i][t]);
                if (has_m(kind)) acc[i][t] = _mm512_fmadd_ps(mw, xg[t].sx, acc[i][t]);
            }
        }
    }
    const int64_t bt = 4 * (g0 + ng);
    _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
        const char *row = w + (size_t)(r + i) * rb;
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            float *out = &y[(int64_t)(t0 + t) * ys + r + i];
            float s = _mm512_reduce_add_ps(acc[i][t]);
            if (!first) s += *out;
            if (last && bt < nb)
                s += tail_dot(row + (size_t)bt * bs, (const ek_block_q8_0 *)(x + (size_t)(t0 + t) * xs) + bt,
                              (nb - bt) * EK_QBLOCK, kind);
            *out = s;
        }
    }
}

typedef void (*iq_tile_fn)(float *, int64_t, const char *, size_t, int64_t, const iq_xgroup *, int64_t, int64_t,
                           const char *, size_t, int, int64_t, int, int);
typedef void (*iq_pack_fn)(iq_xgroup *, const char *, size_t, int, int, int64_t, int64_t);
#define IQ_TILE(K, R, T)                                                                                         \
    static TARGET void iq_tile_##K##_##R##_##T(float *y, int64_t ys, const char *w, size_t rb, int64_t r,         \
                                               const iq_xgroup *xp, int64_t g0, int64_t ng, const char *x,       \
                                               size_t xs, int t0, int64_t nb, int first, int last)               \
    {                                                                                                            \
        iq_tile(y, ys, w, rb, r, xp, g0, ng, x, xs, t0, nb, first, last, R, T, K);                               \
    }
#define IQ_KIND(K)                                                                                               \
    IQ_TILE(K, 1, 1) IQ_TILE(K, 2, 1) IQ_TILE(K, 4, 1)                                                           \
    IQ_TILE(K, 1, 2) IQ_TILE(K, 2, 2) IQ_TILE(K, 4, 2)                                                           \
    IQ_TILE(K, 1, 3) IQ_TILE(K, 2, 3) IQ_TILE(K, 4, 3)                                                           \
    IQ_TILE(K, 1, 4) IQ_TILE(K, 2, 4) IQ_TILE(K, 4, 4)                                                           \
    IQ_TILE(K, 1, 5) IQ_TILE(K, 2, 5) IQ_TILE(K, 1, 6) IQ_TILE(K, 2, 6)                                          \
    IQ_TILE(K, 1, 7) IQ_TILE(K, 2, 7) IQ_TILE(K, 1, 8) IQ_TILE(K, 2, 8)                                          \
    static TARGET void iq_pack_##K(iq_xgroup *xp, const char *x, size_t xs, int t0, int T, int64_t g0,           \
                                   int64_t ng)                                                                   \
    {                                                                                                            \
        pack_x(xp, x, xs, t0, T, g0, ng, K);                                                                     \
    }
IQ_KIND(K_IQ4_NL)
IQ_KIND(K_Q4_1)
IQ_KIND(K_Q5_0)
IQ_KIND(K_Q5_1)
/* [kind][T - 1][rows 1, 2, 4] */
#define IQ_TILES(K)                                                                                              \
    {                                                                                                            \
        {iq_tile_##K##_1_1, iq_tile_##K##_2_1, iq_tile_##K##_4_1},                                               \
            {iq_tile_##K##_1_2, iq_tile_##K##_2_2, iq_tile_##K##_4_2},                                           \
            {iq_tile_##K##_1_3, iq_tile_##K##_2_3, iq_tile_##K##_4_3},                                           \
            {iq_tile_##K##_1_4, iq_tile_##K##_2_4, iq_tile_##K##_4_4},                                           \
            {iq_tile_##K##_1_5, iq_tile_##K##_2_5, NULL}, {iq_tile_##K##_1_6, iq_tile_##K##_2_6, NULL},          \
            {iq_tile_##K##_1_7, iq_tile_##K##_2_7, NULL}, {iq_tile_##K##_1_8, iq_tile_##K##_2_8, NULL},          \
    }
static const iq_tile_fn iq_tiles[K_COUNT][IQ_KT][3] = {IQ_TILES(K_IQ4_NL), IQ_TILES(K_Q4_1), IQ_TILES(K_Q5_0),
                                                       IQ_TILES(K_Q5_1)};
static const iq_pack_fn iq_packs[K_COUNT] = {iq_pack_K_IQ4_NL, iq_pack_K_Q4_1, iq_pack_K_Q5_0, iq_pack_K_Q5_1};

static TARGET void gemm_tiles(int kind, float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                 const void *x, size_t xs, int nt)
{
    alignas(64) iq_xgroup xp[IQ_PACK_GROUPS];
    const int64_t nb = w->cols / EK_QBLOCK, ng = nb / 4;
    const size_t rb = ek_row_bytes(w->dtype, w->cols);
    const char *wd = w->data, *xd = x;
    const int kt = ng * (nt < IQ_KT ? nt : IQ_KT) <= IQ_PACK_GROUPS ? IQ_KT : IQ_KT_CHUNKED;
    for (int t0 = 0; t0 < nt; t0 += kt) {
        const int T = nt - t0 < kt ? nt - t0 : kt;
        const int R = T == 1 ? IQ_ROWS_1 : IQ_ROWS_N;
        const iq_tile_fn full = iq_tiles[kind][T - 1][R == 4 ? 2 : R - 1], one = iq_tiles[kind][T - 1][0];
        const int64_t chunk = IQ_PACK_GROUPS / T;
        for (int64_t g0 = 0;; g0 += chunk) {
            const int64_t n = ng - g0 < chunk ? ng - g0 : chunk;
            const int first = g0 == 0, last = g0 + n >= ng;
            iq_packs[kind](xp, xd, xs, t0, T, g0, n);
            int64_t r = r0;
            for (; r + R <= r1; r += R) full(y, ys, wd, rb, r, xp, g0, n, xd, xs, t0, nb, first, last);
            for (; r < r1; r++) one(y, ys, wd, rb, r, xp, g0, n, xd, xs, t0, nb, first, last);
            if (last) break;
        }
    }
}

/* The kind of a dtype the file serves. */
INLINE int kind_of(et_dtype dt)
{
    return dt == ET_IQ4_NL ? K_IQ4_NL : dt == ET_Q4_1 ? K_Q4_1 : dt == ET_Q5_0 ? K_Q5_0 : K_Q5_1;
}

TARGET void ek_gemm_blocks32_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                    const void *x, size_t xs, int nt)
{
    gemm_tiles(kind_of(w->dtype), y, ys, w, r0, r1, x, xs, nt);
}

/* Blocks to Q8_0 per kind: the nibbles in element order (low nibbles then
 * high), IQ4_NL's looked up in the levels, the fifth bits (bit l of qh is
 * element l, so qh is the byte mask as it stands), Q5_0's -16. */
INLINE void to_q8_0(const char *src, ek_block_q8_0 *o, float *m, int64_t ms, int64_t n, const int kind)
{
    const int bs = block_bytes(kind);
    const __m256i shift = _mm256_setr_epi64x(0, 0, 4, 4), m0f = _mm256_set1_epi8(0x0f), s16 = _mm256_set1_epi8(16);
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ek_iq4_levels));
    for (int64_t i = 0; i < n; i++) {
        const char *b = src + (size_t)i * bs;
        const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + qs_at(kind))));
        __m256i q = _mm256_and_si256(_mm256_srlv_epi64(both, shift), m0f);
        if (kind == K_IQ4_NL) q = _mm256_shuffle_epi8(lut, q);
        if (has_qh(kind)) {
            uint32_t qh;
            memcpy(&qh, b + qh_at(kind), 4);
            /* Q5_0: q - 16 where the fifth bit is clear, q where it is set */
            q = kind == K_Q5_0 ? _mm256_mask_sub_epi8(q, (__mmask32)~qh, q, s16) : _mm256_mask_add_epi8(q, qh, q, s16);
        }
        memcpy(&o[i].d, b, 2);
        _mm256_storeu_si256((__m256i *)o[i].q, q);
        if (has_m(kind) && m) {
            uint16_t mh;
            memcpy(&mh, b + 2, 2);
            m[i * ms] = _cvtsh_ss(mh);
        }
    }
}

TARGET void ek_blocks32_to_q8_0_avx512(et_dtype dtype, const void *src, void *dst, float *m, int64_t m_stride,
                                       int64_t n)
{
    switch (kind_of(dtype)) {
    case K_IQ4_NL: to_q8_0(src, dst, m, m_stride, n, K_IQ4_NL); break;
    case K_Q4_1: to_q8_0(src, dst, m, m_stride, n, K_Q4_1); break;
    case K_Q5_0: to_q8_0(src, dst, m, m_stride, n, K_Q5_0); break;
    default: to_q8_0(src, dst, m, m_stride, n, K_Q5_1); break;
    }
}

#else
void ek_gemm_blocks32_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                             size_t xs, int nt)
{
    if (w->dtype == ET_IQ4_NL)
        ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
    else
        ek_gemm_q32_scalar(y, ys, w, r0, r1, x, xs, nt);
}
void ek_blocks32_to_q8_0_avx512(et_dtype dtype, const void *src, void *dst, float *m, int64_t m_stride, int64_t n)
{
    (void)dtype, (void)src, (void)dst, (void)m, (void)m_stride, (void)n;
}
#endif
