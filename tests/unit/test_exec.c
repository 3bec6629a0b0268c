/* The matmul executor (exec.c). Its prepared activations (matmul.h): a kernel
 * set that prepares a prefill chunk's Q8_0 activations once for all the
 * matrices sharing them must give exactly what its own gemms give when each
 * call packs the activations itself. The integer block dots and the order
 * of the fp32 sums are the same on both paths, so the check is bit for bit;
 * that the gemms themselves match the scalar reference is test_kernels'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "check.h"
#include "kernels/exec.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"
#include "kernels/rows8.h"

static unsigned rng = 777u;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

/* rows x cols of `dt` with row magnitudes varying (different block scales),
 * in the eight-row layout when rows8. */
static ek_matrix random_matrix(et_dtype dt, int64_t rows, int64_t cols, int rows8)
{
    const size_t rb = ek_row_bytes(dt, cols);
    char *plain = malloc((size_t)rows * rb), *data = malloc((size_t)rows * rb);
    float *f = malloc((size_t)cols * sizeof *f);
    for (int64_t r = 0; r < rows; r++) {
        const float scale = ldexpf(1.0f, (int)(r % 7) - 3);
        for (int64_t c = 0; c < cols; c++) f[c] = scale * frand();
        ek_format_of(dt)->from_f32(f, plain + (size_t)r * rb, cols);
    }
    if (rows8)
        for (int64_t g = 0; g < rows / EK_ROWS8; g++)
            ek_rows8_pack(dt, cols, plain + (size_t)g * EK_ROWS8 * rb, rb,
                          data + (size_t)g * EK_ROWS8 * rb);
    else
        memcpy(data, plain, (size_t)rows * rb);
    free(plain);
    free(f);
    return (ek_matrix){dt, data, rows, cols, rows8 ? EK_LAYOUT_ROWS8 : EK_LAYOUT_ROWS};
}

/* A set's prepare (in 3 parts, as 3 threads would run it) and its prepared
 * gemm over two row ranges equal its plain gemm on the Q8_0 rows, for each
 * format with a prepared form (Q8_0/Q4_0 tiles' passes of 32 tokens, the
 * K-quant tiles' spans of 128). */
static void prepared_gemm_equals_plain_gemm(void)
{
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
    static const et_dtype types[] = {ET_Q8_0, ET_Q4_0, ET_Q4_K, ET_Q5_K, ET_Q6_K,
                                     ET_Q3_K, ET_Q2_K, ET_IQ4_XS};
    static const int tokens_list[] = {9, 16, 31, 32, 33, 64, 70, 97, 150, 260};
    static const int64_t q_blocks[] = {1, 3, 64, 65, 130}, k_blocks[] = {8, 64, 72, 136};
    int prepared_cases = 0;
    for (size_t si = 0; si < sizeof names / sizeof *names; si++)
        for (size_t di = 0; di < sizeof types / sizeof *types; di++)
            for (int rows8 = 0; rows8 < 2; rows8++)
                for (size_t bi = 0; bi < 5; bi++) {
                    const ek_kernel_set *k = ek_kernels_by_name(names[si]);
                    const et_dtype dt = types[di];
                    const int kq = dt != ET_Q8_0 && dt != ET_Q4_0;
                    if (!k || !k->prepared_form[dt] || (kq && (rows8 || bi >= 4))) continue;
                    const ek_prepared_form *form = k->prepared_form[dt];
                    const int64_t R = 56, C = (kq ? k_blocks[bi] : q_blocks[bi]) * EK_QBLOCK;
                    ek_matrix w = random_matrix(dt, R, C, rows8);
                    ek_gemm_prepared_fn gp = ek_kernels_gemm_prepared(k, &w);
                    if (!gp) {
                        free((void *)w.data);
                        continue;
                    }
                    for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++) {
                        const int T = tokens_list[ti];
                        const size_t xs = ek_row_bytes(ET_Q8_0, C), bytes = form->bytes(T, C);
                        CHECK(bytes > 0 && bytes <= ek_prepared_max_bytes(T, C));
                        float *x = malloc((size_t)C * sizeof *x);
                        char *xq = malloc((size_t)T * xs);
                        void *xp = aligned_alloc(64, (bytes + 63) / 64 * 64);
                        float *y0 = malloc((size_t)T * R * sizeof *y0), *y1 = malloc((size_t)T * R * sizeof *y1);
                        for (int t = 0; t < T; t++) {
                            for (int64_t c = 0; c < C; c++) x[c] = ldexpf(frand(), t % 5 - 2);
                            k->quantize_q8_0(x, xq + (size_t)t * xs, C);
                        }
                        ek_kernels_gemm(k, &w)(y0, R, &w, 0, R, xq, xs, T);
                        for (int part = 0; part < 3; part++) form->prepare(xp, xq, xs, T, C, part, 3);
                        gp(y1, R, &w, 16, R, xp, T);
                        gp(y1, R, &w, 0, 16, xp, T);
                        CHECK_MSG(!memcmp(y0, y1, (size_t)T * R * sizeof *y0),
                                  "%s %s %s %lld cols x%d: prepared gemm differs", k->name,
                                  ek_format_of(dt)->name, rows8 ? "rows8" : "rows", (long long)C, T);
                        prepared_cases++;
                        free(x), free(xq), free(xp), free(y0), free(y1);
                    }
                    free((void *)w.data);
                }
