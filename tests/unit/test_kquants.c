/* K-quant and IQ4 blocks (src/kernels/kquants.h), and Q4_1, Q5_0, Q5_1
 * (src/kernels/q32.h).
 *
 * Without arguments: the checks below. Bit-exactness against llama.cpp's own
 * Python dequantizer is reference/test_kquants_gguf_py.py, which runs this
 * binary as  test_kquants --dequant FILE.gguf OUT_DIR  (every tensor of the
 * file converted to fp32 by the format table, written as OUT_DIR/NAME.f32)
 * and, for the formats whose quantizer is llama.cpp's own, as
 *  test_kquants --quant TYPE IN.f32 OUT  (IN's values quantized). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/gguf.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/kquants.h"
#include "kernels/matmul.h"
#include "kernels/q32.h"

static unsigned rng = 2024u;
static unsigned next_u32(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng;
}
static float frand(void) { return (float)((next_u32() >> 8) & 0xffffff) / 8388608.0f - 1.0f; }
static float gauss(void)
{
    float s = 0;
    for (int i = 0; i < 12; i++) s += frand();
    return s * 0.5f; /* Irwin-Hall: mean 0, variance 1 */
}

static const et_dtype KTYPES[] = {ET_Q2_K, ET_Q3_K, ET_Q4_K, ET_Q5_K, ET_Q6_K, ET_IQ4_NL, ET_IQ4_XS};
#define N_KTYPES (int)(sizeof KTYPES / sizeof *KTYPES)
static const et_dtype Q32TYPES[] = {ET_Q4_1, ET_Q5_0, ET_Q5_1};
#define N_Q32TYPES (int)(sizeof Q32TYPES / sizeof *Q32TYPES)

static double snr_db(const float *ref, const float *x, int64_t n)
{
    double s = 0, e = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)ref[i] * ref[i];
        e += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
    }
    return e > 0 ? 10 * log10(s / e) : 999.0;
}

/* x quantized to Q8_0 (xq) and back (xf), and the double-precision dot of
 * xf with the dequantized weights wf; *mag gets the sum of |products|, the
 * scale of the rounding a float dot may differ by. */
static double quantized_x_dot(const float *x, ek_block_q8_0 *xq, float *xf, const float *wf, int n, double *mag)
{
    ek_format_of(ET_Q8_0)->from_f32(x, xq, n);
    ek_format_of(ET_Q8_0)->to_f32(xq, xf, n);
    double want = 0;
    *mag = 0;
    for (int i = 0; i < n; i++) {
        want += (double)wf[i] * xf[i];
        *mag += fabs((double)wf[i] * xf[i]);
    }
    return want;
}

/* Round-trip SNR of Gaussian weights with a few outliers, as trained
 * matrices have. */
static double round_trip_snr(et_dtype dt, const float *x, int64_t n)
{
    const ek_format *f = ek_format_of(dt);
    void *q = malloc(ek_row_bytes(dt, n));
    float *y = malloc((size_t)n * sizeof *y);
    f->from_f32(x, q, n);
    f->to_f32(q, y, n);
    double db = snr_db(x, y, n);
    free(q);
    free(y);
    return db;
}

/* More bits never hurt, and each type sits near what its bits allow for
 * Gaussian data (uniform b-bit quantization with per-sub-block scales gives
 * roughly 6 dB a bit minus the loss to the block maximum). Q4_0 (its scale
 * from the block maximum alone) is the floor the 4-bit K types must beat. */
