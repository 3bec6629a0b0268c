/* GGUF reader: gguf_parse validates a whole image held in memory; gguf_open
 * maps a file read-only around it. The writer is in gguf_write.c.
 *
 * Every count and length read from the file is bounded by the bytes left
 * before anything is allocated for it, so a hostile file cannot make the
 * parser allocate more than a small multiple of its own size. Multi-byte
 * values are read with memcpy (unaligned) and assumed little-endian, as on
 * every host ember targets (x86-64, AArch64). */
#include "io/gguf.h"

#include "base/status.h"
#include "kernels/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keys and names longer than this are not GGUF (the spec caps keys at
 * 65535 bytes; llama.cpp caps tensor names at 63). */
#define GGUF_MAX_NAME 65535u
/* Smallest encodings, used to bound counts against the bytes left. */
#define MIN_KV_BYTES 13u     /* empty key (8) + type (4) + a 1-byte value */
#define MIN_TENSOR_BYTES 32u /* empty name (8) + n_dims (4) + 1 dim (8) + type (4) + offset (8) */

struct gguf_file {
    char *label;
    void *map;               /* gguf_open only */
    size_t map_len;
    uint32_t version, alignment;
    size_t data_offset;
    gguf_kv *kv;
    size_t n_kv;
    const gguf_kv **kv_sorted;
    gguf_tensor *tensors;
    size_t n_tensors;
    const gguf_tensor **t_sorted;
};

static const char *const type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool",  "string", "array", "uint64", "int64", "float64",
};

const char *gguf_type_name(gguf_type t)
{
    return (unsigned)t < GGUF_TYPE_COUNT ? type_names[t] : "?";
}

size_t gguf_type_size(gguf_type t)
{
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    case GGUF_TYPE_STRING: case GGUF_TYPE_ARRAY: case GGUF_TYPE_COUNT: break;
    }
    return 0;
}

/* ggml type ids ember does not read, for messages. */
static const char *ggml_type_name(uint32_t t)
{
    static const char *const names[] = {
        [3] = "q4_1",    [4] = "q4_2 (removed)", [5] = "q4_3 (removed)", [6] = "q5_0",
        [7] = "q5_1",    [9] = "q8_1",   [10] = "q2_K",   [11] = "q3_K",   [12] = "q4_K",
        [13] = "q5_K",   [14] = "q6_K",  [15] = "q8_K",   [16] = "iq2_xxs", [17] = "iq2_xs",
        [18] = "iq3_xxs", [19] = "iq1_s", [20] = "iq4_nl", [21] = "iq3_s", [22] = "iq2_s",
        [23] = "iq4_xs", [24] = "i8",    [25] = "i16",    [26] = "i32",    [27] = "i64",
        [28] = "f64",    [29] = "iq1_m", [34] = "tq1_0",  [35] = "tq2_0",  [39] = "mxfp4",
    };
    const ek_format *f = ek_format_by_ggml_type(t);
    if (f) return f->name;
    if (t < sizeof names / sizeof *names && names[t]) return names[t];
    return "unknown";
}

/* ---- the cursor ------------------------------------------------------------ */

typedef struct cursor {
    const uint8_t *buf;
    size_t len, at;
    const char *label;
} cursor;

static ember_status past_end(const cursor *c, const char *what, uint64_t need)
{
    return ember_fail(EMBER_ERR_FORMAT,
                      "%s: %s at byte %zu needs %llu bytes but only %zu are left (file is %zu "
                      "bytes; truncated?)", c->label, what, c->at, (unsigned long long)need,
                      c->len - c->at, c->len);
}

static ember_status need(const cursor *c, uint64_t n, const char *what)
{
    return n > c->len - c->at ? past_end(c, what, n) : EMBER_OK;
}

static ember_status rd(cursor *c, void *dst, size_t n, const char *what)
{
    ember_status st = need(c, n, what);
    if (st) return st;
    memcpy(dst, c->buf + c->at, n);
    c->at += n;
    return EMBER_OK;
}

