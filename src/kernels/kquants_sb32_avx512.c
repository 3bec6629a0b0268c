/* The AVX-512 (VNNI) decode engine for the K-quant types whose scales
 * belong to sub-blocks of 32 weights: Q4_K, Q5_K and IQ4_XS, against Q8_0
 * activations; the semantics of ek_gemm_kquant_scalar (kquants.c), with the
 * fp32 additions in another order (the integer dots are exact).
 *
 * Why a second engine beside kquants_avx512.c: there every 64-weight dot
 * is converted and multiplied by its groups' scales (a cvt, a permute and
 * an fma per 64 weights), which left decode compute-bound well under the
 * memory roofline. Here a sub-block of 32 coincides with a Q8_0 activation
 * block, so its integer sum needs only one fp32 factor, d * scale * dx.
 * The weights are unpacked so that both dots of a pair of vectors land in
 * the same lanes' sub-blocks: two vpdpbusd chain into one accumulator whose
 * 16 lanes hold four sub-blocks, and a super-block of 256 weights costs two
 * conversions and two fmas per token.
 *
 * The unpacked order of the weights is a fixed permutation inside a
 * super-block; the activations are permuted the same way once per call
 * (kq32_acts_make), by the same vector operations applied to their bytes.
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
#include "kernels/reduce_avx512.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

/* Tokens per pass over a row: up to 8 (the decode engines' whole range,
 * PAIR_MAX_TOKENS) in one pass, so 5-8 tokens unpack each super-block once
 * instead of twice; ek_kq_walk still splits passes where the activations
 * outgrow L1 (6144 columns). Above SPLIT_MAX_T tokens a token's two chains
 * share one accumulator: 8 tokens x 2 fp32 sums and the weights left too
 * few registers. kernel_ab against passes of 4 (2 threads, DRAM, Zen 4):
 * Q4_K 6144x2048 5 tokens 1.19x, 6: 1.17x, 7: 1.10x, 8: 1.07x (two sums
 * at 8 tokens: 1.02x); 2048x2048 5 and 8 tokens Q4_K 1.16x, 1.06x, Q5_K
 * 1.25x, 1.04x, IQ4_XS 1.18x, 1.06x; 1-4 tokens and 2048x6144 unchanged. */
enum { KT = 8, SPLIT_MAX_T = 4 };

/* ---- the weight order -------------------------------------------------------
 * A super-block's weights become four vectors w[0..3] of 64 unsigned bytes;
 * the dot of w[0] and w[1] (and of w[2], w[3]) accumulate into one vector
 * of 16 int32 lanes, lane i summing weights of sub-block SB0[i] (SB1[i]). */
#define Q45_SB0 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3
#define Q45_SB1 4, 4, 5, 5, 4, 4, 5, 5, 6, 6, 7, 7, 6, 6, 7, 7
#define IQ4_SB0 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3
#define IQ4_SB1 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7
#define LANES(list) _mm512_setr_epi32(list) /* expands the list first */

INLINE __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* Q4_K/Q5_K: qs byte 32c + l holds weight l of sub-block 2c (low nibble)
 * and of 2c+1 (high nibble). A 64-byte load gives lo = [sb 2h | sb 2h+2]
 * and hi = [sb 2h+1 | sb 2h+3] (h = 0, 2); interleaving their 8-byte halves
 * puts sub-blocks 2h and 2h+1 side by side in every 128-bit lane of both
 * results. */
INLINE void q45_pair(__m512i lo, __m512i hi, __m512i *w)
{
    w[0] = _mm512_unpacklo_epi64(lo, hi);
    w[1] = _mm512_unpackhi_epi64(lo, hi);
}

/* The same order for 256 activation bytes x. */
INLINE void q45_acts(const int8_t *x, __m512i *out)
{
    for (int h = 0; h < 2; h++) {
        __m512i lo = join(_mm256_loadu_si256((const __m256i *)(x + 128 * h)),
                          _mm256_loadu_si256((const __m256i *)(x + 128 * h + 64)));
        __m512i hi = join(_mm256_loadu_si256((const __m256i *)(x + 128 * h + 32)),
                          _mm256_loadu_si256((const __m256i *)(x + 128 * h + 96)));
        q45_pair(lo, hi, out + 2 * h);
    }
}

/* IQ4_XS: qs byte 16j + l holds weight l (low nibble) and l + 16 (high) of
 * sub-block j, so a 64-byte load's low nibbles are the first halves of
 * sub-blocks 4h..4h+3, one per 128-bit lane, and its high nibbles the
 * second halves: already aligned lane for lane. */
