/* Causal 1-D convolutions over channels-last activations, for the audio
 * decoder.
 *
 * Activations are time-major: row t holds the C channels of step t, so a
 * convolution is a matrix product whose "tokens" are time steps and whose
 * reduction runs over (tap, input channel). A causal conv with `taps` taps
 * and dilation d computes
 *
 *   y[t][co] = sum_j sum_ci W[co][j][ci] * x[t - (taps-1-j)*d][ci]
 *
 * reading the (taps-1)*d rows before x[0] as history: the caller keeps them
 * in front of x (zeros at the start of a stream, the previous chunk's last
 * rows afterwards), so streaming is exact and nothing is copied into an
 * im2col matrix. Transposed convolutions are rewritten into this form by the
 * packer (see ek_conv_pack_transposed).
 *
 * Weights are packed once at load into panels of EK_CONV_PANEL output
 * channels so a kernel reads each weight vector once per tile of time steps
 * and broadcasts activations against it. */
#ifndef EMBER_KERNELS_CONV_H
#define EMBER_KERNELS_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define EK_CONV_PANEL 16

typedef enum ek_conv_format {
    EK_CONV_F32,  /* fp32 weights and activations */
    EK_CONV_BF16, /* bf16 weights, activations rounded to bf16, fp32 sums */
    EK_CONV_F16,  /* IEEE half weights (half the memory of F32), fp32 activations and sums:
                   * the F32 arithmetic on weights a file stores as f16 */
    EK_CONV_FORMAT_COUNT
} ek_conv_format;

typedef struct ek_conv_weights {
    ek_conv_format format;
    int32_t cout, cin, taps;
    int32_t n_panels;   /* ceil(cout / EK_CONV_PANEL) */
    size_t panel_bytes; /* one panel: taps x cin x EK_CONV_PANEL weights */
    /* F32 and F16: panel p, tap j, input ci at [p][j][ci][16];
     * BF16: input pairs interleaved, [p][j][ci/2][16][2] (cin even). */
    void *data;
} ek_conv_weights;

/* Output channels of panels [p0, p1) for time steps t < nt. x points at row
 * 0 of the input (rows xs elements apart, history before it); for BF16 the
 * input is bf16 (uint16_t), else fp32. y rows are ys floats apart. No bias. */
typedef void (*ek_conv_fn)(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                           const void *x, int64_t xs, int32_t nt, int32_t dilation);

/* SnakeBeta over n rows of c channels, in place:
 * x += sin(a[ch] * x)^2 * inv_b[ch], with a = exp(alpha), inv_b = 1/(exp(beta) + eps). */
typedef void (*ek_snake_fn)(float *x, int64_t n_rows, int32_t c, const float *a,
                            const float *inv_b);

/* Packs a PyTorch Conv1d weight [cout][cin][taps] (fp32). F16 refuses a
 * weight beyond the half range (65504) rather than store infinity. */
ember_status ek_conv_pack(ek_conv_weights *out, ek_conv_format format, const float *w,
                          int32_t cout, int32_t cin, int32_t taps);
/* Packs a ConvTranspose1d weight [cin][cout][k] with stride s and k == s or
 * k == 2s (the last k-s outputs trimmed) as a causal conv over the input:
 * output row t holds the s output steps t*s .. t*s+s-1 side by side
 * (s*cout channels), taps = k/s (input t-1 and t). Read as rows of cout,
 * the result is the transposed conv's output in time-major order. */
ember_status ek_conv_pack_transposed(ek_conv_weights *out, ek_conv_format format, const float *w,
                                     int32_t cin, int32_t cout, int32_t k, int32_t stride);
void ek_conv_weights_free(ek_conv_weights *w);

/* The scalar twins. */
void ek_conv_scalar(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                    const void *x, int64_t xs, int32_t nt, int32_t dilation);
void ek_snake_scalar(float *x, int64_t n_rows, int32_t c, const float *a, const float *inv_b);

/* fp32 -> bf16 with round-to-nearest-even (the rounding VCVTNEPS2BF16 does). */
void ek_f32_to_bf16_row(const float *x, uint16_t *out, int64_t n);

#endif