static ember_status rd_u32(cursor *c, uint32_t *v, const char *what)
{
    return rd(c, v, 4, what);
}

static ember_status rd_u64(cursor *c, uint64_t *v, const char *what)
{
    return rd(c, v, 8, what);
}

/* A string value of any bytes, copied with a NUL after it. */
static ember_status rd_str(cursor *c, gguf_str *out, const char *what)
{
    uint64_t n;
    ember_status st = rd_u64(c, &n, what);
    if (st) return st;
    if ((st = need(c, n, what))) return st;
    out->s = malloc((size_t)n + 1);
    if (!out->s)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for a %llu-byte string",
                          c->label, (unsigned long long)n);
    memcpy(out->s, c->buf + c->at, (size_t)n);
    out->s[n] = '\0';
    out->len = (size_t)n;
    c->at += (size_t)n;
    return EMBER_OK;
}

/* A key or tensor name: non-empty, no NUL byte, at most GGUF_MAX_NAME bytes. */
static ember_status rd_name(cursor *c, char **out, const char *what, size_t index)
{
    size_t start = c->at;
    gguf_str s = {NULL, 0};
    ember_status st = rd_str(c, &s, what);
    if (st) return st;
    const char *why = s.len == 0 ? "is empty"
                      : s.len > GGUF_MAX_NAME ? "is longer than 65535 bytes"
                      : memchr(s.s, '\0', s.len) ? "contains a NUL byte" : NULL;
    if (why) {
        free(s.s);
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s #%zu (at byte %zu) %s", c->label, what,
                          index, start, why);
    }
    *out = s.s;
    return EMBER_OK;
}

/* ---- values ------------------------------------------------------------------ */

static void value_free(gguf_value *v)
{
    free(v->str.s);
    if (v->arr_strs)
        for (uint64_t i = 0; i < v->n; i++) free(v->arr_strs[i].s);
    free(v->arr_strs);
    memset(v, 0, sizeof *v);
}

static void scalar_from_bytes(gguf_value *v, gguf_type t, const uint8_t *p)
{
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
    float f32; uint64_t u64; int64_t i64; double f64;
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: memcpy(&u8, p, 1); v->u = u8; break;
    case GGUF_TYPE_INT8: memcpy(&i8, p, 1); v->i = i8; break;
    case GGUF_TYPE_UINT16: memcpy(&u16, p, 2); v->u = u16; break;
    case GGUF_TYPE_INT16: memcpy(&i16, p, 2); v->i = i16; break;
    case GGUF_TYPE_UINT32: memcpy(&u32, p, 4); v->u = u32; break;
    case GGUF_TYPE_INT32: memcpy(&i32, p, 4); v->i = i32; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); v->f = f32; break;
    case GGUF_TYPE_UINT64: memcpy(&u64, p, 8); v->u = u64; break;
    case GGUF_TYPE_INT64: memcpy(&i64, p, 8); v->i = i64; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); v->f = f64; break;
    case GGUF_TYPE_STRING: case GGUF_TYPE_ARRAY: case GGUF_TYPE_COUNT: break;
    }
}

static ember_status rd_type(cursor *c, const char *key, const char *what, gguf_type *out)
{
    uint32_t t;
    size_t at = c->at;
    ember_status st = rd_u32(c, &t, what);
    if (st) return st;
    if (t >= GGUF_TYPE_COUNT)
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s': unknown %s %u (at byte %zu)",
                          c->label, key, what, t, at);
    *out = (gguf_type)t;
    return EMBER_OK;
}

