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

ember_status kv_undo_init(kv_undo *u, const kv_cache *kv, int32_t max_rows)
{
    memset(u, 0, sizeof *u);
    if (max_rows < 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "KV undo: %d rows (at least 1)", max_rows);
    size_t total = 0;
    for (int32_t i = 0; i < kv->n_layers; i++)
        if (kv->layers[i].window)
            total += 2 * (size_t)kv->kv_heads * (size_t)max_rows * kv->layers[i].row_bytes;
    u->max_rows = max_rows;
    u->bytes = total;
    if (total && !(u->rows = malloc(total)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "KV undo: cannot allocate %zu bytes", total);
    return EMBER_OK;
}

void kv_undo_free(kv_undo *u)
{
    free(u->rows);
    memset(u, 0, sizeof *u);
}

int32_t kv_undo_limit(const kv_undo *u, const kv_cache *kv)
{
    int32_t limit = u->max_rows;
    for (int32_t i = 0; i < kv->n_layers; i++)
        if (kv->layers[i].window && kv->layers[i].capacity < limit) limit = kv->layers[i].capacity;
    return limit;
}

/* Copies row t of the chunk at u->p0 between layer L's slot and the undo
 * buffer `saved` ([kv_head][max_rows] rows of K, then of V). */
static void undo_copy_row(const kv_undo *u, kv_layer *L, int32_t kv_heads, char *saved, int32_t t,
                          int to_cache)
{
    const int32_t slot = kv_slot(L, u->p0 + t);
    for (int side = 0; side < 2; side++)
        for (int32_t g = 0; g < kv_heads; g++) {
            char *cache = (char *)(side ? L->v : L->k) +
                          ((size_t)g * (size_t)L->capacity + (size_t)slot) * L->row_bytes;
            char *keep = saved + (((size_t)side * (size_t)kv_heads + (size_t)g) * (size_t)u->max_rows +
                                  (size_t)t) * L->row_bytes;
            if (to_cache)
                memcpy(cache, keep, L->row_bytes);
            else
                memcpy(keep, cache, L->row_bytes);
        }
}

void kv_undo_save(kv_undo *u, kv_cache *kv, int64_t p0, int32_t n)
{
    u->p0 = p0;
    u->n = n;
    char *saved = u->rows;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        kv_layer *L = &kv->layers[i]; /* read only here */
        if (!L->window) continue;
        for (int32_t t = 0; t < n; t++) undo_copy_row(u, L, kv->kv_heads, saved, t, 0);
        saved += 2 * (size_t)kv->kv_heads * (size_t)u->max_rows * L->row_bytes;
    }
}

void kv_undo_restore(const kv_undo *u, kv_cache *kv, int32_t keep)
{
    char *saved = u->rows;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        if (!L->window) continue;
        for (int32_t t = keep; t < u->n; t++) undo_copy_row(u, L, kv->kv_heads, saved, t, 1);
        saved += 2 * (size_t)kv->kv_heads * (size_t)u->max_rows * L->row_bytes;
    }
}
