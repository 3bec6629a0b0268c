#include "kernels/formats.h"

#include <math.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kquants.h"
#include "kernels/q32.h"

uint16_t ek_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (absx < 0x38800000u) {
        /* Subnormal half (or zero): value = m * 2^-24. Let the FPU round:
         * adding 0.5 makes the low mantissa bits of the sum the result. */
        float a;
        memcpy(&a, &absx, sizeof a);
        float r = a + 0.5f;
        uint32_t rb;
        memcpy(&rb, &r, sizeof rb);
        return (uint16_t)(sign | (rb - 0x3f000000u));
    }
    /* Normal: rebias the exponent and round the mantissa to 10 bits, ties to even. */
    uint32_t mant_odd = (absx >> 13) & 1u;
    absx += 0xc8000fffu + mant_odd; /* (15 - 127) << 23, plus the rounding bias */
    return (uint16_t)(sign | (absx >> 13));
}

/* ---- float formats -------------------------------------------------------- */

static void f32_to_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f16_to_f32(const void *src, float *dst, int64_t n)
{
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = ek_f16_to_f32(s[i]);
}

static void f32_to_f16(const float *src, void *dst, int64_t n)
{
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = ek_f32_to_f16(src[i]);
}

static void bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = ek_bf16_to_f32(s[i]);
}

static void f32_to_bf16(const float *src, void *dst, int64_t n)
{
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = ek_f32_to_bf16(src[i]);
}

static void f32_from_f32(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

/* ---- Q8_0 ----------------------------------------------------------------- */

static void q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const ek_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        float d = ek_f16_to_f32(b[i].d);
        for (int j = 0; j < EK_QBLOCK; j++) dst[i * EK_QBLOCK + j] = d * (float)b[i].q[j];
    }
}

/* Scale so the largest magnitude maps to 127; round half away from zero. */
static void q8_0_from_f32(const float *src, void *dst, int64_t n)
{
    ek_block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        const float *x = src + i * EK_QBLOCK;
        float amax = 0.0f;
        for (int j = 0; j < EK_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ek_f32_to_f16(d);
        for (int j = 0; j < EK_QBLOCK; j++) b[i].q[j] = (int8_t)roundf(x[j] * id);
    }
}

/* ---- Q4_0 ----------------------------------------------------------------- */

static void q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const ek_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        float d = ek_f16_to_f32(b[i].d);
        float *y = dst + i * EK_QBLOCK;
        for (int j = 0; j < EK_QBLOCK / 2; j++) {
            y[j] = d * (float)((b[i].qs[j] & 15) - 8);
            y[j + EK_QBLOCK / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

/* The signed value of largest magnitude maps to -8, so the full range
 * -8..7 is used on the side where it matters most. */
static void q4_0_from_f32(const float *src, void *dst, int64_t n)
{
    ek_block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        const float *x = src + i * EK_QBLOCK;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < EK_QBLOCK; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        float d = max / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ek_f32_to_f16(d);
        for (int j = 0; j < EK_QBLOCK / 2; j++) {
            int lo = (int)(x[j] * id + 8.5f), hi = (int)(x[j + EK_QBLOCK / 2] * id + 8.5f);
            lo = lo > 15 ? 15 : lo;
            hi = hi > 15 ? 15 : hi;
            b[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

/* ---- the table -------------------------------------------------------------- */

static const ek_format formats[ET_DTYPE_COUNT] = {
    [ET_F32] = {ET_F32, "f32", 1, 4, 0, ET_F32, f32_to_f32, f32_from_f32},
    [ET_F16] = {ET_F16, "f16", 1, 2, 1, ET_F32, f16_to_f32, f32_to_f16},
    [ET_BF16] = {ET_BF16, "bf16", 1, 2, 30, ET_F32, bf16_to_f32, f32_to_bf16},
    [ET_Q8_0] = {ET_Q8_0, "q8_0", EK_QBLOCK, sizeof(ek_block_q8_0), 8, ET_Q8_0, q8_0_to_f32,
                 q8_0_from_f32},
    [ET_Q4_0] = {ET_Q4_0, "q4_0", EK_QBLOCK, sizeof(ek_block_q4_0), 2, ET_Q8_0, q4_0_to_f32,
                 q4_0_from_f32},
#define KQ(DT, NAME, BLOCK, TYPE, GGML, STEM) \
    [DT] = {DT, NAME, BLOCK, sizeof(TYPE), GGML, ET_Q8_0, ek_##STEM##_to_f32, ek_##STEM##_from_f32}
    KQ(ET_Q2_K, "q2_k", EK_QK_K, ek_block_q2_k, 10, q2_k),
    KQ(ET_Q3_K, "q3_k", EK_QK_K, ek_block_q3_k, 11, q3_k),
    KQ(ET_Q4_K, "q4_k", EK_QK_K, ek_block_q4_k, 12, q4_k),
    KQ(ET_Q5_K, "q5_k", EK_QK_K, ek_block_q5_k, 13, q5_k),
    KQ(ET_Q6_K, "q6_k", EK_QK_K, ek_block_q6_k, 14, q6_k),
    KQ(ET_IQ4_NL, "iq4_nl", EK_QBLOCK, ek_block_iq4_nl, 20, iq4_nl),
    KQ(ET_IQ4_XS, "iq4_xs", EK_QK_K, ek_block_iq4_xs, 23, iq4_xs),
    KQ(ET_Q4_1, "q4_1", EK_QBLOCK, ek_block_q4_1, 3, q4_1),
    KQ(ET_Q5_0, "q5_0", EK_QBLOCK, ek_block_q5_0, 6, q5_0),
    KQ(ET_Q5_1, "q5_1", EK_QBLOCK, ek_block_q5_1, 7, q5_1),
#undef KQ
};

const ek_format *ek_format_of(et_dtype dt)
{
    return (unsigned)dt < ET_DTYPE_COUNT ? &formats[dt] : NULL;
}

const ek_format *ek_format_by_name(const char *name)
{
    for (int i = 0; i < ET_DTYPE_COUNT; i++)
        if (!strcmp(formats[i].name, name)) return &formats[i];
    return NULL;
}

const ek_format *ek_format_by_ggml_type(uint32_t ggml_type)
{
    for (int i = 0; i < ET_DTYPE_COUNT; i++)
        if (formats[i].ggml_type == ggml_type) return &formats[i];
    return NULL;
}

size_t ek_row_bytes(et_dtype dt, int64_t n)
{
    const ek_format *f = ek_format_of(dt);
    return f ? (size_t)(n / f->block) * f->block_bytes : 0;
}
