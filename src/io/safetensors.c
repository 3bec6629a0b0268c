/* safetensors reader: header validation (st_parse) and the read-only mapping
 * around it (st_open).
 *
 * Layout: u64 little-endian N, then N bytes of JSON header, then the data
 * section. Each header entry is
 *     "name": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [begin, end]}
 * with offsets relative to the start of the data section. An optional
 * "__metadata__" entry maps strings to strings and is skipped.
 *
 * Alignment: nothing in the format forces a tensor to start on an aligned
 * address (N is usually padded to a multiple of 8, but that is a convention,
 * and begin offsets need not be multiples of the element size). We accept
 * such files, so a tensor's data pointer may be unaligned for its dtype:
 * kernels that read the mapping directly must use unaligned loads (memcpy or
 * unaligned SIMD loads), or the loader must copy the tensor first.
 */
#include "io/safetensors.h"

#include "base/status.h"
#include "io/json_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference implementation caps the header at 100 MB; real headers are
 * a few hundred KB at most. */
#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)
/* Largest accepted dimension; far beyond any real tensor, small enough that
 * products of up to ET_MAX_DIMS dims are checked cheaply. */
#define ST_MAX_DIM ((double)((uint64_t)1 << 40))
/* Offsets must be exactly representable as doubles (cJSON keeps numbers as
 * doubles). */
#define ST_MAX_OFFSET ((double)((uint64_t)1 << 53))

struct st_file {
    char *path;
    void *map;
    size_t map_len;
    et_tensor *tensors;       /* header order */
    size_t n;
    const et_tensor **by_name; /* sorted by name, for st_find */
};




static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        int extra;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) { extra = 1; cp = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { extra = 2; cp = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { extra = 3; cp = c & 0x07; min = 0x10000; }
        else return false;
        p++;
        for (int i = 0; i < extra; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (*p & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
    }
    return true;
}

/* A JSON number that is an integer in [0, limit). */
static bool json_uint(const cJSON *item, double limit, uint64_t *out)
{
    double d;
    if (!cJSON_IsNumber(item))
        return false;
    d = item->valuedouble;
    if (!(d >= 0.0 && d < limit))  /* also rejects NaN */
        return false;
    if ((double)(uint64_t)d != d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    const et_tensor *ta = *(const et_tensor *const *)a;
    const et_tensor *tb = *(const et_tensor *const *)b;
    return strcmp(ta->name, tb->name);
}

static int cmp_tensor_span(const void *a, const void *b)
{
    const et_tensor *ta = *(const et_tensor *const *)a;
    const et_tensor *tb = *(const et_tensor *const *)b;
    const uint8_t *pa = ta->data, *pb = tb->data;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    if (ta->nbytes != tb->nbytes)
        return ta->nbytes < tb->nbytes ? -1 : 1;
    return 0;
}

/* ---- dtypes ----------------------------------------------------------- */

static bool dtype_from_name(const char *s, et_dtype *out)
{
    for (int i = 0; i < ET_DTYPE_COUNT; i++) {
        if (et_dtype_is_float((et_dtype)i) && strcmp(s, et_dtype_name((et_dtype)i)) == 0) {
            *out = (et_dtype)i;
            return true;
        }
    }
    return false;
}

/* dtypes the safetensors format defines but ember does not run. */
static bool dtype_known_unsupported(const char *s)
{
    static const char *const names[] = {
        "F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
        "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

/* ---- header entries --------------------------------------------------- */

static ember_status check_metadata(const cJSON *meta, const char *label)
{
    if (!cJSON_IsObject(meta))
        return ember_fail(EMBER_ERR_FORMAT, "%s: \"__metadata__\" is not an object of strings",
                          label);
    for (const cJSON *kv = meta->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: \"__metadata__\" key '%s' is not a string (must be an object "
                              "of strings)", label, kv->string ? kv->string : "");
    }
    return EMBER_OK;
}

/* Validates one tensor entry against the data section (data, data_len) and
 * fills *t (name not set). */
static ember_status parse_entry(const cJSON *entry, const char *name, const char *label,
                                const uint8_t *data, size_t data_len, et_tensor *t)
{
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    uint64_t numel = 1, begin, end, nbytes;
    int n_dims = 0;

    if (!cJSON_IsObject(entry))
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': entry is not a JSON object",
                          label, name);
    for (const cJSON *kv = entry->child; kv; kv = kv->next) {
        const cJSON **slot = NULL;
        if (strcmp(kv->string, "dtype") == 0) slot = &dtype;
        else if (strcmp(kv->string, "shape") == 0) slot = &shape;
        else if (strcmp(kv->string, "data_offsets") == 0) slot = &offsets;
        else continue; /* unknown keys are ignored */
        if (*slot)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': key \"%s\" appears twice",
                              label, name, kv->string);
        *slot = kv;
    }

    /* dtype */
    if (!dtype)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': missing \"dtype\"", label, name);
    if (!cJSON_IsString(dtype))
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': \"dtype\" is not a string",
                          label, name);
    if (!dtype_from_name(dtype->valuestring, &t->dtype)) {
        if (dtype_known_unsupported(dtype->valuestring))
            return ember_fail(EMBER_ERR_UNSUPPORTED,
                              "%s: tensor '%s': unsupported dtype %s (ember reads F32, F16 "
                              "and BF16)", label, name, dtype->valuestring);
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", label, name,
                          dtype->valuestring);
    }

    /* shape */
    if (!shape)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': missing \"shape\"", label, name);
    if (!cJSON_IsArray(shape))
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': \"shape\" is not an array",
                          label, name);
    for (const cJSON *d = shape->child; d; d = d->next) {
        uint64_t dim;
        if (n_dims == ET_MAX_DIMS) {
            int total = cJSON_GetArraySize(shape);
            return ember_fail(EMBER_ERR_UNSUPPORTED,
                              "%s: tensor '%s': shape has %d dims, at most %d supported",
                              label, name, total, ET_MAX_DIMS);
        }
        if (!json_uint(d, ST_MAX_DIM, &dim))
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: tensor '%s': shape dim %d is not a non-negative integer "
                              "below 2^40", label, name, n_dims);
        t->shape[n_dims++] = (int64_t)dim;
        if (dim != 0 && numel > UINT64_MAX / dim)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': shape element count overflows",
                              label, name);
        numel *= dim;
    }
    t->n_dims = n_dims;
    for (int i = n_dims; i < ET_MAX_DIMS; i++)
        t->shape[i] = 1;
    if (numel > INT64_MAX / 8)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': shape element count overflows",
                          label, name);
    nbytes = numel * et_dtype_size(t->dtype);

    /* data_offsets */
    if (!offsets)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': missing \"data_offsets\"",
                          label, name);
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': \"data_offsets\" is not an array [begin, end]",
                          label, name);
    if (!json_uint(offsets->child, ST_MAX_OFFSET, &begin) ||
        !json_uint(offsets->child->next, ST_MAX_OFFSET, &end))
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets are not non-negative integers",
                          label, name);
    if (begin > end)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets [%llu, %llu] begin after end", label,
                          name, (unsigned long long)begin, (unsigned long long)end);
    if (end > data_len)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the "
                          "data (%zu bytes; file truncated?)", label, name,
                          (unsigned long long)begin, (unsigned long long)end, data_len);
    if (end - begin != nbytes) {
        char dims[128];
        size_t at = 0;
        dims[0] = '\0';
        for (int i = 0; i < n_dims && at < sizeof dims; i++)
            at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%lld", i ? ", " : "",
                                   (long long)t->shape[i]);
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets [%llu, %llu] do not match shape [%s] "
                          "x %s (%llu bytes)", label, name, (unsigned long long)begin,
                          (unsigned long long)end, dims, et_dtype_name(t->dtype),
                          (unsigned long long)nbytes);
    }
    t->data = data + begin;
    t->nbytes = (size_t)nbytes;
    return EMBER_OK;
}

