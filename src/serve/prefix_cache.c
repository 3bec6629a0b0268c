#include "serve/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    ember_session *s;
    int32_t *tokens;
    size_t n;
    llm_ring_snapshot snap;
    size_t bytes;
    uint64_t used; /* the cache's clock at the last hit or insert */
} entry;

struct sv_prefix_cache {
    size_t max_bytes, bytes;
    int max_entries, n;
    entry *entries;
    uint64_t clock;
    sv_metrics *metrics;
};

sv_prefix_cache *sv_prefix_cache_create(size_t max_bytes, int max_entries, sv_metrics *metrics)
{
    sv_prefix_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->max_bytes = max_bytes;
    c->max_entries = max_entries > 0 ? max_entries : 1;
    c->metrics = metrics;
    if (!(c->entries = calloc((size_t)c->max_entries, sizeof *c->entries))) {
        free(c);
        return NULL;
    }
    return c;
}

static void drop(sv_prefix_cache *c, int i)
{
    entry *e = &c->entries[i];
    ember_session_free(e->s);
    free(e->tokens);
    llm_ring_snapshot_free(&e->snap);
    c->bytes -= e->bytes;
    c->entries[i] = c->entries[--c->n];
}

static void report(sv_prefix_cache *c)
{
    pthread_mutex_lock(&c->metrics->mu);
    c->metrics->prefix_entries = c->n;
    c->metrics->prefix_bytes = (int64_t)c->bytes;
    pthread_mutex_unlock(&c->metrics->mu);
}

void sv_prefix_cache_free(sv_prefix_cache *c)
{
    if (!c) return;
    while (c->n) drop(c, 0);
    free(c->entries);
    free(c);
}

void sv_prefix_cache_put(sv_prefix_cache *c, ember_session *s, int32_t *tokens, size_t n,
                         llm_ring_snapshot *snap)
{
    size_t bytes = ember_session_cache_bytes(s) + snap->bytes + n * sizeof *tokens;
    if (!c || bytes > c->max_bytes || n == 0) {
        ember_session_free(s);
        free(tokens);
        llm_ring_snapshot_free(snap);
        return;
    }
    /* an entry this one extends (the same conversation, one turn older)
     * is superseded: drop it first */
    for (int i = 0; i < c->n;)
        if (c->entries[i].n <= n && !memcmp(c->entries[i].tokens, tokens, c->entries[i].n * sizeof *tokens))
            drop(c, i);
        else
            i++;
    while (c->n && (c->n == c->max_entries || c->bytes + bytes > c->max_bytes)) {
        int lru = 0;
        for (int i = 1; i < c->n; i++)
            if (c->entries[i].used < c->entries[lru].used) lru = i;
        drop(c, lru);
    }
    entry *e = &c->entries[c->n++];
    e->s = s;
    e->tokens = tokens;
    e->n = n;
    e->snap = *snap;
    memset(snap, 0, sizeof *snap);
    e->bytes = bytes;
    e->used = ++c->clock;
    c->bytes += bytes;
    report(c);
}

size_t sv_prefix_cache_resume(sv_prefix_cache *c, ember_session *dst, const int32_t *prompt,
                              size_t n_prompt)
{
    if (!c || c->max_bytes == 0 || n_prompt < 2) return 0;
    int best = -1;
    size_t best_at = 0;
    for (int i = 0; i < c->n; i++) {
        const entry *e = &c->entries[i];
        size_t same = 0, limit = e->n < n_prompt - 1 ? e->n : n_prompt - 1;
        while (same < limit && e->tokens[same] == prompt[same]) same++;
        /* the entry's end when the prompt extends all of it; else the
         * snapshot, when the prompt agrees that far */
        size_t at = same == e->n ? e->n : (e->snap.pos > 0 && (size_t)e->snap.pos <= same ? (size_t)e->snap.pos : 0);
        if (at > best_at) {
            best_at = at;
            best = i;
        }
    }
    size_t resumed = 0;
    if (best >= 0) {
        entry *e = &c->entries[best];
        const llm_ring_snapshot *snap = best_at < e->n ? &e->snap : NULL;
        if (llm_session_resume(dst, e->s, (int64_t)best_at, snap) == EMBER_OK) {
            resumed = best_at;
            e->used = ++c->clock;
        }
    }
    pthread_mutex_lock(&c->metrics->mu);
    if (resumed) {
        c->metrics->prefix_hits++;
        c->metrics->prefix_tokens_reused += resumed;
        c->metrics->prompt_tokens_run -= resumed;
    } else {
        c->metrics->prefix_misses++;
    }
    pthread_mutex_unlock(&c->metrics->mu);
    return resumed;
}