static ember_status rd_array(cursor *c, const char *key, gguf_value *v)
{
    ember_status st;
    uint64_t n;
    if ((st = rd_type(c, key, "array element type", &v->arr_type))) return st;
    if (v->arr_type == GGUF_TYPE_ARRAY)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: key '%s': arrays of arrays are not supported",
                          c->label, key);
    if ((st = rd_u64(c, &n, "array length"))) return st;
    size_t elem = gguf_type_size(v->arr_type);
    uint64_t min = elem ? elem : 8; /* a string is at least its length */
    if (n > (c->len - c->at) / min)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: key '%s': array of %llu %s values runs past the end of the file "
                          "(%zu bytes left; truncated?)", c->label, key, (unsigned long long)n,
                          gguf_type_name(v->arr_type), c->len - c->at);
    if (elem) {
        v->arr_data = c->buf + c->at;
        if (v->arr_type == GGUF_TYPE_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (v->arr_data[i] > 1)
                    return ember_fail(EMBER_ERR_FORMAT,
                                      "%s: key '%s': bool array element %llu is %u, not 0 or 1",
                                      c->label, key, (unsigned long long)i, v->arr_data[i]);
        c->at += (size_t)n * elem;
        v->n = n;
        return EMBER_OK;
    }
    v->arr_strs = calloc(n ? (size_t)n : 1, sizeof *v->arr_strs);
    if (!v->arr_strs)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: key '%s': out of memory for %llu strings",
                          c->label, key, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        if ((st = rd_str(c, &v->arr_strs[i], "array string"))) return st;
        v->n = i + 1; /* so value_free frees what was read */
    }
    return EMBER_OK;
}

static ember_status rd_value(cursor *c, const char *key, gguf_value *v)
{
    ember_status st;
    if ((st = rd_type(c, key, "value type", &v->type))) return st;
    if (v->type == GGUF_TYPE_STRING) return rd_str(c, &v->str, "string value");
    if (v->type == GGUF_TYPE_ARRAY) return rd_array(c, key, v);
    size_t size = gguf_type_size(v->type);
    if ((st = need(c, size, "value"))) return st;
    if (v->type == GGUF_TYPE_BOOL && c->buf[c->at] > 1)
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s': bool value is %u, not 0 or 1",
                          c->label, key, c->buf[c->at]);
    scalar_from_bytes(v, v->type, c->buf + c->at);
    v->n = 1;
    c->at += size;
    return EMBER_OK;
}

/* ---- tensors ----------------------------------------------------------------- */

/* The format table's names, for the message about a type ember lacks. */
static const char *readable_types(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < ET_DTYPE_COUNT && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", d ? ", " : "", ek_format_of((et_dtype)d)->name);
    return buf;
}

static ember_status rd_tensor_info(cursor *c, size_t index, gguf_tensor *t)
{
    ember_status st;
    uint32_t type;
    if ((st = rd_name(c, &t->name, "tensor name", index))) return st;
    if ((st = rd_u32(c, &t->n_dims, "tensor n_dims"))) return st;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s' has %u dims (1 to %d allowed)",
                          c->label, t->name, t->n_dims, GGUF_MAX_DIMS);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if ((st = rd_u64(c, &t->ne[d], "tensor dims"))) return st;
    if ((st = rd_u32(c, &type, "tensor type"))) return st;
    if ((st = rd_u64(c, &t->offset, "tensor offset"))) return st;
    t->ggml_type = type;
    const ek_format *f = ek_format_by_ggml_type(type);
    if (!f) {
        char names[256];
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "%s: tensor '%s' has ggml type %u (%s), which ember does not read "
                          "(it reads %s)", c->label, t->name, type, ggml_type_name(type),
                          readable_types(names, sizeof names));
    }
    t->dtype = f->dtype;
    if (t->ne[0] % (uint64_t)f->block)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': ne[0] = %llu is not a multiple of the %s block "
                          "size %d", c->label, t->name, (unsigned long long)t->ne[0], f->name,
                          f->block);
    /* bytes = ne0 / block * block_bytes * ne1 * ne2 * ne3, bounded by the file */
    uint64_t bytes = t->ne[0] / (uint64_t)f->block;
    bool over = bytes > UINT64_MAX / f->block_bytes;
    if (!over) bytes *= f->block_bytes;
    for (int d = 1; d < GGUF_MAX_DIMS && !over; d++) {
        if (t->ne[d] == 0) {
            bytes = 0;
        } else if (bytes > UINT64_MAX / t->ne[d]) {
            over = true;
        } else {
            bytes *= t->ne[d];
        }
    }
    /* an empty tensor still needs its dims below 2^63 (ggml's int64 ne) */
    for (uint32_t d = 0; d < t->n_dims; d++) over |= t->ne[d] > (uint64_t)INT64_MAX;
    if (over || bytes > c->len)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: tensor '%s': its dims give more bytes than the whole file (%zu)",
                          c->label, t->name, c->len);
    t->nbytes = (size_t)bytes;
    return EMBER_OK;
}

