#include "llm/state_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/checksum.h"
#include "base/status.h"
#include "io/write_file.h"
#include "llm/fingerprint.h"
#include "llm/session_internal.h"
#include "llm/spark.h"

static const char MAGIC[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'V', '\n'};
enum { HEADER_BYTES = 88, FORMAT_NAME = 16 };

void llm_saved_free(llm_saved *saved)
{
    free(saved->tokens);
    for (size_t k = 0; k < saved->n_snaps; k++) llm_ring_snapshot_free(&saved->snaps[k]);
    free(saved->snaps);
    free(saved->app);
    memset(saved, 0, sizeof *saved);
}

/* The integers of the header, little-endian (the rows are the host's bytes:
 * ember runs on little-endian x86-64 and aarch64). */
static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Kv head g's rows of a full layer's K (or V): positions 0.. are contiguous. */
static char *full_rows(const kv_layer *L, void *base, int32_t g)
{
    return (char *)base + (size_t)g * (size_t)L->capacity * L->row_bytes;
}

static size_t full_bytes(const ember_session *s, size_t n)
{
    size_t bytes = 0;
    for (int32_t i = 0; i < s->kv.n_layers; i++)
        if (!s->kv.layers[i].window) bytes += 2 * (size_t)s->kv.kv_heads * n * s->kv.layers[i].row_bytes;
    return bytes;
}

/* ---- writing ---- */

typedef struct sink {
    io_atomic_file f;
    cksum64 sum;
} sink;

static void emit(sink *k, const void *data, size_t len)
{
    if (!len) return;
    cksum64_feed(&k->sum, data, len);
    io_atomic_write(&k->f, data, len);
}

static void emit_u32(sink *k, uint32_t v)
{
    unsigned char b[4];
    put_u32(b, v);
    emit(k, b, sizeof b);
}

static void emit_u64(sink *k, uint64_t v)
{
    unsigned char b[8];
    put_u64(b, v);
    emit(k, b, sizeof b);
}

static void emit_header(sink *k, const ember_session *s, const llm_fingerprint *fp, size_t n_snaps,
                        size_t app_bytes)
{
    unsigned char h[HEADER_BYTES] = {0};
    memcpy(h, MAGIC, sizeof MAGIC);
    put_u32(h + 8, LLM_STATE_VERSION);
    put_u32(h + 12, (uint32_t)s->p.kv_type);
    put_u64(h + 16, fp->config);
    put_u64(h + 24, fp->weights);
    strncpy((char *)h + 32, et_dtype_name(fp->weight_format), FORMAT_NAME - 1);
    put_u32(h + 48, (uint32_t)s->kv.n_layers);
    put_u32(h + 52, (uint32_t)s->kv.kv_heads);
    put_u32(h + 56, (uint32_t)s->kv.head_dim);
    put_u64(h + 64, (uint64_t)s->pos);
    put_u64(h + 72, n_snaps);
    put_u64(h + 80, app_bytes);
    emit(k, h, sizeof h);
}

