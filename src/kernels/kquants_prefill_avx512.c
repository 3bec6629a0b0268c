/* Prefill for the K-quants and IQ4_XS on AVX-512 VNNI: many tokens against
 * one weight matrix, compute-bound, so built like the Q8_0/Q4_0 prefill
 * tiles of matmul_avx512.c rather than like the decode engine
 * (kquants_avx512.c), which pays a permute, a conversion and a multiply-add
 * per 64 products of one row and one token.
 *
 * The activations are repacked token-major: for a block of 32 and 16 tokens,
 * vector k holds bytes 4k..4k+3 of each token, beside each token's block
 * scale and the sums of its two halves. The weights of 8 rows x KP_SB
 * super-blocks are unpacked once (kquants_unpack_avx512.h: unsigned bytes,
 * a scale and a correction per 16) into a small buffer and then serve every
 * token of the span: a weight dword broadcast to all lanes meets 16 tokens
 * in one vpdpbusd, and 8 rows x 32 tokens make 16 independent int32 chains.
 * Per sub-block (32 weights where the type's scales are per 32: Q4_K, Q5_K,
 * IQ4_XS; else 16) the chain is converted and scaled by the row's scale
 * times the token's block scale; the correction (offset and minimum) is
 * exact in int32 where it is a power-of-two offset times the scale (Q6_K,
 * Q3_K, IQ4_XS) and an fp32 multiply-add of the activation sums otherwise.
 *
 * The semantics are ek_gemm_kquant_scalar's (kquants.c), with the fp32
 * additions in another order; test_kernels holds it to the scalar kernel at
 * every token count. */
#include "kernels/kquants.h"
#include "kernels/matmul.h"
#include "base/pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

#include "kernels/kquants_unpack_avx512.h"
#include "kernels/transpose_avx512.h"

/* Packed activations per (block of 32, group of 16 tokens): 8 vectors of
 * bytes, the int32 sums of bytes 0-15 and 16-31, the fp32 block scales, and
 * those sums times the scales. Missing tokens are zeros. */
enum { KP_VEC = 64, KP_SUM0 = 8, KP_SUM1 = 9, KP_DX = 10, KP_SX0 = 11, KP_SX1 = 12 };
enum { KP_BYTES = 13 * KP_VEC };
/* Tokens: passes of KP_G groups of 16 (the tile's width), spans of
 * KP_SPAN_G groups packed at once, as many as a 128-token prefill chunk
 * has, so that each weight is unpacked once per chunk; weights: chunks of
 * KP_SB super-blocks (2048 columns, the whole row of the 1.7B's attention
 * and gate/up matrices, so y is written once instead of added to per
 * chunk), unpacked once per span. The packed span is KP_SPAN_G x 8 KP_SB
 * blocks x 832 B = 416 KiB on the stack (the pool's threads have the
 * default 8 MiB), which L2 holds beside the ~24 KiB of unpacked weights.
 * Results are gathered per panel of KP_PANEL rows and leave for y one
 * contiguous run per token: y's token stride is often a multiple of 4 KiB,
 * so 8-float stores straight into y, token after token, share one L1 set.
 * Measured against spans of 4 groups, chunks of 4 super-blocks and tiles
 * stored straight into y (bench/kernel_ab.sh, Q4_K, 128 tokens, 2 threads,
 * Zen 5): 6144x2048 +20%, 2048x6144 +10%. */
enum { KP_G = 2, KP_SPAN_G = 8, KP_SB = 8, KP_R = 8, KP_PANEL = 48 };

/* Tokens [0, nt) of x (nt <= 16 KP_SPAN_G), blocks [b0, b0 + nb); block b's
 * group g at xp + (b KP_SPAN_G + g) KP_BYTES. */
