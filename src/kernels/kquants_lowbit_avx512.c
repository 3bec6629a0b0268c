/* The AVX-512 (VNNI) decode engine for the low-bit K-quants Q2_K and Q3_K
 * against Q8_0 activations: the semantics of ek_gemm_kquant_scalar
 * (kquants.c), with the fp32 additions in another order (the integer dots
 * are exact).
 *
 * Why an engine of their own: these types are so small (84 and 110 bytes
 * per 256 weights) that on the general engine (kquants_avx512.c) decode was
 * bound by its instructions, not by memory: about 0.5 of the read bandwidth
 * at one token. Most of them went to unpacking the 2-bit fields (a shift
 * and a mask per 32 weights, then joins and interleaves) and, per token,
 * to a conversion, a permute and an fma per 128 weights.
 *
 * The layout that makes both cheap: one 32-bit lane per group of 16
 * weights, so that the four vpdpbusd of a super-block chain into one
 * accumulator whose lanes each hold one group's exact integer dot, and a
 * token costs one conversion and one fma (times the group's d * scale and
 * its activation block's scale) per 256 weights. Lane s (0..3) of 128-bit
 * lane L = 2h + e holds group e of block 4h + s. qs byte 32h + l carries
 * weight l of the blocks 4h + 0..3 (bits 2s), so 128-bit lane L of the
 * 64 qs bytes is exactly the 16 bytes l = 16e..16e+15 that its four groups
 * need: vector c (0..3) puts their dword (c + s) % 4 into lane s (a vpshufd
 * rotating the dwords, none for c = 0) and keeps there block s's bits by a
 * mask. A weight is then left where it sits, times 4^s; that power of two
 * is exact and goes into the activations' per-lane factor (dx * 4^-s),
 * prepared once per call, like the activation bytes themselves, which are
 * put in the same order.
 *
 * Q3_K's third bit: hmask byte l holds it for block 4h + s at bit 4h + s;
 * the hmask bytes broadcast into the same lanes are rotated per 128-bit
 * lane so that it lands at bit s + 2 and take the same vpshufd; the low
 * bits are shifted from 2s to s. A weight is (q + 4) * 2^s, at most 56, and
 * the offset 4 * 2^s * (sum of the group's activations) is subtracted by
 * starting the accumulator at it (prepared per token and lane), so no
 * float correction is left. Q2_K's minimums stay a float correction:
 * dmin * min against the group's activation sum times its block scale.
 *
 * Built with target attributes like matmul_avx512.c; the set hands it out
 * only on CPUs with AVX-512 F/BW/VL/VNNI. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kquants_simd.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* One token: the row EK_KQ_DECODE_AHEAD rows on is fetched into L2 as each
 * row computes (kquants_simd.h). Here the hardware prefetcher alone falls
 * behind: these rows are short (84-110 bytes per 256 weights) and go fast.
 * kernel_ab 1 token, 2 threads, DRAM, against none: Q2_K 6144x2048 +12%,
 * 2048x6144 +8%, Q3_K +2% (8 rows ahead; 4 gave +8% on Q2_K). */
/* Tokens per pass over a row: up to PAIR_MAX_TOKENS in one, unless their
 * activations outgrow L1 (ek_kq_walk). Where they fit (6144x2048) one pass
 * of 5 beat passes of 4 and 1 (those ran 0.80-0.88x); one of 8 lost to
 * passes of 4 (1.09-1.15x), left so for one rule across the engines. */
enum { KT = 8 };

/* Lane i = 4L + s of a super-block's vectors: block 4h + s and group
 * 2 * block + e of it, with L = 2h + e. */
static int lane_block(int i) { return 4 * (i / 8) + i % 4; }
static int lane_group(int i) { return 2 * lane_block(i) + i / 4 % 2; }

/* F(g) for the group g of each lane, in lane order. */
#define LANE_GROUPS(F)                                                                                     \
    F(0), F(2), F(4), F(6), F(1), F(3), F(5), F(7), F(8), F(10), F(12), F(14), F(9), F(11), F(13), F(15)
