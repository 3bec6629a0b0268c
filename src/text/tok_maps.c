/* The two hash tables behind encoding: token string -> id, and
 * (left id, right id) -> (merge rank, merged id). Open addressing with
 * linear probing; both are built once at load and only read afterwards. */
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"

static uint64_t hash_bytes(const char *s, size_t n)
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

static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    return cap;
}

/* The slot keeps 32 more bits of the hash so that most probes that are not
 * the string are rejected without touching the pool. */
int32_t tok_map_find(const et_tokenizer *t, const char *s, size_t n)
{
    uint64_t h = hash_bytes(s, n);
    uint64_t tag = h >> 32;
    size_t i = h & t->map_mask;
    for (;;) {
        uint64_t slot = t->map[i];
        if (!slot) return TOK_NO_ID;
        int32_t id = (int32_t)(uint32_t)slot - 1;
        if (slot >> 32 == tag && t->tok_len[id] == n && !memcmp(t->pool + t->tok_off[id], s, n)) return id;
        i = (i + 1) & t->map_mask;
    }
}

void tok_map_set(et_tokenizer *t, int32_t id)
{
    const char *s = t->pool + t->tok_off[id];
    size_t n = t->tok_len[id];
    uint64_t h = hash_bytes(s, n);
    uint64_t tag = h >> 32;
    size_t i = h & t->map_mask;
    for (;;) {
        uint64_t slot = t->map[i];
        if (!slot) break;
        int32_t cur = (int32_t)(uint32_t)slot - 1;
        if (slot >> 32 == tag && t->tok_len[cur] == n && !memcmp(t->pool + t->tok_off[cur], s, n)) break;
        i = (i + 1) & t->map_mask;
    }
    t->map[i] = tag << 32 | (uint32_t)(id + 1);
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
    for (size_t id = 0; id < t->n_ids; id++)
        if (t->tok_off[id] != UINT32_MAX) tok_map_set(t, (int32_t)id);
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
