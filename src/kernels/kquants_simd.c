/* The prepared activations and the gemm driver of the K-quant SIMD engines
 * (kquants_simd.h). Plain C: the row functions carry the ISA. */
#include "kernels/kquants_simd.h"

#include <stdlib.h>

#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"

int ek_kq_acts_make(ek_kq_acts *a, float *buf, size_t buf_floats, const void *x, size_t x_stride, int n_tokens,
                    int64_t n)
{
    const int64_t blocks = n / EK_QBLOCK;
    size_t need = EK_KQ_ACTS_FLOATS(n_tokens, n);
    a->n = n;
    a->heap = NULL;
    if (need > buf_floats) {
        buf = a->heap = malloc(need * sizeof(float));
        if (!buf) return -1;
    }
    a->dx = buf;
    a->ds16 = buf + (size_t)n_tokens * (size_t)blocks;
    for (int t = 0; t < n_tokens; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)((const char *)x + (size_t)t * x_stride);
        float *dx = a->dx + (size_t)t * (size_t)blocks, *ds = a->ds16 + (size_t)t * (size_t)(2 * blocks);
        for (int64_t b = 0; b < blocks; b++) {
            float d = ek_f16_to_f32(xb[b].d);
            int32_t s0 = 0, s1 = 0;
            for (int j = 0; j < 16; j++) {
                s0 += xb[b].q[j];
                s1 += xb[b].q[16 + j];
            }
            dx[b] = d;
            ds[2 * b] = d * (float)s0;
            ds[2 * b + 1] = d * (float)s1;
        }
    }
    return 0;
}

void ek_kq_acts_free(ek_kq_acts *a)
{
    free(a->heap);
    a->heap = NULL;
}

void ek_kq_gemm_rows(const ek_kq_row_fn *rows, float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                     const void *x, size_t xs, int nt)
{
    float buf[EK_KQ_ACTS_STACK];
    ek_kq_acts a;
    if (!rows || ek_kq_acts_make(&a, buf, EK_KQ_ACTS_STACK, x, xs, nt, w->cols)) {
        ek_gemm_kquant_scalar(y, ys, w, r0, r1, x, xs, nt);
        return;
    }
    size_t rb = ek_row_bytes(w->dtype, w->cols);
    for (int64_t r = r0; r < r1; r++) {
        const char *row = (const char *)w->data + (size_t)r * rb;
        for (int t0 = 0; t0 < nt; t0 += EK_KQ_KT) {
            int T = nt - t0 < EK_KQ_KT ? nt - t0 : EK_KQ_KT;
            rows[T](y, ys, row, r, &a, (const char *)x, xs, t0);
        }
    }
    ek_kq_acts_free(&a);
}