ember_status llm_state_save(const ember_session *s, const int32_t *tokens, const llm_ring_snapshot *snaps,
                            size_t n_snaps, const void *app, size_t app_bytes, const char *path)
{
    if (!s || !path || (!tokens && s->pos) || (!snaps && n_snaps) || (!app && app_bytes))
        return ember_fail(EMBER_ERR_INVALID_ARG, "save: a NULL argument");
    if (s->ort) /* its caches live in ONNX Runtime's tensors, not in s->kv */
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: prompt-cache files are not made with the onnx backend", path);
    for (size_t k = 0; k < n_snaps; k++)
        if (snaps[k].pos < 1 || snaps[k].pos > s->pos || (k && snaps[k].pos <= snaps[k - 1].pos) ||
            snaps[k].bytes != llm_ring_snapshot_bytes(s, snaps[k].pos))
            return ember_fail(EMBER_ERR_INVALID_ARG, "save: snapshot %zu (position %lld) is not one of "
                              "this session's, in order", k, (long long)snaps[k].pos);
    for (int64_t i = 0; i < s->pos; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->cfg.vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "save: token %lld: id %d is outside [0, %d)", (long long)i,
                              tokens[i], s->m->cfg.vocab);
    llm_fingerprint fp;
    llm_ring_snapshot end;
    ember_status st = llm_fingerprint_of(s->m, &fp);
    if (!st) st = llm_ring_snapshot_take(s, &end);
    if (st) return st;
    sink k;
    cksum64_init(&k.sum);
    if (io_atomic_begin(&k.f, path)) {
        llm_ring_snapshot_free(&end);
        return k.f.st;
    }
    const kv_cache *kv = &s->kv;
    emit_header(&k, s, &fp, n_snaps, app_bytes);
    for (int32_t i = 0; i < kv->n_layers; i++) emit_u32(&k, (uint32_t)kv->layers[i].window);
    for (size_t j = 0; j < n_snaps; j++) emit_u64(&k, (uint64_t)snaps[j].pos);
    emit(&k, tokens, (size_t)s->pos * sizeof *tokens);
    emit(&k, app, app_bytes);
    for (int32_t i = 0; i < kv->n_layers; i++) {
        const kv_layer *L = &kv->layers[i];
        if (L->window) continue;
        for (int side = 0; side < 2; side++)
            for (int32_t g = 0; g < kv->kv_heads; g++)
                emit(&k, full_rows(L, side ? L->v : L->k, g), (size_t)s->pos * L->row_bytes);
    }
    emit(&k, end.rows, end.bytes);
    llm_ring_snapshot_free(&end);
    for (size_t j = 0; j < n_snaps; j++) emit(&k, snaps[j].rows, snaps[j].bytes);
    unsigned char sum[8];
    put_u64(sum, cksum64_final(&k.sum));
    io_atomic_write(&k.f, sum, sizeof sum);
    return io_atomic_commit(&k.f);
}

/* ---- reading ---- */

/* The checks of the first bytes every reader makes. */
static ember_status check_magic(const unsigned char *h, size_t len, const char *label)
{
    if (len < HEADER_BYTES + 8)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %zu bytes: too short for a prompt-cache file (truncated?)",
                          label, len);
    if (memcmp(h, MAGIC, sizeof MAGIC))
        return ember_fail(EMBER_ERR_FORMAT, "%s: not an ember prompt-cache file", label);
    if (get_u32(h + 8) != LLM_STATE_VERSION)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: prompt-cache version %u; this ember reads version %d",
                          label, get_u32(h + 8), LLM_STATE_VERSION);
    return EMBER_OK;
}

/* Refuses a file made for another model, weight format, KV format or
 * cache layout than s's. h: the header. */
static ember_status check_identity(const ember_session *s, const unsigned char *h, const char *label)
{
    llm_fingerprint fp;
    ember_status st = llm_fingerprint_of(s->m, &fp);
    if (st) return st;
    char format[FORMAT_NAME];
    memcpy(format, h + 32, FORMAT_NAME);
    format[FORMAT_NAME - 1] = '\0';
    if (get_u64(h + 16) != fp.config)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: saved by another model (its configuration differs)", label);
    if (strcmp(format, et_dtype_name(fp.weight_format)))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: saved with %s weights; this model's are %s", label, format,
                          et_dtype_name(fp.weight_format));
    if (get_u64(h + 24) != fp.weights)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "%s: saved by another model (the same configuration, other weights)", label);
    uint32_t kv_type = get_u32(h + 12);
    if (kv_type != (uint32_t)s->p.kv_type)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: KV cache format %s; this session's is %s", label,
                          et_dtype_name(session_kv_dtype((ember_type)kv_type)),
                          et_dtype_name(session_kv_dtype(s->p.kv_type)));
    if (get_u32(h + 48) != (uint32_t)s->kv.n_layers || get_u32(h + 52) != (uint32_t)s->kv.kv_heads ||
        get_u32(h + 56) != (uint32_t)s->kv.head_dim)
        return ember_fail(EMBER_ERR_FORMAT, "%s: a cache of %u layers x %u kv heads x %u dims; this model's "
                          "is %d x %d x %d", label, get_u32(h + 48), get_u32(h + 52), get_u32(h + 56),
                          s->kv.n_layers, s->kv.kv_heads, s->kv.head_dim);
    return EMBER_OK;
}