static TARGET void kp_pack(uint8_t *xp, const char *x, size_t xs, int nt, int G, int64_t b0,
                           int64_t nb)
{
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)xs));
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    for (int g = 0; g < G; g++) {
        const int left = nt - 16 * g;
        const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        const char *xg = x + (size_t)(16 * g) * xs;
        for (int64_t b = 0; b < nb; b++) {
            const char *base = xg + (size_t)(b0 + b) * sizeof(ek_block_q8_0);
            uint8_t *o = xp + (size_t)(b * KP_SPAN_G + g) * KP_BYTES;
            __m512i sum[2] = {zero, zero};
            for (int k = 0; k < 8; k++) {
                __m512i v = _mm512_mask_i32gather_epi32(zero, m, idx, base + 2 + 4 * k, 1);
                _mm512_store_si512((__m512i *)(o + k * KP_VEC), v);
                sum[k / 4] = _mm512_dpbusd_epi32(sum[k / 4], ones, v);
            }
            /* the dword at the block start is d plus two q bytes: keep d */
            __m512i d16 = _mm512_mask_i32gather_epi32(zero, m, idx, base, 1);
            __m512 dx = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d16));
            _mm512_store_si512((__m512i *)(o + KP_SUM0 * KP_VEC), sum[0]);
            _mm512_store_si512((__m512i *)(o + KP_SUM1 * KP_VEC), sum[1]);
            _mm512_store_ps(o + KP_DX * KP_VEC, dx);
            _mm512_store_ps(o + KP_SX0 * KP_VEC, _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sum[0])));
            _mm512_store_ps(o + KP_SX1 * KP_VEC, _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sum[1])));
        }
    }
}

/* R rows' super-blocks [sb0, sb0 + nsb), unpacked: row i's bytes at
 * q + i * KP_SB * 256, its per-16 scales and corrections at s, c + i * KP_SB * 16. */
typedef struct kp_weights {
    alignas(64) uint8_t q[KP_R][KP_SB * EK_QK_K];
    alignas(64) float s[KP_R][KP_SB * 16];
    alignas(64) float c[KP_R][KP_SB * 16];
} kp_weights;

static TARGET void kp_unpack(kp_weights *u, et_dtype dt, const char *w, size_t rb, int64_t r,
                             int R, int64_t sb0, int nsb)
{
    for (int i = 0; i < R; i++)
        for (int j = 0; j < nsb; j++) {
            kq_unpacked k;
            unpack(dt, w + (size_t)(r + i) * rb, sb0 + j, &k);
            for (int c = 0; c < 4; c++)
                _mm512_store_si512((__m512i *)&u->q[i][j * EK_QK_K + 64 * c], k.w[c]);
            _mm512_store_ps(&u->s[i][j * 16], k.scale16);
            _mm512_store_ps(&u->c[i][j * 16], k.corr16);
        }
}

/* An activation quantity of the sub-block: the first half's (part 0), the
 * second's (1) or both (2). */
INLINE __m512i kp_sum(const uint8_t *xg, const int part)
{
    if (part < 2) return _mm512_load_si512((const __m512i *)(xg + (KP_SUM0 + part) * KP_VEC));
    return _mm512_add_epi32(_mm512_load_si512((const __m512i *)(xg + KP_SUM0 * KP_VEC)),
                            _mm512_load_si512((const __m512i *)(xg + KP_SUM1 * KP_VEC)));
}

INLINE __m512 kp_sx(const uint8_t *xg, const int part)
{
    if (part < 2) return _mm512_load_ps(xg + (KP_SX0 + part) * KP_VEC);
    return _mm512_add_ps(_mm512_load_ps(xg + KP_SX0 * KP_VEC), _mm512_load_ps(xg + KP_SX1 * KP_VEC));
}

/* One sub-block of block j: byte vectors k0 .. k0 + nk - 1 (weights
 * 32j + 4k0 ..), the scale and correction at index s16 of the unpacked
 * per-16 arrays, the activation sums of `part`.
 * The 16 fp32 sums live in memory (L1) between sub-blocks, loaded and
 * stored once each in the epilogue: the empty asm says memory may have
 * changed, so GCC cannot keep them in registers across the tile. Held there,
 * they and the 16 int32 chains wanted 32 of the 32 registers, and GCC
 * spilled an int32 chain, a store and a reload after each of its vpdpbusd
 * on the critical path (kernel_ab, 6144x2048, 128 tokens, 2 threads:
 * Q4_K 1.17x, Q5_K 1.30x, Q6_K 1.10x). */
