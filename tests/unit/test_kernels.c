/* Scalar kernels against independent double-precision formulas. Sizes are
 * odd on purpose so that every unrolled loop's tail is exercised. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/rows8.h"

static unsigned rng = 12345u;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

/* IEEE half decoded by its definition: (-1)^s * 2^(e-15) * 1.m, or subnormal. */
static double half_by_definition(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp(1024.0 + m, e - 25);
    return s ? -v : v;
}

static void f16_conversion_is_exact_for_every_value(void)
{
    for (uint32_t h = 0; h < 65536; h++) {
        double want = half_by_definition((uint16_t)h);
        float got = ek_f16_to_f32((uint16_t)h);
        if (isnan(want)) CHECK_MSG(isnan(got), "0x%04x", h);
        else CHECK_MSG((double)got == want && !signbit(got) == !signbit(want), "0x%04x: %g vs %g", h, (double)got, want);
        if (check_failures_in_case > 5) return;
    }
}

static void bf16_round_trip_and_rounding(void)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ek_bf16_to_f32((uint16_t)h);
        if (!isnan(f)) CHECK_MSG(ek_f32_to_bf16(f) == h, "0x%04x", h);
        if (check_failures_in_case > 5) return;
    }
    /* 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0). */
    CHECK(ek_f32_to_bf16(1.0f + 1.0f / 256.0f) == 0x3f80);
    CHECK(ek_f32_to_bf16(1.0f + 3.0f / 256.0f) == 0x3f82);
    CHECK(isnan(ek_bf16_to_f32(ek_f32_to_bf16(NAN))));
}

/* A random matrix in `dt` (quantized from fp32 for the block formats). */
static void *random_matrix(et_dtype dt, int64_t rows, int64_t cols)
{
    float *f = malloc((size_t)(rows * cols) * sizeof(float));
    void *w = malloc((size_t)rows * ek_row_bytes(dt, cols));
    for (int64_t i = 0; i < rows * cols; i++) f[i] = frand();
    for (int64_t r = 0; r < rows; r++)
        ek_format_of(dt)->from_f32(f + r * cols, (char *)w + (size_t)r * ek_row_bytes(dt, cols), cols);
    free(f);
    return w;
}

/* Every kernel set this CPU runs, for every format, against a double-precision
 * product of the dequantized operands. Rows and token counts are odd; column
 * counts cover SIMD tails for the float formats and 1..9 blocks otherwise. */
static void gemm_matches_double_reference(void)
{
    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    static const int64_t rows_list[] = {1, 7, 33};
    static const int64_t cols_float[] = {1, 7, 8, 9, 33, 257};
    static const int64_t blocks_ref[] = {1, 2, 3, 9};
    static const int tokens_list[] = {1, 3, 5};
    int tested = 0;
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        tested++;
        for (int dt = 0; dt < ET_DTYPE_COUNT; dt++) {
            const ek_format *fmt = ek_format_of((et_dtype)dt);
            size_t n_cols = fmt->block == 1 ? 6 : 4;
            for (size_t ri = 0; ri < 3; ri++)
                for (size_t ci = 0; ci < n_cols; ci++)
                    for (size_t ti = 0; ti < 3; ti++) {
                        int64_t R = rows_list[ri];
                        int64_t C = fmt->block == 1 ? cols_float[ci] : fmt->block * blocks_ref[ci];
                        int T = tokens_list[ti];
                        void *w = random_matrix((et_dtype)dt, R, C);
                        float *wf = malloc((size_t)(R * C) * sizeof(float));
                        float *x = malloc((size_t)(T * C) * sizeof(float));
                        float *xf = malloc((size_t)(T * C) * sizeof(float));
                        float *y = malloc((size_t)(T * R) * sizeof(float));
                        ek_matrix m = {(et_dtype)dt, w, R, C, EK_LAYOUT_ROWS};
                        for (int64_t r = 0; r < R; r++) ek_row_to_f32(wf + r * C, &m, r);
                        for (int64_t i = 0; i < T * C; i++) x[i] = frand();
                        /* the activation operand as the kernel sees it */
                        size_t x_stride = (size_t)C * sizeof(float);
                        void *xq = NULL;
                        memcpy(xf, x, (size_t)(T * C) * sizeof(float));
                        if (fmt->act == ET_Q8_0) {
                            x_stride = ek_row_bytes(ET_Q8_0, C);
                            xq = malloc((size_t)T * x_stride);
                            for (int t = 0; t < T; t++) {
                                k->quantize_q8_0(x + t * C, (char *)xq + (size_t)t * x_stride, C);
                                ek_format_of(ET_Q8_0)->to_f32((char *)xq + (size_t)t * x_stride, xf + t * C, C);
                            }
                        }
                        /* two row ranges, as two threads would split them */
                        int64_t mid = R / 2;
                        k->gemm[dt](y, R, &m, 0, mid, xq ? xq : x, x_stride, T);
                        k->gemm[dt](y, R, &m, mid, R, xq ? xq : x, x_stride, T);
                        for (int t = 0; t < T; t++)
                            for (int64_t r = 0; r < R; r++) {
                                double want = 0, mag = 0;
                                for (int64_t c = 0; c < C; c++) {
                                    want += (double)wf[r * C + c] * xf[t * C + c];
                                    mag += fabs((double)wf[r * C + c] * xf[t * C + c]);
                                }
                                double err = fabs((double)y[t * R + r] - want);
                                CHECK_MSG(err <= 1e-6 * mag * sqrt((double)C + 1) + 1e-30,
                                          "%s %s %lldx%lld token %d row %lld: %g vs %g", k->name,
                                          fmt->name, (long long)R, (long long)C, t,
                                          (long long)r, (double)y[t * R + r], want);
                            }
                        free(w);
                        free(wf);
                        free(x);
                        free(xf);
                        free(xq);
                        free(y);
                        if (check_failures_in_case > 10) return;
                    }
        }
    }
    CHECK(tested >= 1);
    /* A row view is the same rows of the same matrix. */
    void *w = random_matrix(ET_Q4_0, 5, 64);
    ek_matrix m = {ET_Q4_0, w, 5, 64, EK_LAYOUT_ROWS}, v = ek_matrix_rows(&m, 2, 3);
    float a[64], b[64];
    ek_row_to_f32(a, &m, 3);
    ek_row_to_f32(b, &v, 1);
    CHECK(v.rows == 3 && memcmp(a, b, sizeof a) == 0);
    free(w);
}