/* Rejects duplicate names and overlapping byte ranges. */
static ember_status check_unique_and_disjoint(et_tensor *tensors, size_t n, const char *label)
{
    const et_tensor **order;
    ember_status st = EMBER_OK;

    if (n < 2)
        return EMBER_OK;
    order = malloc(n * sizeof *order);
    if (!order)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory checking %zu tensors", label, n);
    for (size_t i = 0; i < n; i++)
        order[i] = &tensors[i];

    qsort(order, n, sizeof *order, cmp_tensor_name);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: duplicate tensor name '%s' in the header",
                            label, order[i]->name);
            goto done;
        }
    }

    qsort(order, n, sizeof *order, cmp_tensor_span);
    {
        const et_tensor *last = NULL; /* non-empty tensor reaching furthest */
        for (size_t i = 0; i < n; i++) {
            const et_tensor *t = order[i];
            if (t->nbytes == 0)
                continue; /* an empty range overlaps nothing */
            if (last && (const uint8_t *)t->data <
                            (const uint8_t *)last->data + last->nbytes) {
                st = ember_fail(EMBER_ERR_FORMAT,
                                "%s: tensors '%s' and '%s' overlap in the data section",
                                label, last->name, t->name);
                goto done;
            }
            if (!last || (const uint8_t *)t->data + t->nbytes >
                             (const uint8_t *)last->data + last->nbytes)
                last = t;
        }
    }
done:
    free(order);
    return st;
}

void st_tensors_free(et_tensor *tensors, size_t n)
{
    if (!tensors)
        return;
    for (size_t i = 0; i < n; i++)
        free((char *)tensors[i].name);
    free(tensors);
}

