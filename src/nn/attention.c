#include "nn/attention.h"

#include <math.h>
#include <string.h>

#include "base/pool.h"


/* Queries whose scores of a key tile are computed before any of them is
 * softmaxed and summed: a block of them walks the tile's K (and V) rows in
 * runs of ATTN_RUN keys, each run read once from L2 into L1 for the whole
 * block, and the kernels take so short a run as hot (matmul.h). One query at
 * a time read the whole tile from L2 per query (256 keys of 256 floats, 256
 * KiB, more than L1 holds). Each block reads the tile's K and V rows again
 * (512 KiB at the 1.7B shape): 32 queries, there a whole part of a 128-token
 * chunk (attn_run), read them a quarter as often as 8 did, and prefill ran
 * 1.03-1.06x faster (1.7B q8_0 and q4_0, prompt 512, 2 threads, 4
 * alternating runs; 4 queries lost 3%). */
enum { ATTN_QUERY_BLOCK = 32, ATTN_RUN = EK_ATTN_HOT_KEYS };

size_t attn_scratch_floats(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t n)
{
    const size_t group = (size_t)(n_heads / n_kv_heads), d = (size_t)head_dim;
    /* acc + running max + running sum per (token, head); a query block's
     * tile of scores; one tile of converted K and V rows */
    return (size_t)n * group * (d + 2) + ATTN_QUERY_BLOCK * group * ATTN_TILE + 2 * ATTN_TILE * d;
}

/* The first position a query at `pos` sees. */
static int64_t first_visible(const kv_layer *L, int64_t pos)
{
    return L->window && pos - L->window + 1 > 0 ? pos - L->window + 1 : 0;
}

/* Softmax bookkeeping of one query head over its scores of a tile, sc[0..nk):
 * sc becomes exp(score - running maximum) and joins the running sum; what
 * was summed under an older, smaller maximum (the head's d outputs `oh`
 * and its sum) is rescaled first. */
static void online_softmax(const attn_shape *s, float *sc, int nk, float *run_max, float *run_sum,
                           float *oh)
{
    /* eight running maxima (independent, so vectorized), then their maximum */
    float lane[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                     -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int j = 0;
    for (; j + 8 <= nk; j += 8)
        for (int k = 0; k < 8; k++) lane[k] = sc[j + k] > lane[k] ? sc[j + k] : lane[k];
    for (; j < nk; j++) lane[0] = sc[j] > lane[0] ? sc[j] : lane[0];
    float tile_max = lane[0];
    for (int k = 1; k < 8; k++) tile_max = lane[k] > tile_max ? lane[k] : tile_max;
    if (tile_max > *run_max) {
        float corr = expf(*run_max - tile_max); /* 0 on the first tile */
        *run_sum *= corr;
        for (int32_t i = 0; i < s->head_dim; i++) oh[i] *= corr;
        *run_max = tile_max;
    }
    *run_sum += s->k->exp_sum(sc, nk, *run_max);
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
    float *tile_s = run_sum + (size_t)n * group;           /* QB x group x ATTN_TILE */
    float *k_conv = tile_s + (size_t)ATTN_QUERY_BLOCK * group * ATTN_TILE; /* ATTN_TILE x d */
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
            for (int32_t tb = t0; tb < t1; tb += ATTN_QUERY_BLOCK) {
                const int32_t te = tb + ATTN_QUERY_BLOCK < t1 ? tb + ATTN_QUERY_BLOCK : t1;
                /* Query t sees keys [a[t], a[t] + nk[t]) of the tile; its
                 * scores sit at sc(t)[h * ATTN_TILE + j - a[t]]. Each call
                 * below takes one run of a query's keys, runs counted from
                 * a[t]: the kernels see the keys grouped as one call over
                 * all of them would (ATTN_RUN is a multiple of their
                 * groups), so the sums do not depend on the runs. */
                int64_t a[ATTN_QUERY_BLOCK];
                int nk[ATTN_QUERY_BLOCK], most = 0;
                /* A lone query (decode) reads its rows once anyway: one call,
                 * in which the kernels prefetch the rows ahead from DRAM. */
                const int run = te - tb > 1 ? ATTN_RUN : ATTN_TILE;
                for (int32_t t = tb; t < te; t++) {
                    const int64_t pos = p0 + t, lo = first_visible(L, pos);
                    const int64_t from = lo > j0 ? lo : j0, to = pos + 1 < j1 ? pos + 1 : j1;
                    a[t - tb] = from;
                    nk[t - tb] = from < to ? (int)(to - from) : 0;
                    most = nk[t - tb] > most ? nk[t - tb] : most;
                }
#define ATTN_SC(t) (tile_s + (size_t)((t) - tb) * group * ATTN_TILE)
#define ATTN_ACC(t) (acc + (size_t)((t) - t0) * group * d) /* the group's heads, d apart */
                for (int r = 0; r < most; r += run)
                    for (int32_t t = tb; t < te; t++) {
                        const int m = nk[t - tb] - r < run ? nk[t - tb] - r : run;
                        if (m <= 0) continue;
                        const float *qg = q + t * s->q_stride + (int64_t)g * group * d;
                        s->k->attn_scores(ATTN_SC(t) + r, ATTN_TILE, qg, group, kp + (a[t - tb] + r - j0), m,
                                          d, scale);
                    }
                for (int32_t t = tb; t < te; t++)
                    for (int32_t h = 0; h < group && nk[t - tb]; h++) {
                        const size_t th = (size_t)(t - t0) * group + (size_t)h;
                        online_softmax(s, ATTN_SC(t) + (size_t)h * ATTN_TILE, nk[t - tb], run_max + th,
                                       run_sum + th, ATTN_ACC(t) + (size_t)h * d);
                    }
                for (int r = 0; r < most; r += run)
                    for (int32_t t = tb; t < te; t++) {
                        const int m = nk[t - tb] - r < run ? nk[t - tb] - r : run;
                        if (m > 0)
                            s->k->attn_accum(ATTN_ACC(t), ATTN_SC(t) + r, ATTN_TILE, group,
                                             vp + (a[t - tb] + r - j0), m, d);
                    }
#undef ATTN_SC
#undef ATTN_ACC
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