/* ---- the file ------------------------------------------------------------------ */

static int cmp_kv(const void *a, const void *b)
{
    return strcmp((*(const gguf_kv *const *)a)->key, (*(const gguf_kv *const *)b)->key);
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const gguf_tensor *const *)a)->name, (*(const gguf_tensor *const *)b)->name);
}

static int cmp_tensor_offset(const void *a, const void *b)
{
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return 0;
}

void gguf_drop_resident(gguf_file *f)
{
    if (f && f->map) madvise(f->map, f->map_len, MADV_DONTNEED);
}

void gguf_close(gguf_file *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n_kv; i++) {
        free(f->kv[i].key);
        value_free(&f->kv[i].v);
    }
    free(f->kv);
    free(f->kv_sorted);
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free(f->t_sorted);
    if (f->map) munmap(f->map, f->map_len);
    free(f->label);
    free(f);
}

static ember_status parse_header(gguf_file *f, cursor *c, uint64_t *n_tensors, uint64_t *n_kv)
{
    ember_status st;
    if (c->len < 4)
        return ember_fail(EMBER_ERR_FORMAT, "%s: file is %zu bytes, too short for a GGUF header",
                          c->label, c->len);
    if (memcmp(c->buf, "GGUF", 4) != 0) {
        char shown[20];
        size_t used = 0;
        for (int i = 0; i < 4; i++) {
            unsigned char ch = c->buf[i];
            if (ch >= 32 && ch < 127 && ch != '\'')
                used += (size_t)snprintf(shown + used, sizeof shown - used, "%c", ch);
            else
                used += (size_t)snprintf(shown + used, sizeof shown - used, "\\x%02x", ch);
        }
        return ember_fail(EMBER_ERR_FORMAT, "%s: not a GGUF file (bad magic '%s', expected "
                          "'GGUF')", c->label, shown);
    }
    c->at = 4;
    if ((st = rd_u32(c, &f->version, "version"))) return st;
    if (f->version == 1)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: GGUF version 1 is not supported (ember "
                          "reads versions 2 and 3; re-convert the model)", c->label);
    if ((f->version & 0xffffu) == 0 && (f->version >> 16) != 0)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: GGUF version field 0x%08x looks big-endian; "
                          "only little-endian GGUF files are supported", c->label, f->version);
    if (f->version != 2 && f->version != 3)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported (ember "
                          "reads versions 2 and 3)", c->label, f->version);
    if ((st = rd_u64(c, n_tensors, "tensor count")) || (st = rd_u64(c, n_kv, "metadata count")))
        return st;
    size_t left = c->len - c->at;
    if (*n_kv > left / MIN_KV_BYTES || *n_tensors > left / MIN_TENSOR_BYTES ||
        *n_kv * MIN_KV_BYTES + *n_tensors * MIN_TENSOR_BYTES > left)
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: header claims %llu metadata entries and %llu tensors, more than "
                          "the %zu bytes left can hold (truncated or corrupt)", c->label,
                          (unsigned long long)*n_kv, (unsigned long long)*n_tensors, left);
    return EMBER_OK;
}