INLINE void iq4_acts(const int8_t *x, __m512i *out)
{
    for (int h = 0; h < 2; h++) {
        __m512i a = _mm512_loadu_si512((const void *)(x + 128 * h));
        __m512i b = _mm512_loadu_si512((const void *)(x + 128 * h + 64));
        out[2 * h] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        out[2 * h + 1] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* ---- activations: permuted bytes, per-32 scales and sums ---------------- */

typedef struct kq32_acts {
    int8_t *q;   /* [t][n], each super-block in the unpacked weight order */
    float *d32;  /* [t][n / 32]: the Q8_0 block scale */
    float *ds32; /* [t][n / 32]: that scale times the block's sum */
    int64_t n;
} kq32_acts;

static TARGET int kq32_acts_make(kq32_acts *a, et_dtype dt, const char *x, size_t xs, int nt, int64_t n)
{
    size_t blocks = (size_t)(n / EK_QBLOCK);
    a->n = n;
    a->q = aligned_alloc(64, ((size_t)nt * (size_t)n + 63) / 64 * 64);
    a->d32 = malloc((size_t)nt * blocks * sizeof(float));
    a->ds32 = malloc((size_t)nt * blocks * sizeof(float));
    if (!a->q || !a->d32 || !a->ds32) return -1;
    int8_t *tmp = (int8_t *)a->q; /* each row's bytes in file order first, then permuted in place */
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int t = 0; t < nt; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * xs);
        int8_t *q = tmp + (size_t)t * (size_t)n;
        for (size_t b = 0; b < blocks; b++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)xb[b].q);
            _mm256_storeu_si256((__m256i *)(q + 32 * b), v);
            /* the signed sum: |sum of the biased bytes| less 32 * 128 */
            __m256i s = _mm256_sad_epu8(_mm256_xor_si256(v, bias), _mm256_setzero_si256());
            __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            int32_t sum = (int32_t)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
            float d = _cvtsh_ss(xb[b].d);
            a->d32[(size_t)t * blocks + b] = d;
            a->ds32[(size_t)t * blocks + b] = d * (float)sum;
        }
        for (int64_t sb = 0; sb < n / EK_QK_K; sb++) {
            __m512i p[4];
            if (dt == ET_IQ4_XS)
                iq4_acts(q + EK_QK_K * sb, p);
            else
                q45_acts(q + EK_QK_K * sb, p);
            for (int c = 0; c < 4; c++) _mm512_storeu_si512((void *)(q + EK_QK_K * sb + 64 * c), p[c]);
        }
    }
    return 0;
}

static void kq32_acts_free(kq32_acts *a)
{
    free(a->q);
    free(a->d32);
    free(a->ds32);
}

/* ---- the unpackers ------------------------------------------------------------
 * w[4] as described above; dsc8 = d * scale of each sub-block, corr8 what it
 * subtracts per unit of activation sum (dmin * min, or the IQ4 offset). */

typedef struct kq32_unpacked {
    __m512i w[4];
    __m256 dsc8, corr8;
} kq32_unpacked;

/* Bytes 0-31 of a vector from a, 32-63 from b. */
#define HALVES(a, b) _mm512_inserti64x4(_mm512_set1_epi8(a), _mm256_set1_epi8(b), 1)

INLINE void unpack_q45(const uint8_t *blk, const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                       kq32_unpacked *u)
{
    __m512 sm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(ek_kq_scales_k4_v(scales))); /* sc0..7, m0..7 */
    uint32_t dd;
    memcpy(&dd, blk, 4); /* d, dmin */
    __m512 mult = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                        _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dd))));
    sm = _mm512_mul_ps(sm, mult);
    u->dsc8 = _mm512_castps512_ps256(sm);
    u->corr8 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sm), 1));

    const __m512i m4 = _mm512_set1_epi8(15), five = _mm512_set1_epi8(16);
    __m512i h = qh ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qh)) : _mm512_setzero_si512();
    for (int p = 0; p < 2; p++) {
        __m512i q = _mm512_loadu_si512((const void *)(qs + 64 * p));
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (qh) { /* the fifth bit of weight l of sub-block j is bit j of qh[l] */
            const int j = 4 * p;
            lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(h, HALVES(1 << j, 1 << (j + 2))), lo, five);
            hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(h, HALVES(1 << (j + 1), 1 << (j + 3))), hi,
                                      five);
        }
        q45_pair(lo, hi, u->w + 2 * p);
    }
}