#define GROUP(g) g
#define SETR32(...) _mm512_setr_epi32(__VA_ARGS__) /* expands the list first */

/* ---- activations: bytes in the lane order, per-lane factors ------------- */

/* One allocation: the bytes, then two arrays of n / 16 per token, all
 * 64-byte aligned (n is a multiple of 256). */
typedef struct lb_acts {
    int8_t *q;   /* [t][n]: per super-block, vector c's lane i byte m = x[32 * block + 16e + 4((c + s) % 4) + m] */
    float *f16;  /* [t][n / 16]: the lane's block scale dx times 2^-k, the power its weights carry */
    union {
        float *ds16;  /* Q2_K: dx times the lane's group sum */
        int32_t *o16; /* Q3_K: minus 4 * 2^s times the group sum (the offset of q + 4) */
    } c16;
    int64_t n;
} lb_acts;

static TARGET int lb_acts_make(lb_acts *a, et_dtype dt, const char *x, size_t xs, int nt, int64_t n)
{
    const size_t lanes = (size_t)nt * (size_t)(n / 16);
    a->n = n;
    a->q = aligned_alloc(64, (size_t)nt * (size_t)n + 2 * lanes * sizeof(float));
    if (!a->q) return -1;
    a->f16 = (float *)(void *)(a->q + (size_t)nt * (size_t)n);
    a->c16.ds16 = a->f16 + lanes;
    const int q3 = dt == ET_Q3_K;
    for (int t = 0; t < nt; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * xs);
        for (int64_t sb = 0; sb < n / EK_QK_K; sb++, xb += EK_QK_K / EK_QBLOCK) {
            const size_t at = (size_t)t * (size_t)n + (size_t)sb * EK_QK_K;
            int8_t *q = a->q + at;
            for (int i = 0; i < 16; i++) {
                const int b = lane_block(i), g = lane_group(i), s = i % 4;
                const int8_t *src = xb[b].q + 16 * (g % 2);
                int32_t sum = 0;
                for (int j = 0; j < 16; j++) sum += src[j];
                for (int c = 0; c < 4; c++) memcpy(q + 64 * c + 4 * i, src + 4 * ((c + s) % 4), 4);
                const float dx = _cvtsh_ss(xb[b].d);
                a->f16[at / 16 + (size_t)i] = dx * (q3 ? 1.0f / (float)(1 << s) : 1.0f / (float)(1 << 2 * s));
                if (q3)
                    a->c16.o16[at / 16 + (size_t)i] = -(4 << s) * sum;
                else
                    a->c16.ds16[at / 16 + (size_t)i] = dx * (float)sum;
            }
        }
    }
    return 0;
}

/* ---- the unpackers ------------------------------------------------------------
 * w[4] as above; scale = d * scale of each lane's group; Q2_K's minv = dmin
 * * min of each lane's group. */

typedef struct lb_unpacked {
    __m512i w[4];
    __m512 scale, minv;
} lb_unpacked;

/* Dword s of every 128-bit lane: four bytes of v. */
#define PER_S(v0, v1, v2, v3) _mm512_setr_epi32(v0, v1, v2, v3, v0, v1, v2, v3, v0, v1, v2, v3, v0, v1, v2, v3)

INLINE __m512 half_to_ps(uint16_t h) { return _mm512_set1_ps(_cvtsh_ss(h)); }

/* Lane s of each 128-bit lane of vector c: dword (c + s) % 4 of v's. */
INLINE __m512i diag(__m512i v, const int c)
{
    return c == 0 ? v : c == 1 ? _mm512_shuffle_epi32(v, 0x39) : c == 2 ? _mm512_shuffle_epi32(v, 0x4e)
                                                                        : _mm512_shuffle_epi32(v, 0x93);
}