static ember_status parse_kvs(gguf_file *f, cursor *c, uint64_t n_kv)
{
    ember_status st;
    f->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv);
    f->kv_sorted = calloc(n_kv ? (size_t)n_kv : 1, sizeof *f->kv_sorted);
    if (!f->kv || !f->kv_sorted)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", c->label);
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        if ((st = rd_name(c, &kv->key, "metadata key", (size_t)i))) return st;
        f->n_kv = (size_t)i + 1;
        if ((st = rd_value(c, kv->key, &kv->v))) return st;
        f->kv_sorted[i] = kv;
    }
    qsort(f->kv_sorted, f->n_kv, sizeof *f->kv_sorted, cmp_kv);
    for (size_t i = 1; i < f->n_kv; i++)
        if (!strcmp(f->kv_sorted[i - 1]->key, f->kv_sorted[i]->key))
            return ember_fail(EMBER_ERR_FORMAT, "%s: duplicate metadata key '%s'", c->label,
                              f->kv_sorted[i]->key);

    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_value *a = gguf_find(f, "general.alignment");
    if (a) {
        if (a->type != GGUF_TYPE_UINT32)
            return ember_fail(EMBER_ERR_FORMAT, "%s: key 'general.alignment' is %s, expected "
                              "uint32", c->label, gguf_type_name(a->type));
        if (a->u == 0 || (a->u & (a->u - 1)))
            return ember_fail(EMBER_ERR_FORMAT, "%s: key 'general.alignment' is %llu, not a "
                              "power of two", c->label, (unsigned long long)a->u);
        f->alignment = (uint32_t)a->u;
    }
    return EMBER_OK;
}

static ember_status parse_tensors(gguf_file *f, cursor *c, uint64_t n_tensors)
{
    ember_status st;
    f->tensors = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->tensors);
    f->t_sorted = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *f->t_sorted);
    if (!f->tensors || !f->t_sorted)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", c->label);
    for (uint64_t i = 0; i < n_tensors; i++) {
        f->n_tensors = (size_t)i + 1;
        if ((st = rd_tensor_info(c, (size_t)i, &f->tensors[i]))) return st;
        f->t_sorted[i] = &f->tensors[i];
    }

    /* the data section starts at the next multiple of the alignment */
    uint64_t pad = (f->alignment - c->at % f->alignment) % f->alignment;
    f->data_offset = c->at + (size_t)pad; /* may lie past the end when nothing follows */
    uint64_t data_len = f->data_offset <= c->len ? c->len - f->data_offset : 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset % f->alignment)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': data offset %llu is not a "
                              "multiple of the alignment %u", c->label, t->name,
                              (unsigned long long)t->offset, f->alignment);
        if (t->offset > data_len || t->nbytes > data_len - t->offset)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s': data [%llu, %llu) runs past "
                              "the end of the data section (%llu bytes; truncated?)", c->label,
                              t->name, (unsigned long long)t->offset,
                              (unsigned long long)t->offset + t->nbytes,
                              (unsigned long long)data_len);
        /* an empty tensor may sit at the very end, where no data section exists */
        t->data = f->data_offset + t->offset <= c->len ? c->buf + f->data_offset + t->offset
                                                       : c->buf + c->len;
    }

    qsort(f->t_sorted, f->n_tensors, sizeof *f->t_sorted, cmp_tensor_offset);
    const gguf_tensor *last = NULL; /* the non-empty tensor reaching furthest */
    for (size_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = f->t_sorted[i];
        if (t->nbytes == 0) continue;
        if (last && t->offset < last->offset + last->nbytes)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the data "
                              "section", c->label, last->name, t->name);
        if (!last || t->offset + t->nbytes > last->offset + last->nbytes) last = t;
    }
    qsort(f->t_sorted, f->n_tensors, sizeof *f->t_sorted, cmp_tensor_name);
    for (size_t i = 1; i < f->n_tensors; i++)
        if (!strcmp(f->t_sorted[i - 1]->name, f->t_sorted[i]->name))
            return ember_fail(EMBER_ERR_FORMAT, "%s: duplicate tensor name '%s'", c->label,
                              f->t_sorted[i]->name);
    return EMBER_OK;
}

