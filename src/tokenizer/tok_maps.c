/* The two hash tables behind encoding: token string -> id, and
 * (left id, right id) -> (merge rank, merged id). Open addressing with
 * linear probing; both are built once at load and only read afterwards. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

uint64_t tok_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return h;
}

/* Power of two with a load factor of at most 2/3: linear probing stays
 * short, and the tables stay small enough that building them touches
 * (page-faults) little memory. */
static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < n + n / 2) cap *= 2;
    return cap;
}

/* A slot carries the string's pool offset and length besides its id and 32
 * more bits of the hash: a probe is rejected or confirmed from the slot and
 * the pool alone, without going through the per-id arrays (a cache miss
 * each, on a table this size). */
static bool slot_is(const et_tokenizer *t, const tok_map_slot *e, uint32_t tag, const char *s, size_t n)
{
    return e->tag == tag && e->len == n && !memcmp(t->pool + e->off, s, n);
}

void tok_map_prefetch(const et_tokenizer *t, uint64_t h)
{
    __builtin_prefetch(&t->map[h & t->map_mask]);
}

int32_t tok_map_find_hashed(const et_tokenizer *t, const char *s, size_t n, uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t i = h & t->map_mask;; i = (i + 1) & t->map_mask) {
        const tok_map_slot *e = &t->map[i];
        if (!e->id1) return TOK_NO_ID;
        if (slot_is(t, e, tag, s, n)) return (int32_t)(e->id1 - 1);
    }
}

int32_t tok_map_find(const et_tokenizer *t, const char *s, size_t n)
{
    return tok_map_find_hashed(t, s, n, tok_hash_bytes(s, n));
}

static void set_hashed(et_tokenizer *t, int32_t id, uint64_t h)
{
    const char *s = t->pool + t->tok_off[id];
    size_t n = t->tok_len[id];
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = h & t->map_mask;
    while (t->map[i].id1 && !slot_is(t, &t->map[i], tag, s, n)) i = (i + 1) & t->map_mask;
    t->map[i] = (tok_map_slot){tag, (uint32_t)id + 1, t->tok_off[id], (uint32_t)n};
}

void tok_map_set(et_tokenizer *t, int32_t id)
{
    set_hashed(t, id, tok_hash_bytes(t->pool + t->tok_off[id], t->tok_len[id]));
}

/* Inserts every id in order; the loader then sets the added tokens again so
 * that they win over a vocabulary entry with the same string (transformers
 * does the same). */
ember_status tok_map_build(et_tokenizer *t)
{
    size_t cap = table_size(t->n_ids);
    t->map = calloc(cap, sizeof *t->map);
    if (!t->map) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (map)");
    t->map_mask = cap - 1;
    /* in blocks, prefetching each block's slots first (see tok_map_prefetch) */
    enum { BLOCK = 32 };
    uint64_t h[BLOCK];
    for (size_t base = 0; base < t->n_ids; base += BLOCK) {
        size_t n = t->n_ids - base < BLOCK ? t->n_ids - base : BLOCK;
        for (size_t k = 0; k < n; k++) {
            size_t id = base + k;
            if (t->tok_off[id] == UINT32_MAX) continue;
            h[k] = tok_hash_bytes(t->pool + t->tok_off[id], t->tok_len[id]);
            tok_map_prefetch(t, h[k]);
        }
        for (size_t k = 0; k < n; k++)
            if (t->tok_off[base + k] != UINT32_MAX) set_hashed(t, (int32_t)(base + k), h[k]);
    }
    return EMBER_OK;
}

static size_t hash_pair(int32_t a, int32_t b)
{
    uint64_t h = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return (size_t)h;
}

ember_status tok_merges_alloc(et_tokenizer *t, size_t n_merges)
{
    size_t cap = table_size(n_merges);
    t->merges = malloc(cap * sizeof *t->merges);
    if (!t->merges) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (merges)");
    for (size_t i = 0; i < cap; i++) t->merges[i].merged = TOK_NO_ID;
    t->merge_mask = cap - 1;
    return EMBER_OK;
}

/* A later duplicate of a pair overwrites the earlier one, as Hugging Face's
 * tokenizers and transformers.js both do when they build their tables. */
void tok_merge_prefetch(const et_tokenizer *t, int32_t left, int32_t right)
{
    __builtin_prefetch(&t->merges[hash_pair(left, right) & t->merge_mask]);
}

void tok_merge_put(et_tokenizer *t, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
    size_t i = hash_pair(left, right) & t->merge_mask;
    while (t->merges[i].merged != TOK_NO_ID &&
           !(t->merges[i].left == (uint32_t)left && t->merges[i].right == (uint32_t)right))
        i = (i + 1) & t->merge_mask;
    t->merges[i] = (tok_merge){(uint32_t)left, (uint32_t)right, rank, merged};
}

const tok_merge *tok_merge_find(const et_tokenizer *t, int32_t left, int32_t right)
{
    if (!t->merges) return NULL;
    size_t i = hash_pair(left, right) & t->merge_mask;
    for (;;) {
        const tok_merge *m = &t->merges[i];
        if (m->merged == TOK_NO_ID) return NULL;
        if (m->left == (uint32_t)left && m->right == (uint32_t)right) return m;
        i = (i + 1) & t->merge_mask;
    }
}
