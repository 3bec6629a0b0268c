/* Causal attention of a chunk of queries against a layer's cache plus the
 * chunk's own keys, joined in score space: the cached slots and the new keys
 * are scored in place (the ring is read slot by slot, never reordered), one
 * softmax covers both, and the output sums P_cache V_cache + P_new V_new.
 * Nothing cache-sized is copied. */
#ifndef EMBER_NN_ATTENTION_H
#define EMBER_NN_ATTENTION_H

#include <stdint.h>

#include "base/pool.h"
#include "kernels/matmul.h"
#include "nn/kv.h"

typedef struct attn_shape {
    const ek_kernel_set *k; /* dot and axpy */
    int32_t n_heads, n_kv_heads, head_dim;
    int64_t q_stride;  /* floats between the query rows of consecutive tokens */
    int64_t kv_stride; /* floats between the new key (value) rows of consecutive tokens */
    int64_t out_stride;
} attn_shape;

/* Keys are visited in tiles of this many positions. */
#define ATTN_TILE 256

/* Queries are n tokens at positions p0..p0+n-1 (already rotated), q row t is
 * n_heads x head_dim; k_new/v_new rows are n_kv_heads x head_dim. The cache
 * holds positions < p0. out row t receives n_heads x head_dim.
 *
 * Keys are visited in tiles: each cached or new K/V row is fetched once per
 * chunk for all queries and heads that see it, and the softmax is computed
 * online (a running maximum and sum per query head, rescaled when the maximum
 * grows), so memory is O(n + tile), never O(n x context).
 *
 * GQA by reshaping the query: query head h uses kv head h / (heads/kv_heads),
 * so the heads of one kv head form a (group, head_dim) block scored against
 * the same K rows; K and V are never expanded. Only kv heads [g0, g1) (and
 * their query heads) are computed: threads split the kv heads. `scratch`
 * holds attn_scratch_floats() floats. */
size_t attn_scratch_floats(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t n);
void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scratch);

/* attn_chunk for the chunk's queries [t0, t1) only (their outputs bit for
 * bit those of attn_chunk): threads split a chunk's queries too. */
void attn_chunk_rows(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                     int32_t n, int32_t t0, int32_t t1, const float *q, const float *k_new,
                     const float *v_new, float *out, float *scratch);

/* attn_chunk over all kv heads, split over the pool's workers by whole kv
 * heads (with their query heads) and, for a chunk of many queries, by
 * ranges of them: a cached K/V row is then read by every worker with a range
 * of its kv head. Worker w uses scratch + w * scratch_stride (at least
 * attn_scratch_floats() floats each). */
void attn_run(ember_pool *pool, const kv_layer *L, const attn_shape *s, int64_t p0, int32_t n,
              const float *q, const float *k_new, const float *v_new, float *out, float *scratch,
              size_t scratch_stride);

#endif