/* Bytes the parts after the header take, as s's caches measure them. No
 * sum can overflow: n is at most s's max_context, n_snaps at most n, and
 * app_bytes at most the file's length (checked before). */
static size_t body_bytes(const ember_session *s, size_t n, const unsigned char *snap_pos, size_t n_snaps,
                         size_t app_bytes)
{
    size_t total = 4 * (size_t)s->kv.n_layers + 8 * n_snaps + 4 * n + app_bytes + full_bytes(s, n) +
                   llm_ring_snapshot_bytes(s, (int64_t)n);
    for (size_t k = 0; k < n_snaps; k++)
        total += llm_ring_snapshot_bytes(s, (int64_t)get_u64(snap_pos + 8 * k));
    return total;
}

ember_status llm_state_parse(ember_session *s, const void *data, size_t len, const char *label,
                             llm_saved *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!s || !out || (!data && len) || !label)
        return ember_fail(EMBER_ERR_INVALID_ARG, "load: a NULL argument");
    const unsigned char *h = data;
    ember_status st = check_magic(h, len, label);
    if (st) return st;
    if (get_u64(h + len - 8) != cksum64_of(h, len - 8))
        return ember_fail(EMBER_ERR_FORMAT, "%s: checksum mismatch: the file is truncated or corrupt", label);
    if ((st = check_identity(s, h, label))) return st;
    /* From here on the file is whole and this model's: what fails now is a
     * file ember did not write. */
    const uint64_t n = get_u64(h + 64), n_snaps = get_u64(h + 72), app_bytes = get_u64(h + 80);
    if (n > (uint64_t)s->p.max_context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "%s: holds %llu tokens; this session's max_context is %d",
                          label, (unsigned long long)n, s->p.max_context);
    const unsigned char *windows = h + HEADER_BYTES, *snap_pos = windows + 4 * (size_t)s->kv.n_layers;
    if (n_snaps > n || app_bytes > len || 4 * (size_t)s->kv.n_layers + 8 * n_snaps > len - HEADER_BYTES - 8)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %llu snapshots, %llu bytes of application data: more than "
                          "the file holds", label, (unsigned long long)n_snaps, (unsigned long long)app_bytes);
    for (int32_t i = 0; i < s->kv.n_layers; i++)
        if (get_u32(windows + 4 * i) != (uint32_t)s->kv.layers[i].window)
            return ember_fail(EMBER_ERR_FORMAT, "%s: layer %d's window is %u; this model's is %d", label, i,
                              get_u32(windows + 4 * i), s->kv.layers[i].window);
    for (size_t k = 0; k < n_snaps; k++) {
        uint64_t pos = get_u64(snap_pos + 8 * k);
        if (pos < 1 || pos > n || (k && pos <= get_u64(snap_pos + 8 * (k - 1))))
            return ember_fail(EMBER_ERR_FORMAT, "%s: snapshot %zu at position %llu is out of order or outside "
                              "1..%llu", label, k, (unsigned long long)pos, (unsigned long long)n);
    }
    size_t want = HEADER_BYTES + body_bytes(s, n, snap_pos, n_snaps, app_bytes) + 8;
    if (want != len)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %zu bytes where its header describes %zu", label, len, want);
    const unsigned char *p = snap_pos + 8 * n_snaps;
    const unsigned char *tokens = p, *app = tokens + 4 * n, *rows = app + app_bytes;
    for (size_t i = 0; i < n; i++) {
        int32_t id = (int32_t)get_u32(tokens + 4 * i);
        if (id < 0 || id >= s->m->cfg.vocab)
            return ember_fail(EMBER_ERR_FORMAT, "%s: token %zu: id %d is outside [0, %d)", label, i, id,
                              s->m->cfg.vocab);
    }
    /* copies first, so that running out of memory leaves s as it was */
    if ((n && !(out->tokens = malloc(n * sizeof *out->tokens))) ||
        (n_snaps && !(out->snaps = calloc(n_snaps, sizeof *out->snaps))) ||
        (app_bytes && !(out->app = malloc(app_bytes + 1)))) {
        llm_saved_free(out);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    if (n) memcpy(out->tokens, tokens, n * sizeof *out->tokens);
    out->n_tokens = n;
    if (app_bytes) {
        memcpy(out->app, app, app_bytes);
        out->app[app_bytes] = '\0';
    }
    out->app_bytes = app_bytes;
    const unsigned char *snap_rows = rows + full_bytes(s, n) + llm_ring_snapshot_bytes(s, (int64_t)n);
    for (size_t k = 0; k < n_snaps; k++) {
        llm_ring_snapshot *d = &out->snaps[k];
        d->pos = (int64_t)get_u64(snap_pos + 8 * k);
        d->bytes = llm_ring_snapshot_bytes(s, d->pos);
        out->n_snaps = k + 1;
        if (d->bytes && !(d->rows = malloc(d->bytes))) {
            llm_saved_free(out);
            return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
        }
        if (d->bytes) memcpy(d->rows, snap_rows, d->bytes);
        snap_rows += d->bytes;
    }
    /* the caches: full layers' rows, then the rings at n */
    const kv_cache *kv = &s->kv;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        const kv_layer *L = &kv->layers[i];
        if (L->window) continue;
        for (int side = 0; side < 2; side++)
            for (int32_t g = 0; g < kv->kv_heads; g++) {
                if (n) memcpy(full_rows(L, side ? L->v : L->k, g), rows, n * L->row_bytes);
                rows += n * L->row_bytes;
            }
    }
    llm_ring_snapshot end = {(int64_t)n, llm_ring_snapshot_bytes(s, (int64_t)n), (void *)rows};
    llm_ring_snapshot_restore(s, &end);
    s->pos = (int64_t)n;
    s->has_logits = 0;
    return EMBER_OK;
}