/* Q8_0 round trips lose at most half a quantization step per element, plus
 * the f16 rounding of the scale (127 steps x 2^-11). Q4_0 maps the signed
 * maximum to -8, so the other side clamps at +7: up to one step there. */
static void block_formats_round_trip(void)
{
    enum { N = 32 * 9 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = 4.0f * frand();
    x[5] = 0.0f;
    for (int i = 64; i < 96; i++) x[i] = 0.0f; /* an all-zero block */
    static const et_dtype dts[] = {ET_Q8_0, ET_Q4_0};
    for (size_t k = 0; k < 2; k++) {
        const ek_format *f = ek_format_of(dts[k]);
        unsigned char buf[N * 2];
        f->from_f32(x, buf, N);
        f->to_f32(buf, y, N);
        for (int b = 0; b < N / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            float step = amax / (dts[k] == ET_Q8_0 ? 127.0f : 8.0f);
            for (int j = 0; j < 32; j++)
                CHECK_MSG(fabsf(y[b * 32 + j] - x[b * 32 + j]) <=
                              (dts[k] == ET_Q8_0 ? 0.57f : 1.07f) * step + 1e-7f,
                          "%s block %d element %d: %g -> %g", f->name, b, j, (double)x[b * 32 + j],
                          (double)y[b * 32 + j]);
        }
    }
    CHECK(ek_format_by_name("q4_0")->ggml_type == 2 && ek_format_by_name("q8_0")->ggml_type == 8);
    CHECK(ek_format_by_ggml_type(30)->dtype == ET_BF16 && ek_format_by_ggml_type(12)->dtype == ET_Q4_K &&
          ek_format_by_ggml_type(15) == NULL); /* q8_K: an activation format, not a weight one */
    CHECK(ek_row_bytes(ET_Q8_0, 64) == 68 && ek_row_bytes(ET_Q4_0, 64) == 36);
}

static void f16_encoding_rounds_to_nearest_even(void)
{
    /* every half survives half -> float -> half */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ek_f16_to_f32((uint16_t)h);
        if (isnan(f)) CHECK(isnan(ek_f16_to_f32(ek_f32_to_f16(f))));
        else CHECK_MSG(ek_f32_to_f16(f) == h, "0x%04x", h);
        if (check_failures_in_case > 5) return;
    }
    /* random floats: the result is the nearest half (ties to even) */
    for (int i = 0; i < 200000; i++) {
        float f = ldexpf(frand(), (int)(rng % 40) - 28);
        uint16_t h = ek_f32_to_f16(f);
        double got = ek_f16_to_f32(h);
        double lo = ek_f16_to_f32((uint16_t)(h - 1)), hi = ek_f16_to_f32((uint16_t)(h + 1));
        if ((h & 0x7fff) == 0) lo = -ek_f16_to_f32((uint16_t)(h ^ 0x8001)) ; /* across zero */
        CHECK_MSG(fabs(got - f) <= fabs(lo - f) && fabs(got - f) <= fabs(hi - f),
                  "%.9g -> %.9g", (double)f, got);
        if (check_failures_in_case > 5) return;
    }
    CHECK(ek_f32_to_f16(65520.0f) == 0x7c00 && ek_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(ek_f32_to_f16(-1e-9f) == 0x8000);
}

/* ---- SIMD sets against their scalar twin --------------------------------- */

/* The SIMD sets this CPU runs (not "scalar"); fills names, returns count. */
static int simd_sets(const ek_kernel_set **out)
{
    static const char *const names[] = {"avx2", "avx512", "neon"};
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const ek_kernel_set *k = ek_kernels_by_name(names[i]);
        if (k) out[n++] = k;
    }
    return n;
}

/* Random weights whose magnitude changes from row to row, so block scales
 * (and float exponents) differ. */
static void *random_matrix_scaled(et_dtype dt, int64_t rows, int64_t cols)
{
    float *f = malloc((size_t)cols * sizeof(float));
    void *w = malloc((size_t)rows * ek_row_bytes(dt, cols));
    for (int64_t r = 0; r < rows; r++) {
        float scale = ldexpf(1.0f, (int)(rng % 9) - 4);
        for (int64_t c = 0; c < cols; c++) f[c] = scale * frand();
        ek_format_of(dt)->from_f32(f, (char *)w + (size_t)r * ek_row_bytes(dt, cols), cols);
    }
    free(f);
    return w;
}

/* Tolerance for two fp32 evaluations of the same dot product that differ
 * only in the order (and fusing) of their additions: both are within
 * ~sqrt(n) * 2^-24 * sum|w x| of the exact value in the typical case; we
 * allow 1e-6 * sqrt(n + 1) * sum|w x| (17x that). The integer block dots of
 * Q8_0/Q4_0 are exact, so the same bound holds there with n = columns. */
