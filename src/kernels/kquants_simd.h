/* What the K-quant SIMD kernels (kquants_avx512.c, kquants_avx2.c,
 * kquants_neon.c) share, so that each holds only its registers:
 *  - the packed sub-block scales unpacked with 32-bit word arithmetic (four
 *    scales per operation), which each kernel loads into its own vectors,
 *    and on x86 the Q4_K/Q5_K and IQ4_XS scales made in a vector register
 *    directly (the same integers, fewer instructions);
 *    the bit layouts are described once, beside the scalar decoding in
 *    kquants.c, and these give the same integers (test_kernels holds every
 *    SIMD set to the scalar kernel);
 *  - the dispatch from a type to the kernel's unpacker;
 *  - for the AVX2 and NEON engines: the prepared activations, the row
 *    functions per type and token count, and the gemm driver over them. */
#ifndef EMBER_KERNELS_KQUANTS_SIMD_H
#define EMBER_KERNELS_KQUANTS_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kquants.h"

struct ek_matrix;

/* ---- scales -------------------------------------------------------------- */

static inline uint32_t ek_kq_rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Q4_K/Q5_K: the 12 scale bytes as four words of four bytes: scales 0-3,
 * scales 4-7, offsets 0-3, offsets 4-7 (each 0..63). */
static inline void ek_kq_scales_k4(const uint8_t *s, uint32_t out[4])
{
    uint32_t w0 = ek_kq_rd32(s), w1 = ek_kq_rd32(s + 4), w2 = ek_kq_rd32(s + 8);
    out[0] = w0 & 0x3f3f3f3fu;
    out[1] = (w2 & 0x0f0f0f0fu) | (((w0 >> 6) & 0x03030303u) << 4);
    out[2] = w1 & 0x3f3f3f3fu;
    out[3] = ((w2 >> 4) & 0x0f0f0f0fu) | (((w1 >> 6) & 0x03030303u) << 4);
}

#if defined(__x86_64__)
#include <immintrin.h>
/* The same 16 bytes (scales 0-7, offsets 0-7) made in a vector register:
 * two byte shuffles put each output's source bytes in its lane (the low
 * bits' byte in a, the top two bits' byte in b), then masks and shifts
 * (16-bit shifts: the bits they pull in from the next byte are masked).
 * Measured on the decode engine (Zen 5, one row in L1): 4.0 -> 3.3 ns a
 * Q4_K super-block, the word arithmetic and moving four words into a
 * vector having been a fifth of it. Reads 16 bytes from s: a Q4_K/Q5_K
 * block goes on past its 12 scale bytes. */
__attribute__((target("ssse3"), always_inline)) static inline __m128i ek_kq_scales_k4_v(const uint8_t *s)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i low = _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m128i nib = _mm_and_si128(_mm_srli_epi16(a, 4),
                                      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    const __m128i top = _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30));
    return _mm_or_si128(_mm_or_si128(low, nib), top);
}
#endif

/* Q3_K: the sixteen 6-bit scales, still biased by 32 (0..63), as four words
 * of four bytes in sub-block order. */
static inline void ek_kq_scales_k3(const uint8_t *s, uint32_t out[4])
{
    uint32_t a0 = ek_kq_rd32(s), a1 = ek_kq_rd32(s + 4), t = ek_kq_rd32(s + 8);
    out[0] = (a0 & 0x0f0f0f0fu) | ((t & 0x03030303u) << 4);
    out[1] = (a1 & 0x0f0f0f0fu) | (((t >> 2) & 0x03030303u) << 4);
    out[2] = ((a0 >> 4) & 0x0f0f0f0fu) | (((t >> 4) & 0x03030303u) << 4);
    out[3] = ((a1 >> 4) & 0x0f0f0f0fu) | (((t >> 6) & 0x03030303u) << 4);
}

/* IQ4_XS: the eight 6-bit scales of the sub-blocks of 32, still biased by
 * 32 (0..63), as the eight bytes of a word: the low nibbles' word spread a
 * nibble to a byte, the high bits' a bit pair to a byte, by halving steps. */