static void quantizers_keep_what_their_bits_allow(void)
{
    enum { N = 256 * 64 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = gauss() * 0.02f;
    for (int i = 0; i < N; i += 997) x[i] *= 8.0f;
    double db[ET_DTYPE_COUNT] = {0};
    for (int k = 0; k < N_KTYPES; k++) db[KTYPES[k]] = round_trip_snr(KTYPES[k], x, N);
    for (int k = 0; k < N_Q32TYPES; k++) db[Q32TYPES[k]] = round_trip_snr(Q32TYPES[k], x, N);
    db[ET_Q4_0] = round_trip_snr(ET_Q4_0, x, N);
    db[ET_Q8_0] = round_trip_snr(ET_Q8_0, x, N);
    printf("  round-trip SNR dB: q2_k %.1f q3_k %.1f q4_0 %.1f q4_k %.1f iq4_nl %.1f iq4_xs %.1f q5_k %.1f "
           "q6_k %.1f q8_0 %.1f\n"
           "                     q4_1 %.1f q5_0 %.1f q5_1 %.1f\n",
           db[ET_Q2_K], db[ET_Q3_K], db[ET_Q4_0], db[ET_Q4_K], db[ET_IQ4_NL], db[ET_IQ4_XS], db[ET_Q5_K],
           db[ET_Q6_K], db[ET_Q8_0], db[ET_Q4_1], db[ET_Q5_0], db[ET_Q5_1]);
    /* the 32-value types: a fifth bit is worth ~6 dB, an offset a little */
    CHECK(db[ET_Q4_0] + 4 < db[ET_Q5_0] && db[ET_Q4_1] + 4 < db[ET_Q5_1]);
    CHECK(db[ET_Q4_1] > db[ET_Q4_0] && db[ET_Q5_1] > db[ET_Q5_0] && db[ET_Q5_1] < db[ET_Q8_0]);
    CHECK(db[ET_Q2_K] + 3 < db[ET_Q3_K]);
    CHECK(db[ET_Q3_K] + 3 < db[ET_Q4_K]);
    CHECK(db[ET_Q4_K] + 3 < db[ET_Q5_K]);
    CHECK(db[ET_Q5_K] + 3 < db[ET_Q6_K]);
    CHECK(db[ET_Q6_K] < db[ET_Q8_0]);
    CHECK(db[ET_Q4_K] > db[ET_Q4_0] && db[ET_IQ4_NL] > db[ET_Q4_0] && db[ET_IQ4_XS] > db[ET_Q4_0]);
    /* 6 dB a bit, less ~8 dB for Gaussian tails and the 4-8 bit scales */
    CHECK(db[ET_Q2_K] > 2 * 6.02 - 8 && db[ET_Q3_K] > 3 * 6.02 - 8 && db[ET_Q4_K] > 4 * 6.02 - 8 &&
          db[ET_Q5_K] > 5 * 6.02 - 8 && db[ET_Q6_K] > 6 * 6.02 - 8);
    free(x);
}

/* Degenerate blocks: all zero, constant, one spike, all negative, tiny and
 * huge magnitudes. Nothing turns into NaN or inf, zero stays zero, and a
 * constant block comes back close. */
static void quantizers_handle_degenerate_blocks(void)
{
    enum { N = 256 };
    float x[N], y[N];
    for (int k = 0; k < N_KTYPES + N_Q32TYPES; k++) {
        const ek_format *f = ek_format_of(k < N_KTYPES ? KTYPES[k] : Q32TYPES[k - N_KTYPES]);
        unsigned char q[512];
        for (int c = 0; c < 6; c++) {
            for (int i = 0; i < N; i++) {
                switch (c) {
                case 0: x[i] = 0.0f; break;
                case 1: x[i] = 0.5f; break;
                case 2: x[i] = i == 77 ? 3.0f : 0.0f; break;
                case 3: x[i] = -0.1f - 0.01f * (float)(i % 7); break;
                case 4: x[i] = 1e-6f * frand(); break;
                default: x[i] = 3e4f * frand(); break;
                }
            }
            f->from_f32(x, q, N);
            f->to_f32(q, y, N);
            int finite = 1;
            for (int i = 0; i < N; i++) finite &= isfinite(y[i]);
            CHECK_MSG(finite, "%s case %d: non-finite output", f->name, c);
            if (c == 0)
                for (int i = 0; i < N; i++) CHECK_MSG(y[i] == 0.0f, "%s: zero block -> %g", f->name, (double)y[i]);
            if (c == 1 || c == 3 || c == 5)
                CHECK_MSG(snr_db(x, y, N) > 10.0, "%s case %d: %.1f dB", f->name, c, snr_db(x, y, N));
        }
    }
}

/* The decoded integer form is the format: converting through ek_kq_unpack by
 * hand (d * scale * q - dmin * min) gives to_f32's values, and the scalar dot
 * equals a double-precision dot of the dequantized operands. */
static void dot_matches_dequantized_operands(void)
{
    enum { N = 256 * 3 };
    float x[N], a[N], wf[N], xf[N];
    for (int k = 0; k < N_KTYPES; k++) {
        const ek_format *f = ek_format_of(KTYPES[k]);
        unsigned char w[N * 2];
        ek_block_q8_0 xq[N / 32];
        for (int rep = 0; rep < 20; rep++) {
            for (int i = 0; i < N; i++) {
                a[i] = gauss();
                x[i] = frand();
            }
            f->from_f32(a, w, N);
            f->to_f32(w, wf, N);
            double mag, want = quantized_x_dot(x, xq, xf, wf, N, &mag);
            float got = KTYPES[k] == ET_IQ4_NL ? ek_dot_iq4_nl_scalar(w, xq, N)
                                               : ek_dot_kquant_scalar(KTYPES[k], w, xq, N);
            CHECK_MSG(fabs(got - want) <= 1e-6 * mag * sqrt((double)N), "%s: %g vs %g", f->name, (double)got,
                      want);
            if (KTYPES[k] != ET_IQ4_NL) {
                ek_kq_ints u;
                for (int b = 0; b < N / 256; b++) {
                    CHECK(ek_kq_unpack(KTYPES[k], w, b, &u));
                    for (int i = 0; i < 256; i++) {
                        float v = u.d * (float)u.scale[i / 16] * (float)u.q[i] - u.dmin * (float)u.min[i / 16];
                        if (v != wf[256 * b + i]) {
                            CHECK_MSG(0, "%s block %d value %d: %g vs %g", f->name, b, i, (double)v,
                                      (double)wf[256 * b + i]);
                            break;
                        }
                    }
                }
            }
        }
    }
    CHECK(!ek_kq_unpack(ET_Q8_0, NULL, 0, NULL));
}

/* Q4_1, Q5_0, Q5_1: the Q8_0 form (ek_q32_to_q8_0: d, the integers and the
 * offset) is the format, value for value, and holds each type's range for
 * any bytes; the scalar dot equals a double-precision dot of the
 * dequantized operands. */
static void q32_q8_0_form_and_dot(void)
{
    enum { N = 32 * 24 };
    static const int qlo[] = {0, -16, 0}, qhi[] = {15, 15, 31};
    float a[N], x[N], wf[N], xf[N], m[N / 32];
    unsigned char w[N];
    ek_block_q8_0 q8[N / 32], xq[N / 32];
    for (int k = 0; k < N_Q32TYPES; k++) {
        const ek_format *f = ek_format_of(Q32TYPES[k]);
        int seen_lo = 0, seen_hi = 0;
        for (int rep = 0; rep < 40; rep++) {
            for (int i = 0; i < N; i++) {
                a[i] = gauss() + (rep & 1 ? 0.7f : 0.0f);
                x[i] = frand();
            }
            if (rep < 20) {
                f->from_f32(a, w, N);
            } else { /* any bytes, the f16 fields kept to finite values */
                for (size_t i = 0; i < sizeof w; i++) w[i] = (unsigned char)(next_u32() >> 24);
                for (int b = 0; b < N / 32; b++) {
                    w[b * f->block_bytes + 1] &= 0x3b;
                    if (Q32TYPES[k] != ET_Q5_0) w[b * f->block_bytes + 3] &= 0x3b;
                }
            }
            f->to_f32(w, wf, N);
            ek_q32_to_q8_0(Q32TYPES[k], w, q8, m, N / 32);
            for (int i = 0; i < N; i++) {
                const int q = q8[i / 32].q[i % 32];
                const float v = ek_f16_to_f32(q8[i / 32].d) * (float)q;
                CHECK_MSG(q >= qlo[k] && q <= qhi[k], "%s: q %d", f->name, q);
                CHECK_MSG((Q32TYPES[k] == ET_Q5_0 ? v : v + m[i / 32]) == wf[i], "%s value %d: %g vs %g", f->name,
                          i, (double)v, (double)wf[i]);
                seen_lo |= q == qlo[k];
                seen_hi |= q == qhi[k];
                if (check_failures_in_case > 5) return;
            }
            double mag, want = quantized_x_dot(x, xq, xf, wf, N, &mag);
            float got = ek_dot_q32_scalar(Q32TYPES[k], w, xq, N);
            CHECK_MSG(fabs(got - want) <= 1e-6 * mag * sqrt((double)N), "%s: %g vs %g", f->name, (double)got, want);
        }
        CHECK_MSG(seen_lo && seen_hi, "%s: both ends of the value range occur", f->name);
    }
}

/* Random bytes are valid blocks of every type (any bit pattern decodes):
 * the integer form stays in each type's documented ranges. */
static void every_bit_pattern_decodes_in_range(void)
{
    static const struct {
        et_dtype dt;
        int qlo, qhi, slo, shi, mhi;
    } r[] = {{ET_Q2_K, 0, 3, 0, 15, 15},      {ET_Q3_K, -4, 3, -32, 31, 0}, {ET_Q4_K, 0, 15, 0, 63, 63},
             {ET_Q5_K, 0, 31, 0, 63, 63},     {ET_Q6_K, -32, 31, -128, 127, 0},
             {ET_IQ4_XS, -127, 113, -32, 31, 0}};
    unsigned char buf[256];
    for (size_t t = 0; t < sizeof r / sizeof *r; t++) {
        int seen_lo = 0, seen_hi = 0;
        for (int rep = 0; rep < 2000; rep++) {
            for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(next_u32() >> 24);
            ek_kq_ints u;
            ek_kq_unpack(r[t].dt, buf, 0, &u);
            for (int i = 0; i < 256; i++) {
                CHECK_MSG(u.q[i] >= r[t].qlo && u.q[i] <= r[t].qhi, "%s q %d", et_dtype_name(r[t].dt), u.q[i]);
                seen_lo |= u.q[i] == r[t].qlo;
                seen_hi |= u.q[i] == r[t].qhi;
            }
            for (int s = 0; s < 16; s++)
                CHECK(u.scale[s] >= r[t].slo && u.scale[s] <= r[t].shi && u.min[s] >= 0 && u.min[s] <= r[t].mhi);
            if (check_failures_in_case > 5) return;
        }
        CHECK_MSG(seen_lo && seen_hi, "%s: both ends of the value range occur", et_dtype_name(r[t].dt));
    }
}

static void format_table_entries(void)
{
    static const struct {
        et_dtype dt;
        const char *name;
        unsigned ggml;
        int block;
        size_t bytes;
    } e[] = {{ET_Q2_K, "q2_k", 10, 256, 84},    {ET_Q3_K, "q3_k", 11, 256, 110},
             {ET_Q4_K, "q4_k", 12, 256, 144},   {ET_Q5_K, "q5_k", 13, 256, 176},
             {ET_Q6_K, "q6_k", 14, 256, 210},   {ET_IQ4_NL, "iq4_nl", 20, 32, 18},
             {ET_IQ4_XS, "iq4_xs", 23, 256, 136}, {ET_Q4_1, "q4_1", 3, 32, 20},
             {ET_Q5_0, "q5_0", 6, 32, 22},      {ET_Q5_1, "q5_1", 7, 32, 24}};
    for (size_t i = 0; i < sizeof e / sizeof *e; i++) {
        const ek_format *f = ek_format_of(e[i].dt);
        CHECK(f && !strcmp(f->name, e[i].name) && f->ggml_type == e[i].ggml && f->block == e[i].block &&
              f->block_bytes == e[i].bytes && f->act == ET_Q8_0);
        CHECK(ek_format_by_ggml_type(e[i].ggml) == f && ek_format_by_name(e[i].name) == f);
    }
    CHECK(ek_format_by_ggml_type(15) == NULL); /* q8_K: llama.cpp's activation format only */
}

/* --dequant FILE.gguf OUT_DIR */
static int dequant_file(const char *path, const char *out_dir)
{
    gguf_file *g = NULL;
    ember_status st = gguf_open(path, &g);
    if (st) {
        fprintf(stderr, "%s\n", ember_last_error());
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < gguf_n_tensors(g) && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const ek_format *f = ek_format_by_ggml_type(t->ggml_type);
        uint64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= t->ne[d];
        float *y = f ? malloc(n * sizeof *y) : NULL;
        char name[512];
        snprintf(name, sizeof name, "%s/%s.f32", out_dir, t->name);
        FILE *o = y ? fopen(name, "wb") : NULL;
        if (!o) {
            fprintf(stderr, "%s: cannot convert or write\n", t->name);
            rc = 1;
        } else {
            f->to_f32(t->data, y, (int64_t)n);
            rc = fwrite(y, sizeof *y, n, o) != n;
            rc |= fclose(o) != 0;
        }
        free(y);
    }
    gguf_close(g);
    return rc;
}

/* --quant TYPE IN.f32 OUT: the fp32 values of IN quantized by the format
 * table's from_f32 for TYPE ("q5_0", ...), the blocks written to OUT. */
static int quant_file(const char *type, const char *in, const char *out)
{
    const ek_format *f = ek_format_by_name(type);
    FILE *i = fopen(in, "rb");
    if (!f || f->block == 1 || !i) {
        fprintf(stderr, "--quant: no block format '%s' or no file %s\n", type, in);
        if (i) fclose(i);
        return 1;
    }
    float *x = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            float *nx = realloc(x, cap * sizeof *x);
            if (!nx) break;
            x = nx;
        }
        got = fread(x + n, sizeof *x, cap - n, i);
        n += got;
    } while (got);
    fclose(i);
    n -= n % (size_t)f->block;
    void *q = malloc(ek_row_bytes(f->dtype, (int64_t)n) + 1);
    FILE *o = q ? fopen(out, "wb") : NULL;
    int rc = !o;
    if (o) {
        f->from_f32(x, q, (int64_t)n);
        size_t bytes = ek_row_bytes(f->dtype, (int64_t)n);
        rc = fwrite(q, 1, bytes, o) != bytes;
        rc |= fclose(o) != 0;
    }
    free(q);
    free(x);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--dequant")) return dequant_file(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "--quant")) return quant_file(argv[2], argv[3], argv[4]);
    RUN(format_table_entries);
    RUN(every_bit_pattern_decodes_in_range);
    RUN(dot_matches_dequantized_operands);
    RUN(q32_q8_0_form_and_dot);
    RUN(quantizers_keep_what_their_bits_allow);
    RUN(quantizers_handle_degenerate_blocks);
    return check_summary();
}
