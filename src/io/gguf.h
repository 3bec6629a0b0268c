/* GGUF (llama.cpp's single-file format), versions 2 and 3, little-endian:
 *
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x      { string key, u32 value type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset }
 *   padding to `general.alignment` (u32, default 32), then the data section;
 *   each tensor's offset is relative to it and a multiple of the alignment.
 *
 * A string is a u64 byte count and the bytes (no NUL). An array is a u32
 * element type, a u64 count and the elements. ne[0] is the fastest-varying
 * dimension: a PyTorch matrix of shape (rows, cols) has ne = [cols, rows].
 *
 * The reader maps the file read-only and checks everything before anything
 * is used: counts and lengths against the bytes left, every tensor's bytes
 * (ne product / block size x block bytes) inside the file, aligned, disjoint,
 * names and keys unique. The writer writes "<path>.tmp" and renames it, so a
 * failed write leaves no file behind. */
#ifndef EMBER_IO_GGUF_H
#define EMBER_IO_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "io/tensor.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

/* "uint32", "string", "array", ...; "?" when out of range. */
const char *gguf_type_name(gguf_type t);
/* Bytes of one element of a fixed-size type; 0 for STRING and ARRAY. */
size_t gguf_type_size(gguf_type t);

/* A string value: a NUL-terminated copy (the bytes may hold NULs of their
 * own; len is authoritative). */
typedef struct gguf_str {
    char *s;
    size_t len;
} gguf_str;

typedef struct gguf_value {
    gguf_type type;
    /* scalars: unsigned types and bool in u, signed types in i, floats in f
     * (a float32 widened: casting back is exact) */
    uint64_t u;
    int64_t i;
    double f;
    gguf_str str;            /* type STRING */
    /* type ARRAY */
    gguf_type arr_type;      /* never ARRAY: nested arrays are rejected */
    uint64_t n;
    const uint8_t *arr_data; /* fixed-size elements, little-endian, unaligned */
    gguf_str *arr_strs;      /* STRING elements */
} gguf_value;

typedef struct gguf_kv {
    char *key;
    gguf_value v;
} gguf_kv;