static inline uint64_t ek_kq_scales_iq4_xs(const ek_block_iq4_xs *b)
{
    uint64_t lo = ek_kq_rd32(b->scales_l), hi = b->scales_h;
    lo = (lo | lo << 16) & 0x0000ffff0000ffffull;
    lo = (lo | lo << 8) & 0x00ff00ff00ff00ffull;
    lo = (lo | lo << 4) & 0x0f0f0f0f0f0f0f0full;
    hi = (hi | hi << 24) & 0x000000ff000000ffull;
    hi = (hi | hi << 12) & 0x000f000f000f000full;
    hi = (hi | hi << 6) & 0x0303030303030303ull;
    return lo | hi << 4;
}

#if defined(__x86_64__)
/* The same eight scales, still biased, as eight 16-bit lanes of a vector
 * (AVX-512 BW/VL variable shifts): lane j gets scales_l byte j / 2 and the
 * scales_h word by two byte shuffles, then each shifts its own field down
 * (4 (j % 2) and 2 j bits). Reads the block's first 8 bytes. */
__attribute__((target("avx512bw,avx512vl"), always_inline)) static inline __m128i
ek_kq_scales_iq4_xs16(const ek_block_iq4_xs *b)
{
    const __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)b); /* d, scales_h, scales_l */
    const __m128i l = _mm_shuffle_epi8(v, _mm_setr_epi8(4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1));
    const __m128i h = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
    const __m128i lo = _mm_and_si128(_mm_srlv_epi16(l, _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4)), _mm_set1_epi16(15));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi16(h, _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14)), _mm_set1_epi16(3));
    return _mm_or_si128(lo, _mm_slli_epi16(hi, 4));
}
#endif

/* ---- the unpacker dispatch ---------------------------------------------- */

/* Defines `unpack(dt, row, b, u)` for super-block b of a row over the
 * kernel's own unpackers, which take (U is its unpacked type):
 *   unpack_q45(scales, d, dmin, qs, qh or NULL for Q4_K, U *)
 *   unpack_q6_k, unpack_q3_k, unpack_q2_k, unpack_iq4_xs(const block *, U *)
 * ATTRS: the kernel's storage class and target attributes. */
#define EK_KQ_DEFINE_UNPACK(ATTRS, U)                                                                          \
    ATTRS void unpack(const et_dtype dt, const char *row, int64_t b, U *u)                                    \
    {                                                                                                          \
        switch (dt) {                                                                                          \
        case ET_Q4_K: {                                                                                        \
            const ek_block_q4_k *k = (const ek_block_q4_k *)row + b;                                           \
            unpack_q45(k->scales, k->d, k->dmin, k->qs, NULL, u);                                              \
            break;                                                                                             \
        }                                                                                                      \
        case ET_Q5_K: {                                                                                        \
            const ek_block_q5_k *k = (const ek_block_q5_k *)row + b;                                           \
            unpack_q45(k->scales, k->d, k->dmin, k->qs, k->qh, u);                                             \
            break;                                                                                             \
        }                                                                                                      \
        case ET_Q6_K: unpack_q6_k((const ek_block_q6_k *)row + b, u); break;                                   \
        case ET_Q3_K: unpack_q3_k((const ek_block_q3_k *)row + b, u); break;                                   \
        case ET_Q2_K: unpack_q2_k((const ek_block_q2_k *)row + b, u); break;                                   \
        default: unpack_iq4_xs((const ek_block_iq4_xs *)row + b, u); break;                                    \
        }                                                                                                      \
    }

/* ---- prepared activations ------------------------------------------------ *
 * What the AVX2 and NEON engines need of the Q8_0 activations besides their
 * bytes, which they read in place (a Q8_0 block is one 256-bit or two
 * 128-bit vectors): per token the fp32 scale of every block of 32, and per
 * group of 16 that scale times the group's sum. Through the latter the
 * per-16 corrections of a super-block (minimums, offsets that make weights
 * unsigned) meet the activations in a few vector multiply-adds instead of
 * an integer dot each. Made once per gemm call, used by every row. */
typedef struct ek_kq_acts {
    float *dx;   /* [t * (n / 32) + block] */
    float *ds16; /* [t * (n / 16) + group] */
    int64_t n;   /* columns */
    float *heap; /* allocated when the caller's buffer was too small, else NULL */
} ek_kq_acts;