static double pair_tolerance(double mag, int64_t n) { return 1e-6 * sqrt((double)n + 1) * mag + 1e-30; }

#define SENTINEL (-12345.0f)

/* One shape: the SIMD set's gemm over three uneven row ranges (as threads
 * would split them, starts not multiples of 16) into a y whose stride is
 * larger than rows, against the scalar set over the whole range. Returns
 * the number of mismatches reported. */
static int simd_case(const ek_kernel_set *k, et_dtype dt, int64_t R, int64_t C, int T)
{
    const ek_kernel_set *ref = ek_kernels_scalar();
    const ek_format *fmt = ek_format_of(dt);
    int64_t ys = R + 3;
    void *w = random_matrix_scaled(dt, R, C);
    float *wf = malloc((size_t)(R * C) * sizeof(float));
    float *x = malloc((size_t)(T * C) * sizeof(float));
    float *xf = malloc((size_t)(T * C) * sizeof(float));
    float *y = malloc((size_t)(T * ys) * sizeof(float));
    float *y0 = malloc((size_t)(T * ys) * sizeof(float));
    ek_matrix m = {dt, w, R, C, EK_LAYOUT_ROWS};
    for (int64_t r = 0; r < R; r++) ek_row_to_f32(wf + r * C, &m, r);
    for (int64_t i = 0; i < T * C; i++) x[i] = ldexpf(frand(), (int)(i / C % 5) - 2);
    size_t xs = (size_t)C * sizeof(float);
    void *xq = NULL, *xq0 = NULL;
    memcpy(xf, x, (size_t)(T * C) * sizeof(float));
    int bad = 0;
    if (fmt->act == ET_Q8_0) {
        /* activations from the set's own quantizer, which must equal the
         * scalar one byte for byte */
        xs = ek_row_bytes(ET_Q8_0, C);
        xq = malloc((size_t)T * xs);
        xq0 = malloc((size_t)T * xs);
        for (int t = 0; t < T; t++) {
            k->quantize_q8_0(x + t * C, (char *)xq + (size_t)t * xs, C);
            ref->quantize_q8_0(x + t * C, (char *)xq0 + (size_t)t * xs, C);
            ek_format_of(ET_Q8_0)->to_f32((char *)xq + (size_t)t * xs, xf + t * C, C);
        }
        if (memcmp(xq, xq0, (size_t)T * xs)) {
            CHECK_MSG(0, "%s quantize_q8_0 differs from scalar (%lld cols)", k->name, (long long)C);
            bad++;
        }
    }
    for (int64_t i = 0; i < T * ys; i++) y[i] = y0[i] = SENTINEL;
    int64_t a = R / 3, b = R - R / 4;
    const void *xin = xq ? xq : x;
    k->gemm[dt](y, ys, &m, a, b, xin, xs, T);
    k->gemm[dt](y, ys, &m, 0, a, xin, xs, T);
    k->gemm[dt](y, ys, &m, b, R, xin, xs, T);
    ref->gemm[dt](y0, ys, &m, 0, R, xin, xs, T);
    for (int t = 0; t < T && bad < 5; t++) {
        for (int64_t r = R; r < ys; r++)
            if (y[t * ys + r] != SENTINEL) {
                CHECK_MSG(0, "%s %s %lldx%lld x%d: wrote y[%d][%lld] past rows", k->name,
                          fmt->name, (long long)R, (long long)C, T, t, (long long)r);
                bad++;
            }
        for (int64_t r = 0; r < R; r++) {
            double mag = 0;
            for (int64_t c = 0; c < C; c++) mag += fabs((double)wf[r * C + c] * xf[t * C + c]);
            double got = y[t * ys + r], want = y0[t * ys + r];
            if (!(fabs(got - want) <= pair_tolerance(mag, C))) {
                CHECK_MSG(0, "%s %s %lldx%lld x%d: y[%d][%lld] = %.9g, scalar %.9g (mag %g)",
                          k->name, fmt->name, (long long)R, (long long)C, T, t, (long long)r,
                          got, want, mag);
                if (++bad >= 5) break;
            }
        }
    }
    free(w);
    free(wf);
    free(x);
    free(xf);
    free(y);
    free(y0);
    free(xq);
    free(xq0);
    return bad;
}

/* Odd shapes: rows 1..67, tokens 1..9 and the prefill sizes around 16, 32,
 * 64 (and past 64 and 128, which the packed kernels do in passes and
 * spans), columns that leave every SIMD tail for the float formats and 1..20
 * blocks (and 65, past the 64-block packing chunk, and 161, past the quads'
 * 160) for the block formats. */
/* Block counts tried per (rows, tokens) pair. EMBER_KERNEL_SWEEP=light (what
 * tests/run_all.sh sets for the emulated NEON runs and the sanitizer run,
 * where each case costs 5-10x) tries one instead of two; the pairs, formats
 * and the cycle through every block count stay, and the native run keeps
 * the whole sweep. */
static int sweep_block_counts(void)
{
    const char *s = getenv("EMBER_KERNEL_SWEEP");
    return s && strcmp(s, "light") == 0 ? 1 : 2;
}

