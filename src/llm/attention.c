#include "llm/attention.h"

#include <math.h>
#include <string.h>

#include "kernels/ops.h"

static float dot(const float *a, const float *b, int32_t n)
{
    float acc[8] = {0};
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    for (; i < n; i++) acc[i & 7] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static void axpy(float *y, float a, const float *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++) y[i] += a * x[i];
}

void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t h0, int32_t h1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scores)
{
    const int32_t d = s->head_dim;
    const int32_t group = s->n_heads / s->n_kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    float *tmp = scores + L->capacity + n; /* one converted cache row */

    for (int32_t t = 0; t < n; t++) {
        const int64_t pos = p0 + t;
        /* Visible keys: [lo, pos]. Positions below p0 come from the cache
         * (for a ring they are exactly the slots still held), the rest from
         * this chunk. */
        const int64_t lo = L->window && pos - L->window + 1 > 0 ? pos - L->window + 1 : 0;
        const int64_t cache_lo = lo, cache_hi = p0;                 /* [cache_lo, cache_hi) */
        const int64_t new_lo = lo > p0 ? lo : p0;                   /* [new_lo, pos] */
        const int32_t n_cache = cache_hi > cache_lo ? (int32_t)(cache_hi - cache_lo) : 0;
        const int32_t n_new = (int32_t)(pos - new_lo + 1);

        for (int32_t h = h0; h < h1; h++) {
            const int32_t g = h / group;
            const float *qh = q + t * s->q_stride + (int64_t)h * d;
            float *o = out + t * s->out_stride + (int64_t)h * d;

            for (int32_t j = 0; j < n_cache; j++)
                scores[j] = dot(qh, kv_row(L, L->k, d, g, kv_slot(L, cache_lo + j), tmp), d) * scale;
            for (int32_t j = 0; j < n_new; j++) {
                const float *kn = k_new + (new_lo - p0 + j) * s->kv_stride + (int64_t)g * d;
                scores[n_cache + j] = dot(qh, kn, d) * scale;
            }
            ek_softmax(scores, n_cache + n_new);

            memset(o, 0, (size_t)d * sizeof(float));
            for (int32_t j = 0; j < n_cache; j++)
                axpy(o, scores[j], kv_row(L, L->v, d, g, kv_slot(L, cache_lo + j), tmp), d);
            for (int32_t j = 0; j < n_new; j++)
                axpy(o, scores[n_cache + j],
                     v_new + (new_lo - p0 + j) * s->kv_stride + (int64_t)g * d, d);
        }
    }
}
