/* Packing conv weights into panels, and the scalar twins of the conv and
 * Snake kernels (the reference every SIMD version is tested against). */
#include "kernels/conv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/large_alloc.h"
#include "base/status.h"
#include "kernels/convert.h"
#include "kernels/formats.h"

typedef float (*weight_at_fn)(const void *ctx, int32_t o, int32_t j, int32_t ci);

typedef struct conv_src {
    const float *w;
    int32_t cin, cout, taps, k, stride;
} conv_src;

/* Conv1d [cout][cin][taps]. */
static float conv_weight_at(const void *ctx, int32_t o, int32_t j, int32_t ci)
{
    const conv_src *s = ctx;
    return s->w[((int64_t)o * s->cin + ci) * s->taps + j];
}

/* ConvTranspose1d [cin][cout][k] seen as a causal conv: output channel
 * o = phase * cout + co; tap taps-1 reads x[t] (kernel index phase), tap 0
 * of a two-tap conv reads x[t-1] (kernel index phase + stride). */
static float transposed_weight_at(const void *ctx, int32_t o, int32_t j, int32_t ci)
{
    const conv_src *s = ctx;
    int32_t phase = o / s->cout, co = o % s->cout;
    int32_t kidx = phase + (s->taps - 1 - j) * s->stride;
    return s->w[((int64_t)ci * s->cout + co) * s->k + kidx];
}

static uint16_t bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return (uint16_t)((u >> 16) | ((u & 0xffff) ? 0x40 : 0));
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void ek_f32_to_bf16_row(const float *x, uint16_t *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = bf16_round(x[i]);
}

static float bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One weight into a panel of F32 or F16 (same layout, element size apart);
 * false when F16 cannot hold it. */
static int store_weight(void *panel, ek_conv_format format, size_t at, float v)
{
    if (format == EK_CONV_F32) {
        ((float *)panel)[at] = v;
        return 1;
    }
    if (!(fabsf(v) <= 65504.0f)) return 0;
    ((uint16_t *)panel)[at] = ek_f32_to_f16(v);
    return 1;
}

/* The F32 or F16 panels of an fp32 Conv1d [cout][cin][taps] by a sequential
 * read of each output channel: the same values as pack()'s gather, which
 * reads 16 rows cin * taps apart per element and dominated loading the
 * speaker encoder. False when a weight does not fit F16. */
static int pack_direct(char *panels, ek_conv_format format, size_t panel_bytes, const float *w,
                       int32_t cout, int32_t cin, int32_t taps)
{
    const int32_t P = EK_CONV_PANEL;
    for (int32_t o = 0; o < cout; o++) {
        char *panel = panels + (size_t)(o / P) * panel_bytes;
        const int32_t l = o % P;
        const float *src = w + (size_t)o * (size_t)cin * (size_t)taps;
        for (int32_t ci = 0; ci < cin; ci++)
            for (int32_t j = 0; j < taps; j++)
                if (!store_weight(panel, format, ((size_t)j * cin + ci) * P + l, src[(size_t)ci * taps + j]))
                    return 0;
    }
    return 1;
}

static ember_status f16_range_error(ek_conv_weights *out)
{
    ek_conv_weights_free(out);
    return ember_fail(EMBER_ERR_FORMAT, "conv weights: a weight beyond 65504 does not fit f16");
}

