/* Q4_1, Q5_0 and Q5_1 (q32.h): conversions and the scalar reference. */
#include "kernels/q32.h"

#include <math.h>
#include <string.h>

#include "kernels/convert.h"

int ek_q32_is(et_dtype dtype) { return dtype == ET_Q4_1 || dtype == ET_Q5_0 || dtype == ET_Q5_1; }

/* ---- one block as integers --------------------------------------------------- */

/* The fifth bits of a Q5 block as one word (bit l: element l). */
static uint32_t high_bits(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* Block b of a row: q as stored (0..15 or 0..31, Q5_0's minus 16), the f16
 * d, and m as fp32 (0 for Q5_0). Every conversion and the scalar dot go
 * through this, so each layout lives in one place. */
static void unpack(et_dtype dtype, const void *row, int64_t b, int8_t q[EK_QBLOCK], uint16_t *d, float *m)
{
    const uint8_t *qs;
    uint32_t qh = 0;
    int bias = 0;
    *m = 0.0f;
    if (dtype == ET_Q4_1) {
        const ek_block_q4_1 *k = (const ek_block_q4_1 *)row + b;
        *d = k->d;
        *m = ek_f16_to_f32(k->m);
        qs = k->qs;
    } else if (dtype == ET_Q5_0) {
        const ek_block_q5_0 *k = (const ek_block_q5_0 *)row + b;
        *d = k->d;
        qh = high_bits(k->qh);
        qs = k->qs;
        bias = 16;
    } else {
        const ek_block_q5_1 *k = (const ek_block_q5_1 *)row + b;
        *d = k->d;
        *m = ek_f16_to_f32(k->m);
        qh = high_bits(k->qh);
        qs = k->qs;
    }
    for (int l = 0; l < EK_QBLOCK / 2; l++) {
        q[l] = (int8_t)((qs[l] & 15) + (int)((qh >> l) & 1) * 16 - bias);
        q[l + 16] = (int8_t)((qs[l] >> 4) + (int)((qh >> (l + 16)) & 1) * 16 - bias);
    }
}

void ek_q32_to_q8_0(et_dtype dtype, const void *src, ek_block_q8_0 *dst, float *m, int64_t n)
{
    for (int64_t b = 0; b < n; b++) {
        float mb;
        unpack(dtype, src, b, dst[b].q, &dst[b].d, &mb);
        if (m) m[b] = mb;
    }
}

/* ---- to fp32 ------------------------------------------------------------------ */

static void to_f32(et_dtype dtype, const void *src, float *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        int8_t q[EK_QBLOCK];
        uint16_t dh;
        float m;
        unpack(dtype, src, b, q, &dh, &m);
        const float d = ek_f16_to_f32(dh);
        /* (d * q) + m, two roundings, as llama.cpp's reference (Q5_0 has
         * no addition at all: d * (q - 16)) */
        float *o = dst + b * EK_QBLOCK;
        if (dtype == ET_Q5_0)
            for (int j = 0; j < EK_QBLOCK; j++) o[j] = d * (float)q[j];
        else
            for (int j = 0; j < EK_QBLOCK; j++) o[j] = d * (float)q[j] + m;
    }
}

void ek_q4_1_to_f32(const void *src, float *dst, int64_t n) { to_f32(ET_Q4_1, src, dst, n); }
void ek_q5_0_to_f32(const void *src, float *dst, int64_t n) { to_f32(ET_Q5_0, src, dst, n); }
void ek_q5_1_to_f32(const void *src, float *dst, int64_t n) { to_f32(ET_Q5_1, src, dst, n); }

/* ---- from fp32: llama.cpp's reference quantizers -------------------------------- */

/* Packs 32 values (0..15 or 0..31) into qs and, for the Q5 types, qh. */
static void pack(const int q[EK_QBLOCK], uint8_t qs[EK_QBLOCK / 2], uint8_t *qh)
{
    uint32_t h = 0;
    for (int l = 0; l < EK_QBLOCK / 2; l++) {
        qs[l] = (uint8_t)((q[l] & 15) | (q[l + 16] & 15) << 4);
        h |= (uint32_t)(q[l] >> 4 & 1) << l | (uint32_t)(q[l + 16] >> 4 & 1) << (l + 16);
    }
    if (qh)
        for (int i = 0; i < 4; i++) qh[i] = (uint8_t)(h >> (8 * i));
}

/* The "_1" types: d = (max - min) / levels, m = min, q = (x - min) / d
 * rounded half up (a truncation of + 0.5, all operands >= 0). */
static void offset_block(const float *x, int levels, uint16_t *d16, uint16_t *m16, int q[EK_QBLOCK])
{
    float min = INFINITY, max = -INFINITY;
    for (int j = 0; j < EK_QBLOCK; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / (float)levels;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *d16 = ek_f32_to_f16(d);
    *m16 = ek_f32_to_f16(min);
    for (int j = 0; j < EK_QBLOCK; j++) {
        int v = (int)((x[j] - min) * id + 0.5f);
        q[j] = v > levels ? levels : v;
    }
}

void ek_q4_1_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        ek_block_q4_1 *k = (ek_block_q4_1 *)dst + b;
        int q[EK_QBLOCK];
        offset_block(src + b * EK_QBLOCK, 15, &k->d, &k->m, q);
        pack(q, k->qs, NULL);
    }
}

void ek_q5_1_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        ek_block_q5_1 *k = (ek_block_q5_1 *)dst + b;
        int q[EK_QBLOCK];
        offset_block(src + b * EK_QBLOCK, 31, &k->d, &k->m, q);
        pack(q, k->qs, k->qh);
    }
}

/* The signed value of largest magnitude maps to -16 (as Q4_0's to -8). */
void ek_q5_0_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        const float *x = src + b * EK_QBLOCK;
        ek_block_q5_0 *k = (ek_block_q5_0 *)dst + b;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < EK_QBLOCK; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        k->d = ek_f32_to_f16(d);
        int q[EK_QBLOCK];
        for (int j = 0; j < EK_QBLOCK; j++) {
            int v = (int)(x[j] * id + 16.5f);
            q[j] = v > 31 ? 31 : v;
        }
        pack(q, k->qs, k->qh);
    }
}

/* ---- the scalar dot and gemm ------------------------------------------------------ */

float ek_dot_q32_scalar(et_dtype dtype, const void *w, const ek_block_q8_0 *x, int64_t n)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        int8_t q[EK_QBLOCK];
        uint16_t dh;
        float m;
        unpack(dtype, w, b, q, &dh, &m);
        int32_t dot = 0, xsum = 0;
        for (int j = 0; j < EK_QBLOCK; j++) {
            dot += (int32_t)q[j] * x[b].q[j];
            xsum += x[b].q[j];
        }
        const float dx = ek_f16_to_f32(x[b].d);
        sum += dx * ek_f16_to_f32(dh) * (float)dot + dx * m * (float)xsum;
    }
    return sum;
}

void ek_gemm_q32_scalar(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1, const void *x,
                        size_t xs, int nt)
{
    const size_t rb = ek_row_bytes(w->dtype, w->cols);
    for (int64_t r = r0; r < r1; r++)
        for (int t = 0; t < nt; t++)
            y[(int64_t)t * ys + r] = ek_dot_q32_scalar(w->dtype, (const char *)w->data + (size_t)r * rb,
                                                       (const ek_block_q8_0 *)((const char *)x + (size_t)t * xs),
                                                       w->cols);
}