INLINE void unpack_iq4_xs(const ek_block_iq4_xs *b, kq32_unpacked *u)
{
    __m128i sc = _mm_sub_epi16(ek_kq_scales_iq4_xs16(b), _mm_set1_epi16(32));
    u->dsc8 = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b->d)), _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(sc)));
    u->corr8 = _mm256_mul_ps(u->dsc8, _mm256_set1_ps(128.0f));
    /* the levels plus 128 as unsigned bytes, looked up by nibble */
    const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                                             (char)153, (char)166, (char)181, (char)197,
                                                             (char)217, (char)241));
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int p = 0; p < 2; p++) {
        __m512i q = _mm512_loadu_si512((const void *)(b->qs + 64 * p));
        u->w[2 * p] = _mm512_shuffle_epi8(lut, _mm512_and_si512(q, m4));
        u->w[2 * p + 1] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
    }
}

INLINE void unpack32(const et_dtype dt, const char *row, int64_t b, kq32_unpacked *u)
{
    if (dt == ET_Q4_K) {
        const ek_block_q4_k *k = (const ek_block_q4_k *)row + b;
        unpack_q45((const uint8_t *)k, k->scales, k->qs, NULL, u);
    } else if (dt == ET_Q5_K) {
        const ek_block_q5_k *k = (const ek_block_q5_k *)row + b;
        unpack_q45((const uint8_t *)k, k->scales, k->qs, k->qh, u);
    } else {
        unpack_iq4_xs((const ek_block_iq4_xs *)row + b, u);
    }
}

/* ---- the engine -------------------------------------------------------------- */

/* Tokens t0..t0+T-1 of a row, each token's lanes left unsummed in tot[t].
 * Per token two accumulators (one per pair of vectors) so that consecutive
 * super-blocks' fmas do not wait on each other (one above SPLIT_MAX_T
 * tokens, whose number hides that latency), and the corrections in
 * eight lanes, subtracted from the low eight at the end. `ahead`, if not
 * NULL, is the row to fetch meanwhile (ek_kq_prefetch_ahead). */
INLINE void row_totals(__m512 *tot, const et_dtype dt, const char *row, const kq32_acts *a, int t0, const int T,
                       const char *ahead)
{
    const size_t sb_bytes = dt == ET_Q4_K ? sizeof(ek_block_q4_k) : dt == ET_Q5_K ? sizeof(ek_block_q5_k)
                                                                                  : sizeof(ek_block_iq4_xs);
    const __m512i sb0 = dt == ET_IQ4_XS ? LANES(IQ4_SB0) : LANES(Q45_SB0);
    const __m512i sb1 = dt == ET_IQ4_XS ? LANES(IQ4_SB1) : LANES(Q45_SB1);
    const int second = T <= SPLIT_MAX_T; /* the second pair's accumulator */
    __m512 acc[KT][2];
    __m256 cor[KT];
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
        acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        cor[t] = _mm256_setzero_ps();
    }
    const int64_t nb = a->n / EK_QK_K, blocks = a->n / EK_QBLOCK;
    for (int64_t b = 0; b < nb; b++) {
        kq32_unpacked u;
        if (ahead) ek_kq_prefetch_ahead(ahead, sb_bytes, b);
        unpack32(dt, row, b, &u);
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            const size_t o = (size_t)(t0 + t) * (size_t)blocks + 8 * (size_t)b;
            const int8_t *xq = a->q + (size_t)(t0 + t) * (size_t)a->n + (size_t)b * EK_QK_K;
            __m512 s = _mm512_castps256_ps512(_mm256_mul_ps(u.dsc8, _mm256_loadu_ps(a->d32 + o)));
            cor[t] = _mm256_fmadd_ps(u.corr8, _mm256_loadu_ps(a->ds32 + o), cor[t]);
            __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.w[0], _mm512_load_si512((const void *)xq));
            __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.w[2],
                                             _mm512_load_si512((const void *)(xq + 128)));
            d0 = _mm512_dpbusd_epi32(d0, u.w[1], _mm512_load_si512((const void *)(xq + 64)));
            d1 = _mm512_dpbusd_epi32(d1, u.w[3], _mm512_load_si512((const void *)(xq + 192)));
            acc[t][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(sb0, s), acc[t][0]);
            acc[t][second] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_permutexvar_ps(sb1, s), acc[t][second]);
        }
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
        tot[t] = _mm512_sub_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_zextps256_ps512(cor[t]));
}

INLINE void row_tokens(float *y, int64_t ys, const et_dtype dt, const char *row, int64_t r, const kq32_acts *a,
                       int t0, const int T)
{
    __m512 tot[KT];
    row_totals(tot, dt, row, a, t0, T, NULL);
    for (int t = 0; t < T; t++) y[(t0 + t) * ys + r] = _mm512_reduce_add_ps(tot[t]);
}

