#include "llm/kv.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

ember_status kv_cache_init(kv_cache *kv, const spark_config *c, int32_t max_context)
{
    memset(kv, 0, sizeof *kv);
    kv->n_layers = c->n_layers;
    kv->kv_heads = c->n_kv_heads;
    kv->head_dim = c->head_dim;
    size_t per_slot = (size_t)c->n_kv_heads * (size_t)c->head_dim; /* floats, K or V */
    size_t total = 0;
    for (int32_t i = 0; i < c->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        if (c->layer_type[i] == SPARK_SLIDING) {
            L->window = c->sliding_window;
            L->capacity = c->sliding_window - 1 < max_context ? c->sliding_window - 1
                                                               : max_context;
        } else {
            L->window = 0;
            L->capacity = max_context;
        }
        total += 2 * per_slot * (size_t)L->capacity;
    }
    kv->bytes = total * sizeof(float);
    kv->block = malloc(kv->bytes ? kv->bytes : 1);
    if (!kv->block)
        return ember_fail(EMBER_ERR_NO_MEMORY, "KV cache: cannot allocate %zu bytes", kv->bytes);
    float *p = kv->block;
    for (int32_t i = 0; i < c->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        L->k = p;
        p += per_slot * (size_t)L->capacity;
        L->v = p;
        p += per_slot * (size_t)L->capacity;
    }
    return EMBER_OK;
}

void kv_cache_free(kv_cache *kv)
{
    free(kv->block);
    memset(kv, 0, sizeof *kv);
}

void kv_store(kv_layer *L, int32_t kv_heads, int32_t head_dim, int64_t p0, int32_t n,
              const float *k_new, const float *v_new, int64_t stride)
{
    int32_t first = L->window && n > L->capacity ? n - L->capacity : 0;
    size_t d = (size_t)head_dim;
    for (int32_t t = first; t < n; t++) {
        int32_t slot = kv_slot(L, p0 + t);
        for (int32_t g = 0; g < kv_heads; g++) {
            size_t dst = ((size_t)g * (size_t)L->capacity + (size_t)slot) * d;
            memcpy(L->k + dst, k_new + t * stride + (int64_t)g * head_dim, d * sizeof(float));
            memcpy(L->v + dst, v_new + t * stride + (int64_t)g * head_dim, d * sizeof(float));
        }
    }
}
