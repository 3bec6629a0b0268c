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
 * 256-bit vectors: on Zen 4, 512-bit operations run as two halves, and
 * 256 bits keep the same code valid for a future AVX-VNNI (VEX) set. */
#include "kernels/rows8.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#include "kernels/formats.h"

#define TARGET                                                                                     \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,"                         \
                          "f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

static inline uint32_t ld32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A token's block: its fp32 scale, and -offset * sum(q) to start the int32
 * dot at (offset 128 for Q8_0 weights stored as q + 128, 8 for Q4_0). */
typedef struct r8_act {
    float d;
    int32_t corr;
} r8_act;

/* The table holds this many (token, block) entries: 32 KiB on the stack. */
enum { R8_ACT_MAX = 4096 };
/* Groups per panel (32 rows), and tokens per tile. */
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

/* G groups (8G rows from wq/ws on) x T tokens over blocks [0, nb) of the
 * chunk: y[t][8g + i] (+)= sum over blocks. wq and ws point at the chunk's
 * first block of the first group; x at the first token's chunk start. */
INLINE void r8_tile(float *y, int64_t ys, const uint8_t *wq, const uint8_t *ws, size_t gbytes,
                    const r8_act *act, int kc, const char *x, size_t xs, int64_t nb, int add,
                    const uint8_t *pf, size_t pf_step, const int G, const int T, const int q4)
{
    const size_t qb = q4 ? 128 : 256;
    __m256 acc[R8_G][R8_T];
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) acc[g][j] =
            add ? _mm256_loadu_ps(y + j * ys + 8 * g) : _mm256_setzero_ps();
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        if (pf)
            for (size_t o = 0; o < pf_step; o += 64)
                _mm_prefetch((const char *)pf + (size_t)b * pf_step + o, _MM_HINT_T1);
        const int8_t *xq[R8_T];
        __m256i ia[R8_G][R8_T];
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
        {
            xq[j] = ((const ek_block_q8_0 *)(x + (size_t)j * xs))[b].q;
            _Pragma("GCC unroll 4") for (int g = 0; g < G; g++) ia[g][j] =
                _mm256_set1_epi32(act[j * kc + b].corr);
        }
        if (!q4) {
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
            {
                __m256i xk[R8_T];
                _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) xk[j] =
                    _mm256_set1_epi32((int)ld32(xq[j] + 4 * k));
                _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
                {
                    __m256i wv = _mm256_loadu_si256(
                        (const __m256i *)(wq + (size_t)g * gbytes + (size_t)b * qb + 32 * k));
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) ia[g][j] =
                        _mm256_dpbusd_epi32(ia[g][j], wv, xk[j]);
                }
            }
        } else {
            /* dword k: low nibbles are elements 4k.., high ones 16 + 4k.. */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                __m256i xl[R8_T], xh[R8_T];
                _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
                {
                    xl[j] = _mm256_set1_epi32((int)ld32(xq[j] + 4 * k));
                    xh[j] = _mm256_set1_epi32((int)ld32(xq[j] + 16 + 4 * k));
                }
                _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
                {
                    __m256i v = _mm256_loadu_si256(
                        (const __m256i *)(wq + (size_t)g * gbytes + (size_t)b * qb + 32 * k));
                    __m256i lo = _mm256_and_si256(v, m0f);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
                    _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
                    {
                        ia[g][j] = _mm256_dpbusd_epi32(ia[g][j], lo, xl[j]);
                        ia[g][j] = _mm256_dpbusd_epi32(ia[g][j], hi, xh[j]);
                    }
                }
            }
        }
        _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        {
            __m256 dw = _mm256_cvtph_ps(
                _mm_loadu_si128((const __m128i *)(ws + (size_t)g * gbytes + (size_t)b * 16)));
            _Pragma("GCC unroll 2") for (int j = 0; j < T; j++) acc[g][j] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[g][j]),
                                _mm256_mul_ps(dw, _mm256_set1_ps(act[j * kc + b].d)), acc[g][j]);
        }
    }
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 2") for (int j = 0; j < T; j++)
            _mm256_storeu_ps(y + j * ys + 8 * g, acc[g][j]);
}

typedef void (*r8_tile_fn)(float *y, int64_t ys, const uint8_t *wq, const uint8_t *ws,
                           size_t gbytes, const r8_act *act, int kc, const char *x, size_t xs,
                           int64_t nb, int add, const uint8_t *pf, size_t pf_step);
