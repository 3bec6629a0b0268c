/* Scalar references of the attention and activation kernels of matmul.h:
 * the plain loops every SIMD version is tested against, and the versions
 * used where a set has nothing faster. */
#include <math.h>

#include "kernels/matmul.h"
#include "kernels/ops.h"

void ek_axpy_f32_scalar(float *y, float a, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

void ek_attn_scores_scalar(float *s, int64_t s_stride, const float *q, int nh,
                           const float *const *k, int nk, int d, float scale)
{
    for (int h = 0; h < nh; h++)
        for (int j = 0; j < nk; j++)
            s[h * s_stride + j] = ek_dot_f32_scalar(q + (int64_t)h * d, k[j], d) * scale;
}

void ek_attn_accum_scalar(float *o, const float *p, int64_t p_stride, int nh,
                          const float *const *v, int nk, int d)
{
    for (int h = 0; h < nh; h++)
        for (int j = 0; j < nk; j++) ek_axpy_f32_scalar(o + (int64_t)h * d, p[h * p_stride + j], v[j], d);
}

float ek_exp_sum_scalar(float *x, int64_t n, float shift)
{
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - shift);
        sum += x[i];
    }
    return sum;
}

void ek_glu_scalar(float *g, const float *u, int64_t n, ek_glu_act act)
{
    for (int64_t i = 0; i < n; i++) {
        float a = act == EK_GLU_SILU       ? ek_silu(g[i])
                  : act == EK_GLU_GELU_TANH ? ek_gelu_tanh(g[i])
                                            : ek_gelu_erf(g[i]);
        g[i] = u ? a * u[i] : a;
    }
}
