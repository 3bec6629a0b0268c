/* Causal attention of a chunk of queries against a layer's cache plus the
 * chunk's own keys, joined in score space: the cached slots and the new keys
 * are scored separately, one softmax covers both, and the output sums
 * P_cache V_cache + P_new V_new. Nothing cache-sized is copied. */
#ifndef EMBER_LLM_ATTENTION_H
#define EMBER_LLM_ATTENTION_H

#include <stdint.h>

#include "llm/kv.h"

typedef struct attn_shape {
    int32_t n_heads, n_kv_heads, head_dim;
    int64_t q_stride;  /* floats between the query rows of consecutive tokens */
    int64_t kv_stride; /* floats between the new key (value) rows of consecutive tokens */
    int64_t out_stride;
} attn_shape;

/* Queries are n tokens at positions p0..p0+n-1 (already rotated), q row t is
 * n_heads x head_dim; k_new/v_new rows are n_kv_heads x head_dim. The cache
 * holds positions < p0. out row t receives n_heads x head_dim.
 *
 * GQA by reshaping the query: query head h uses kv head h / (heads/kv_heads),
 * so the heads of one kv head form a (group, head_dim) block scored against
 * the same K rows; K and V are never expanded. Only kv heads [g0, g1) (and
 * their query heads) are computed: threads split the kv heads. `scores` must
 * hold group x (L->capacity + n) + head_dim floats. */
void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t g0, int32_t g1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scores);

#endif
