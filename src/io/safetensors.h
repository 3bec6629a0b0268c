/* safetensors: an 8-byte little-endian header length, a JSON header mapping
 * tensor names to {dtype, shape, data_offsets}, then the raw data. Files are
 * mmapped read-only; tensors are views into the mapping. */
#ifndef EMBER_IO_SAFETENSORS_H
#define EMBER_IO_SAFETENSORS_H

#include "ember.h"
#include "io/tensor.h"

typedef struct st_file st_file;

/* Parses a whole safetensors image held in memory (buf, len). `label` names
 * the file in error messages. On success *tensors is a malloc'd array of *n
 * tensors whose names are malloc'd too (free with st_tensors_free) and whose
 * data pointers point into buf. Rejects: a short file, a header length past
 * the end, header JSON that is not an object, entries without a valid dtype /
 * shape / data_offsets, offsets past the end or not matching shape x dtype
 * size, overlapping tensors, duplicate names, unsupported dtypes (named). */
ember_status st_parse(const uint8_t *buf, size_t len, const char *label,
                      et_tensor **tensors, size_t *n);
void st_tensors_free(et_tensor *tensors, size_t n);

/* mmaps and parses `path`. */
ember_status st_open(const char *path, st_file **out);
void st_close(st_file *f);

const char *st_path(const st_file *f);
/* Drops the mapping's resident pages (they are read again from the file if
 * touched later): for when every tensor was converted into memory of its own. */
void st_drop_resident(st_file *f);
size_t st_count(const st_file *f);
const et_tensor *st_tensor_at(const st_file *f, size_t i);
/* NULL if absent. */
const et_tensor *st_find(const st_file *f, const char *name);

#endif
