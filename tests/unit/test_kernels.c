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
    static const int64_t cols_block[] = {32, 64, 96, 288};
    static const int tokens_list[] = {1, 3, 5};
    int tested = 0;
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[si]);
        if (!k) continue;
        tested++;
        for (int dt = 0; dt < ET_DTYPE_COUNT; dt++) {
            const ek_format *fmt = ek_format_of((et_dtype)dt);
            const int64_t *cols_list = fmt->block == 1 ? cols_float : cols_block;
            size_t n_cols = fmt->block == 1 ? 6 : 4;
            for (size_t ri = 0; ri < 3; ri++)
                for (size_t ci = 0; ci < n_cols; ci++)
                    for (size_t ti = 0; ti < 3; ti++) {
                        int64_t R = rows_list[ri], C = cols_list[ci];
                        int T = tokens_list[ti];
                        void *w = random_matrix((et_dtype)dt, R, C);
                        float *wf = malloc((size_t)(R * C) * sizeof(float));
                        float *x = malloc((size_t)(T * C) * sizeof(float));
                        float *xf = malloc((size_t)(T * C) * sizeof(float));
                        float *y = malloc((size_t)(T * R) * sizeof(float));
                        ek_matrix m = {(et_dtype)dt, w, R, C};
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
    ek_matrix m = {ET_Q4_0, w, 5, 64}, v = ek_matrix_rows(&m, 2, 3);
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
    CHECK(ek_format_by_ggml_type(30)->dtype == ET_BF16 && ek_format_by_ggml_type(12) == NULL);
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

int main(void)
{
    RUN(f16_conversion_is_exact_for_every_value);
    RUN(bf16_round_trip_and_rounding);
    RUN(f16_encoding_rounds_to_nearest_even);
    RUN(block_formats_round_trip);
    RUN(gemm_matches_double_reference);
    RUN(rope_rotates_leading_dims_only);
    RUN(softmax_and_activations);
    RUN(rmsnorm_matches_definition);
    return check_summary();
}