static ember_status parse_into(gguf_file *f, const uint8_t *buf, size_t len)
{
    cursor c = {buf, len, 0, f->label};
    uint64_t n_tensors, n_kv;
    ember_status st;
    if ((st = parse_header(f, &c, &n_tensors, &n_kv))) return st;
    if ((st = parse_kvs(f, &c, n_kv))) return st;
    return parse_tensors(f, &c, n_tensors);
}

static gguf_file *new_file(const char *label)
{
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->label = strdup(label);
    if (!f->label) {
        free(f);
        return NULL;
    }
    return f;
}

ember_status gguf_parse(const uint8_t *buf, size_t len, const char *label, gguf_file **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_parse: NULL output");
    *out = NULL;
    if (!label) label = "(gguf)";
    if (!buf && len) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: NULL buffer", label);
    gguf_file *f = new_file(label);
    if (!f) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
    ember_status st = parse_into(f, buf ? buf : (const uint8_t *)"", len);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return EMBER_OK;
}

ember_status gguf_open(const char *path, gguf_file **out)
{
    struct stat sb;
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_open: NULL output");
    *out = NULL;
    if (!path || !path[0]) return ember_fail(EMBER_ERR_INVALID_ARG, "gguf_open: empty path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return ember_fail(EMBER_ERR_FORMAT, "%s: empty file (0 bytes), not a GGUF file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: file too large to map", path);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping stays valid */
    if (map == MAP_FAILED)
        return ember_fail(EMBER_ERR_IO, "%s: cannot map %lld bytes: %s", path,
                          (long long)sb.st_size, strerror(e));
    gguf_file *f = new_file(path);
    if (!f) {
        munmap(map, (size_t)sb.st_size);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    f->map = map;
    f->map_len = (size_t)sb.st_size;
    ember_status st = parse_into(f, map, f->map_len);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return EMBER_OK;
}

bool gguf_is_gguf_file(const char *path)
{
    struct stat sb;
    char magic[4];
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    return n == 4 && memcmp(magic, "GGUF", 4) == 0;
}

/* ---- accessors ------------------------------------------------------------------ */

const char *gguf_label(const gguf_file *f) { return f->label; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
uint32_t gguf_alignment(const gguf_file *f) { return f->alignment; }
size_t gguf_data_offset(const gguf_file *f) { return f->data_offset; }
size_t gguf_n_kv(const gguf_file *f) { return f->n_kv; }
size_t gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i)
{
    return i < f->n_kv ? &f->kv[i] : NULL;
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

static int cmp_key_kv(const void *key, const void *elem)
{
    return strcmp((const char *)key, (*(const gguf_kv *const *)elem)->key);
}

static int cmp_key_tensor(const void *key, const void *elem)
{
    return strcmp((const char *)key, (*(const gguf_tensor *const *)elem)->name);
}

const gguf_value *gguf_find(const gguf_file *f, const char *key)
{
    if (!f || !key || !f->n_kv) return NULL;
    const gguf_kv *const *hit =
        bsearch(key, f->kv_sorted, f->n_kv, sizeof *f->kv_sorted, cmp_key_kv);
    return hit ? &(*hit)->v : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    if (!f || !name || !f->n_tensors) return NULL;
    const gguf_tensor *const *hit =
        bsearch(name, f->t_sorted, f->n_tensors, sizeof *f->t_sorted, cmp_key_tensor);
    return hit ? *hit : NULL;
}

/* The value of `key` if its type is `want`, else a message. */
static ember_status typed(const gguf_file *f, const char *key, gguf_type want,
                          const gguf_value **out)
{
    const gguf_value *v = gguf_find(f, key);
    *out = NULL;
    if (!v)
        return ember_fail(EMBER_ERR_FORMAT, "%s: missing key '%s' (expected %s)", f->label, key,
                          gguf_type_name(want));
    if (v->type != want) {
        if (v->type == GGUF_TYPE_ARRAY)
            return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is an array of %s, expected %s",
                              f->label, key, gguf_type_name(v->arr_type), gguf_type_name(want));
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is %s, expected %s", f->label, key,
                          gguf_type_name(v->type), gguf_type_name(want));
    }
    *out = v;
    return EMBER_OK;
}

ember_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_UINT32, &v);
    if (!st) *out = (uint32_t)v->u;
    return st;
}