#if defined(__x86_64__)
    if (ek_kernels_by_name("avx512")) CHECK(prepared_cases > 0);
#endif
    (void)prepared_cases;
}

/* ek_matmul_many over Q, K, V-like outputs of mixed Q8_0 and Q4_0, on a
 * pool of 2 and on none, equals each matrix's own gemm: whether or not the
 * executor prepares the activations, nothing changes but the time. */
static void matmul_many_equals_each_gemm(void)
{
    static const int tokens_list[] = {1, 5, 9, 40, 64};
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
    ember_pool *pool = NULL;
    REQUIRE(pool_create(2, &pool) == EMBER_OK);
    for (size_t si = 0; si < sizeof names / sizeof *names; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(names[si]);
        if (!k) continue;
        const int64_t C = 96;
        const int64_t rows[3] = {64, 16, 24};
        const int rows8 = k->gemm_rows8[ET_Q8_0] != NULL;
        ek_matrix w[3] = {random_matrix(ET_Q8_0, rows[0], C, rows8),
                          random_matrix(ET_Q4_0, rows[1], C, rows8),
                          random_matrix(ET_Q8_0, rows[2], C, rows8)};
        for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++) {
            const int T = tokens_list[ti];
            const size_t xs = ek_row_bytes(ET_Q8_0, C);
            float *x = malloc((size_t)T * C * sizeof *x);
            char *xq = malloc((size_t)T * xs);
            void *qbuf = malloc(ek_exec_qbuf_bytes(T, C));
            for (int64_t i = 0; i < T * C; i++) x[i] = frand();
            for (int t = 0; t < T; t++) k->quantize_q8_0(x + t * C, xq + (size_t)t * xs, C);
            for (int threads = 1; threads <= 2; threads++) {
                ek_exec ex = {k, threads > 1 ? pool : NULL};
                ek_matmul_out outs[3];
                float *y[3], *want[3];
                for (int o = 0; o < 3; o++) {
                    y[o] = malloc((size_t)T * rows[o] * sizeof(float));
                    want[o] = malloc((size_t)T * rows[o] * sizeof(float));
                    ek_kernels_gemm(k, &w[o])(want[o], rows[o], &w[o], 0, rows[o], xq, xs, T);
                    outs[o] = (ek_matmul_out){y[o], rows[o], &w[o], NULL};
                }
                ek_matmul_many(&ex, x, T, outs, 3, qbuf);
                for (int o = 0; o < 3; o++) {
                    CHECK_MSG(!memcmp(y[o], want[o], (size_t)T * rows[o] * sizeof(float)),
                              "%s x%d threads %d: output %d differs", k->name, T, threads, o);
                    free(y[o]);
                    free(want[o]);
                }
            }
            free(x), free(xq), free(qbuf);
        }
        for (int o = 0; o < 3; o++) free((void *)w[o].data);
    }
    pool_free(pool);
}

