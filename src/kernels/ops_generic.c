#include "kernels/ops.h"

#include <math.h>

void ek_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    /* Sum in double: the reference's fp32 reduction is pairwise, and a plain
     * fp32 running sum over 2048+ values would be noisier than it. Eight
     * running sums, not one: a single chain waits an add's latency per
     * element (prefill spent ~2% of its time here), eight are independent
     * and the compiler keeps them in vector registers. */
    enum { LANES = 8 };
    double lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) lane[k] += (double)x[i + k] * x[i + k];
    for (; i < n; i++) lane[0] += (double)x[i] * x[i];
    double ss = 0.0;
    for (int k = 0; k < LANES; k++) ss += lane[k];
    float mean = (float)(ss / (double)n);
    float r = 1.0f / sqrtf(mean + eps);
    for (i = 0; i < n; i++) out[i] = w[i] * (x[i] * r);
}

void ek_rope_inv_freq(float *inv_freq, int32_t rot_dims, float theta)
{
    /* Reference: 1 / theta ** (arange(0, rot, 2).float() / rot), in fp32. */
    for (int32_t j = 0; j < rot_dims / 2; j++) {
        float expo = (float)(2 * j) / (float)rot_dims;
        float p = (float)pow((double)theta, (double)expo);
        inv_freq[j] = 1.0f / p;
    }
}

void ek_rope_cos_sin(float *cos_out, float *sin_out, const float *inv_freq, int32_t rot_dims,
                     int64_t position)
{
    float t = (float)position;
    for (int32_t j = 0; j < rot_dims / 2; j++) {
        float angle = t * inv_freq[j]; /* the fp32 product: it matters at long context */
        cos_out[j] = (float)cos((double)angle);
        sin_out[j] = (float)sin((double)angle);
    }
}

void ek_rope_apply(float *x, const float *cos_t, const float *sin_t, int32_t rot_dims)
{
    int32_t half = rot_dims / 2;
    for (int32_t j = 0; j < half; j++) {
        float a = x[j], b = x[j + half];
        x[j] = a * cos_t[j] - b * sin_t[j];
        x[j + half] = b * cos_t[j] + a * sin_t[j];
    }
}

void ek_softmax(float *x, int64_t n)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

float ek_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

float ek_gelu_tanh(float x)
{
    const float k = 0.79788456080286536f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

float ek_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

float ek_silu(float x) { return x * ek_sigmoid(x); }