ember_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_INT32, &v);
    if (!st) *out = (int32_t)v->i;
    return st;
}

ember_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_UINT64, &v);
    if (!st) *out = v->u;
    return st;
}

ember_status gguf_get_f32(const gguf_file *f, const char *key, float *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_FLOAT32, &v);
    if (!st) *out = (float)v->f;
    return st;
}

ember_status gguf_get_f64(const gguf_file *f, const char *key, double *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_FLOAT64, &v);
    if (!st) *out = v->f;
    return st;
}

ember_status gguf_get_bool(const gguf_file *f, const char *key, bool *out)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_BOOL, &v);
    if (!st) *out = v->u != 0;
    return st;
}

ember_status gguf_get_str(const gguf_file *f, const char *key, const char **out, size_t *len)
{
    const gguf_value *v;
    ember_status st = typed(f, key, GGUF_TYPE_STRING, &v);
    if (!st) {
        *out = v->str.s;
        if (len) *len = v->str.len;
    }
    return st;
}

ember_status gguf_get_arr(const gguf_file *f, const char *key, gguf_type elem,
                          const gguf_value **out)
{
    const gguf_value *v = gguf_find(f, key);
    *out = NULL;
    if (!v)
        return ember_fail(EMBER_ERR_FORMAT, "%s: missing key '%s' (expected an array of %s)",
                          f->label, key, elem == GGUF_TYPE_COUNT ? "values" : gguf_type_name(elem));
    if (v->type != GGUF_TYPE_ARRAY)
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is %s, expected an array of %s",
                          f->label, key, gguf_type_name(v->type),
                          elem == GGUF_TYPE_COUNT ? "values" : gguf_type_name(elem));
    if (elem != GGUF_TYPE_COUNT && v->arr_type != elem)
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is an array of %s, expected an array "
                          "of %s", f->label, key, gguf_type_name(v->arr_type),
                          gguf_type_name(elem));
    *out = v;
    return EMBER_OK;
}

uint64_t gguf_arr_u(const gguf_value *v, uint64_t i)
{
    gguf_value tmp = {0};
    scalar_from_bytes(&tmp, v->arr_type, v->arr_data + i * gguf_type_size(v->arr_type));
    return tmp.u;
}

int64_t gguf_arr_i(const gguf_value *v, uint64_t i)
{
    gguf_value tmp = {0};
    scalar_from_bytes(&tmp, v->arr_type, v->arr_data + i * gguf_type_size(v->arr_type));
    return tmp.i;
}

double gguf_arr_f(const gguf_value *v, uint64_t i)
{
    gguf_value tmp = {0};
    scalar_from_bytes(&tmp, v->arr_type, v->arr_data + i * gguf_type_size(v->arr_type));
    return tmp.f;
}

ember_status gguf_check_arch(const gguf_file *f, const char *arch, const char *expect)
{
    const char *got;
    ember_status st = gguf_get_str(f, "general.architecture", &got, NULL);
    if (st) return st;
    if (strcmp(got, arch))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: general.architecture is '%.64s', but %s", gguf_label(f),
                          got, expect);
    return EMBER_OK;
}