static void simd_sets_match_scalar_twin(void)
{
    static const int64_t rows_list[] = {1, 2, 3, 4, 5, 6, 7, 9, 13, 16, 17, 31, 33, 67};
    static const int tokens_list[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 32, 33, 49, 64, 70, 130};
    static const int64_t cols_float[] = {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 63, 100, 257, 1000};
    static const int64_t blocks_list[] = {1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 20, 65, 161};
    const ek_kernel_set *sets[4];
    const int block_counts = sweep_block_counts();
    int n_sets = simd_sets(sets);
    if (!n_sets) printf("  (no SIMD kernel set on this CPU: nothing to compare)\n");
    for (int si = 0; si < n_sets; si++)
        for (int dt = 0; dt < ET_DTYPE_COUNT; dt++) {
            const ek_format *fmt = ek_format_of((et_dtype)dt);
            REQUIRE(sets[si]->gemm[dt] != NULL);
            int pick = 0;
            for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
                for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++) {
                    int T = tokens_list[ti];
                    int64_t R = rows_list[ri];
                    /* big tokens x big rows is slow under the sanitizers and
                     * adds nothing the smaller cases do not cover */
                    if (T > 17 && R > 17 && R != 33) continue;
                    for (int rep = 0; rep < block_counts; rep++, pick++) {
                        int64_t nb = blocks_list[pick % (sizeof blocks_list / sizeof *blocks_list)];
                        if (fmt->block > EK_QBLOCK) nb = 1 + nb / 8; /* 256-value super-blocks */
                        int64_t C = fmt->block == 1
                                        ? cols_float[pick % (sizeof cols_float / sizeof *cols_float)]
                                        : fmt->block * nb;
                        if (simd_case(sets[si], (et_dtype)dt, R, C, T)) return;
                    }
                }
        }
}

/* The 32-value block formats with kernels of their own (IQ4_NL, Q4_1,
 * Q5_0, Q5_1) in shapes past the sweep's: rows longer than the avx512
 * kernel's packed activations hold (it does them in column chunks, at one
 * and at four tokens a pass, with blocks left over for the scalar tail),
 * and a prefill over more rows than one span of its Q8_0 conversion, with
 * token counts that leave the offsets' term its tails (not multiples of 8
 * tokens or 16 rows). */
static void blocks32_long_rows_and_row_spans(void)
{
    static const et_dtype types[] = {ET_IQ4_NL, ET_Q4_1, ET_Q5_0, ET_Q5_1};
    static const struct { int64_t rows, blocks; int tokens; } cases[] = {
        {3, 1031, 1}, {5, 263, 4}, {5, 263, 5}, {150, 161, 33}, {97, 64, 9}, {41, 5, 17},
    };
    const ek_kernel_set *sets[4];
    int n_sets = simd_sets(sets);
    for (int si = 0; si < n_sets; si++)
        for (size_t d = 0; d < sizeof types / sizeof *types; d++)
            for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
                if (simd_case(sets[si], types[d], cases[i].rows, EK_QBLOCK * cases[i].blocks, cases[i].tokens))
                    return;
}

/* K-quant rows longer than the sweep's, at 5-8 tokens: there several
 * tokens' activations outgrow L1 and the engines with passes of fewer
 * tokens run them over blocks of rows (ek_kq_row_block), 67 rows being
 * several blocks and a partial one, split at odd rows as threads split. */
static void kquant_row_blocks_of_several_passes(void)
{
    static const et_dtype types[] = {ET_Q2_K, ET_Q3_K, ET_Q4_K, ET_Q5_K, ET_Q6_K, ET_IQ4_XS};
    static const int tokens_list[] = {5, 8};
    const ek_kernel_set *sets[4];
    int n_sets = simd_sets(sets);
    for (int si = 0; si < n_sets; si++)
        for (size_t d = 0; d < sizeof types / sizeof *types; d++)
            for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++)
                if (simd_case(sets[si], types[d], 67, 24 * 256 /* 6144 columns */, tokens_list[ti])) return;
}

/* quantize_q8_0 of every SIMD set against the scalar one, byte for byte. */
static int quantize_blocks_agree(const ek_kernel_set *k, const float *x, int64_t n_blocks,
                                 const char *what)
{
    size_t bytes = (size_t)n_blocks * sizeof(ek_block_q8_0);
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    k->quantize_q8_0(x, a, n_blocks * EK_QBLOCK);
    ek_kernels_scalar()->quantize_q8_0(x, b, n_blocks * EK_QBLOCK);
    int ok = memcmp(a, b, bytes) == 0;
    if (!ok)
        for (int64_t i = 0; i < n_blocks; i++)
            if (memcmp(a + i * sizeof(ek_block_q8_0), b + i * sizeof(ek_block_q8_0),
                       sizeof(ek_block_q8_0))) {
                const ek_block_q8_0 *ba = (const ek_block_q8_0 *)a + i, *bb = (const ek_block_q8_0 *)b + i;
                int j = 0;
                while (j < EK_QBLOCK && ba->q[j] == bb->q[j]) j++;
                CHECK_MSG(0, "%s quantize_q8_0 (%s) block %lld: d %04x vs %04x, q[%d] %d vs %d (x %.9g)",
                          k->name, what, (long long)i, ba->d, bb->d, j % EK_QBLOCK,
                          ba->q[j % EK_QBLOCK], bb->q[j % EK_QBLOCK],
                          (double)x[i * EK_QBLOCK + j % EK_QBLOCK]);
                break;
            }
    free(a);
    free(b);
    return ok;
}

/* The eight-row interleaved layout: packing then unpacking gives back every
 * row byte for byte, lookups read the same values, and every set's
 * interleaved gemm (the scalar twin included) equals the scalar row-layout
 * gemm, over row ranges split at group boundaries as threads split them,
 * with chunked and unchunked token counts, never writing past its rows. */
