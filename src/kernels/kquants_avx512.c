/* The AVX-512 (VNNI) gemm for the K-quants and IQ4_XS against Q8_0
 * activations; the semantics of ek_gemm_kquant_scalar (kquants.c), with the
 * fp32 additions in another order (the integer dots are exact).
 *
 * One engine serves every type. Per super-block of 256 weights a type's
 * unpacker (kquants_unpack_avx512.h) makes four vectors W[c] of unsigned
 * bytes, weights 64c..64c+63, and each group of 16's scale and correction.
 * W[0], W[1] (and W[2], W[3]) are interleaved by 8-byte halves so that the
 * two vpdpbusd of a pair accumulate lanes of the same groups (below); each
 * of the two sums' lanes is converted and multiplied by its group's scale
 * times its activation block's scale; the corrections meet the per-16 sums of the
 * activations (times their block scale), prepared once per call for every
 * token. The weights of a super-block are unpacked once and used for up to
 * KT tokens: this is the engine for decode and a few tokens; many take
 * the token-major tiles of kquants_prefill_avx512.c.
 *
 * The avx512 set decodes Q4_K, Q5_K and IQ4_XS on kquants_sb32_avx512.c
 * instead (one fp32 scale per sub-block of 32), and Q2_K and Q3_K on
 * kquants_lowbit_avx512.c; this engine still computes them when called
 * directly.
 *
 * Built with target attributes like matmul_avx512.c; the set hands it out
 * only on CPUs with AVX-512 F/BW/VL/VNNI. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kquants_simd.h"
#include "kernels/reduce_avx512.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* Tokens per pass over a row: up to 8 (PAIR_MAX_TOKENS) in one pass, so
 * that 7-8 tokens do not unpack each super-block twice (passes of 6 and the
 * rest); above SPLIT_MAX_T tokens a token's two chains share one
 * accumulator, for the registers. kernel_ab against passes of 6 (Q6_K, 2
 * threads, DRAM, Zen 4): 6144x2048 7 tokens 1.25x, 8: 1.18x; 2048x2048 8
 * tokens 1.08x; 1-6 tokens and 2048x6144 within noise (0.96-1.07x). */
enum { KT = 8, SPLIT_MAX_T = 4 };

/* ---- the paired order ---------------------------------------------------------
 * The dots of W[0] and W[1] (and of W[2], W[3]) would land in different
 * groups lane for lane; interleaving their 8-byte halves makes both results
 * of a pair hold, in every 128-bit lane k, groups k and k + 4 (of the 8 the
 * pair covers), so that two vpdpbusd chain into one accumulator whose lanes
 * each belong to one group: lane i of the pair p's sum is group
 * 8p + GROUP_OF[i]. The activations take the same order once per call. */
#define GROUP_OF 0, 0, 4, 4, 1, 1, 5, 5, 2, 2, 6, 6, 3, 3, 7, 7
#define LANES(list) _mm512_setr_epi32(list) /* expands the list first */

INLINE void pair_halves(__m512i a, __m512i b, __m512i *out)
{
    out[0] = _mm512_unpacklo_epi64(a, b);
    out[1] = _mm512_unpackhi_epi64(a, b);
}

/* ---- activations: int8 bytes in the paired order, scales and sums per 16 - */

typedef struct kq_acts {
    int8_t *q;    /* [t][n] */
    float *d16;   /* [t][n / 16]: the Q8_0 block scale of each group of 16 */
    float *ds16;  /* [t][n / 16]: that scale times the group's sum */
    int64_t n;
} kq_acts;

static TARGET int kq_acts_make(kq_acts *a, const char *x, size_t xs, int nt, int64_t n)
{
    size_t groups = (size_t)(n / 16);
    a->n = n;
    a->q = aligned_alloc(64, ((size_t)nt * (size_t)n + 63) / 64 * 64);
    a->d16 = malloc((size_t)nt * groups * sizeof(float));
    a->ds16 = malloc((size_t)nt * groups * sizeof(float));
    if (!a->q || !a->d16 || !a->ds16) return -1;
    for (int t = 0; t < nt; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * xs);
        for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
            float d = ek_f16_to_f32(xb[b].d);
            memcpy(a->q + (size_t)t * (size_t)n + (size_t)b * EK_QBLOCK, xb[b].q, EK_QBLOCK);
            for (int h = 0; h < 2; h++) {
                int32_t s = 0;
                for (int j = 0; j < 16; j++) s += xb[b].q[16 * h + j];
                size_t g = (size_t)t * groups + (size_t)(2 * b + h);
                a->d16[g] = d;
                a->ds16[g] = d * (float)s;
            }
        }
        for (int64_t sb = 0; sb < n / EK_QK_K; sb++) { /* the order of the paired weights, below */
            int8_t *q = a->q + (size_t)t * (size_t)n + (size_t)sb * EK_QK_K;
            for (int h = 0; h < 2; h++) {
                __m512i lo = _mm512_loadu_si512((const void *)(q + 128 * h)),
                        hi = _mm512_loadu_si512((const void *)(q + 128 * h + 64));
                __m512i p[2];
                pair_halves(lo, hi, p);
                _mm512_storeu_si512((void *)(q + 128 * h), p[0]);
                _mm512_storeu_si512((void *)(q + 128 * h + 64), p[1]);
            }
        }
    }
    return 0;
}

static void kq_acts_free(kq_acts *a)
{
    free(a->q);
    free(a->d16);
    free(a->ds16);
}

#define KQ_UNPACK_LOOP _Pragma("GCC unroll 4")
#include "kernels/kquants_unpack_avx512.h"

/* ---- the engine -------------------------------------------------------------- */

