#include "onnx/onnx_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "base/status.h"

#define OG_DATA_ALIGN 4096

typedef struct stored {
    char *name;
    uint64_t offset, length, hash;
} stored;

struct og_data {
    FILE *f;
    char *path, *location;
    uint64_t size;
    stored *items;
    size_t n, cap;
};

ember_status og_data_open(const char *path, const char *location, og_data **out)
{
    *out = NULL;
    og_data *d = calloc(1, sizeof *d);
    if (d) {
        d->path = strdup(path);
        d->location = strdup(location);
    }
    if (!d || !d->path || !d->location) {
        if (d) free(d->path), free(d->location);
        free(d);
        return ember_fail(EMBER_ERR_NO_MEMORY, "onnx data: out of memory");
    }
    d->f = fopen(path, "wb");
    if (!d->f) {
        ember_status st = ember_fail(EMBER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        free(d->path);
        free(d->location);
        free(d);
        return st;
    }
    *out = d;
    return EMBER_OK;
}

static void release(og_data *d)
{
    for (size_t i = 0; i < d->n; i++) free(d->items[i].name);
    free(d->items);
    free(d->path);
    free(d->location);
    free(d);
}

ember_status og_data_close(og_data *d)
{
    if (!d) return EMBER_OK;
    ember_status st = fclose(d->f) == 0 ? EMBER_OK : ember_fail(EMBER_ERR_IO, "%s: write failed", d->path);
    release(d);
    return st;
}

void og_data_discard(og_data *d)
{
    if (!d) return;
    fclose(d->f);
    remove(d->path);
    release(d);
}

const char *og_data_location(const og_data *d)
{
    return d->location;
}

ember_status og_data_put(og_data *d, const char *name, const void *bytes, size_t n,
                         uint64_t *offset)
{
    /* equal names with equal checksums and lengths are the same tensor
     * (both come from one model's weights) */
    const uint64_t h = cksum64_of(bytes, n);
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i].length == n && d->items[i].hash == h && !strcmp(d->items[i].name, name)) {
            *offset = d->items[i].offset;
            return EMBER_OK;
        }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        stored *grown = realloc(d->items, cap * sizeof *grown);
        if (!grown) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx data: out of memory");
        d->items = grown;
        d->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx data: out of memory");
    const uint64_t at = (d->size + OG_DATA_ALIGN - 1) / OG_DATA_ALIGN * OG_DATA_ALIGN;
    static const char zeros[OG_DATA_ALIGN];
    if (fwrite(zeros, 1, (size_t)(at - d->size), d->f) != at - d->size || fwrite(bytes, 1, n, d->f) != n) {
        free(copy);
        return ember_fail(EMBER_ERR_IO, "%s: write failed: %s", d->path, strerror(errno));
    }
    d->size = at + n;
    d->items[d->n++] = (stored){copy, at, n, h};
    *offset = at;
    return EMBER_OK;
}
