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

void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scores)
{
    const int32_t d = s->head_dim;
    const int32_t group = s->n_heads / s->n_kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    const int64_t row_len = (int64_t)L->capacity + n;   /* one score row per query head */
    float *tmp = scores + group * row_len;              /* one converted cache row */

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

        for (int32_t g = g0; g < g1; g++) {
            /* The query heads of kv head g, as a (group, d) block: every key
             * and value row is read (and converted) once for all of them. */
            const float *qg = q + t * s->q_stride + (int64_t)g * group * d;
            float *og = out + t * s->out_stride + (int64_t)g * group * d;

            for (int32_t j = 0; j < n_cache; j++) {
                const float *k = kv_row(L, L->k, d, g, kv_slot(L, cache_lo + j), tmp);
                for (int32_t h = 0; h < group; h++)
                    scores[h * row_len + j] = dot(qg + (int64_t)h * d, k, d) * scale;
            }
            for (int32_t j = 0; j < n_new; j++) {
                const float *k = k_new + (new_lo - p0 + j) * s->kv_stride + (int64_t)g * d;
                for (int32_t h = 0; h < group; h++)
                    scores[h * row_len + n_cache + j] = dot(qg + (int64_t)h * d, k, d) * scale;
            }
            for (int32_t h = 0; h < group; h++) ek_softmax(scores + h * row_len, n_cache + n_new);

            memset(og, 0, (size_t)group * (size_t)d * sizeof(float));
            for (int32_t j = 0; j < n_cache; j++) {
                const float *v = kv_row(L, L->v, d, g, kv_slot(L, cache_lo + j), tmp);
                for (int32_t h = 0; h < group; h++)
                    axpy(og + (int64_t)h * d, scores[h * row_len + j], v, d);
            }
            for (int32_t j = 0; j < n_new; j++) {
                const float *v = v_new + (new_lo - p0 + j) * s->kv_stride + (int64_t)g * d;
                for (int32_t h = 0; h < group; h++)
                    axpy(og + (int64_t)h * d, scores[h * row_len + n_cache + j], v, d);
            }
        }
    }
}