ember_status st_parse(const uint8_t *buf, size_t len, const char *label, et_tensor **tensors,
                      size_t *n)
{
    uint64_t hlen = 0;
    const uint8_t *data;
    size_t data_len, count = 0, filled = 0;
    cJSON *root = NULL;
    et_tensor *ts = NULL;
    ember_status st;
    bool seen_meta = false;

    if (!tensors || !n)
        return ember_fail(EMBER_ERR_INVALID_ARG, "st_parse: NULL output");
    *tensors = NULL;
    *n = 0;
    if (!label)
        label = "(safetensors)";
    if (!buf && len)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: NULL buffer", label);
    if (len < 8)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: file is %zu bytes, shorter than the 8-byte header length", label,
                          len);
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | buf[i];
    if (hlen > ST_MAX_HEADER)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: header length %llu is not sane (limit %llu bytes; not a "
                          "safetensors file?)", label, (unsigned long long)hlen,
                          (unsigned long long)ST_MAX_HEADER);
    if (hlen > len - 8)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: header length %llu runs past the end of the file (%zu bytes)",
                          label, (unsigned long long)hlen, len);
    data = buf + 8 + hlen;
    data_len = len - 8 - (size_t)hlen;

    st = io_json_parse((const char *)buf + 8, (size_t)hlen, label, "header", &root);
    if (st != EMBER_OK)
        return st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ember_fail(EMBER_ERR_FORMAT, "%s: header is not a JSON object", label);
    }

    for (const cJSON *e = root->child; e; e = e->next)
        count++;
    if (count) {
        ts = calloc(count, sizeof *ts);
        if (!ts) {
            cJSON_Delete(root);
            return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for %zu tensors", label,
                              count);
        }
    }

    for (const cJSON *e = root->child; e; e = e->next) {
        const char *name = e->string;
        if (strcmp(name, "__metadata__") == 0) {
            if (seen_meta) {
                st = ember_fail(EMBER_ERR_FORMAT, "%s: \"__metadata__\" appears twice", label);
                goto fail;
            }
            seen_meta = true;
            st = check_metadata(e, label);
            if (st != EMBER_OK)
                goto fail;
            continue;
        }
        if (name[0] == '\0') {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: a tensor has an empty name", label);
            goto fail;
        }
        if (!valid_utf8(name)) {
            st = ember_fail(EMBER_ERR_FORMAT,
                            "%s: tensor name #%zu is not valid UTF-8", label, filled + 1);
            goto fail;
        }
        st = parse_entry(e, name, label, data, data_len, &ts[filled]);
        if (st != EMBER_OK)
            goto fail;
        ts[filled].name = strdup(name);
        if (!ts[filled].name) {
            st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
            goto fail;
        }
        filled++;
    }
    cJSON_Delete(root);
    root = NULL;

    st = check_unique_and_disjoint(ts, filled, label);
    if (st != EMBER_OK)
        goto fail;
    if (filled == 0) {
        free(ts);
        ts = NULL;
    }
    *tensors = ts;
    *n = filled;
    return EMBER_OK;

fail:
    cJSON_Delete(root);
    st_tensors_free(ts, filled);
    return st;
}

/* ---- files ------------------------------------------------------------ */

void st_close(st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->map_len);
    st_tensors_free(f->tensors, f->n);
    free(f->by_name);
    free(f->path);
    free(f);
}

ember_status st_open(const char *path, st_file **out)
{
    struct stat sb;
    st_file *f;
    void *map;
    ember_status st;
    int fd;

    if (!out)
        return ember_fail(EMBER_ERR_INVALID_ARG, "st_open: NULL output");
    *out = NULL;
    if (!path || !path[0])
        return ember_fail(EMBER_ERR_INVALID_ARG, "st_open: empty path");

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: is a directory, not a safetensors file", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return ember_fail(EMBER_ERR_FORMAT, "%s: empty file (0 bytes), not a safetensors file",
                          path);
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: file too large to map", path);
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: cannot map %lld bytes: %s", path,
                          (long long)sb.st_size, strerror(e));
    }
    close(fd); /* the mapping stays valid */

    f = calloc(1, sizeof *f);
    if (!f) {
        munmap(map, (size_t)sb.st_size);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    f->map = map;
    f->map_len = (size_t)sb.st_size;
    f->path = strdup(path);
    if (!f->path) {
        st_close(f);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    st = st_parse(map, f->map_len, path, &f->tensors, &f->n);
    if (st != EMBER_OK) {
        st_close(f);
        return st;
    }
    if (f->n) {
        f->by_name = malloc(f->n * sizeof *f->by_name);
        if (!f->by_name) {
            st_close(f);
            return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
        }
        for (size_t i = 0; i < f->n; i++)
            f->by_name[i] = &f->tensors[i];
        qsort(f->by_name, f->n, sizeof *f->by_name, cmp_tensor_name);
    }
    *out = f;
    return EMBER_OK;
}

void st_drop_resident(st_file *f)
{
    if (f && f->map) madvise(f->map, f->map_len, MADV_DONTNEED);
}

const char *st_path(const st_file *f) { return f->path; }

size_t st_count(const st_file *f) { return f->n; }

const et_tensor *st_tensor_at(const st_file *f, size_t i)
{
    return i < f->n ? &f->tensors[i] : NULL;
}

static int cmp_key_tensor(const void *key, const void *elem)
{
    const et_tensor *t = *(const et_tensor *const *)elem;
    return strcmp((const char *)key, t->name);
}

const et_tensor *st_find(const st_file *f, const char *name)
{
    const et_tensor *const *hit;
    if (!f || !name || f->n == 0)
        return NULL;
    hit = bsearch(name, f->by_name, f->n, sizeof *f->by_name, cmp_key_tensor);
    return hit ? *hit : NULL;
}