static ember_status pack(ek_conv_weights *out, ek_conv_format format, int32_t cout, int32_t cin,
                         int32_t taps, weight_at_fn at, const void *ctx)
{
    memset(out, 0, sizeof *out);
    if (cout <= 0 || cin <= 0 || taps <= 0 || format >= EK_CONV_FORMAT_COUNT)
        return ember_fail(EMBER_ERR_INVALID_ARG, "conv weights: bad shape %d x %d x %d", cout, cin,
                          taps);
    if (format == EK_CONV_BF16 && cin % 2)
        return ember_fail(EMBER_ERR_INVALID_ARG, "conv weights: bf16 needs an even input width, got %d",
                          cin);
    const int32_t P = EK_CONV_PANEL;
    const size_t es = format == EK_CONV_F32 ? 4 : 2;
    out->format = format;
    out->cout = cout;
    out->cin = cin;
    out->taps = taps;
    out->n_panels = (cout + P - 1) / P;
    out->panel_bytes = (size_t)taps * (size_t)cin * P * es;
    size_t bytes = out->panel_bytes * (size_t)out->n_panels;
    /* large panels in huge pages (ember_large_alloc: 2 MiB aligned), the
     * rest 64-byte aligned for the kernels' loads */
    const size_t padded = (bytes + 63) & ~(size_t)63;
    out->data = padded >= ((size_t)2 << 20) ? ember_large_alloc(padded) : aligned_alloc(64, padded);
    if (!out->data)
        return ember_fail(EMBER_ERR_NO_MEMORY, "conv weights: cannot allocate %zu bytes", bytes);
    if (format != EK_CONV_BF16 && at == conv_weight_at) {
        const conv_src *src = ctx;
        if (cout % P) memset(out->data, 0, bytes); /* the last panel's unused lanes */
        return pack_direct(out->data, format, out->panel_bytes, src->w, cout, cin, taps)
                   ? EMBER_OK
                   : f16_range_error(out);
    }
    for (int32_t p = 0; p < out->n_panels; p++) {
        char *panel = (char *)out->data + (size_t)p * out->panel_bytes;
        for (int32_t j = 0; j < taps; j++)
            for (int32_t ci = 0; ci < cin; ci++)
                for (int32_t l = 0; l < P; l++) {
                    int32_t o = p * P + l;
                    float v = o < cout ? at(ctx, o, j, ci) : 0.0f;
                    if (format != EK_CONV_BF16) {
                        if (!store_weight(panel, format, ((size_t)j * cin + ci) * P + l, v))
                            return f16_range_error(out);
                    } else {
                        size_t pair = (size_t)j * (cin / 2) + (size_t)(ci / 2);
                        ((uint16_t *)panel)[(pair * P + l) * 2 + (ci & 1)] = bf16_round(v);
                    }
                }
    }
    return EMBER_OK;
}

ember_status ek_conv_pack(ek_conv_weights *out, ek_conv_format format, const float *w,
                          int32_t cout, int32_t cin, int32_t taps)
{
    conv_src s = {w, cin, cout, taps, taps, 1};
    return pack(out, format, cout, cin, taps, conv_weight_at, &s);
}

ember_status ek_conv_pack_transposed(ek_conv_weights *out, ek_conv_format format, const float *w,
                                     int32_t cin, int32_t cout, int32_t k, int32_t stride)
{
    memset(out, 0, sizeof *out);
    if (stride <= 0 || (k != stride && k != 2 * stride))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "transposed conv: kernel %d with stride %d (need k = s or 2s)", k, stride);
    conv_src s = {w, cin, cout, k / stride, k, stride};
    return pack(out, format, stride * cout, cin, s.taps, transposed_weight_at, &s);
}

void ek_conv_weights_free(ek_conv_weights *w)
{
    free(w->data);
    memset(w, 0, sizeof *w);
}

void ek_conv_scalar(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                    const void *x, int64_t xs, int32_t nt, int32_t dilation)
{
    const int32_t P = EK_CONV_PANEL, cin = w->cin, taps = w->taps;
    for (int32_t p = p0; p < p1; p++) {
        const char *panel = (const char *)w->data + (size_t)p * w->panel_bytes;
        for (int32_t l = 0; l < P && p * P + l < w->cout; l++)
            for (int32_t t = 0; t < nt; t++) {
                float acc = 0.0f;
                for (int32_t j = 0; j < taps; j++) {
                    int64_t row = t - (int64_t)(taps - 1 - j) * dilation;
                    for (int32_t ci = 0; ci < cin; ci++) {
                        float wv, xv;
                        if (w->format == EK_CONV_F32) {
                            wv = ((const float *)panel)[((size_t)j * cin + ci) * P + l];
                            xv = ((const float *)x)[row * xs + ci];
                        } else if (w->format == EK_CONV_F16) {
                            wv = ek_f16_to_f32(((const uint16_t *)panel)[((size_t)j * cin + ci) * P + l]);
                            xv = ((const float *)x)[row * xs + ci];
                        } else {
                            size_t pair = (size_t)j * (cin / 2) + (size_t)(ci / 2);
                            wv = bf16_value(((const uint16_t *)panel)[(pair * P + l) * 2 + (ci & 1)]);
                            xv = bf16_value(((const uint16_t *)x)[row * xs + ci]);
                        }
                        acc += wv * xv;
                    }
                }
                y[(int64_t)t * ys + p * P + l] = acc;
            }
    }
}

void ek_snake_scalar(float *x, int64_t n_rows, int32_t c, const float *a, const float *inv_b)
{
    for (int64_t t = 0; t < n_rows; t++)
        for (int32_t i = 0; i < c; i++) {
            float *v = x + t * c + i;
            float s = sinf(a[i] * *v);
            *v += s * s * inv_b[i];
        }
}