static void rows8_layout_matches_row_layout(void)
{
    static const et_dtype dts[] = {ET_Q8_0, ET_Q4_0};
    static const int64_t rows_list[] = {8, 16, 24, 40, 72};
    /* 520 blocks: 8 tokens' activation table outgrows the few-token zmm
     * form's, which hands the call to the 256-bit path in chunks of blocks */
    static const int64_t blocks_list[] = {1, 2, 3, 5, 8, 17, 65, 161, 520};
    static const int tokens_list[] = {1, 2, 3, 5, 8, 9, 16, 17, 33, 70};
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
    const ek_kernel_set *ref = ek_kernels_scalar();
    int interleaved_sets = 0;
    for (size_t di = 0; di < 2; di++)
        for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
            for (size_t bi = 0; bi < sizeof blocks_list / sizeof *blocks_list; bi++) {
                const et_dtype dt = dts[di];
                const int64_t R = rows_list[ri], C = blocks_list[bi] * EK_QBLOCK;
                const size_t rb = ek_row_bytes(dt, C);
                CHECK(ek_rows8_fits(dt, R, C) && !ek_rows8_fits(dt, R + 4, C) &&
                      !ek_rows8_fits(ET_BF16, R, C));
                void *w = random_matrix_scaled(dt, R, C);
                char *w8 = malloc((size_t)R * rb), *row = malloc(rb);
                for (int64_t g = 0; g < R / 8; g++)
                    ek_rows8_pack(dt, C, (char *)w + (size_t)g * 8 * rb, rb, w8 + (size_t)g * 8 * rb);
                ek_matrix m = {dt, w, R, C, EK_LAYOUT_ROWS}, m8 = {dt, w8, R, C, EK_LAYOUT_ROWS8};
                float *a = malloc((size_t)C * sizeof(float)), *b = malloc((size_t)C * sizeof(float));
                float *wf = malloc((size_t)(R * C) * sizeof(float));
                for (int64_t r = 0; r < R; r++) {
                    ek_row_to_f32(wf + r * C, &m, r);
                    ek_rows8_unpack_row(&m8, r, row);
                    CHECK_MSG(!memcmp(row, (char *)w + (size_t)r * rb, rb), "%s row %lld unpacks differently",
                              ek_format_of(dt)->name, (long long)r);
                    ek_row_to_f32(a, &m, r);
                    ek_row_to_f32(b, &m8, r);
                    CHECK(!memcmp(a, b, (size_t)C * sizeof(float)));
                }
                if (R >= 16) {
                    ek_matrix v = ek_matrix_rows(&m8, 8, R - 8);
                    ek_row_to_f32(b, &v, 3);
                    ek_row_to_f32(a, &m, 11);
                    CHECK(v.layout == EK_LAYOUT_ROWS8 && !memcmp(a, b, (size_t)C * sizeof(float)));
                }
                for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++) {
                    const int T = tokens_list[ti];
                    if (C > 161 * EK_QBLOCK && T > 8) continue; /* only for the few-token paths */
                    const int64_t ys = R + 3;
                    const size_t xs = ek_row_bytes(ET_Q8_0, C);
                    float *x = malloc((size_t)C * sizeof(float));
                    float *xf = malloc((size_t)T * C * sizeof(float));
                    char *xq = malloc((size_t)T * xs);
                    float *y = malloc((size_t)(T * ys) * sizeof(float));
                    float *y0 = malloc((size_t)(T * ys) * sizeof(float));
                    for (int t = 0; t < T; t++) {
                        for (int64_t c = 0; c < C; c++) x[c] = ldexpf(frand(), t % 5 - 2);
                        ref->quantize_q8_0(x, xq + (size_t)t * xs, C);
                        ek_format_of(ET_Q8_0)->to_f32(xq + (size_t)t * xs, xf + (size_t)t * C, C);
                    }
                    ref->gemm[dt](y0, ys, &m, 0, R, xq, xs, T);
                    for (size_t si = 0; si < sizeof names / sizeof *names; si++) {
                        const ek_kernel_set *k = ek_kernels_by_name(names[si]);
                        if (!k || !k->gemm_rows8[dt]) continue;
                        interleaved_sets++;
                        for (int64_t i = 0; i < T * ys; i++) y[i] = SENTINEL;
                        const int64_t cut1 = R / 16 * 8, cut2 = R - R / 24 * 8;
                        k->gemm_rows8[dt](y, ys, &m8, cut1, cut2, xq, xs, T);
                        k->gemm_rows8[dt](y, ys, &m8, 0, cut1, xq, xs, T);
                        k->gemm_rows8[dt](y, ys, &m8, cut2, R, xq, xs, T);
                        int bad = 0;
                        for (int t = 0; t < T && bad < 3; t++)
                            for (int64_t r = 0; r < ys && bad < 3; r++) {
                                float got = y[t * ys + r], want = y0[t * ys + r];
                                if (r >= R) {
                                    if (got != SENTINEL) bad++;
                                    CHECK_MSG(got == SENTINEL, "%s wrote y[%d][%lld] past rows", k->name, t, (long long)r);
                                    continue;
                                }
                                /* the block dots are exact integers: only the fp32
                                 * order of the scaled sums differs */
                                double mag = 0;
                                for (int64_t c = 0; c < C; c++)
                                    mag += fabs((double)wf[r * C + c] * xf[(size_t)t * C + c]);
                                double tol = pair_tolerance(mag, C);
                                if (!(fabs((double)got - want) <= tol)) bad++;
                                CHECK_MSG(fabs((double)got - want) <= tol,
                                          "%s rows8 %s %lldx%lld x%d: y[%d][%lld] = %.9g, rows %.9g",
                                          k->name, ek_format_of(dt)->name, (long long)R, (long long)C,
                                          T, t, (long long)r, (double)got, (double)want);
                            }
                    }
                    free(x);
                    free(xf);
                    free(xq);
                    free(y);
                    free(y0);
                }
                free(wf);
                free(a);
                free(b);
                free(w);
                free(w8);
                free(row);
                if (check_failures_in_case > 10) return;
            }
    CHECK(interleaved_sets > 0);
}

