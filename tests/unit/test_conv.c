/* The audio decoder's conv and Snake kernels against direct evaluations of
 * PyTorch's definitions (Conv1d with left zero padding, ConvTranspose1d with
 * the right trim) in double, for every kernel set and odd shapes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/conv.h"
#include "kernels/conv_winograd.h"
#include "kernels/convert.h"
#include "kernels/exec.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"

static const char *const format_name[EK_CONV_FORMAT_COUNT] = {"f32", "bf16", "f16"};
static const char *const sets[] = {"scalar", "generic", "avx2", "avx512", "neon"};

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static float bf16_rounded(float f)
{
    uint16_t h;
    ek_f32_to_bf16_row(&f, &h, 1);
    uint32_t u = (uint32_t)h << 16;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Input rows [-hist, nt) of c channels; returns a pointer to row 0. */
static float *random_input(uint64_t *seed, int hist, int nt, int c, float **base)
{
    *base = malloc(sizeof(float) * (size_t)(hist + nt) * (size_t)c);
    for (int i = 0; i < (hist + nt) * c; i++) (*base)[i] = frand(seed);
    return *base + (size_t)hist * (size_t)c;
}

static float f16_rounded(float f)
{
    return ek_f16_to_f32(ek_f32_to_f16(f));
}

static uint16_t *to_bf16(const float *x, int64_t n)
{
    uint16_t *o = malloc(sizeof(uint16_t) * (size_t)n);
    ek_f32_to_bf16_row(x, o, n);
    return o;
}

/* Conv1d [cout][cin][k], dilation d, reading history rows before x (which
 * stand for the causal left padding or the previous chunk). */
static void conv_matches_definition(void)
{
    static const int shapes[][5] = {/* cout, cin, k, dilation, nt */
                                    {1, 96, 7, 1, 37},  {17, 8, 3, 1, 5},  {40, 30, 7, 3, 13},
                                    {33, 16, 7, 9, 25}, {64, 64, 1, 1, 26}, {5, 2, 2, 1, 1}};
    uint64_t seed = 7;
    int tested = 0;
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *ks = ek_kernels_by_name(sets[si]);
        if (!ks) continue;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            for (int fmt = 0; fmt < EK_CONV_FORMAT_COUNT; fmt++) {
                const int co = shapes[i][0], ci = shapes[i][1], k = shapes[i][2];
                const int d = shapes[i][3], nt = shapes[i][4], hist = (k - 1) * d;
                float *w = malloc(sizeof(float) * (size_t)(co * ci * k)), *base;
                for (int j = 0; j < co * ci * k; j++) w[j] = frand(&seed);
                float *x = random_input(&seed, hist, nt, ci, &base);
                ek_conv_weights cw;
                REQUIRE(ek_conv_pack(&cw, (ek_conv_format)fmt, w, co, ci, k) == EMBER_OK);
                uint16_t *xb = to_bf16(base, (int64_t)(hist + nt) * ci);
                const void *xin = fmt == EK_CONV_BF16 ? (const void *)(xb + (size_t)hist * ci)
                                                      : (const void *)x;
                float *y = malloc(sizeof(float) * (size_t)(nt * (co + 3)));
                ek_kernels_conv(ks, (ek_conv_format)fmt)(y, co + 3, &cw, 0, cw.n_panels, xin, ci,
                                                         nt, d);
                double worst = 0;
                for (int t = 0; t < nt; t++)
                    for (int o = 0; o < co; o++) {
                        double want = 0, mag = 0;
                        for (int c = 0; c < ci; c++)
                            for (int j = 0; j < k; j++) {
                                float wv = w[(o * ci + c) * k + j];
                                float xv = x[(t - (k - 1 - j) * d) * ci + c];
                                if (fmt == EK_CONV_BF16) {
                                    wv = bf16_rounded(wv);
                                    xv = bf16_rounded(xv);
                                } else if (fmt == EK_CONV_F16) {
                                    wv = f16_rounded(wv); /* activations stay fp32 */
                                }
                                want += (double)wv * xv;
                                mag += fabs((double)wv * xv);
                            }
                        double err = fabs(y[t * (co + 3) + o] - want) / (mag + 1e-30);
                        if (err > worst) worst = err;
                    }
                CHECK_MSG(worst < 2e-6, "%s %s %dx%dx%d d%d nt%d: relative error %g", ks->name,
                          format_name[fmt], co, ci, k, d, nt, worst);
                ek_conv_weights_free(&cw);
                free(w), free(base), free(xb), free(y);
                tested++;
            }
    }
    CHECK(tested >= 2 * 6 * EK_CONV_FORMAT_COUNT);
}

/* ConvTranspose1d [cin][cout][k], stride s, full output (L-1)s+k with the
 * last k-s samples dropped; the packed conv's rows read as cout-wide rows. */
