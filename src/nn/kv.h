/* Per-layer-type KV caches.
 *
 * A sliding layer's query sees itself and the previous window-1 keys, so its
 * cache is a ring of exactly window-1 slots: position p lives in slot
 * p mod (window-1), and the ring is never reordered (every key carries its own
 * rotary phase, and softmax does not care about order). A full layer's cache
 * is linear, sized once for the session's max_context. Layout per layer:
 * [kv_head][slot][head_dim], fp32. */
#ifndef EMBER_NN_KV_H
#define EMBER_NN_KV_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "io/tensor.h"
#include "kernels/matmul.h"

#define KV_MAX_LAYERS 256

/* What a cache's layout depends on, whichever model owns it. */
typedef struct kv_shape {
    int32_t n_layers, kv_heads, head_dim;
    int32_t window[KV_MAX_LAYERS]; /* per layer: 0 full, else its sliding window */
} kv_shape;

typedef struct kv_layer {
    int32_t capacity; /* slots per kv head */
    int32_t window;   /* sliding window (counts the query itself); 0 = full */
    et_dtype type;    /* ET_F32, ET_F16 or ET_Q8_0 */
    size_t row_bytes; /* one head_dim row in `type` */
    void *k, *v;      /* [kv_heads][capacity] rows */
} kv_layer;

typedef struct kv_cache {
    int32_t n_layers, kv_heads, head_dim;
    kv_layer layers[KV_MAX_LAYERS];
    void *block; /* one allocation holds every layer's K and V */
    size_t bytes;
} kv_cache;

/* Sizes every layer for max_context tokens: full layers get max_context
 * slots, sliding layers min(window-1, max_context). type: ET_F32, ET_F16 or
 * ET_Q8_0 (head_dim a multiple of 32). */
ember_status kv_cache_init(kv_cache *kv, const kv_shape *c, int32_t max_context,
                           et_dtype type);
void kv_cache_free(kv_cache *kv);

/* The bytes kv_cache_init allocates for max_context tokens in `type`: what
 * admission control reserves before creating a session. */
size_t kv_cache_bytes_for(const kv_shape *c, int32_t max_context, et_dtype type);

/* The slot of absolute position pos in layer L. */
static inline int32_t kv_slot(const kv_layer *L, int64_t pos)
{
    return (int32_t)(L->window ? pos % L->capacity : pos);
}

/* The row of kv head g in slot `slot` of K (or V) as fp32: a pointer into
 * the cache for f32, else converted by to_f32 (the kernel set's conversion
 * of the cache's format) into tmp (head_dim floats). */
const float *kv_row(const kv_layer *L, const void *base, int32_t head_dim, int32_t g, int32_t slot,
                    ek_to_f32_fn to_f32, float *tmp);

/* Writes the keys/values of n tokens at positions p0.. into their slots.
 * Rows of k_new/v_new are kv_heads*head_dim floats apart by `stride`. Only
 * the last `capacity` tokens of the chunk can survive in a ring. */
void kv_store(kv_layer *L, int32_t kv_heads, int32_t head_dim, int64_t p0, int32_t n,
              const float *k_new, const float *v_new, int64_t stride);

/* Undo of a speculative chunk's writes into the sliding rings.
 *
 * Verifying K drafted tokens runs K+1 rows at positions p0..p0+K as one
 * chunk, and kv_store writes each into slot p mod (window-1), overwriting
 * position p-(window-1). When only the first `keep` rows are accepted, the
 * next query (at p0+keep) still sees positions down to p0+keep-(window-1),
 * so the entries that rows keep..K overwrote are still needed. We keep the
 * ring at exactly window-1 slots (its size, the state files, the snapshots
 * and the admission arithmetic all rely on it) and instead copy the slots a
 * chunk will overwrite before it runs, then copy back those of the rejected
 * rows: K+1 rows per kv head per sliding layer, nothing cache-sized. A
 * chunk may not exceed a ring's capacity, so no slot is written twice and
 * "the slot's content before the chunk" is the right thing to put back.
 * Full layers need nothing: a rejected row lies past the kept position and
 * is simply written over later. */
typedef struct kv_undo {
    int32_t max_rows; /* the longest chunk it can undo */
    int64_t p0;       /* the chunk saved last */
    int32_t n;
    void *rows;       /* per sliding layer, K then V: [kv_head][row] */
    size_t bytes;
} kv_undo;

/* Sizes an undo for chunks of up to max_rows tokens on kv's layout. */
ember_status kv_undo_init(kv_undo *u, const kv_cache *kv, int32_t max_rows);
void kv_undo_free(kv_undo *u);

/* The longest chunk an undo can serve on kv: max_rows, and no more than
 * any sliding ring's capacity. */
int32_t kv_undo_limit(const kv_undo *u, const kv_cache *kv);

/* Copies the sliding-ring slots that n tokens at p0.. will be stored into
 * (n <= kv_undo_limit). */
void kv_undo_save(kv_undo *u, kv_cache *kv, int64_t p0, int32_t n);

/* After the chunk saved last was stored: puts back the slots of its rows
 * keep..n-1, so the rings hold what they would after storing only the
 * first `keep` rows. */
void kv_undo_restore(const kv_undo *u, kv_cache *kv, int32_t keep);

#endif
