#include "nn/attention.h"

#include <math.h>
#include <string.h>

#include "base/pool.h"


size_t attn_scratch_floats(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t n)
{
    const size_t group = (size_t)(n_heads / n_kv_heads), d = (size_t)head_dim;
    /* acc + running max + running sum per (token, head); one tile of scores;
     * one tile of converted K and V rows */
    return (size_t)n * group * (d + 2) + group * ATTN_TILE + 2 * ATTN_TILE * d;
}

/* The first position a query at `pos` sees. */
static int64_t first_visible(const kv_layer *L, int64_t pos)
{
    return L->window && pos - L->window + 1 > 0 ? pos - L->window + 1 : 0;
}

void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scratch)
{
    const int32_t d = s->head_dim;
    const int32_t group = s->n_heads / s->n_kv_heads;
    const float scale = 1.0f / sqrtf((float)d);
    float *acc = scratch;                                  /* n x group x d */
    float *run_max = acc + (size_t)n * group * d;          /* n x group */
    float *run_sum = run_max + (size_t)n * group;          /* n x group */
    float *tile_s = run_sum + (size_t)n * group;           /* group x ATTN_TILE */
    float *k_conv = tile_s + (size_t)group * ATTN_TILE;    /* ATTN_TILE x d */
    float *v_conv = k_conv + (size_t)ATTN_TILE * d;        /* ATTN_TILE x d */
    const float *kp[ATTN_TILE], *vp[ATTN_TILE];
    const ek_to_f32_fn to_f32 = ek_kernels_to_f32(s->k, L->type);

    /* Keys any query of the chunk sees: cached positions from the first
     * query's window start up to p0, then the chunk's own positions. */
    const int64_t key_lo = first_visible(L, p0), key_hi = p0 + n;

    for (int32_t g = g0; g < g1; g++) {
        for (int64_t i = 0; i < (int64_t)n * group; i++) {
            run_max[i] = -INFINITY;
            run_sum[i] = 0.0f;
        }
        memset(acc, 0, (size_t)n * (size_t)group * (size_t)d * sizeof(float));

        for (int64_t j0 = key_lo; j0 < key_hi; j0 += ATTN_TILE) {
            const int64_t j1 = j0 + ATTN_TILE < key_hi ? j0 + ATTN_TILE : key_hi;
            /* The tile's K and V rows, each fetched (and converted) once for
             * every query and head that uses it. */
            for (int64_t j = j0; j < j1; j++) {
                int32_t i = (int32_t)(j - j0);
                if (j < p0) {
                    kp[i] = kv_row(L, L->k, d, g, kv_slot(L, j), to_f32, k_conv + (size_t)i * d);
                    vp[i] = kv_row(L, L->v, d, g, kv_slot(L, j), to_f32, v_conv + (size_t)i * d);
                } else {
                    kp[i] = k_new + (j - p0) * s->kv_stride + (int64_t)g * d;
                    vp[i] = v_new + (j - p0) * s->kv_stride + (int64_t)g * d;
                }
            }
            for (int32_t t = 0; t < n; t++) {
                const int64_t pos = p0 + t, lo = first_visible(L, pos);
                const int64_t a = lo > j0 ? lo : j0, b = pos + 1 < j1 ? pos + 1 : j1;
                if (a >= b) continue;
                const int nk = (int)(b - a);
                const float *qg = q + t * s->q_stride + (int64_t)g * group * d;
                float *o = acc + (size_t)t * group * d; /* the group's heads, d apart */
                s->k->attn_scores(tile_s, ATTN_TILE, qg, group, kp + (a - j0), nk, d, scale);
                for (int32_t h = 0; h < group; h++) {
                    const size_t th = (size_t)t * group + (size_t)h;
                    float *sc = tile_s + (size_t)h * ATTN_TILE, tile_max = -INFINITY;
                    for (int j = 0; j < nk; j++) tile_max = sc[j] > tile_max ? sc[j] : tile_max;
                    /* Online softmax: rescale what was summed under the old
                     * maximum when a larger score arrives. */
                    if (tile_max > run_max[th]) {
                        float corr = expf(run_max[th] - tile_max); /* 0 on the first tile */
                        float *oh = o + (size_t)h * d;
                        run_sum[th] *= corr;
                        for (int32_t i = 0; i < d; i++) oh[i] *= corr;
                        run_max[th] = tile_max;
                    }
                    run_sum[th] += s->k->exp_sum(sc, nk, run_max[th]);
                }
                s->k->attn_accum(o, tile_s, ATTN_TILE, group, vp + (a - j0), nk, d);
            }
        }
        for (int32_t t = 0; t < n; t++)
            for (int32_t h = 0; h < group; h++) {
                const size_t th = (size_t)t * group + (size_t)h;
                const float inv = 1.0f / run_sum[th];
                float *dst = out + t * s->out_stride + ((int64_t)g * group + h) * d;
                for (int32_t i = 0; i < d; i++) dst[i] = acc[th * (size_t)d + i] * inv;
            }
    }
}

typedef struct attn_task {
    const kv_layer *L;
    const attn_shape *shape;
    int64_t p0;
    int32_t n;
    const float *q, *k, *v;
    float *out, *scratch;
    size_t scratch_stride;
} attn_task;

static void run_attention(void *p, int part, int n_parts, int worker)
{
    const attn_task *t = p;
    int64_t g0, g1;
    pool_split(t->shape->n_kv_heads, 1, part, n_parts, &g0, &g1);
    if (g0 < g1)
        attn_chunk(t->L, t->shape, (int32_t)g0, (int32_t)g1, t->p0, t->n, t->q, t->k, t->v, t->out,
                   t->scratch + (size_t)worker * t->scratch_stride);
}

void attn_run(ember_pool *pool, const kv_layer *L, const attn_shape *s, int64_t p0, int32_t n,
              const float *q, const float *k_new, const float *v_new, float *out, float *scratch,
              size_t scratch_stride)
{
    attn_task task = {L, s, p0, n, q, k_new, v_new, out, scratch, scratch_stride};
    pool_run(pool, run_attention, &task, s->n_kv_heads); /* one part per kv head */
}