INLINE void kp_sub(__m512 (*restrict acc)[KP_G], const kp_weights *u, const uint8_t *xb, int j,
                   const int k0, const int nk, const int part, const int R, const int G,
                   const int SH)
{
    __asm__ volatile("" ::: "memory"); /* the fp32 sums in memory, above */
    const __m512i zero = _mm512_setzero_si512();
    const int s16 = 2 * j + (part == 1);
    __m512i init[KP_G];
    _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
        init[g] = SH < 0 ? zero
                         : _mm512_sub_epi32(zero, _mm512_slli_epi32(kp_sum(xb + g * KP_BYTES, part),
                                                                    (unsigned)SH));
    __m512i ia[KP_R][KP_G];
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) ia[i][g] = init[g];
    _Pragma("GCC unroll 8") for (int k = k0; k < k0 + nk; k++) {
        __m512i xv[KP_G];
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
            xv[g] = _mm512_load_si512((const __m512i *)(xb + g * KP_BYTES + k * KP_VEC));
        _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
            uint32_t d;
            memcpy(&d, &u->q[i][32 * j + 4 * k], 4);
            const __m512i wv = _mm512_set1_epi32((int)d);
            _Pragma("GCC unroll 2") for (int g = 0; g < G; g++)
                ia[i][g] = _mm512_dpbusd_epi32(ia[i][g], wv, xv[g]);
        }
    }
    __m512 dx[KP_G], sx[KP_G];
    _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) {
        dx[g] = _mm512_load_ps(xb + g * KP_BYTES + KP_DX * KP_VEC);
        sx[g] = SH < 0 ? kp_sx(xb + g * KP_BYTES, part) : _mm512_setzero_ps();
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
        const __m512 sc = _mm512_set1_ps(u->s[i][s16]);
        _Pragma("GCC unroll 2") for (int g = 0; g < G; g++) {
            __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i][g]), _mm512_mul_ps(sc, dx[g]), acc[i][g]);
            if (SH < 0) a = _mm512_fnmadd_ps(_mm512_set1_ps(u->c[i][s16]), sx[g], a);
            acc[i][g] = a;
        }
    }
}

/* acc[i][g] += R rows x 16G tokens over the unpacked super-blocks; xp at
 * the pass's first group, a block's groups KP_SPAN_G apart. SUB: 32 or 16
 * weights per scale; SH: the int32 correction's shift, or -1. */
INLINE void kp_tile(__m512 (*restrict acc)[KP_G], const kp_weights *u, int nsb, const uint8_t *xp,
                    const int R, const int G, const int SUB, const int SH)
{
    for (int j = 0; j < nsb * 8; j++) {
        const uint8_t *xb = xp + (size_t)j * KP_SPAN_G * KP_BYTES;
        if (SUB == 32) {
            kp_sub(acc, u, xb, j, 0, 8, 2, R, G, SH);
        } else {
            kp_sub(acc, u, xb, j, 0, 4, 0, R, G, SH);
            kp_sub(acc, u, xb, j, 4, 4, 1, R, G, SH);
        }
    }
}

/* panel[t][i] = acc[i][g] lane l for t = 16g + l < T, i < R: the tile's
 * results token-major in the panel (rows KP_PANEL floats apart), 8 rows at
 * a time transposed in registers (transpose_avx512.h). */
static TARGET void kp_to_panel(float *panel, __m512 acc[KP_R][KP_G], int R, int T)
{
    for (int g = 0; g * 16 < T; g++) {
        const int n = T - 16 * g < 16 ? T - 16 * g : 16;
        float *pg = panel + (int64_t)(16 * g) * KP_PANEL;
        __m512 v[KP_R];
        for (int i = 0; i < KP_R; i++) v[i] = acc[i][g];
        if (R == KP_R) {
            ek_store_rows8_t16(pg, KP_PANEL, v, n, 0);
            continue;
        }
        alignas(64) float row[KP_R][16];
        for (int i = 0; i < R; i++) _mm512_store_ps(row[i], v[i]);
        for (int l = 0; l < n; l++)
            for (int i = 0; i < R; i++) pg[l * KP_PANEL + i] = row[i][l];
    }
}

