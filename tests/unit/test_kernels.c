/* Scalar kernels against independent double-precision formulas. Sizes are
 * odd on purpose so that every unrolled loop's tail is exercised. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/convert.h"
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

static void matmul_matches_double_reference(void)
{
    static const int64_t rows_list[] = {1, 7, 13};
    static const int64_t cols_list[] = {1, 7, 8, 9, 33, 257};
    static const int tokens_list[] = {1, 3};
    for (int dt = 0; dt < ET_DTYPE_COUNT; dt++)
        for (size_t ri = 0; ri < 3; ri++)
            for (size_t ci = 0; ci < 6; ci++)
                for (size_t ti = 0; ti < 2; ti++) {
                    int64_t R = rows_list[ri], C = cols_list[ci];
                    int T = tokens_list[ti];
                    size_t esz = et_dtype_size((et_dtype)dt);
                    unsigned char *w = malloc((size_t)(R * C) * esz);
                    float *wf = malloc((size_t)(R * C) * sizeof(float));
                    float *x = malloc((size_t)(T * C) * sizeof(float));
                    float *y = malloc((size_t)(T * R) * sizeof(float));
                    float *bias = malloc((size_t)R * sizeof(float));
                    for (int64_t i = 0; i < R * C; i++) {
                        float v = frand();
                        if (dt == ET_F32) memcpy(w + i * 4, &v, 4);
                        else if (dt == ET_BF16) {
                            uint16_t b = ek_f32_to_bf16(v);
                            memcpy(w + i * 2, &b, 2);
                        } else {
                            /* a half with a random 10-bit mantissa, exponent near 1 */
                            uint16_t hbits = (uint16_t)(((rng >> 3) & 0x3ff) | (14u << 10) | ((rng & 1u) << 15));
                            frand();
                            memcpy(w + i * 2, &hbits, 2);
                        }
                    }
                    for (int64_t i = 0; i < T * C; i++) x[i] = frand();
                    for (int64_t i = 0; i < R; i++) bias[i] = frand();
                    ek_matrix m = {(et_dtype)dt, w, R, C};
                    for (int64_t r = 0; r < R; r++) ek_row_to_f32(wf + r * C, &m, r);
                    ek_matmul(y, R, x, T, &m, bias);
                    for (int t = 0; t < T; t++)
                        for (int64_t r = 0; r < R; r++) {
                            double want = bias[r], mag = fabs((double)bias[r]);
                            for (int64_t c = 0; c < C; c++) {
                                want += (double)wf[r * C + c] * x[t * C + c];
                                mag += fabs((double)wf[r * C + c] * x[t * C + c]);
                            }
                            double err = fabs((double)y[t * R + r] - want);
                            CHECK_MSG(err <= 4e-7 * mag * sqrt((double)C + 1),
                                      "dtype %d %lldx%lld token %d row %lld: %g vs %g", dt,
                                      (long long)R, (long long)C, t, (long long)r,
                                      (double)y[t * R + r], want);
                        }
                    /* A row view is the same rows of the same matrix. */
                    if (R > 2) {
                        ek_matrix v = ek_matrix_rows(&m, 1, R - 2);
                        CHECK(v.rows == R - 2 && ek_dot_row(&v, 0, x) == ek_dot_row(&m, 1, x));
                    }
                    free(w);
                    free(wf);
                    free(x);
                    free(y);
                    free(bias);
                }
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
    RUN(matmul_matches_double_reference);
    RUN(rope_rotates_leading_dims_only);
    RUN(softmax_and_activations);
    RUN(rmsnorm_matches_definition);
    return check_summary();
}