static void simd_quantize_q8_0_is_bit_identical(void)
{
    const ek_kernel_set *sets[4];
    int n_sets = simd_sets(sets);
    enum { NB = 1 << 14 };
    float *x = malloc((size_t)NB * EK_QBLOCK * sizeof(float));
    for (int si = 0; si < n_sets; si++) {
        const ek_kernel_set *k = sets[si];
        /* random blocks over a wide range of exponents, both signs */
        for (int64_t i = 0; i < (int64_t)NB * EK_QBLOCK; i++)
            x[i] = ldexpf(frand(), (int)((i / EK_QBLOCK) % 200) - 100);
        if (!quantize_blocks_agree(k, x, NB, "random")) continue;
        /* zeros, -0, a block with a single non-zero, huge and tiny values
         * (tiny enough that 1/d overflows to inf), subnormals */
        static const float specials[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, 1e-38f, 1e-37f,
                                         6e-8f, 65504.0f * 127, 65520.0f * 127, 1e30f, 3.4e38f,
                                         -3.4e38f, 1.0f, -1.0f, 0.5f};
        enum { NS = sizeof specials / sizeof *specials };
        int64_t nb = 0;
        for (int s1 = 0; s1 < NS; s1++)
            for (int s2 = 0; s2 < NS; s2++, nb++)
                for (int j = 0; j < EK_QBLOCK; j++)
                    x[nb * EK_QBLOCK + j] = j == 0 ? specials[s1] : j == 7 ? specials[s2] : j % 3 == 0 ? 0.0f : specials[(s1 + j) % NS] * 0.37f;
        if (!quantize_blocks_agree(k, x, nb, "special values")) continue;
        /* ties: amax = 127 makes d = 1 and x * id = x, so q = roundf(x):
         * every k + 0.5 and its float neighbours, both signs */
        nb = 0;
        for (int kk = 0; kk < 127; kk++)
            for (int sgn = 0; sgn < 2; sgn++, nb++) {
                float *b = x + nb * EK_QBLOCK;
                b[0] = 127.0f;
                float t = (float)kk + 0.5f;
                for (int j = 1; j < EK_QBLOCK; j++) {
                    float v = t;
                    for (int u = 0; u < (j % 8); u++) v = nextafterf(v, j < 16 ? 0.0f : 200.0f);
                    b[j] = sgn ? -v : v;
                }
            }
        if (!quantize_blocks_agree(k, x, nb, "ties")) continue;
        /* every float in [0.25, 127) with a stride of 97 bit patterns, as
         * the non-maximal elements of d = 1 blocks: the rounding step over
         * its whole range */
        nb = 0;
        int j = 1;
        uint32_t bits = 0x3e800000u; /* 0.25f */
        for (;;) {
            float v;
            memcpy(&v, &bits, sizeof v);
            if (v >= 127.0f) break;
            if (j == 1) x[nb * EK_QBLOCK] = 127.0f;
            x[nb * EK_QBLOCK + j] = (bits & 1) ? -v : v;
            if (++j == EK_QBLOCK) {
                j = 1;
                if (++nb == NB) {
                    if (!quantize_blocks_agree(k, x, nb, "rounding sweep")) break;
                    nb = 0;
                }
            }
            bits += 97;
        }
        if (nb) quantize_blocks_agree(k, x, nb, "rounding sweep");
        /* the f16 rounding of d: for every finite half h, amax values whose
         * d = amax / 127 falls at and around the midpoint of h and h + 1 */
        nb = 0;
        for (uint32_t h = 0; h < 0x7bff; h++) {
            float mid = 0.5f * (ek_f16_to_f32((uint16_t)h) + ek_f16_to_f32((uint16_t)(h + 1)));
            float amax = mid * 127.0f;
            for (int u = -2; u <= 2; u++) {
                float am = amax;
                for (int s = 0; s < (u < 0 ? -u : u); s++) am = nextafterf(am, u < 0 ? 0.0f : INFINITY);
                float *b = x + nb * EK_QBLOCK;
                for (int jj = 0; jj < EK_QBLOCK; jj++) b[jj] = am * frand();
                b[h % EK_QBLOCK] = (h & 1) ? -am : am;
                if (++nb == NB) {
                    if (!quantize_blocks_agree(k, x, nb, "f16 scale midpoints")) goto next_set;
                    nb = 0;
                }
            }
        }
        if (nb) quantize_blocks_agree(k, x, nb, "f16 scale midpoints");
    next_set:;
    }
    free(x);
}

/* The set the CPU picks is one that runs here, and a name that is not a set
 * gives NULL. */
static void best_set_is_runnable(void)
{
    const ek_kernel_set *best = ek_kernels_best();
    REQUIRE(best != NULL);
    CHECK(ek_kernels_by_name(best->name) == best);
    CHECK(ek_kernels_by_name("sse9") == NULL);
    printf("  best kernel set here: %s\n", best->name);
}