/* Floats for n_tokens x n: 3 per 32 columns. The driver keeps
 * EK_KQ_ACTS_STACK of them on its stack, so decode and small batches
 * (n_tokens * n <= 32768: 1 token of 16384 columns, 4 of 8192) allocate
 * nothing; prefill, whose arithmetic dwarfs a malloc, takes the heap. */
#define EK_KQ_ACTS_FLOATS(n_tokens, n) ((size_t)(n_tokens) * (size_t)((n) / 32) * 3)
enum { EK_KQ_ACTS_STACK = 3072 };

/* From n_tokens Q8_0 rows x_stride bytes apart, n a multiple of 32. Uses
 * buf when it holds EK_KQ_ACTS_FLOATS, else allocates. Nonzero when out of
 * memory (then nothing is left to free). */
int ek_kq_acts_make(ek_kq_acts *a, float *buf, size_t buf_floats, const void *x, size_t x_stride, int n_tokens,
                    int64_t n);
void ek_kq_acts_free(ek_kq_acts *a);

/* ---- row functions and the driver ---------------------------------------- */

/* The AVX-512 drivers prefetch a row's successor into L1 while the row
 * computes only from this many tokens on: there the row takes long enough
 * that the stream outruns the hardware prefetcher (kernel_ab, 2 threads,
 * weights from DRAM in huge pages: without it Q6_K 2048x6144 at 4 tokens
 * -27%, Q4_K 6144x2048 at 8 tokens -14%). For one token the software
 * prefetches only compete with the hardware's (Q4_K, Q5_K, Q6_K +5-12%
 * without them; the 1.7B Q4_K_M decode 29-34 -> 38-39 tok/s). */
enum { EK_KQ_PREFETCH_MIN_TOKENS = 2 };

/* One token instead fetches, into L2, the row EK_KQ_DECODE_AHEAD rows on,
 * a super-block at a time inside the row's loop (ek_kq_prefetch_ahead):
 * spread so, the fetches overlap the row's work instead of stalling at its
 * start with more misses than the core tracks (the L1 fetch of a whole
 * successor row above, or of a 6144-column row 8 rows on, did). kernel_ab
 * 1 token, 2 threads, weights from DRAM, against none (medians of 2-4
 * runs): Q6_K 1.05x, Q4_K 1.08x, IQ4_XS 1.06x, Q5_K 1.0x; against the whole
 * row at its start: Q3_K 2048x6144 1.19-1.22x. 4 and 16 rows ahead did no
 * better. The 1.7B Q4_K_M decode stayed where it was (46.9 vs 47.5 tok/s). */
enum { EK_KQ_DECODE_AHEAD = 8 };

/* Tokens per pass, and rows per block, where an engine runs its passes
 * block of rows by block: once all the tokens' activations (n bytes and
 * two floats per 32 columns each) outgrow L1, passes inside each row would
 * reload them from L2 row after row (8 tokens of 6144 columns: 61 KiB);
 * passes of up to EK_KQ_BLOCKED_KT tokens over a block of rows keep one
 * pass's activations in L1 while the block's rows (64 KiB) wait in L2.
 * Measured with kernel_ab, 2048x6144, 2 threads, weights from DRAM, against
 * passes inside each row: Q4_K (passes of 4) 6 tokens 1.40x, 8 tokens
 * 1.48x; Q6_K (passes of 6 before) 5-8 tokens 1.07-1.24x; Q2_K and Q3_K
 * (one pass of up to 8 before) 5 tokens 1.14-1.28x, 8 tokens 1.8-2.4x.
 * Unchanged at 6144x2048, where 8 tokens' activations fit L1. Returns 1
 * where a row should take all its passes before the next row. */
enum { EK_KQ_BLOCKED_KT = 4 };
static inline int64_t ek_kq_row_block(int nt, int64_t n, size_t rb)
{
    const size_t acts = (size_t)nt * (size_t)n * 5 / 4, l1 = 32 * 1024, block = 64 * 1024;
    if (nt <= EK_KQ_BLOCKED_KT || acts <= l1) return 1;
    return block / rb > 0 ? (int64_t)(block / rb) : 1;
}

