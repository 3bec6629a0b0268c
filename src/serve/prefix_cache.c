#include "serve/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    ember_session *s;
    int32_t *tokens;
    size_t n;
    llm_ring_snapshot snaps[SV_PREFIX_MAX_SNAPSHOTS]; /* by increasing position */
    int n_snaps;
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
    for (int k = 0; k < e->n_snaps; k++) llm_ring_snapshot_free(&e->snaps[k]);
    c->bytes -= e->bytes;
    c->entries[i] = c->entries[--c->n];
}

static void report(sv_prefix_cache *c)
{
    int64_t snaps = 0;
    for (int i = 0; i < c->n; i++) snaps += c->entries[i].n_snaps;
    pthread_mutex_lock(&c->metrics->mu);
    c->metrics->prefix_entries = c->n;
    c->metrics->prefix_bytes = (int64_t)c->bytes;
    c->metrics->prefix_snapshots = snaps;
    pthread_mutex_unlock(&c->metrics->mu);
}

/* Adds snap (taken at a position the entry holds) to e in position order,
 * taking its rows; a position e has already keeps the one it has. When e
 * is full the earliest position goes (the new one, if it is earliest). */
static void add_snapshot(entry *e, llm_ring_snapshot *snap)
{
    int at = 0;
    while (at < e->n_snaps && e->snaps[at].pos < snap->pos) at++;
    if (snap->pos <= 0 || (at < e->n_snaps && e->snaps[at].pos == snap->pos) ||
        (e->n_snaps == SV_PREFIX_MAX_SNAPSHOTS && at == 0)) {
        llm_ring_snapshot_free(snap);
        return;
    }
    if (e->n_snaps == SV_PREFIX_MAX_SNAPSHOTS) {
        llm_ring_snapshot_free(&e->snaps[0]);
        memmove(e->snaps, e->snaps + 1, (size_t)--e->n_snaps * sizeof *e->snaps);
        at--;
    }
    memmove(e->snaps + at + 1, e->snaps + at, (size_t)(e->n_snaps - at) * sizeof *e->snaps);
    e->snaps[at] = *snap;
    e->n_snaps++;
    memset(snap, 0, sizeof *snap);
}

static size_t snapshot_bytes(const entry *e)
{
    size_t bytes = 0;
    for (int k = 0; k < e->n_snaps; k++) bytes += e->snaps[k].bytes;
    return bytes;
}

void sv_prefix_cache_free(sv_prefix_cache *c)
{
    if (!c) return;
    while (c->n) drop(c, 0);
    free(c->entries);
    free(c);
}

void sv_prefix_cache_put(sv_prefix_cache *c, ember_session *s, int32_t *tokens, size_t n,
                         llm_ring_snapshot *snaps, size_t n_snaps)
{
    entry e = {s, tokens, n, {{0}}, 0, 0, 0};
    for (size_t k = 0; k < n_snaps; k++) add_snapshot(&e, &snaps[k]);
    if (c && c->max_bytes && n) {
        /* an entry this one extends (the same conversation, a turn older)
         * is superseded: its snapshots are positions this one holds too */
        for (int i = 0; i < c->n;) {
            entry *old = &c->entries[i];
            if (old->n <= n && !memcmp(old->tokens, tokens, old->n * sizeof *tokens)) {
                for (int k = 0; k < old->n_snaps; k++) add_snapshot(&e, &old->snaps[k]);
                old->n_snaps = 0;
                drop(c, i);
            } else {
                i++;
            }
        }
    }
    e.bytes = ember_session_cache_bytes(s) + snapshot_bytes(&e) + n * sizeof *tokens;
    if (!c || e.bytes > c->max_bytes || n == 0) {
        ember_session_free(s);
        free(tokens);
        for (int k = 0; k < e.n_snaps; k++) llm_ring_snapshot_free(&e.snaps[k]);
        if (c) report(c);
        return;
    }
    while (c->n && (c->n == c->max_entries || c->bytes + e.bytes > c->max_bytes)) {
        int lru = 0;
        for (int i = 1; i < c->n; i++)
            if (c->entries[i].used < c->entries[lru].used) lru = i;
        drop(c, lru);
    }
    e.used = ++c->clock;
    c->entries[c->n++] = e;
    c->bytes += e.bytes;
    report(c);
}

size_t sv_prefix_cache_resume(sv_prefix_cache *c, ember_session *dst, const int32_t *prompt,
                              size_t n_prompt)
{
    if (!c || c->max_bytes == 0 || n_prompt < 2) return 0;
    int best = -1;
    size_t best_at = 0;
    const llm_ring_snapshot *best_snap = NULL;
    for (int i = 0; i < c->n; i++) {
        const entry *e = &c->entries[i];
        const llm_ring_snapshot *snap;
        size_t same = 0, limit = e->n < n_prompt - 1 ? e->n : n_prompt - 1;
        while (same < limit && e->tokens[same] == prompt[same]) same++;
        size_t at = llm_resume_point(e->n, e->snaps, (size_t)e->n_snaps, same, &snap);
        if (at > best_at) {
            best_at = at;
            best = i;
            best_snap = snap;
        }
    }
    size_t resumed = 0;
    if (best >= 0) {
        entry *e = &c->entries[best];
        if (llm_session_resume(dst, e->s, (int64_t)best_at, best_snap) == EMBER_OK) {
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