#define R8_TILE(G, T, Q4)                                                                          \
    static TARGET void r8_##G##_##T##_##Q4(float *y, int64_t ys, const uint8_t *wq,                \
                                           const uint8_t *ws, size_t gbytes, const r8_act *act,    \
                                           int kc, const char *x, size_t xs, int64_t nb, int add,  \
                                           const uint8_t *pf, size_t pf_step)                      \
    {                                                                                              \
        r8_tile(y, ys, wq, ws, gbytes, act, kc, x, xs, nb, add, pf, pf_step, G, T, Q4);            \
    }
R8_TILE(4, 2, 0) R8_TILE(4, 1, 0) R8_TILE(1, 2, 0) R8_TILE(1, 1, 0)
R8_TILE(4, 2, 1) R8_TILE(4, 1, 1) R8_TILE(1, 2, 1) R8_TILE(1, 1, 1)
/* [q4][full panel?][two tokens?] */
static const r8_tile_fn r8_tiles[2][2][2] = {
        {{r8_1_1_0, r8_1_2_0}, {r8_4_1_0, r8_4_2_0}},
        {{r8_1_1_1, r8_1_2_1}, {r8_4_1_1, r8_4_2_1}},
};

/* Decode streams each panel (4 groups, contiguous) from DRAM once; its 8
 * short streams (quants and scales of each group) start too briefly for
 * the hardware prefetcher, so a tile prefetches the panel this many ahead
 * into L2 while it works, in step with its own blocks. */
#ifndef R8_PF_PANELS
#define R8_PF_PANELS 1
#endif

/* Blocks per chunk when many tokens pass over the weights: a panel of 4
 * groups x KC blocks (~17 KiB) stays in L1 while every token tile reads it. */
#define R8_KC_BYTES 17408

static TARGET void gemm_rows8(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                              const void *xv, size_t xs, int nt, int q4)
{
    r8_act act[R8_ACT_MAX];
    const char *x = xv;
    const int64_t nbt = w->cols / EK_QBLOCK;
    const size_t rb = ek_row_bytes(w->dtype, w->cols), gbytes = EK_ROWS8 * rb;
    const size_t qb = ek_rows8_block_quants(w->dtype);
    const uint8_t *data = w->data;
    /* Few tokens (decode): whole rows per chunk, so each group is one
     * sequential stream. Many: chunks whose panel fits L1. */
    int64_t kc;
    int tp;
    if (nt <= 8) {
        kc = nbt < R8_ACT_MAX / nt ? nbt : R8_ACT_MAX / nt;
        tp = nt;
    } else {
        kc = (int64_t)(R8_KC_BYTES / (R8_G * gbytes / nbt));
        kc = kc < 4 ? 4 : kc > nbt ? nbt : kc;
        tp = (int)(R8_ACT_MAX / kc);
    }
    for (int t0 = 0; t0 < nt; t0 += tp) {
        const int T = nt - t0 < tp ? nt - t0 : tp;
        for (int64_t b0 = 0; b0 < nbt; b0 += kc) {
            const int64_t nb = nbt - b0 < kc ? nbt - b0 : kc;
            fill_act(act, (int)kc, x + (size_t)t0 * xs, xs, T, b0, nb, q4);
            for (int64_t r = r0; r < r1;) {
                const int full = r1 - r >= 8 * R8_G;
                const uint8_t *g0 = data + (size_t)(r / EK_ROWS8) * gbytes;
                const uint8_t *wq = g0 + (size_t)b0 * qb, *ws = g0 + (size_t)nbt * qb + b0 * 16;
                /* whole rows: the panel PF_PANELS ahead, at the same pace */
                const size_t panel = (size_t)(full ? R8_G : 1) * gbytes;
                const uint8_t *pf = kc == nbt ? g0 + R8_PF_PANELS * panel : NULL;
                for (int t = 0; t < T; t += R8_T) {
                    const int two = T - t >= 2;
                    r8_tiles[q4][full][two](
                        y + (int64_t)(t0 + t) * ys + r, ys, wq, ws, gbytes, act + t * kc, (int)kc,
                        x + (size_t)(t0 + t) * xs + (size_t)b0 * sizeof(ek_block_q8_0), xs, nb,
                        b0 > 0, t ? NULL : pf, panel / (size_t)nbt);
                }
                r += full ? 8 * R8_G : 8;
            }
        }
    }
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
