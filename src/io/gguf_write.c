/* GGUF writer: metadata is encoded as it is set; tensors are described up
 * front and their bytes come from a pointer or a producer callback during
 * gguf_write, so a large model streams through a small buffer. The layout
 * is llama.cpp's: tensors in the order added, each at the next multiple of
 * the alignment, each padded with zeros to the alignment. */
#include "io/gguf.h"

#include "base/status.h"
#include "kernels/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_BUF ((size_t)1 << 20)
#define PROGRESS_STEP ((size_t)4 << 20)
#define MAX_TENSOR_NAME 63 /* llama.cpp's GGML_MAX_NAME is 64 with the NUL */

typedef struct byte_buf {
    uint8_t *p;
    size_t len, cap;
} byte_buf;

typedef struct w_tensor {
    char *name;
    et_dtype dtype;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    size_t nbytes;
    const void *data;
    gguf_produce_fn produce;
    void *ctx;
} w_tensor;

struct gguf_writer {
    uint32_t alignment;
    byte_buf meta; /* the encoded key/value pairs */
    char **keys;
    size_t n_keys, cap_keys;
    w_tensor *tensors;
    size_t n_tensors, cap_tensors;
};

struct gguf_sink {
    int fd;
    const char *path;    /* the temporary file, for messages */
    uint8_t *buf;
    size_t used;
    const char *tensor;  /* being produced */
    size_t remaining;    /* bytes it may still write */
    size_t done, total, reported;
    gguf_progress_fn progress;
    void *pctx;
};

/* ---- encoding --------------------------------------------------------------- */

static ember_status put(byte_buf *b, const void *src, size_t n)
{
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2)
                return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: metadata too large");
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return EMBER_OK;
}

static ember_status put_u32(byte_buf *b, uint32_t v) { return put(b, &v, 4); }
static ember_status put_u64(byte_buf *b, uint64_t v) { return put(b, &v, 8); }

static ember_status put_str(byte_buf *b, const char *s, size_t n)
{
    ember_status st = put_u64(b, n);
    return st ? st : put(b, s, n);
}

ember_status gguf_writer_create(gguf_writer **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_writer_create: NULL output");
    *out = calloc(1, sizeof **out);
    if (!*out) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
    (*out)->alignment = GGUF_DEFAULT_ALIGNMENT;
    return EMBER_OK;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w) return;
    free(w->meta.p);
    for (size_t i = 0; i < w->n_keys; i++) free(w->keys[i]);
    free(w->keys);
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w);
}

/* Checks the key, records it and encodes key + type. On failure the
 * metadata is unchanged. */
static ember_status begin_kv(gguf_writer *w, const char *key, gguf_type type, size_t *mark)
{
    if (!w || !key) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: NULL argument");
    size_t klen = strlen(key);
    if (klen == 0 || klen > 65535)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%.80s' must be 1 to 65535 bytes",
                          key);
    for (size_t i = 0; i < w->n_keys; i++)
        if (!strcmp(w->keys[i], key))
            return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s' set twice", key);
    if (!strcmp(key, "general.alignment") && type != GGUF_TYPE_UINT32)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: 'general.alignment' must be uint32");
    if (w->n_keys == w->cap_keys) {
        size_t cap = w->cap_keys ? 2 * w->cap_keys : 32;
        char **k = realloc(w->keys, cap * sizeof *k);
        if (!k) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
        w->keys = k;
        w->cap_keys = cap;
    }
    char *copy = strdup(key);
    if (!copy) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
    *mark = w->meta.len;
    ember_status st = put_str(&w->meta, key, klen);
    if (!st) st = put_u32(&w->meta, (uint32_t)type);
    if (st) {
        free(copy);
        w->meta.len = *mark;
        return st;
    }
    w->keys[w->n_keys++] = copy;
    return EMBER_OK;
}

/* Ends a pair begun with begin_kv: on failure, forgets it. */
static ember_status end_kv(gguf_writer *w, size_t mark, ember_status st)
{
    if (st) {
        w->meta.len = mark;
        free(w->keys[--w->n_keys]);
    }
    return st;
}

static ember_status set_scalar(gguf_writer *w, const char *key, gguf_type type, const void *v)
{
    size_t mark;
    ember_status st = begin_kv(w, key, type, &mark);
    if (st) return st;
    return end_kv(w, mark, put(&w->meta, v, gguf_type_size(type)));
}