static void rope_rotates_leading_dims_only(void)
{
    enum { HD = 48, ROT = 16 };
    float inv_freq[ROT / 2], c[ROT / 2], s[ROT / 2], x[HD], orig[HD];
    ek_rope_inv_freq(inv_freq, ROT, 5e6f);
    for (int j = 0; j < ROT / 2; j++) {
        double want = pow(5e6, -2.0 * j / ROT);
        CHECK_MSG(fabs(inv_freq[j] - want) <= 1e-6 * want, "inv_freq[%d]", j);
    }
    const int64_t pos = 1234;
    ek_rope_cos_sin(c, s, inv_freq, ROT, pos);
    for (int i = 0; i < HD; i++) orig[i] = x[i] = frand();
    ek_rope_apply(x, c, s, ROT);
    for (int j = 0; j < ROT / 2; j++) {
        /* (a + ib) * e^(i angle), with the pair (j, j + rot/2), NeoX layout */
        double ang = (double)((float)pos * inv_freq[j]);
        double a = orig[j], b = orig[j + ROT / 2];
        CHECK(fabs(x[j] - (a * cos(ang) - b * sin(ang))) < 1e-6);
        CHECK(fabs(x[j + ROT / 2] - (b * cos(ang) + a * sin(ang))) < 1e-6);
    }
    for (int i = ROT; i < HD; i++) CHECK(x[i] == orig[i]);
}

static void softmax_and_activations(void)
{
    float v[37];
    double sum = 0;
    for (int i = 0; i < 37; i++) v[i] = 30.0f * frand();
    float keep = v[3], mx = v[0];
    for (int i = 0; i < 37; i++) mx = v[i] > mx ? v[i] : mx;
    double den = 0;
    for (int i = 0; i < 37; i++) den += exp((double)v[i] - mx);
    ek_softmax(v, 37);
    for (int i = 0; i < 37; i++) sum += v[i];
    CHECK(fabs(sum - 1.0) < 1e-6);
    CHECK(fabs(v[3] - exp((double)keep - mx) / den) < 1e-6);
    for (float xv = -6.0f; xv <= 6.0f; xv += 0.37f) {
        double erf_gelu = 0.5 * xv * (1.0 + erf(xv / sqrt(2.0)));
        double tanh_gelu = 0.5 * xv * (1.0 + tanh(sqrt(2.0 / M_PI) * (xv + 0.044715 * xv * xv * xv)));
        CHECK(fabs(ek_gelu_erf(xv) - erf_gelu) < 1e-6);
        CHECK(fabs(ek_gelu_tanh(xv) - tanh_gelu) < 1e-6);
        CHECK(fabs(ek_sigmoid(xv) - 1.0 / (1.0 + exp(-xv))) < 1e-6);
        CHECK(fabs(ek_silu(xv) - xv / (1.0 + exp(-xv))) < 1e-5);
    }
}

static void rmsnorm_matches_definition(void)
{
    enum { N = 131 };
    float x[N], w[N], out[N];
    double ss = 0;
    for (int i = 0; i < N; i++) {
        x[i] = 3.0f * frand();
        w[i] = 1.0f + 0.1f * frand();
        ss += (double)x[i] * x[i];
    }
    double r = 1.0 / sqrt(ss / N + 1e-6);
    ek_rmsnorm(out, x, w, N, 1e-6f);
    for (int i = 0; i < N; i++) CHECK(fabs(out[i] - w[i] * x[i] * r) < 1e-5);
}

/* The attention primitives of every set against the scalar twin, on every
 * length from 0 to 300 (tails included). */
static void dot_and_axpy_match_scalar(void)
{
    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    float a[300], b[300], y0[300], y1[300];
    for (int i = 0; i < 300; i++) {
        a[i] = frand();
        b[i] = frand();
    }
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        for (int n = 0; n < 300; n++) {
            double want = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                want += (double)a[i] * b[i];
                mag += fabs((double)a[i] * b[i]);
            }
            float got = k->dot_f32(a, b, n);
            CHECK_MSG(fabs(got - want) <= 1e-6 * mag * sqrt(n + 1.0) + 1e-30, "%s dot n=%d: %g vs %g",
                      k->name, n, (double)got, want);
            for (int i = 0; i < 300; i++) y0[i] = y1[i] = b[i];
            k->axpy_f32(y0, 0.37f, a, n);
            ek_axpy_f32_scalar(y1, 0.37f, a, n);
            for (int i = 0; i < 300; i++)
                CHECK_MSG(fabsf(y0[i] - y1[i]) <= 1e-6f * (fabsf(y1[i]) + 1.0f),
                          "%s axpy n=%d element %d", k->name, n, i);
            if (check_failures_in_case > 5) return;
        }
    }
}

/* The blocked attention kernels of every set against a double-precision
 * definition, on head counts and key counts with tails (nh 1..5, nk 1..9)
 * and head sizes with and without a 16-float tail. */
