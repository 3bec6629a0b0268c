/* Element-wise and row-wise operators of a transformer layer, in fp32. */
#ifndef EMBER_KERNELS_OPS_H
#define EMBER_KERNELS_OPS_H

#include <stdint.h>

/* out = x * rsqrt(mean(x^2) + eps) * w. out may alias x. */
void ek_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);

/* RoPE tables for one position: cos/sin of position * inv_freq[j] for
 * j < rot/2. The angle is an fp32 product of an fp32 position and an fp32
 * inverse frequency, exactly as the reference computes it. */
void ek_rope_inv_freq(float *inv_freq, int32_t rot_dims, float theta);
void ek_rope_cos_sin(float *cos_out, float *sin_out, const float *inv_freq, int32_t rot_dims,
                     int64_t position);

/* NeoX "rotate half" on the leading rot_dims of one head vector x: pairs
 * (x[j], x[j + rot/2]); dims from rot_dims on pass through. */
void ek_rope_apply(float *x, const float *cos_t, const float *sin_t, int32_t rot_dims);

/* In-place softmax over n scores (max subtracted first). */
void ek_softmax(float *x, int64_t n);

float ek_gelu_erf(float x);
float ek_gelu_tanh(float x);
float ek_sigmoid(float x);
float ek_silu(float x);

#endif