ember_status gguf_set_u8(gguf_writer *w, const char *k, uint8_t v) { return set_scalar(w, k, GGUF_TYPE_UINT8, &v); }
ember_status gguf_set_i8(gguf_writer *w, const char *k, int8_t v) { return set_scalar(w, k, GGUF_TYPE_INT8, &v); }
ember_status gguf_set_u16(gguf_writer *w, const char *k, uint16_t v) { return set_scalar(w, k, GGUF_TYPE_UINT16, &v); }
ember_status gguf_set_i16(gguf_writer *w, const char *k, int16_t v) { return set_scalar(w, k, GGUF_TYPE_INT16, &v); }
ember_status gguf_set_i32(gguf_writer *w, const char *k, int32_t v) { return set_scalar(w, k, GGUF_TYPE_INT32, &v); }
ember_status gguf_set_u64(gguf_writer *w, const char *k, uint64_t v) { return set_scalar(w, k, GGUF_TYPE_UINT64, &v); }
ember_status gguf_set_i64(gguf_writer *w, const char *k, int64_t v) { return set_scalar(w, k, GGUF_TYPE_INT64, &v); }
ember_status gguf_set_f32(gguf_writer *w, const char *k, float v) { return set_scalar(w, k, GGUF_TYPE_FLOAT32, &v); }
ember_status gguf_set_f64(gguf_writer *w, const char *k, double v) { return set_scalar(w, k, GGUF_TYPE_FLOAT64, &v); }

ember_status gguf_set_bool(gguf_writer *w, const char *k, bool v)
{
    uint8_t b = v ? 1 : 0;
    return set_scalar(w, k, GGUF_TYPE_BOOL, &b);
}

ember_status gguf_set_u32(gguf_writer *w, const char *key, uint32_t v)
{
    bool is_align = key && !strcmp(key, "general.alignment");
    if (is_align && (v == 0 || (v & (v - 1))))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "gguf writer: 'general.alignment' %u is not a power of two", v);
    ember_status st = set_scalar(w, key, GGUF_TYPE_UINT32, &v);
    if (!st && is_align) w->alignment = v;
    return st;
}

ember_status gguf_set_strn(gguf_writer *w, const char *key, const char *s, size_t len)
{
    size_t mark;
    if (!s && len) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': NULL string", key);
    ember_status st = begin_kv(w, key, GGUF_TYPE_STRING, &mark);
    if (st) return st;
    return end_kv(w, mark, put_str(&w->meta, s, len));
}

ember_status gguf_set_str(gguf_writer *w, const char *key, const char *s)
{
    return gguf_set_strn(w, key, s, s ? strlen(s) : 0);
}

static ember_status begin_arr(gguf_writer *w, const char *key, gguf_type elem, size_t n,
                              size_t *mark)
{
    if (elem == GGUF_TYPE_ARRAY || (unsigned)elem >= GGUF_TYPE_COUNT)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': bad array element type",
                          key ? key : "");
    ember_status st = begin_kv(w, key, GGUF_TYPE_ARRAY, mark);
    if (st) return st;
    st = put_u32(&w->meta, (uint32_t)elem);
    if (!st) st = put_u64(&w->meta, n);
    return end_kv(w, *mark, st);
}

ember_status gguf_set_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data,
                          size_t n)
{
    size_t mark, size = gguf_type_size(elem);
    if (!size)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': gguf_set_arr takes "
                          "fixed-size elements (use gguf_set_str_arr for strings)", key ? key : "");
    if (!data && n) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': NULL data", key);
    if (elem == GGUF_TYPE_BOOL)
        for (size_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1)
                return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': bool element "
                                  "%zu is not 0 or 1", key, i);
    ember_status st = begin_arr(w, key, elem, n, &mark);
    if (st) return st;
    if (n > SIZE_MAX / size) st = ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: array too large");
    else st = put(&w->meta, data, n * size);
    return end_kv(w, mark, st);
}

ember_status gguf_set_str_arr(gguf_writer *w, const char *key, const char *const *strs,
                              const size_t *lens, size_t n)
{
    size_t mark;
    if (!strs && n) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': NULL strings", key);
    for (size_t i = 0; i < n; i++)
        if (!strs[i])
            return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': string %zu is NULL",
                              key, i);
    ember_status st = begin_arr(w, key, GGUF_TYPE_STRING, n, &mark);
    if (st) return st;
    for (size_t i = 0; i < n && !st; i++)
        st = put_str(&w->meta, strs[i], lens ? lens[i] : strlen(strs[i]));
    return end_kv(w, mark, st);
}