static void transposed_conv_matches_definition(void)
{
    static const int shapes[][5] = {/* cin, cout, k, s, L */
                                    {12, 10, 16, 8, 5}, {8, 6, 10, 5, 7}, {16, 16, 2, 2, 9},
                                    {6, 3, 6, 3, 13}};
    uint64_t seed = 11;
    const ek_kernel_set *ks = ek_kernels_best();
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int ci = shapes[i][0], co = shapes[i][1], k = shapes[i][2], s = shapes[i][3];
        const int L = shapes[i][4], taps = k / s;
        float *w = malloc(sizeof(float) * (size_t)(ci * co * k)), *base;
        for (int j = 0; j < ci * co * k; j++) w[j] = frand(&seed);
        float *x = random_input(&seed, taps - 1, L, ci, &base);
        for (int j = 0; j < (taps - 1) * ci; j++) base[j] = 0; /* stream start */
        ek_conv_weights cw;
        REQUIRE(ek_conv_pack_transposed(&cw, EK_CONV_F32, w, ci, co, k, s) == EMBER_OK);
        CHECK(cw.cout == s * co && cw.taps == taps);
        float *y = malloc(sizeof(float) * (size_t)(L * s * co));
        ek_kernels_conv(ks, EK_CONV_F32)(y, s * co, &cw, 0, cw.n_panels, x, ci, L, 1);
        double worst = 0;
        for (int n = 0; n < L * s; n++) /* output step n, time-major */
            for (int o = 0; o < co; o++) {
                double want = 0, mag = 0;
                for (int t = 0; t < L; t++)
                    for (int j = 0; j < k; j++) {
                        if (t * s + j != n) continue;
                        for (int c = 0; c < ci; c++) {
                            double p = (double)x[t * ci + c] * w[(c * co + o) * k + j];
                            want += p;
                            mag += fabs(p);
                        }
                    }
                double err = fabs(y[n * co + o] - want) / (mag + 1e-30);
                if (err > worst) worst = err;
            }
        CHECK_MSG(worst < 2e-6, "transposed %dx%d k%d s%d: relative error %g", ci, co, k, s, worst);
        ek_conv_weights_free(&cw);
        free(w), free(base), free(y);
    }
    ek_conv_weights bad;
    CHECK(ek_conv_pack_transposed(&bad, EK_CONV_F32, (const float[1]){0}, 1, 1, 3, 2) != EMBER_OK);
    CHECK(ek_conv_pack(&bad, EK_CONV_BF16, (const float[3]){0}, 1, 3, 1) != EMBER_OK);
    CHECK(ek_conv_pack(&bad, EK_CONV_F16, (const float[2]){1.0f, 7e4f}, 1, 2, 1) != EMBER_OK);
    CHECK(ek_conv_pack_transposed(&bad, EK_CONV_F16, (const float[2]){-7e4f, 0}, 1, 1, 2, 2) != EMBER_OK);
}

/* F16 weights are the F32 arithmetic on those weights: with weights that
 * halves hold exactly, every kernel set gives the F32 kernel's floats bit
 * for bit (same sums, same order), direct and transposed. */
static void f16_weights_are_f32_arithmetic(void)
{
    uint64_t seed = 23;
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *ks = ek_kernels_by_name(sets[si]);
        if (!ks) continue;
        for (int transposed = 0; transposed < 2; transposed++) {
            const int co = 37, ci = 29, k = transposed ? 10 : 7, s = 5, d = transposed ? 1 : 3;
            const int taps = transposed ? k / s : k, hist = (taps - 1) * d, nt = 27;
            const int cout = transposed ? s * co : co;
            float *w = malloc(sizeof(float) * (size_t)(co * ci * k)), *base;
            for (int j = 0; j < co * ci * k; j++) w[j] = f16_rounded(frand(&seed) * 3.0f);
            float *x = random_input(&seed, hist, nt, ci, &base);
            ek_conv_weights a, b;
            if (transposed) {
                REQUIRE(ek_conv_pack_transposed(&a, EK_CONV_F32, w, ci, co, k, s) == EMBER_OK);
                REQUIRE(ek_conv_pack_transposed(&b, EK_CONV_F16, w, ci, co, k, s) == EMBER_OK);
            } else {
                REQUIRE(ek_conv_pack(&a, EK_CONV_F32, w, co, ci, k) == EMBER_OK);
                REQUIRE(ek_conv_pack(&b, EK_CONV_F16, w, co, ci, k) == EMBER_OK);
            }
            CHECK(b.panel_bytes * 2 == a.panel_bytes);
            float *ya = calloc((size_t)(nt * cout), sizeof(float));
            float *yb = calloc((size_t)(nt * cout), sizeof(float));
            ek_kernels_conv(ks, EK_CONV_F32)(ya, cout, &a, 0, a.n_panels, x, ci, nt, d);
            ek_kernels_conv(ks, EK_CONV_F16)(yb, cout, &b, 0, b.n_panels, x, ci, nt, d);
            CHECK_MSG(!memcmp(ya, yb, sizeof(float) * (size_t)(nt * cout)),
                      "%s %s: f16 weights differ from the same values in f32", ks->name,
                      transposed ? "transposed" : "direct");
            ek_conv_weights_free(&a), ek_conv_weights_free(&b);
            free(w), free(base), free(ya), free(yb);
        }
    }
}

