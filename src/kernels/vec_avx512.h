/* The AVX-512 attention, activation and conv kernels (vec_avx512.c,
 * conv_avx512.c), for the
 * avx512 kernel set of matmul_avx512.c. Only call them on a CPU with
 * AVX-512 F/BW/VL. */
#ifndef EMBER_KERNELS_VEC_AVX512_H
#define EMBER_KERNELS_VEC_AVX512_H

#include "kernels/matmul.h"

void ek_attn_scores_avx512(float *s, int64_t s_stride, const float *q, int nh,
                           const float *const *k, int nk, int d, float scale);
void ek_attn_accum_avx512(float *o, const float *p, int64_t p_stride, int nh,
                          const float *const *v, int nk, int d);
float ek_exp_sum_avx512(float *x, int64_t n, float shift);
void ek_glu_avx512(float *g, const float *u, int64_t n, ek_glu_act act);
void ek_f16_to_f32_avx512(const void *src, float *dst, int64_t n);
void ek_bf16_to_f32_avx512(const void *src, float *dst, int64_t n);
void ek_q8_0_to_f32_avx512(const void *src, float *dst, int64_t n);
/* conv_avx512.c; the bf16 conv also needs AVX512_BF16 */
void ek_conv_f32_avx512(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                        const void *x, int64_t xs, int32_t nt, int32_t dilation);
void ek_conv_bf16_avx512(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                         const void *x, int64_t xs, int32_t nt, int32_t dilation);
void ek_conv_f16_avx512(float *y, int64_t ys, const ek_conv_weights *w, int32_t p0, int32_t p1,
                        const void *x, int64_t xs, int32_t nt, int32_t dilation);
void ek_snake_avx512(float *x, int64_t n_rows, int32_t c, const float *a, const float *inv_b);

#endif
