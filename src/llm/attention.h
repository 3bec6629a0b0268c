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
 * holds positions < p0. out row t receives n_heads x head_dim. `scores` must
 * hold L->capacity + n + head_dim floats. Query head h uses kv head h / (heads/kv_heads):
 * the group of queries sharing a kv head is scored against the same K rows.
 * Only query heads [h0, h1) are computed (threads split the heads). */
void attn_chunk(const kv_layer *L, const attn_shape *s, int32_t h0, int32_t h1, int64_t p0,
                int32_t n, const float *q, const float *k_new, const float *v_new, float *out,
                float *scores);

#endif