/* One function per type and token count: the unpacker inlined, the
 * accumulators in registers. */
#define ROW_FN(NAME, DT, T)                                                                                \
    static TARGET void NAME(float *y, int64_t ys, const char *row, int64_t r, const kq32_acts *a, int t0) \
    {                                                                                                      \
        row_tokens(y, ys, DT, row, r, a, t0, T);                                                           \
    }
typedef void (*row_fn)(float *, int64_t, const char *, int64_t, const kq32_acts *, int);

/* One token: a row's lanes, left unsummed, so that the driver sums four
 * rows' at once (ek_reduce4_ps), as the general engine does: a row of 2048
 * weights is 8 super-blocks, and its own horizontal sums (16 lanes and the
 * 8 corrections) were a sizeable share of it. One function called for each
 * row, not four inlined copies, so that the loads keep one instruction
 * address each as the rows stream (four copies ran at 0.6-0.75x, kernel_ab
 * Q4_K 1 token, DRAM). */
#define TOTAL_FN(NAME, DT)                                                                                 \
    static TARGET __m512 NAME(const char *row, const kq32_acts *a, const char *ahead)                      \
    {                                                                                                      \
        __m512 tot;                                                                                        \
        row_totals(&tot, DT, row, a, 0, 1, ahead);                                                         \
        return tot;                                                                                        \
    }
typedef __m512 (*total_fn)(const char *, const kq32_acts *, const char *);

/* A type's engine: its rows of 1..KT tokens, and its one-token row totals. */
typedef struct sb32_engine {
    row_fn rows[KT + 1];
    total_fn total;
} sb32_engine;
#define ENGINE_OF(P, DT)                                                                                   \
    ROW_FN(P##_1, DT, 1)                                                                                   \
    ROW_FN(P##_2, DT, 2)                                                                                   \
    ROW_FN(P##_3, DT, 3)                                                                                   \
    ROW_FN(P##_4, DT, 4)                                                                                   \
    ROW_FN(P##_5, DT, 5)                                                                                   \
    ROW_FN(P##_6, DT, 6)                                                                                   \
    ROW_FN(P##_7, DT, 7)                                                                                   \
    ROW_FN(P##_8, DT, 8)                                                                                   \
    TOTAL_FN(P##_total, DT)                                                                                \
    static const sb32_engine P = {{NULL, P##_1, P##_2, P##_3, P##_4, P##_5, P##_6, P##_7, P##_8}, P##_total};
ENGINE_OF(engine_q4_k, ET_Q4_K)
ENGINE_OF(engine_q5_k, ET_Q5_K)
ENGINE_OF(engine_iq4_xs, ET_IQ4_XS)

int ek_kquant_sb32_avx512_covers(et_dtype dt) { return dt == ET_Q4_K || dt == ET_Q5_K || dt == ET_IQ4_XS; }

TARGET void ek_gemm_kquant_sb32_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                                       const void *x, size_t xs, int nt)
{
    const sb32_engine *e = w->dtype == ET_Q4_K     ? &engine_q4_k
                           : w->dtype == ET_Q5_K   ? &engine_q5_k
                           : w->dtype == ET_IQ4_XS ? &engine_iq4_xs
                                                   : NULL;
    kq32_acts a;
    if (!e || kq32_acts_make(&a, w->dtype, x, xs, nt, w->cols)) { /* out of memory: the scalar path needs none */
        if (e) kq32_acts_free(&a);
        ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    const size_t rb = ek_row_bytes(w->dtype, w->cols);
    const char *row = (const char *)w->data + (size_t)r0 * rb;
    int64_t r = r0;
    if (nt == 1)
        for (; r + 4 <= r1; r += 4, row += 4 * rb) {
            __m512 tot[4];
            for (int i = 0; i < 4; i++)
                tot[i] = e->total(row + (size_t)i * rb, &a, ek_kq_decode_ahead(row + (size_t)i * rb, rb, r + i, r1));
            _mm_storeu_ps(y + r, ek_reduce4_ps(tot));
        }
    for (ek_kq_walk k = ek_kq_walk_start(row, rb, r, r1, nt, KT, w->cols); ek_kq_walk_next(&k);)
        e->rows[k.T](y, ys, k.row, k.r, &a, k.t0);
    kq32_acts_free(&a);
}

#else
int ek_kquant_sb32_avx512_covers(et_dtype dt)
{
    (void)dt;
    return 0;
}
void ek_gemm_kquant_sb32_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                                size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