ember_status gguf_set_value(gguf_writer *w, const char *key, const gguf_value *v)
{
    size_t mark;
    ember_status st;
    if (!v) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': NULL value", key);
    switch (v->type) {
    case GGUF_TYPE_UINT8: return gguf_set_u8(w, key, (uint8_t)v->u);
    case GGUF_TYPE_INT8: return gguf_set_i8(w, key, (int8_t)v->i);
    case GGUF_TYPE_UINT16: return gguf_set_u16(w, key, (uint16_t)v->u);
    case GGUF_TYPE_INT16: return gguf_set_i16(w, key, (int16_t)v->i);
    case GGUF_TYPE_UINT32: return gguf_set_u32(w, key, (uint32_t)v->u);
    case GGUF_TYPE_INT32: return gguf_set_i32(w, key, (int32_t)v->i);
    case GGUF_TYPE_FLOAT32: return gguf_set_f32(w, key, (float)v->f);
    case GGUF_TYPE_BOOL: return gguf_set_bool(w, key, v->u != 0);
    case GGUF_TYPE_UINT64: return gguf_set_u64(w, key, v->u);
    case GGUF_TYPE_INT64: return gguf_set_i64(w, key, v->i);
    case GGUF_TYPE_FLOAT64: return gguf_set_f64(w, key, v->f);
    case GGUF_TYPE_STRING: return gguf_set_strn(w, key, v->str.s, v->str.len);
    case GGUF_TYPE_ARRAY:
        if (v->arr_type != GGUF_TYPE_STRING)
            return gguf_set_arr(w, key, v->arr_type, v->arr_data, (size_t)v->n);
        if ((st = begin_arr(w, key, GGUF_TYPE_STRING, (size_t)v->n, &mark))) return st;
        for (uint64_t i = 0; i < v->n && !st; i++)
            st = put_str(&w->meta, v->arr_strs[i].s, v->arr_strs[i].len);
        return end_kv(w, mark, st);
    case GGUF_TYPE_COUNT: break;
    }
    return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: key '%s': bad value type", key);
}

ember_status gguf_copy_keys(gguf_writer *w, const gguf_file *src, const char *prefix, size_t *n)
{
    size_t len = strlen(prefix);
    *n = 0;
    for (size_t i = 0; i < gguf_n_kv(src); i++) {
        const gguf_kv *kv = gguf_kv_at(src, i);
        if (strncmp(kv->key, prefix, len)) continue;
        ember_status st = gguf_set_value(w, kv->key, &kv->v);
        if (st) return st;
        ++*n;
    }
    return EMBER_OK;
}

/* ---- tensors ---------------------------------------------------------------- */

ember_status gguf_add_tensor(gguf_writer *w, const char *name, et_dtype dtype, uint32_t n_dims,
                             const uint64_t *ne, const void *data, gguf_produce_fn produce,
                             void *ctx)
{
    if (!w || !name || !ne) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: NULL argument");
    const ek_format *f = ek_format_of(dtype);
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > MAX_TENSOR_NAME)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor name '%.80s' must be 1 to %d "
                          "bytes", name, MAX_TENSOR_NAME);
    if (!f) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': bad dtype", name);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': %u dims", name, n_dims);
    if (!data == !produce)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': give exactly one of "
                          "data and a producer", name);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name))
            return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s' added twice", name);
    if (ne[0] % (uint64_t)f->block)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': %llu columns are not "
                          "a multiple of the %s block (%d)", name, (unsigned long long)ne[0],
                          f->name, f->block);
    uint64_t bytes = ne[0] / (uint64_t)f->block * f->block_bytes;
    for (uint32_t d = 1; d < n_dims; d++) {
        if (ne[d] && bytes > (uint64_t)(SIZE_MAX / 2) / ne[d])
            return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s' is too large", name);
        bytes *= ne[d];
    }
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        w_tensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
        w->tensors = t;
        w->cap_tensors = cap;
    }
    w_tensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) return ember_fail(EMBER_ERR_NO_MEMORY, "gguf writer: out of memory");
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = d < (int)n_dims ? ne[d] : 1;
    t->nbytes = (size_t)bytes;
    t->data = data;
    t->produce = produce;
    t->ctx = ctx;
    w->n_tensors++;
    return EMBER_OK;
}

ember_status gguf_add_matrix(gguf_writer *w, const char *name, et_dtype dtype, int64_t rows,
                             int64_t cols, const void *data, gguf_produce_fn produce, void *ctx)
{
    if (rows < 0 || cols < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': negative shape",
                          name ? name : "");
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    return gguf_add_tensor(w, name, dtype, 2, ne, data, produce, ctx);
}

ember_status gguf_add_vector(gguf_writer *w, const char *name, et_dtype dtype, int64_t n,
                             const void *data, gguf_produce_fn produce, void *ctx)
{
    if (n < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: tensor '%s': negative shape",
                          name ? name : "");
    uint64_t ne[1] = {(uint64_t)n};
    return gguf_add_tensor(w, name, dtype, 1, ne, data, produce, ctx);
}

/* ---- the file ---------------------------------------------------------------- */