#if defined(__x86_64__)
/* The order in which an AVX-512 engine runs passes of up to kt tokens (its
 * most; EK_KQ_BLOCKED_KT at most over blocks) over rows r0..r1 (rb bytes
 * apart from `rows`, row r0's bytes): block by block of ek_kq_row_block
 * rows, pass by pass within a block, row by row within a pass. From EK_KQ_PREFETCH_MIN_TOKENS tokens on, each step first fetches
 * into L1 the row the next step reads (a row's successor as its first pass
 * starts, when rows take all their passes one after another). Use:
 *   for (ek_kq_walk k = ek_kq_walk_start(...); ek_kq_walk_next(&k);) run k.row, k.r, k.t0, k.T */
typedef struct ek_kq_walk {
    const char *row; /* the step's row, its index, first token and token count */
    int64_t r;
    int t0, T;
    /* private */
    const char *rows;
    size_t rb;
    int64_t r0, r1, block, b0, i;
    int nt, kt, started;
} ek_kq_walk;

static inline ek_kq_walk ek_kq_walk_start(const char *rows, size_t rb, int64_t r0, int64_t r1, int nt, int kt,
                                          int64_t n)
{
    ek_kq_walk k = {0};
    k.rows = rows;
    k.rb = rb;
    k.r0 = k.b0 = r0;
    k.r1 = r1;
    k.nt = nt;
    k.block = ek_kq_row_block(nt, n, rb);
    k.kt = k.block > 1 && kt > EK_KQ_BLOCKED_KT ? EK_KQ_BLOCKED_KT : kt;
    return k;
}