/* ek_matmul_glu equals the two products (each run alone, bias added) and
 * then the set's activation over the whole output: a prefill chunk takes
 * the strips of gate and up rows, a decode step the plain run, and either
 * gives the same bits. 488 rows: five strips and a short one of 8. */
static void matmul_glu_equals_gemms_then_activation(void)
{
    static const int tokens_list[] = {1, 5, 9, 40, 130};
    static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
    static const et_dtype types[] = {ET_Q8_0, ET_Q4_0, ET_Q4_K, ET_F32};
    static const ek_glu_act acts[] = {EK_GLU_GELU_ERF, EK_GLU_SILU};
    ember_pool *pool = NULL;
    REQUIRE(pool_create(2, &pool) == EMBER_OK);
    const int64_t R = 488, C = 256;
    float *b_gate = malloc(R * sizeof(float)), *b_up = malloc(R * sizeof(float));
    for (int64_t r = 0; r < R; r++) b_gate[r] = frand(), b_up[r] = frand();
    for (size_t si = 0; si < sizeof names / sizeof *names; si++) {
        const ek_kernel_set *k = ek_kernels_by_name(names[si]);
        if (!k) continue;
        for (size_t di = 0; di < sizeof types / sizeof *types; di++) {
            const et_dtype dt = types[di];
            const int rows8 = k->gemm_rows8[dt] != NULL;
            ek_matrix gate = random_matrix(dt, R, C, rows8), up = random_matrix(dt, R, C, rows8);
            for (size_t ti = 0; ti < sizeof tokens_list / sizeof *tokens_list; ti++) {
                const int T = tokens_list[ti];
                const int bias = ti % 2, act = (int)(ti + di) % 2;
                const ek_glu_mats m = {&gate, &up, bias ? b_gate : NULL, bias ? b_up : NULL,
                                       acts[act]};
                float *x = malloc((size_t)T * C * sizeof *x);
                float *g = malloc((size_t)T * R * sizeof *g);
                float *u = malloc((size_t)T * R * sizeof *u);
                float *want_g = malloc((size_t)T * R * sizeof *g);
                float *want_u = malloc((size_t)T * R * sizeof *u);
                void *qbuf = malloc(ek_exec_qbuf_bytes(T, C));
                for (int64_t i = 0; i < T * C; i++) x[i] = frand();
                const ek_exec alone = {k, NULL};
                ek_matmul(&alone, want_g, R, x, T, &gate, m.b_gate, qbuf);
                ek_matmul(&alone, want_u, R, x, T, &up, m.b_up, qbuf);
                k->glu(want_g, want_u, (int64_t)T * R, m.act);
                for (int threads = 1; threads <= 2; threads++) {
                    const ek_exec ex = {k, threads > 1 ? pool : NULL};
                    ek_matmul_glu(&ex, g, u, x, T, &m, qbuf);
                    CHECK_MSG(!memcmp(g, want_g, (size_t)T * R * sizeof *g),
                              "%s %s x%d threads %d: the gated output differs", k->name,
                              ek_format_of(dt)->name, T, threads);
                }
                free(x), free(g), free(u), free(want_g), free(want_u), free(qbuf);
            }
            free((void *)gate.data), free((void *)up.data);
        }
    }
    free(b_gate), free(b_up);
    pool_free(pool);
}

int main(void)
{
    RUN(prepared_gemm_equals_plain_gemm);
    RUN(matmul_many_equals_each_gemm);
    RUN(matmul_glu_equals_gemms_then_activation);
    return check_summary();
}