typedef struct gguf_tensor {
    char *name;
    uint32_t n_dims;           /* 1 .. GGUF_MAX_DIMS */
    uint64_t ne[GGUF_MAX_DIMS]; /* 1 past n_dims */
    uint32_t ggml_type;
    et_dtype dtype;
    uint64_t offset;           /* in the data section */
    const void *data;          /* into the buffer or mapping */
    size_t nbytes;
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Parses a whole GGUF image held in (buf, len); the file keeps pointers into
 * buf, which must outlive it. `label` names the file in messages. Pure: no
 * I/O (the fuzz target's entry point). On failure *out is NULL. */
ember_status gguf_parse(const uint8_t *buf, size_t len, const char *label, gguf_file **out);
/* mmaps `path` read-only and parses it. */
ember_status gguf_open(const char *path, gguf_file **out);
void gguf_close(gguf_file *f);
/* Drops the resident pages of the mapping (see st_drop_resident). */
void gguf_drop_resident(gguf_file *f);

/* True if `path` is a regular file starting with the GGUF magic. */
bool gguf_is_gguf_file(const char *path);

const char *gguf_label(const gguf_file *f);
uint32_t gguf_version(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
size_t gguf_data_offset(const gguf_file *f);

size_t gguf_n_kv(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i); /* file order */
/* NULL when absent. */
const gguf_value *gguf_find(const gguf_file *f, const char *key);

size_t gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i); /* file order */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters. A missing key or a value of another type is
 * EMBER_ERR_FORMAT with a message naming the file, the key and the type
 * expected ("x.gguf: key 'a.b' is string, expected uint32"). */
/* EMBER_OK when general.architecture is `arch`; else UNSUPPORTED with
 * "FILE: general.architecture is 'X', but " and `expect` (what ember reads
 * instead), or the missing key's error. */
ember_status gguf_check_arch(const gguf_file *f, const char *arch, const char *expect);
ember_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
ember_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);
ember_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
ember_status gguf_get_f32(const gguf_file *f, const char *key, float *out);
ember_status gguf_get_f64(const gguf_file *f, const char *key, double *out);
ember_status gguf_get_bool(const gguf_file *f, const char *key, bool *out);
/* *out is NUL-terminated; *len (optional) its length. */
ember_status gguf_get_str(const gguf_file *f, const char *key, const char **out, size_t *len);
/* An array whose elements are `elem` (GGUF_TYPE_COUNT: any element type). */
ember_status gguf_get_arr(const gguf_file *f, const char *key, gguf_type elem,
                          const gguf_value **out);

/* Element i of a fixed-size array (no bounds check: i < v->n). */
uint64_t gguf_arr_u(const gguf_value *v, uint64_t i); /* unsigned types, bool */
int64_t gguf_arr_i(const gguf_value *v, uint64_t i);  /* signed types */
double gguf_arr_f(const gguf_value *v, uint64_t i);   /* float types */

/* ---- writing -------------------------------------------------------------- */

typedef struct gguf_writer gguf_writer;
typedef struct gguf_sink gguf_sink;

/* Streams one tensor's bytes: call gguf_sink_write as often as needed; the
 * total must be exactly the tensor's size. A non-OK return aborts the write. */
typedef ember_status (*gguf_produce_fn)(void *ctx, gguf_sink *sink);
ember_status gguf_sink_write(gguf_sink *sink, const void *bytes, size_t n);

/* done/total are bytes of tensor data; non-zero return cancels the write
 * (EMBER_ERR_CANCELLED). */
typedef int (*gguf_progress_fn)(void *ctx, size_t done, size_t total);

ember_status gguf_writer_create(gguf_writer **out);
void gguf_writer_free(gguf_writer *w);

/* Metadata, kept in the order set. A key set twice is EMBER_ERR_INVALID_ARG.
 * "general.alignment" (uint32, a power of two) also sets the alignment. */
ember_status gguf_set_u8(gguf_writer *w, const char *key, uint8_t v);
ember_status gguf_set_i8(gguf_writer *w, const char *key, int8_t v);
ember_status gguf_set_u16(gguf_writer *w, const char *key, uint16_t v);
ember_status gguf_set_i16(gguf_writer *w, const char *key, int16_t v);
ember_status gguf_set_u32(gguf_writer *w, const char *key, uint32_t v);
ember_status gguf_set_i32(gguf_writer *w, const char *key, int32_t v);
ember_status gguf_set_u64(gguf_writer *w, const char *key, uint64_t v);
ember_status gguf_set_i64(gguf_writer *w, const char *key, int64_t v);
ember_status gguf_set_f32(gguf_writer *w, const char *key, float v);
ember_status gguf_set_f64(gguf_writer *w, const char *key, double v);
ember_status gguf_set_bool(gguf_writer *w, const char *key, bool v);
ember_status gguf_set_str(gguf_writer *w, const char *key, const char *s);
ember_status gguf_set_strn(gguf_writer *w, const char *key, const char *s, size_t len);
/* n elements of fixed-size type `elem` in host (little-endian) layout; bool
 * elements are one byte, 0 or 1. */
ember_status gguf_set_arr(gguf_writer *w, const char *key, gguf_type elem, const void *data,
                          size_t n);
/* lens may be NULL (strlen each). */
ember_status gguf_set_str_arr(gguf_writer *w, const char *key, const char *const *strs,
                              const size_t *lens, size_t n);
/* Copies a value read by the reader (any type). */
ember_status gguf_set_value(gguf_writer *w, const char *key, const gguf_value *v);
/* Copies every key of src that starts with prefix, in file order; *n: how many. */
ember_status gguf_copy_keys(gguf_writer *w, const gguf_file *src, const char *prefix, size_t *n);

/* A tensor of n_dims GGUF dims ne[] (ne[0] innermost, a multiple of the
 * dtype's block). Exactly one of data (ne product bytes, must outlive
 * gguf_write) and produce (called during gguf_write) is non-NULL. Names must
 * be unique and shorter than 64 bytes (llama.cpp's limit). */
ember_status gguf_add_tensor(gguf_writer *w, const char *name, et_dtype dtype, uint32_t n_dims,
                             const uint64_t *ne, const void *data, gguf_produce_fn produce,
                             void *ctx);
/* PyTorch shape (rows, cols): ne = [cols, rows]. */
ember_status gguf_add_matrix(gguf_writer *w, const char *name, et_dtype dtype, int64_t rows,
                             int64_t cols, const void *data, gguf_produce_fn produce,
                             void *ctx);
ember_status gguf_add_vector(gguf_writer *w, const char *name, et_dtype dtype, int64_t n,
                             const void *data, gguf_produce_fn produce, void *ctx);

/* Writes header, metadata, tensor infos and the aligned data to
 * "<path>.tmp", then renames it to `path`. On any failure (including a
 * producer's or a cancel) the temporary file is removed and `path` is left
 * as it was. `progress` may be NULL. */
ember_status gguf_write(const gguf_writer *w, const char *path, gguf_progress_fn progress,
                        void *ctx);

#endif