static inline void ek_kq_prefetch_l1(const char *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

/* Into L2: the lines of super-block b of the row at `ahead` (sb bytes each). */
static inline void ek_kq_prefetch_ahead(const char *ahead, size_t sb, int64_t b)
{
    const char *p = ahead + (size_t)b * sb;
    for (size_t o = 0; o < sb; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
    _mm_prefetch(p + sb - 1, _MM_HINT_T1);
}

/* The row a one-token engine prefetches while it computes row r of r0..r1
 * (at `row`, rb bytes a row), or NULL near the end. */
static inline const char *ek_kq_decode_ahead(const char *row, size_t rb, int64_t r, int64_t r1)
{
    return r + EK_KQ_DECODE_AHEAD < r1 ? row + EK_KQ_DECODE_AHEAD * rb : NULL;
}

static inline int ek_kq_walk_next(ek_kq_walk *k)
{
    const int64_t n_rows = k->r1 - k->b0 < k->block ? k->r1 - k->b0 : k->block;
    if (!k->started) {
        k->started = 1;
        k->t0 = 0;
        k->i = 0;
    } else if (++k->i == n_rows) { /* the block's next pass, or the next block */
        k->i = 0;
        k->t0 += k->kt;
        if (k->t0 >= k->nt) {
            k->t0 = 0;
            k->b0 += n_rows;
        }
    }
    if (k->b0 >= k->r1) return 0;
    k->r = k->b0 + k->i;
    k->row = k->rows + (size_t)(k->r - k->r0) * k->rb;
    k->T = k->nt - k->t0 < k->kt ? k->nt - k->t0 : k->kt;
    if (k->nt >= EK_KQ_PREFETCH_MIN_TOKENS) {
        const int64_t in_block = k->r1 - k->b0 < k->block ? k->r1 - k->b0 : k->block;
        if (in_block == 1) { /* the successor, once, as the row starts */
            if (k->t0 == 0 && k->r + 1 < k->r1) ek_kq_prefetch_l1(k->row + k->rb, k->rb);
        } else if (k->i + 1 < in_block || k->t0 + k->kt >= k->nt) { /* the next row of this pass */
            if (k->r + 1 < k->r1) ek_kq_prefetch_l1(k->row + k->rb, k->rb);
        } else { /* the block's first row, for its next pass */
            ek_kq_prefetch_l1(k->row - (size_t)k->i * k->rb, k->rb);
        }
    }
    return 1;
}
#endif

/* Tokens per pass over a row: each super-block is unpacked once for up to
 * EK_KQ_KT tokens (AVX2 has 16 vector registers: its weights and four
 * tokens' accumulators fill them). */
enum { EK_KQ_KT = 4 };

/* y[t * ys + r] for tokens t0..t0+T-1 of row r (its bytes at `row`). */
typedef void (*ek_kq_row_fn)(float *y, int64_t ys, const char *row, int64_t r, const ek_kq_acts *a, const char *x,
                             size_t xs, int t0);

/* The gemm over a kernel's row functions for w's type (rows[T] for T in
 * 1..EK_KQ_KT): rows outer, tokens inner, so a row's super-blocks are
 * unpacked once per EK_KQ_KT tokens while the row sits in L1. rows NULL
 * (IQ4_NL's 32-value blocks, which the avx2 and neon sets run on their Q4_0
 * tiles instead), or no memory for the activations: the scalar kernel. */
void ek_kq_gemm_rows(const ek_kq_row_fn *rows, float *y, int64_t ys, const struct ek_matrix *w, int64_t r0,
                     int64_t r1, const void *x, size_t xs, int n_tokens);

/* Defines static `NAME(dt)`: the row functions for type dt (NULL for a type
 * the engine lacks), one per type and token count so that the type's
 * unpacker is inlined and the accumulators stay in registers.
 * ENGINE(y, ys, dt, row, r, a, x, xs, t0, T) is the kernel's always-inline
 * engine, ATTR its target attributes. */
#define EK_KQ_ROW_FN(NAME, ATTR, ENGINE, DT, T)                                                                \
    static ATTR void NAME(float *y, int64_t ys, const char *row, int64_t r, const ek_kq_acts *a, const char *x,  \
                          size_t xs, int t0)                                                                   \
    {                                                                                                          \
        ENGINE(y, ys, DT, row, r, a, x, xs, t0, T);                                                            \
    }
#define EK_KQ_ROWS_OF(P, ATTR, ENGINE, DT)                                                                     \
    EK_KQ_ROW_FN(P##_1, ATTR, ENGINE, DT, 1)                                                                   \
    EK_KQ_ROW_FN(P##_2, ATTR, ENGINE, DT, 2)                                                                   \
    EK_KQ_ROW_FN(P##_3, ATTR, ENGINE, DT, 3)                                                                   \
    EK_KQ_ROW_FN(P##_4, ATTR, ENGINE, DT, 4)                                                                   \
    static const ek_kq_row_fn P[EK_KQ_KT + 1] = {NULL, P##_1, P##_2, P##_3, P##_4};
#define EK_KQ_DEFINE_ROWS(NAME, ATTR, ENGINE)                                                                  \
    EK_KQ_ROWS_OF(NAME##_q2_k, ATTR, ENGINE, ET_Q2_K)                                                          \
    EK_KQ_ROWS_OF(NAME##_q3_k, ATTR, ENGINE, ET_Q3_K)                                                          \
    EK_KQ_ROWS_OF(NAME##_q4_k, ATTR, ENGINE, ET_Q4_K)                                                          \
    EK_KQ_ROWS_OF(NAME##_q5_k, ATTR, ENGINE, ET_Q5_K)                                                          \
    EK_KQ_ROWS_OF(NAME##_q6_k, ATTR, ENGINE, ET_Q6_K)                                                          \
    EK_KQ_ROWS_OF(NAME##_iq4_xs, ATTR, ENGINE, ET_IQ4_XS)                                                      \
    static const ek_kq_row_fn *NAME(et_dtype dt)                                                               \
    {                                                                                                          \
        switch (dt) {                                                                                          \
        case ET_Q2_K: return NAME##_q2_k;                                                                      \
        case ET_Q3_K: return NAME##_q3_k;                                                                      \
        case ET_Q4_K: return NAME##_q4_k;                                                                      \
        case ET_Q5_K: return NAME##_q5_k;                                                                      \
        case ET_Q6_K: return NAME##_q6_k;                                                                      \
        case ET_IQ4_XS: return NAME##_iq4_xs;                                                                  \
        default: return NULL;                                                                                  \
        }                                                                                                      \
    }

#endif