static void snake_matches_definition(void)
{
    enum { ROWS = 9, C = 37 };
    uint64_t seed = 3;
    float x0[ROWS * C], a[C], inv_b[C], x[ROWS * C];
    for (int i = 0; i < ROWS * C; i++) x0[i] = 40.0f * frand(&seed);
    for (int i = 0; i < C; i++) {
        a[i] = expf(1.5f * frand(&seed));
        inv_b[i] = 1.0f / (expf(frand(&seed)) + 1e-9f);
    }
    for (size_t si = 0; si < sizeof sets / sizeof *sets; si++) {
        const ek_kernel_set *ks = ek_kernels_by_name(sets[si]);
        if (!ks) continue;
        memcpy(x, x0, sizeof x);
        ek_kernels_snake(ks)(x, ROWS, C, a, inv_b);
        double worst = 0;
        for (int t = 0; t < ROWS; t++)
            for (int i = 0; i < C; i++) {
                double v = x0[t * C + i], s = sin((double)a[i] * v);
                double want = v + s * s * inv_b[i];
                double err = fabs(x[t * C + i] - want) / (fabs(v) + 1);
                if (err > worst) worst = err;
            }
        CHECK_MSG(worst < 1e-5, "%s snake: error %g", ks->name, worst);
    }
}

/* Winograd F(2, k) against the direct definition in double: the rows it
 * covers, their count, and the rounding it adds (bounded relative to the sum
 * of |products|, the scale of fp32 rounding in any dot product). */
static void winograd_matches_definition(void)
{
    static const int shapes[][5] = {/* cout, cin, k, dilation, n */
                                    {96, 96, 7, 1, 100}, {20, 33, 7, 3, 61}, {17, 16, 7, 9, 40},
                                    {8, 5, 3, 2, 9}};
    uint64_t seed = 5;
    ek_exec ex = {ek_kernels_best(), NULL};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int co = shapes[i][0], ci = shapes[i][1], k = shapes[i][2], d = shapes[i][3];
        const int n = shapes[i][4], hist = (k - 1) * d;
        float *w = malloc(sizeof(float) * (size_t)(co * ci * k)), *base;
        for (int j = 0; j < co * ci * k; j++) w[j] = frand(&seed);
        float *x = random_input(&seed, hist, n, ci, &base), bias[96];
        for (int j = 0; j < co; j++) bias[j] = frand(&seed);
        ek_winograd wg;
        REQUIRE(ek_winograd_pack(&wg, w, co, ci, k) == EMBER_OK);
        float *scratch = malloc(sizeof(float) * ek_winograd_scratch_floats(&wg));
        float *y = calloc((size_t)(n * co), sizeof(float));
        int64_t rows = ek_winograd_run(&ex, &wg, bias, x, n, d, y, co, scratch);
        CHECK_MSG(rows == n / (2 * d) * 2 * d, "rows %lld for n %d d %d", (long long)rows, n, d);
        double worst = 0;
        for (int t = 0; t < rows; t++)
            for (int o = 0; o < co; o++) {
                double want = bias[o], mag = fabs(bias[o]);
                for (int c = 0; c < ci; c++)
                    for (int j = 0; j < k; j++) {
                        double pr = (double)w[(o * ci + c) * k + j] * x[(t - (k - 1 - j) * d) * ci + c];
                        want += pr;
                        mag += fabs(pr);
                    }
                double err = fabs(y[t * co + o] - want) / mag;
                if (err > worst) worst = err;
            }
        CHECK_MSG(worst < 2e-5, "winograd %dx%dx%d d%d: relative error %g", co, ci, k, d, worst);
        printf("  winograd k%d d%d %dx%d: worst relative error %.2e\n", k, d, co, ci, worst);
        ek_winograd_free(&wg);
        free(w), free(base), free(scratch), free(y);
    }
}

int main(void)
{
    RUN(conv_matches_definition);
    RUN(transposed_conv_matches_definition);
    RUN(f16_weights_are_f32_arithmetic);
    RUN(snake_matches_definition);
    RUN(winograd_matches_definition);
    return check_summary();
}
