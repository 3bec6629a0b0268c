#include "serve/prefix_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/checksum.h"
#include "base/status.h"
#include "io/write_file.h"
#include "llm/state_file.h"

typedef struct entry {
    ember_session *s;
    int32_t *tokens;
    size_t n;
    llm_ring_snapshot snaps[SV_PREFIX_MAX_SNAPSHOTS]; /* by increasing position */
    int n_snaps;
    size_t bytes;
    uint64_t used; /* the cache's clock at the last hit or insert */
    char *file;    /* its prompt-cache file; NULL: in memory only */
} entry;

struct sv_prefix_cache {
    size_t max_bytes, bytes;
    int max_entries, n;
    entry *entries;
    uint64_t clock;
    sv_metrics *metrics;
    char *dir; /* sv_prefix_cache_persist's; NULL: memory only */
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

/* Frees entry i; with forget, its file goes too (an eviction, not a
 * shutdown). */
static void entry_free(entry *e, int forget)
{
    if (e->file && forget) unlink(e->file);
    free(e->file);
    ember_session_free(e->s);
    free(e->tokens);
    for (int k = 0; k < e->n_snaps; k++) llm_ring_snapshot_free(&e->snaps[k]);
}

static void drop(sv_prefix_cache *c, int i, int forget)
{
    entry *e = &c->entries[i];
    entry_free(e, forget);
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
    while (c->n) drop(c, 0, 0);
    free(c->entries);
    free(c->dir);
    free(c);
}

/* Evicts the least recently used entries until one of `bytes` fits. */
static void make_room(sv_prefix_cache *c, size_t bytes)
{
    while (c->n && (c->n == c->max_entries || c->bytes + bytes > c->max_bytes)) {
        int lru = 0;
        for (int i = 1; i < c->n; i++)
            if (c->entries[i].used < c->entries[lru].used) lru = i;
        drop(c, lru, 1);
    }
}

/* ".ekv": a prompt-cache file of this cache's; ".ekv.XXXXXX": one whose
 * save was cut short (io_atomic_begin's temporary name). */
static const char EXT[] = ".ekv";

/* Writes e to the directory, named by its tokens' checksum; the path, or
 * NULL when it could not be written (the entry then lives in memory only). */
static char *save_entry(const sv_prefix_cache *c, const entry *e)
{
    size_t cap = strlen(c->dir) + 32;
    char *path = malloc(cap);
    if (!path) return NULL;
    snprintf(path, cap, "%s/%016llx%s", c->dir, (unsigned long long)cksum64_of(e->tokens, e->n * sizeof *e->tokens),
             EXT);
    if (llm_state_save(e->s, e->tokens, e->snaps, (size_t)e->n_snaps, NULL, 0, path)) {
        free(path);
        return NULL;
    }
    return path;
}

void sv_prefix_cache_put(sv_prefix_cache *c, ember_session *s, int32_t *tokens, size_t n,
                         llm_ring_snapshot *snaps, size_t n_snaps)
{
    entry e = {s, tokens, n, {{0}}, 0, 0, 0, NULL};
    for (size_t k = 0; k < n_snaps; k++) add_snapshot(&e, &snaps[k]);
    if (c && c->max_bytes && n) {
        /* an entry this one extends (the same conversation, a turn older)
         * is superseded: its snapshots are positions this one holds too */
        for (int i = 0; i < c->n;) {
            entry *old = &c->entries[i];
            if (old->n <= n && !memcmp(old->tokens, tokens, old->n * sizeof *tokens)) {
                for (int k = 0; k < old->n_snaps; k++) add_snapshot(&e, &old->snaps[k]);
                old->n_snaps = 0;
                drop(c, i, 1);
            } else {
                i++;
            }
        }
    }
    e.bytes = ember_session_cache_bytes(s) + snapshot_bytes(&e) + n * sizeof *tokens;
    if (!c || e.bytes > c->max_bytes || n == 0) {
        entry_free(&e, 0);
        if (c) report(c);
        return;
    }
    make_room(c, e.bytes);
    if (c->dir) e.file = save_entry(c, &e);
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
            if (e->file) utimensat(AT_FDCWD, e->file, NULL, 0); /* the order a restart keeps */
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

typedef struct found {
    char *path;
    struct timespec mtime;
} found;

static int newest_first(const void *a, const void *b)
{
    const struct timespec *x = &((const found *)a)->mtime, *y = &((const found *)b)->mtime;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec) - (x->tv_sec > y->tv_sec)
                                  : (x->tv_nsec < y->tv_nsec) - (x->tv_nsec > y->tv_nsec);
}

/* The ".ekv" files of dir (their paths, malloc'd), newest first; the
 * leftovers of cut-short saves are removed. */
static ember_status list_files(const char *dir, found **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return ember_fail(EMBER_ERR_IO, "%s: cannot open the prefix-cache directory: %s", dir, strerror(errno));
    found *list = NULL;
    size_t n = 0, cap = 0;
    ember_status st = EMBER_OK;
    for (struct dirent *de; !st && (de = readdir(d));) {
        const char *ext = strstr(de->d_name, EXT);
        if (!ext || (ext[4] && strlen(ext) != 11)) continue; /* name.ekv or name.ekv.XXXXXX */
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *path = malloc(len);
        struct stat sb;
        if (!path) {
            st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
            break;
        }
        snprintf(path, len, "%s/%s", dir, de->d_name);
        if (ext[4] || stat(path, &sb) || !S_ISREG(sb.st_mode)) {
            if (ext[4]) unlink(path);
            free(path);
            continue;
        }
        if (n == cap) {
            found *grown = realloc(list, (cap = cap ? 2 * cap : 16) * sizeof *list);
            if (!grown) {
                free(path);
                st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
                break;
            }
            list = grown;
        }
        list[n].path = path;
        list[n++].mtime = sb.st_mtim;
    }
    closedir(d);
    if (st) {
        while (n) free(list[--n].path);
        free(list);
        return st;
    }
    if (n) qsort(list, n, sizeof *list, newest_first);
    *out = list;
    *n_out = n;
    return EMBER_OK;
}

/* Reads one file into an entry (a session sized to its tokens). 0 when it
 * does not load here. */
static int load_entry(const char *path, const ember_model *m, ember_type kv_type, entry *e)
{
    memset(e, 0, sizeof *e);
    size_t n = 0;
    if (llm_state_peek(path, &n) || n == 0) return 0;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = (int32_t)n;
    sp.n_threads = 1;
    sp.prefill_chunk = 1;
    sp.kv_type = kv_type;
    llm_saved saved;
    if (ember_session_create(m, &sp, &e->s)) return 0;
    if (llm_state_load(e->s, path, &saved)) {
        ember_session_free(e->s);
        e->s = NULL;
        return 0;
    }
    e->tokens = saved.tokens;
    e->n = saved.n_tokens;
    saved.tokens = NULL;
    for (size_t k = 0; k < saved.n_snaps; k++) add_snapshot(e, &saved.snaps[k]);
    llm_saved_free(&saved);
    e->bytes = ember_session_cache_bytes(e->s) + snapshot_bytes(e) + e->n * sizeof *e->tokens;
    return 1;
}

ember_status sv_prefix_cache_persist(sv_prefix_cache *c, const char *dir, const ember_model *m, ember_type kv_type,
                                     int *loaded, int *skipped)
{
    if (loaded) *loaded = 0;
    if (skipped) *skipped = 0;
    if (!c || !dir || !m) return ember_fail(EMBER_ERR_INVALID_ARG, "prefix cache: a NULL argument");
    if (!c->max_bytes) return EMBER_OK; /* off: nothing is kept, on disk either */
    found *files = NULL;
    size_t n_files = 0;
    ember_status st = io_make_dirs(dir);
    if (!st) st = list_files(dir, &files, &n_files);
    if (!st && !(c->dir = strdup(dir))) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    /* newest first: what does not fit after them is the least recently used */
    c->clock = n_files;
    for (size_t i = 0; !st && i < n_files; i++) {
        entry e;
        if (c->n == c->max_entries) {
            unlink(files[i].path);
        } else if (!load_entry(files[i].path, m, kv_type, &e)) {
            if (skipped) ++*skipped;
        } else if (c->bytes + e.bytes > c->max_bytes) {
            unlink(files[i].path);
            entry_free(&e, 0);
        } else {
            e.file = files[i].path;
            files[i].path = NULL;
            e.used = n_files - i;
            c->entries[c->n++] = e;
            c->bytes += e.bytes;
            if (loaded) ++*loaded;
        }
    }
    for (size_t i = 0; i < n_files; i++) free(files[i].path);
    free(files);
    report(c);
    return st;
}