static void attention_kernels_match_definition(void)
{
    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    static const int dims[] = {16, 32, 40, 128, 192, 256};
    enum { NH = 5, NK = 9, D = 256, SS = 12 };
    float q[NH * D], kv[NK][D], s[NH * SS], o[NH * D], o0[NH * D];
    const float *rows[NK];
    for (int i = 0; i < NH * D; i++) q[i] = frand(), o0[i] = frand();
    for (int j = 0; j < NK; j++) {
        for (int i = 0; i < D; i++) kv[j][i] = frand();
        rows[j] = kv[j];
    }
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
            for (int nh = 1; nh <= NH; nh++)
                for (int nk = 1; nk <= NK; nk++) {
                    const int d = dims[di];
                    k->attn_scores(s, SS, q, nh, rows, nk, d, 0.25f);
                    memcpy(o, o0, sizeof o);
                    k->attn_accum(o, q, D, nh, rows, nk, d); /* q's rows as weights */
                    for (int h = 0; h < nh; h++) {
                        for (int j = 0; j < nk; j++) {
                            double want = 0, mag = 0;
                            for (int i = 0; i < d; i++) {
                                want += (double)q[h * d + i] * kv[j][i];
                                mag += fabs((double)q[h * d + i] * kv[j][i]);
                            }
                            CHECK_MSG(fabs(s[h * SS + j] - 0.25 * want) <= 1e-6 * mag,
                                      "%s scores d=%d nh=%d nk=%d h=%d j=%d", k->name, d, nh, nk, h, j);
                        }
                        for (int i = 0; i < d; i++) {
                            double want = o0[h * d + i], mag = fabs(want);
                            for (int j = 0; j < nk; j++) {
                                want += (double)q[h * D + j] * kv[j][i];
                                mag += fabs((double)q[h * D + j] * kv[j][i]);
                            }
                            CHECK_MSG(fabs(o[h * d + i] - want) <= 1e-6 * mag,
                                      "%s accum d=%d nh=%d nk=%d h=%d i=%d", k->name, d, nh, nk, h, i);
                        }
                    }
                    if (check_failures_in_case > 5) return;
                }
    }
}

/* exp_sum and GeGLU of every set against libm in double precision, over
 * the whole useful range of inputs (every length up to 40 for the tails). */
static void exp_and_gelu_kernels_match_libm(void)
{
    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    enum { N = 4001 };
    static float g[N], g_in[N], u[N], x[N];
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        for (int form = 0; form < 3; form++) {
            for (int i = 0; i < N; i++) g[i] = g_in[i] = -10.0f + 20.0f * (float)i / (N - 1), u[i] = 1.0f;
            k->glu(g, u, N, form == 2 ? EK_GLU_SILU : form ? EK_GLU_GELU_TANH : EK_GLU_GELU_ERF);
            double worst = 0;
            for (int i = 0; i < N; i++) {
                double v = g_in[i], want;
                if (form == 2) want = v / (1 + exp(-v));
                else if (form) want = 0.5 * v * (1 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
                else want = 0.5 * v * (1 + erf(v * 0.70710678118654752));
                double err = fabs(g[i] - want) / (fabs(v) + 1e-3);
                worst = err > worst ? err : worst;
            }
            /* relative to |x|: a few fp32 ulps of the 0.5 x (1 + erf) product */
            CHECK_MSG(worst < 4e-7, "%s glu %s: worst error %.3g x |x|", k->name,
                      form == 2 ? "silu" : form ? "gelu tanh" : "gelu erf", worst);
        }
        for (int n = 0; n <= 40; n++) {
            /* inputs and shift chosen so that x - shift is exact in fp32 */
            for (int i = 0; i < n; i++) x[i] = -20.0f + 0.75f * (float)i;
            float sum = k->exp_sum(x, n, 3.0f);
            double want_sum = 0;
            for (int i = 0; i < n; i++) {
                double want = exp(-20.0 + 0.75 * i - 3.0);
                want_sum += want;
                CHECK_MSG(fabs(x[i] - want) <= 3e-7 * want, "%s exp n=%d i=%d: %g vs %g", k->name, n,
                          i, (double)x[i], want);
            }
            CHECK_MSG(fabs(sum - want_sum) <= 1e-6 * want_sum, "%s exp_sum n=%d", k->name, n);
            if (check_failures_in_case > 5) return;
        }
        if (check_failures_in_case > 5) return;
    }
}

/* Every set's row conversions equal the format table's bit for bit (both
 * are exact), on lengths with tails. */
static void row_conversions_match_format_table(void)
{
    static const char *const sets[] = {"scalar", "avx2", "avx512", "neon"};
    static const et_dtype types[] = {ET_F16, ET_BF16, ET_Q8_0};
    enum { N = 96 };
    float src[N], a[N], b[N];
    unsigned char row[N * 4];
    for (int i = 0; i < N; i++) src[i] = 3.0f * frand();
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            const ek_format *f = ek_format_of(types[ti]);
            for (int n = f->block; n <= N; n += f->block) {
                f->from_f32(src, row, n);
                f->to_f32(row, a, n);
                ek_kernels_to_f32(k, types[ti])(row, b, n);
                CHECK_MSG(!memcmp(a, b, (size_t)n * sizeof *a), "%s %s n=%d", k->name, f->name, n);
            }
        }
    }
}

int main(void)
{
    RUN(f16_conversion_is_exact_for_every_value);
    RUN(bf16_round_trip_and_rounding);
    RUN(f16_encoding_rounds_to_nearest_even);
    RUN(block_formats_round_trip);
    RUN(gemm_matches_double_reference);
    RUN(dot_and_axpy_match_scalar);
    RUN(attention_kernels_match_definition);
    RUN(exp_and_gelu_kernels_match_libm);
    RUN(row_conversions_match_format_table);
    RUN(best_set_is_runnable);
    RUN(simd_quantize_q8_0_is_bit_identical);
    RUN(simd_sets_match_scalar_twin);
    RUN(blocks32_long_rows_and_row_spans);
    RUN(kquant_row_blocks_of_several_passes);
    RUN(rows8_layout_matches_row_layout);
    RUN(rope_rotates_leading_dims_only);
    RUN(softmax_and_activations);
    RUN(rmsnorm_matches_definition);
    return check_summary();
}