ember_status llm_state_peek(const char *path, size_t *n_tokens)
{
    *n_tokens = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char h[HEADER_BYTES + 8];
    ssize_t got = read(fd, h, sizeof h);
    close(fd);
    ember_status st = check_magic(h, got < 0 ? 0 : (size_t)got, path);
    if (!st && get_u64(h + 64) > (uint64_t)INT32_MAX)
        st = ember_fail(EMBER_ERR_FORMAT, "%s: %llu tokens", path, (unsigned long long)get_u64(h + 64));
    if (!st) *n_tokens = (size_t)get_u64(h + 64);
    return st;
}

ember_status llm_state_load(ember_session *s, const char *path, llm_saved *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!s || !path || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "load: a NULL argument");
    if (s->ort)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: prompt-cache files are not read with the onnx backend", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: not a regular file", path);
    }
    /* Mapped, not read into a buffer of our own: a buffer of hundreds of MB
     * is fresh memory the kernel zeroes page by page on every load, which
     * cost several times the whole restore at the 1.7B shape
     * (bench/prompt_cache.c); mapped page-cache pages need no zeroing. */
    size_t len = (size_t)sb.st_size;
    void *map = NULL;
    if (len && (map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)) == MAP_FAILED) {
        ember_status st = ember_fail(EMBER_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    close(fd);
    ember_status st = llm_state_parse(s, map, len, path, out);
    if (map) munmap(map, len);
    return st;
}
