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

void attn_chunk_rows(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                     int32_t n, int32_t t0, int32_t t1, const float *q, const float *k_new,
                     const float *v_new, float *out, float *scratch)
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
     * query's window start up to p0, then the chunk's own positions. Queries
     * [t0, t1) see a part of them; their tiles stay on the grid the whole
     * chunk's start at, so each query meets the same tiles (and sums in the
     * same order) whichever rows it is computed with. */
    const int64_t chunk_lo = first_visible(L, p0), key_hi = p0 + t1;
    const int64_t key_lo =
        chunk_lo + (first_visible(L, p0 + t0) - chunk_lo) / ATTN_TILE * ATTN_TILE;
    (void)n;

    for (int32_t g = g0; g < g1; g++) {
        const int32_t rows = t1 - t0;
        for (int64_t i = 0; i < (int64_t)rows * group; i++) {
            run_max[i] = -INFINITY;
            run_sum[i] = 0.0f;
        }
        memset(acc, 0, (size_t)rows * (size_t)group * (size_t)d * sizeof(float));

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
            for (int32_t t = t0; t < t1; t++) {
                const int64_t pos = p0 + t, lo = first_visible(L, pos);
                const int64_t a = lo > j0 ? lo : j0, b = pos + 1 < j1 ? pos + 1 : j1;
                if (a >= b) continue;
                const int nk = (int)(b - a);
                const float *qg = q + t * s->q_stride + (int64_t)g * group * d;
                float *o = acc + (size_t)(t - t0) * group * d; /* the group's heads, d apart */
                s->k->attn_scores(tile_s, ATTN_TILE, qg, group, kp + (a - j0), nk, d, scale);
                for (int32_t h = 0; h < group; h++) {
                    const size_t th = (size_t)(t - t0) * group + (size_t)h;
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
        for (int32_t t = t0; t < t1; t++)
            for (int32_t h = 0; h < group; h++) {
                const size_t th = (size_t)(t - t0) * group + (size_t)h;
                const float inv = 1.0f / run_sum[th];
                float *dst = out + t * s->out_stride + ((int64_t)g * group + h) * d;
                for (int32_t i = 0; i < d; i++) dst[i] = acc[th * (size_t)d + i] * inv;
            }
    }
}

void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scratch)
{
    attn_chunk_rows(L, s, g0, g1, p0, n, 0, n, q, k_new, v_new, out, scratch);
}

typedef struct attn_task {
    const kv_layer *L;
    const attn_shape *shape;
    int64_t p0;
    int32_t n;
    const float *q, *k, *v;
    float *out, *scratch;
    size_t scratch_stride;
    int32_t row_parts; /* parts per kv head, each a range of the queries */
} attn_task;

static void run_attention(void *p, int part, int n_parts, int worker)
{
    const attn_task *t = p;
    int64_t r0, r1;
    const int32_t g = part / t->row_parts;
    (void)n_parts;
    pool_split(t->n, 1, part % t->row_parts, t->row_parts, &r0, &r1);
    if (r0 < r1)
        attn_chunk_rows(t->L, t->shape, g, g + 1, t->p0, t->n, (int32_t)r0, (int32_t)r1, t->q,
                        t->k, t->v, t->out, t->scratch + (size_t)worker * t->scratch_stride);
}

/* A prefill chunk has few kv heads (2 at the 1.7B shape) for its workers:
 * one part per kv head left a worker that came late with nothing, or the
 * two with one head each however uneven their progress. Each kv head's
 * queries are split into ranges too, about 4 parts per worker in all;
 * below MIN_ROWS queries a part per kv head, as before. */
#define MIN_ROWS 16

void attn_run(ember_pool *pool, const kv_layer *L, const attn_shape *s, int64_t p0, int32_t n,
              const float *q, const float *k_new, const float *v_new, float *out, float *scratch,
              size_t scratch_stride)
{
    int32_t row_parts = (4 * pool_size(pool) + s->n_kv_heads - 1) / s->n_kv_heads;
    if (row_parts > n / (MIN_ROWS / 2)) row_parts = n / (MIN_ROWS / 2);
    if (row_parts < 1 || n < MIN_ROWS) row_parts = 1;
    attn_task task = {L, s, p0, n, q, k_new, v_new, out, scratch, scratch_stride, row_parts};
    pool_run(pool, run_attention, &task, s->n_kv_heads * row_parts);
}