typedef void (*kp_tile_fn)(__m512 acc[KP_R][KP_G], const kp_weights *u, int nsb,
                           const uint8_t *xp);
#define KP_TILE(R, G, SUB, SH, NAME)                                                           \
    static TARGET void NAME(__m512 acc[KP_R][KP_G], const kp_weights *u, int nsb,             \
                            const uint8_t *xp)                                                \
    {                                                                                         \
        kp_tile(acc, u, nsb, xp, R, G, SUB, SH);                                              \
    }
/* [type form][G - 1][full 8 rows, one row]: the forms are Q4_K/Q5_K
 * (32, fp32 correction), IQ4_XS (32, << 7), Q6_K (16, << 5), Q3_K (16, << 2),
 * Q2_K (16, fp32) */
#define KP_FORM(F, SUB, SH)                                                                    \
    KP_TILE(8, 1, SUB, SH, kp_##F##_8_1)                                                       \
    KP_TILE(8, 2, SUB, SH, kp_##F##_8_2) KP_TILE(1, 1, SUB, SH, kp_##F##_1_1)                 \
        KP_TILE(1, 2, SUB, SH, kp_##F##_1_2)
KP_FORM(k45, 32, -1)
KP_FORM(iq4, 32, 7)
KP_FORM(q6, 16, 5)
KP_FORM(q3, 16, 2)
KP_FORM(q2, 16, -1)
#define KP_ROW(F) {{kp_##F##_8_1, kp_##F##_1_1}, {kp_##F##_8_2, kp_##F##_1_2}}
static const kp_tile_fn kp_tiles[5][KP_G][2] = {KP_ROW(k45), KP_ROW(iq4), KP_ROW(q6),
                                                KP_ROW(q3), KP_ROW(q2)};

static int kp_form(et_dtype dt)
{
    switch (dt) {
    case ET_Q4_K:
    case ET_Q5_K: return 0;
    case ET_IQ4_XS: return 1;
    case ET_Q6_K: return 2;
    case ET_Q3_K: return 3;
    case ET_Q2_K: return 4;
    default: return -1;
    }
}

int ek_kquant_prefill_avx512_covers(et_dtype dt) { return kp_form(dt) >= 0; }

/* Bytes of the prepared form of one span: every block's KP_SPAN_G groups. */
static size_t kp_span_bytes(int64_t cols) { return (size_t)(cols / 32) * KP_SPAN_G * KP_BYTES; }

/* The engine on x's Q8_0 rows (packed here, a span and chunk at a time) or
 * on `prepared` (ek_kquant_prefill_prepare_avx512: span s's block b's group
 * g at prepared + s kp_span_bytes + (b KP_SPAN_G + g) KP_BYTES, the layout
 * kp_pack gives a chunk, so the tiles read both alike). */
static TARGET void kp_gemm(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                           const char *x, size_t xs, int nt, const uint8_t *prepared)
{
    alignas(64) uint8_t xbuf[KP_SPAN_G * KP_SB * 8 * KP_BYTES];
    alignas(64) float panel[16 * KP_SPAN_G * KP_PANEL];
    kp_weights u;
    const int form = kp_form(w->dtype);
    const size_t rb = ek_row_bytes(w->dtype, w->cols);
    const int64_t nsbt = w->cols / EK_QK_K;
    const size_t bsb = rb / (size_t)nsbt; /* bytes per super-block */
    for (int s0 = 0; s0 < nt; s0 += 16 * KP_SPAN_G) {
        const int span = nt - s0 < 16 * KP_SPAN_G ? nt - s0 : 16 * KP_SPAN_G;
        for (int64_t sb0 = 0; sb0 < nsbt; sb0 += KP_SB) {
            const int nsb = (int)(nsbt - sb0 < KP_SB ? nsbt - sb0 : KP_SB);
            const uint8_t *xp = xbuf;
            if (prepared)
                xp = prepared + (size_t)(s0 / (16 * KP_SPAN_G)) * kp_span_bytes(w->cols) +
                     (size_t)sb0 * 8 * KP_SPAN_G * KP_BYTES;
            else
                kp_pack(xbuf, x + (size_t)s0 * xs, xs, span, (span + 15) / 16, sb0 * 8, (int64_t)nsb * 8);
            for (int64_t rp = r0; rp < r1; rp += KP_PANEL) {
                const int64_t rend = r1 - rp < KP_PANEL ? r1 : rp + KP_PANEL;
                for (int64_t r = rp; r < rend;) {
                    const int R = rend - r >= KP_R ? KP_R : 1;
                    kp_unpack(&u, w->dtype, (const char *)w->data, rb, r, R, sb0, nsb);
                    /* the next tile's weights: 8 short streams, which the
                     * hardware prefetcher would pick up too late */
                    for (int64_t i = r + R; i < r + 2 * R && i < r1; i++) {
                        const char *p = (const char *)w->data + (size_t)i * rb + (size_t)sb0 * bsb;
                        for (size_t o = 0; o < (size_t)nsb * bsb; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
                    }
                    for (int t0 = 0; t0 < span; t0 += 16 * KP_G) {
                        const int T = span - t0 < 16 * KP_G ? span - t0 : 16 * KP_G;
                        const int G = (T + 15) / 16;
                        __m512 acc[KP_R][KP_G];
                        for (int i = 0; i < KP_R; i++)
                            for (int g = 0; g < KP_G; g++) acc[i][g] = _mm512_setzero_ps();
                        kp_tiles[form][G - 1][R != KP_R](acc, &u, nsb, xp + (size_t)(t0 / 16) * KP_BYTES);
                        kp_to_panel(panel + (int64_t)t0 * KP_PANEL + (r - rp), acc, R, T);
                    }
                    r += R;
                }
                for (int t = 0; t < span; t++)
                    ek_store_run(y + (int64_t)(s0 + t) * ys + rp, panel + (int64_t)t * KP_PANEL, rend - rp,
                                 sb0 > 0);
            }
        }
    }
}

TARGET void ek_gemm_kquant_prefill_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                          int64_t r1, const void *x, size_t xs, int nt)
{
    kp_gemm(y, ys, w, r0, r1, x, xs, nt, NULL);
}

/* The prepared form: whole spans of 128 tokens (the last one's missing
 * groups left unwritten: no tile reads them). */
size_t ek_kquant_prefill_prepared_bytes_avx512(int nt, int64_t cols)
{
    return (size_t)(nt + 16 * KP_SPAN_G - 1) / (16 * KP_SPAN_G) * kp_span_bytes(cols);
}

/* Part `part` of the spans' blocks, all tokens of each span: a 128-token
 * chunk is one span, so splitting the spans alone would leave one worker
 * packing it. */
TARGET void ek_kquant_prefill_prepare_avx512(void *xp, const void *x, size_t xs, int nt, int64_t cols,
                                             int part, int n_parts)
{
    const int64_t nbt = cols / 32, spans = (nt + 16 * KP_SPAN_G - 1) / (16 * KP_SPAN_G);
    int64_t u0, u1;
    pool_split(spans * nbt, 1, part, n_parts, &u0, &u1);
    for (int64_t u = u0; u < u1;) {
        const int64_t s = u / nbt, b0 = u % nbt, nb = nbt - b0 < u1 - u ? nbt - b0 : u1 - u;
        const int t0 = (int)s * 16 * KP_SPAN_G, T = nt - t0 < 16 * KP_SPAN_G ? nt - t0 : 16 * KP_SPAN_G;
        kp_pack((uint8_t *)xp + (size_t)s * kp_span_bytes(cols) + (size_t)b0 * KP_SPAN_G * KP_BYTES,
                (const char *)x + (size_t)t0 * xs, xs, T, (T + 15) / 16, b0, nb);
        u += nb;
    }
}

TARGET void ek_gemm_kquant_prefill_prepared_avx512(float *y, int64_t ys, const ek_matrix *w,
                                                   int64_t r0, int64_t r1, const void *xp, int nt)
{
    kp_gemm(y, ys, w, r0, r1, NULL, 0, nt, xp);
}

#else
int ek_kquant_prefill_avx512_covers(et_dtype dt)
{
    (void)dt;
    return 0;
}

void ek_gemm_kquant_prefill_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t xs, int nt)
{
    ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
}
#endif
