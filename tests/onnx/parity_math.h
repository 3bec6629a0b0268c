/* What the ONNX parity drivers measure: logits SNR in dB against the
 * native step's, and the argmax. */
#ifndef EMBER_TESTS_ONNX_PARITY_MATH_H
#define EMBER_TESTS_ONNX_PARITY_MATH_H

#include <math.h>
#include <stdint.h>

/* 300 dB stands for identical. */
static inline double snr_db(const float *ref, const float *x, int32_t n)
{
    double sig = 0, err = 0;
    for (int32_t i = 0; i < n; i++) {
        sig += (double)ref[i] * ref[i];
        err += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
    }
    return err == 0 ? 300.0 : 10.0 * log10(sig / err);
}

static inline int32_t argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

#endif