INLINE void unpack_q2(const ek_block_q2_k *b, lb_unpacked *u)
{
    const __m512i q = _mm512_loadu_si512((const void *)b->qs);
    const __m512i keep = PER_S(0x03030303, 0x0c0c0c0c, 0x30303030, (int)0xc0c0c0c0u);
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) u->w[c] = _mm512_and_si512(diag(q, c), keep);
    const __m512i s = _mm512_cvtepu8_epi32(
        _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)b->scales), _mm_setr_epi8(LANE_GROUPS(GROUP))));
    uint32_t dd;
    memcpy(&dd, &b->d, 4);
    const __m512 ddv = _mm512_cvtph_ps(_mm256_set1_epi32((int)dd)); /* d, dmin, d, dmin, ...: one conversion */
    u->scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(s, _mm512_set1_epi32(15))),
                             _mm512_moveldup_ps(ddv));
    u->minv = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(s, 4)), _mm512_movehdup_ps(ddv));
}

INLINE void unpack_q3(const ek_block_q3_k *b, lb_unpacked *u)
{
    /* The 6-bit scales straight into the lanes (measured 0.8 ns a
     * super-block faster than ek_kq_scales_k3's word arithmetic and moving
     * its words into a vector): lane i's dword gets the byte with group g's
     * low four bits (byte g % 8, at bit 4 * (g / 8)) and the one with its
     * top two (byte 8 + g % 4, at bit 2 * (g / 4)), each shifted into place. */
#define SC_BYTES(g) ((g) % 8 | (8 + (g) % 4) << 8 | (int)0x80800000u)
#define SC_LO(g) (4 * ((g) / 8))
#define SC_HI(g) (4 + 2 * ((g) / 4))
    const __m512i sb = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(0x0fff, b->scales)),
                                           SETR32(LANE_GROUPS(SC_BYTES)));
    const __m512i lo4 = _mm512_srlv_epi32(sb, SETR32(LANE_GROUPS(SC_LO)));
    const __m512i hi2 = _mm512_and_si512(_mm512_srlv_epi32(sb, SETR32(LANE_GROUPS(SC_HI))),
                                         _mm512_set1_epi32(0x30));
#undef SC_BYTES
#undef SC_LO
#undef SC_HI
    const __m512i sc = _mm512_ternarylogic_epi32(lo4, hi2, _mm512_set1_epi32(15), 0xec); /* (a & c) | b */
    u->scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sc, _mm512_set1_epi32(32))), half_to_ps(b->d));
    const __m512i q = _mm512_loadu_si512((const void *)b->qs);
    /* the third bit of block 4h + s, bit 4h + s of an hmask byte, to bit
     * s + 2: left by 2 in the lanes of h = 0, right by 2 in those of h = 1 */
    const __m512i hm = _mm512_rolv_epi32(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b->hmask)),
                                         _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 30, 30, 30, 30, 30, 30, 30, 30));
    const __m512i shift = PER_S(0, 1, 2, 3), lo = PER_S(0x03030303, 0x06060606, 0x0c0c0c0c, 0x18181818),
                  hi = PER_S(0x04040404, 0x08080808, 0x10101010, 0x20202020);
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
        const __m512i low = _mm512_and_si512(_mm512_srlv_epi32(diag(q, c), shift), lo);
        u->w[c] = _mm512_ternarylogic_epi32(low, diag(hm, c), hi, 0xf8); /* a | (b & c) */
    }
    u->minv = _mm512_setzero_ps();
}

/* ---- the engine -------------------------------------------------------------- */

/* Tokens t0..t0+T-1 of row r: per token one float accumulator (and Q2_K's
 * correction), the integer dot of a super-block started at Q3_K's offset.
 * `ahead`, if not NULL, is the row whose lines to fetch meanwhile. */
