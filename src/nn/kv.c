#include "nn/kv.h"

#include "base/large_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"

/* Slots of layer i: a sliding layer's ring, at most window-1. */
static int32_t layer_slots(const kv_shape *c, int32_t i, int32_t max_context)
{
    return c->window[i] && c->window[i] - 1 < max_context ? c->window[i] - 1 : max_context;
}

ember_status kv_cache_init(kv_cache *kv, const kv_shape *c, int32_t max_context,
                           et_dtype type)
{
    memset(kv, 0, sizeof *kv);
    if (type != ET_F32 && type != ET_F16 && type != ET_Q8_0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "KV cache: format %s is not supported",
                          et_dtype_name(type));
    if (c->n_layers < 0 || c->n_layers > KV_MAX_LAYERS)
        return ember_fail(EMBER_ERR_INVALID_ARG, "KV cache: %d layers (at most %d)", c->n_layers, KV_MAX_LAYERS);
    if (c->head_dim % ek_format_of(type)->block)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "KV cache: head_dim %d is not a multiple of %d",
                          c->head_dim, ek_format_of(type)->block);
    const size_t row_bytes = ek_row_bytes(type, c->head_dim);
    kv->n_layers = c->n_layers;
    kv->kv_heads = c->kv_heads;
    kv->head_dim = c->head_dim;
    const size_t per_slot = (size_t)c->kv_heads * row_bytes; /* bytes, K or V */
    size_t total = 0;
    for (int32_t i = 0; i < c->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        L->window = c->window[i];
        L->capacity = layer_slots(c, i, max_context);
        total += 2 * per_slot * (size_t)L->capacity;
    }
    kv->bytes = total; /* == kv_cache_bytes_for(c, max_context, type) */
    kv->block = ember_large_alloc(kv->bytes);
    if (!kv->block)
        return ember_fail(EMBER_ERR_NO_MEMORY, "KV cache: cannot allocate %zu bytes", kv->bytes);
    char *p = kv->block;
    for (int32_t i = 0; i < c->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        L->type = type;
        L->row_bytes = row_bytes;
        L->k = p;
        p += per_slot * (size_t)L->capacity;
        L->v = p;
        p += per_slot * (size_t)L->capacity;
    }
    return EMBER_OK;
}

size_t kv_cache_bytes_for(const kv_shape *c, int32_t max_context, et_dtype type)
{
    const size_t per_slot = (size_t)c->kv_heads * ek_row_bytes(type, c->head_dim);
    size_t total = 0;
    for (int32_t i = 0; i < c->n_layers && i < KV_MAX_LAYERS; i++)
        total += 2 * per_slot * (size_t)layer_slots(c, i, max_context);
    return total;
}

void kv_cache_free(kv_cache *kv)
{
    free(kv->block);
    memset(kv, 0, sizeof *kv);
}

const float *kv_row(const kv_layer *L, const void *base, int32_t head_dim, int32_t g, int32_t slot,
                    ek_to_f32_fn to_f32, float *tmp)
{
    const char *row = (const char *)base + ((size_t)g * (size_t)L->capacity + (size_t)slot) * L->row_bytes;
    if (L->type == ET_F32) return (const float *)row;
    to_f32(row, tmp, head_dim);
    return tmp;
}

void kv_store(kv_layer *L, int32_t kv_heads, int32_t head_dim, int64_t p0, int32_t n,
              const float *k_new, const float *v_new, int64_t stride)
{
    int32_t first = L->window && n > L->capacity ? n - L->capacity : 0;
    const ek_format *f = ek_format_of(L->type);
    for (int32_t t = first; t < n; t++) {
        int32_t slot = kv_slot(L, p0 + t);
        for (int32_t g = 0; g < kv_heads; g++) {
            size_t dst = ((size_t)g * (size_t)L->capacity + (size_t)slot) * L->row_bytes;
            f->from_f32(k_new + t * stride + (int64_t)g * head_dim, (char *)L->k + dst, head_dim);
            f->from_f32(v_new + t * stride + (int64_t)g * head_dim, (char *)L->v + dst, head_dim);
        }
    }
}