static ember_status flush(gguf_sink *s)
{
    size_t at = 0;
    while (at < s->used) {
        ssize_t n = write(s->fd, s->buf + at, s->used - at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return ember_fail(EMBER_ERR_IO, "%s: write failed: %s", s->path, strerror(errno));
        at += (size_t)n;
    }
    s->used = 0;
    return EMBER_OK;
}

static ember_status raw_write(gguf_sink *s, const void *bytes, size_t n)
{
    const uint8_t *p = bytes;
    while (n) {
        size_t take = WRITE_BUF - s->used < n ? WRITE_BUF - s->used : n;
        memcpy(s->buf + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == WRITE_BUF) {
            ember_status st = flush(s);
            if (st) return st;
        }
    }
    return EMBER_OK;
}

static ember_status report(gguf_sink *s)
{
    s->reported = s->done;
    if (s->progress && s->progress(s->pctx, s->done, s->total))
        return ember_fail(EMBER_ERR_CANCELLED, "%s: cancelled by the progress callback", s->path);
    return EMBER_OK;
}

ember_status gguf_sink_write(gguf_sink *s, const void *bytes, size_t n)
{
    if (!s || (!bytes && n)) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_sink_write: NULL argument");
    if (n > s->remaining)
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: the producer of tensor '%s' wrote "
                          "more bytes than the tensor holds", s->tensor);
    ember_status st = raw_write(s, bytes, n);
    if (st) return st;
    s->remaining -= n;
    s->done += n;
    if (s->done - s->reported >= PROGRESS_STEP) return report(s);
    return EMBER_OK;
}

static ember_status pad_to(gguf_sink *s, uint64_t *pos, uint32_t alignment)
{
    static const uint8_t zeros[64];
    size_t pad = (size_t)((alignment - *pos % alignment) % alignment);
    *pos += pad;
    while (pad) {
        size_t take = pad < sizeof zeros ? pad : sizeof zeros;
        ember_status st = raw_write(s, zeros, take);
        if (st) return st;
        pad -= take;
    }
    return EMBER_OK;
}

static ember_status write_all(const gguf_writer *w, gguf_sink *s)
{
    byte_buf head = {NULL, 0, 0};
    ember_status st = EMBER_OK;
    uint64_t offset = 0, pos;
    uint32_t version = 3;
    st = put(&head, "GGUF", 4);
    if (!st) st = put_u32(&head, version);
    if (!st) st = put_u64(&head, w->n_tensors);
    if (!st) st = put_u64(&head, w->n_keys);
    if (!st) st = put(&head, w->meta.p, w->meta.len);
    for (size_t i = 0; i < w->n_tensors && !st; i++) {
        const w_tensor *t = &w->tensors[i];
        st = put_str(&head, t->name, strlen(t->name));
        if (!st) st = put_u32(&head, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims && !st; d++) st = put_u64(&head, t->ne[d]);
        if (!st) st = put_u32(&head, ek_format_of(t->dtype)->ggml_type);
        if (!st) st = put_u64(&head, offset);
        offset += t->nbytes + (w->alignment - t->nbytes % w->alignment) % w->alignment;
    }
    if (!st) st = raw_write(s, head.p, head.len);
    pos = head.len;
    free(head.p);
    if (!st) st = pad_to(s, &pos, w->alignment);

    for (size_t i = 0; i < w->n_tensors && !st; i++) {
        const w_tensor *t = &w->tensors[i];
        s->tensor = t->name;
        s->remaining = t->nbytes;
        if (t->data) {
            st = gguf_sink_write(s, t->data, t->nbytes);
        } else {
            st = t->produce(t->ctx, s);
            if (!st && s->remaining)
                st = ember_fail(EMBER_ERR_INVALID_ARG, "gguf writer: the producer of tensor '%s' "
                                "wrote %zu of its %zu bytes", t->name, t->nbytes - s->remaining,
                                t->nbytes);
        }
        pos += t->nbytes;
        if (!st) st = pad_to(s, &pos, w->alignment);
        if (!st) st = report(s);
    }
    if (!st) st = flush(s);
    return st;
}

ember_status gguf_write(const gguf_writer *w, const char *path, gguf_progress_fn progress,
                        void *ctx)
{
    if (!w || !path || !path[0])
        return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_write: NULL writer or empty path");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    gguf_sink s;
    memset(&s, 0, sizeof s);
    s.buf = malloc(WRITE_BUF);
    if (!tmp || !s.buf) {
        free(tmp);
        free(s.buf);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    s.path = tmp;
    s.progress = progress;
    s.pctx = ctx;
    for (size_t i = 0; i < w->n_tensors; i++) s.total += w->tensors[i].nbytes;

    ember_status st;
    s.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s.fd < 0) {
        st = ember_fail(EMBER_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto out;
    }
    st = write_all(w, &s);
    if (!st && fsync(s.fd) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (close(s.fd) != 0 && !st)
        st = ember_fail(EMBER_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = ember_fail(EMBER_ERR_IO, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
    if (st) unlink(tmp);
out:
    free(tmp);
    free(s.buf);
    return st;
}