INLINE void row_tokens(float *y, int64_t ys, const et_dtype dt, const char *row, int64_t r, const lb_acts *a,
                       int t0, const int T, const char *ahead)
{
    const size_t sb_bytes = dt == ET_Q2_K ? sizeof(ek_block_q2_k) : sizeof(ek_block_q3_k);
    __m512 acc[KT], cor[KT];
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) acc[t] = cor[t] = _mm512_setzero_ps();
    const int64_t nb = a->n / EK_QK_K;
    for (int64_t b = 0; b < nb; b++) {
        lb_unpacked u;
        if (ahead) ek_kq_prefetch_ahead(ahead, sb_bytes, b);
        if (dt == ET_Q2_K)
            unpack_q2((const ek_block_q2_k *)row + b, &u);
        else
            unpack_q3((const ek_block_q3_k *)row + b, &u);
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            const size_t at = (size_t)(t0 + t) * (size_t)a->n + (size_t)b * EK_QK_K;
            const int8_t *xq = a->q + at;
            __m512i d = dt == ET_Q3_K ? _mm512_load_si512((const void *)(a->c16.o16 + at / 16))
                                      : _mm512_setzero_si512();
            d = _mm512_dpbusd_epi32(d, u.w[0], _mm512_load_si512((const void *)xq));
            d = _mm512_dpbusd_epi32(d, u.w[1], _mm512_load_si512((const void *)(xq + 64)));
            d = _mm512_dpbusd_epi32(d, u.w[2], _mm512_load_si512((const void *)(xq + 128)));
            d = _mm512_dpbusd_epi32(d, u.w[3], _mm512_load_si512((const void *)(xq + 192)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(u.scale, _mm512_load_ps(a->f16 + at / 16)),
                                     acc[t]);
            if (dt == ET_Q2_K) cor[t] = _mm512_fmadd_ps(u.minv, _mm512_load_ps(a->c16.ds16 + at / 16), cor[t]);
        }
    }
    for (int t = 0; t < T; t++) y[(t0 + t) * ys + r] = _mm512_reduce_add_ps(_mm512_sub_ps(acc[t], cor[t]));
}

/* One function per type and token count: the unpacker inlined, the
 * accumulators in registers. */
typedef void (*row_fn)(float *, int64_t, const char *, int64_t, const lb_acts *, int, const char *);
#define ROW_FN(P, DT, T)                                                                                   \
    static TARGET void P##_##T(float *y, int64_t ys, const char *row, int64_t r, const lb_acts *a, int t0, \
                               const char *ahead)                                                          \
    {                                                                                                      \
        row_tokens(y, ys, DT, row, r, a, t0, T, ahead);                                                    \
    }
#define ROWS_OF(P, DT)                                                                                     \
    ROW_FN(P, DT, 1) ROW_FN(P, DT, 2) ROW_FN(P, DT, 3) ROW_FN(P, DT, 4)                                    \
    ROW_FN(P, DT, 5) ROW_FN(P, DT, 6) ROW_FN(P, DT, 7) ROW_FN(P, DT, 8)                                    \
    static const row_fn P[KT + 1] = {NULL, P##_1, P##_2, P##_3, P##_4, P##_5, P##_6, P##_7, P##_8};
ROWS_OF(rows_q2_k, ET_Q2_K)
ROWS_OF(rows_q3_k, ET_Q3_K)

int ek_kquant_lowbit_avx512_covers(et_dtype dt) { return dt == ET_Q2_K || dt == ET_Q3_K; }

TARGET void ek_gemm_kquant_lowbit_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                         const void *x, size_t xs, int nt)
{
    const row_fn *rows = w->dtype == ET_Q2_K ? rows_q2_k : w->dtype == ET_Q3_K ? rows_q3_k : NULL;
    lb_acts a;
    if (!rows || lb_acts_make(&a, w->dtype, x, xs, nt, w->cols)) { /* out of memory: the scalar path needs none */
        ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    const size_t rb = ek_row_bytes(w->dtype, w->cols);
    const char *row = (const char *)w->data + (size_t)r0 * rb;
    if (nt == 1) {
        for (int64_t r = r0; r < r1; r++, row += rb)
            rows[1](y, ys, row, r, &a, 0, ek_kq_decode_ahead(row, rb, r, r1));
    } else {
        for (ek_kq_walk k = ek_kq_walk_start(row, rb, r0, r1, nt, KT, w->cols); ek_kq_walk_next(&k);)
            rows[k.T](y, ys, k.row, k.r, &a, k.t0, NULL);
    }
    free(a.q);
}

#else
int ek_kquant_lowbit_avx512_covers(et_dtype dt)
{
    (void)dt;
    return 0;
}
void ek_gemm_kquant_lowbit_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                  const void *x, size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