/* Two accumulator chains per token (one per pair of weight vectors), so
 * that consecutive super-blocks' fmas do not wait on each other (one above
 * SPLIT_MAX_T tokens, whose number hides that latency). `ahead`,
 * if not NULL, is the row to fetch meanwhile (ek_kq_prefetch_ahead). */
INLINE void row_totals(__m512 *tot, et_dtype dt, const char *row, const kq_acts *a, int t0, const int T,
                       const char *ahead)
{
    const size_t sb_bytes = ek_row_bytes(dt, EK_QK_K);
    const __m512i g0 = LANES(GROUP_OF), g1 = _mm512_add_epi32(g0, _mm512_set1_epi32(8));
    const int second = T <= SPLIT_MAX_T; /* the second pair's accumulator */
    __m512 acc[KT][2], cor[KT];
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
        cor[t] = acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    }
    const int64_t nb = a->n / EK_QK_K, groups = a->n / 16;
    for (int64_t b = 0; b < nb; b++) {
        kq_unpacked u;
        if (ahead) ek_kq_prefetch_ahead(ahead, sb_bytes, b);
        unpack(dt, row, b, &u);
        __m512i w[4];
        pair_halves(u.w[0], u.w[1], w);
        pair_halves(u.w[2], u.w[3], w + 2);
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            const float *d16 = a->d16 + (size_t)(t0 + t) * (size_t)groups + 16 * b;
            const float *ds16 = a->ds16 + (size_t)(t0 + t) * (size_t)groups + 16 * b;
            const int8_t *xq = a->q + (size_t)(t0 + t) * (size_t)a->n + (size_t)b * EK_QK_K;
            __m512 s = _mm512_mul_ps(u.scale16, _mm512_loadu_ps(d16));
            cor[t] = _mm512_fmadd_ps(u.corr16, _mm512_loadu_ps(ds16), cor[t]);
            __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], _mm512_load_si512((const void *)xq));
            __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[2],
                                             _mm512_load_si512((const void *)(xq + 128)));
            d0 = _mm512_dpbusd_epi32(d0, w[1], _mm512_load_si512((const void *)(xq + 64)));
            d1 = _mm512_dpbusd_epi32(d1, w[3], _mm512_load_si512((const void *)(xq + 192)));
            acc[t][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(g0, s), acc[t][0]);
            acc[t][second] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_permutexvar_ps(g1, s), acc[t][second]);
        }
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
        tot[t] = _mm512_sub_ps(_mm512_add_ps(acc[t][0], acc[t][1]), cor[t]);
}

INLINE void row_tokens(float *y, int64_t ys, et_dtype dt, const char *row, int64_t r, const kq_acts *a, int t0,
                       const int T)
{
    __m512 tot[KT];
    row_totals(tot, dt, row, a, t0, T, NULL);
    for (int t = 0; t < T; t++) y[(t0 + t) * ys + r] = _mm512_reduce_add_ps(tot[t]);
}

/* One token: a row's lanes, left unsummed, so that the driver sums four
 * rows' at once (ek_reduce4_ps): a row of 2048 weights is 8 super-blocks,
 * and summing each alone was ~7% of its time (Q6_K, one row in L1: 4.32
 * ns a super-block, 4.04 without the sum). The same code for every row, so
 * the loads keep one instruction address each as the rows stream. */
static TARGET __m512 row_total_1(et_dtype dt, const char *row, const kq_acts *a, const char *ahead)
{
    __m512 tot;
    row_totals(&tot, dt, row, a, 0, 1, ahead);
    return tot;
}

/* Constant token counts so that the accumulators stay in registers. */
#define ROW_T(T)                                                                                           \
    static TARGET void row_##T(float *y, int64_t ys, et_dtype dt, const char *row, int64_t r, const kq_acts *a, \
                               int t0)                                                                     \
    {                                                                                                      \
        row_tokens(y, ys, dt, row, r, a, t0, T);                                                           \
    }
ROW_T(1)
ROW_T(2)
ROW_T(3)
ROW_T(4)
ROW_T(5)
ROW_T(6)
ROW_T(7)
ROW_T(8)
typedef void (*row_fn)(float *, int64_t, et_dtype, const char *, int64_t, const kq_acts *, int);
static const row_fn rows_for[KT + 1] = {NULL, row_1, row_2, row_3, row_4, row_5, row_6, row_7, row_8};

TARGET void ek_gemm_kquant_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                                  size_t xs, int nt)
{
    if (w->dtype == ET_IQ4_NL) { /* 32-value blocks: their own kernel */
        ek_gemm_blocks32_avx512(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    kq_acts a;
    if (kq_acts_make(&a, x, xs, nt, w->cols)) { /* out of memory: the scalar path needs none */
        kq_acts_free(&a);
        ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    size_t rb = ek_row_bytes(w->dtype, w->cols);
    int64_t r = r0;
    if (nt == 1)
        for (; r + 4 <= r1; r += 4) {
            __m512 tot[4];
            for (int i = 0; i < 4; i++) {
                const char *row = (const char *)w->data + (size_t)(r + i) * rb;
                tot[i] = row_total_1(w->dtype, row, &a, ek_kq_decode_ahead(row, rb, r + i, r1));
            }
            _mm_storeu_ps(y + r, ek_reduce4_ps(tot));
        }
    for (ek_kq_walk k = ek_kq_walk_start((const char *)w->data + (size_t)r * rb, rb, r, r1, nt, KT, w->cols);
         ek_kq_walk_next(&k);)
        rows_for[k.T](y, ys, w->dtype, k.row, k.r, &a, k.t0);
    kq_acts_free(&a);
}

#else
void ek_gemm_kquant_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                           size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
