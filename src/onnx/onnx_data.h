/* The external data file of one or more ONNX graphs: tensors appended at
 * 4096-aligned offsets (so a runtime can map them), each remembered by name
 * and content, so graphs written one after another (the decode step and the
 * prefill chunk) store their shared weights once. */
#ifndef EMBER_ONNX_DATA_H
#define EMBER_ONNX_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct og_data og_data;

/* Creates (truncates) path; graphs name it `location` (relative to their
 * folder). */
ember_status og_data_open(const char *path, const char *location, og_data **out);
/* Closes the file; fails when a buffered write fails. Frees d either way. */
ember_status og_data_close(og_data *d);
/* Closes and removes the file (nothing written is kept). */
void og_data_discard(og_data *d);

/* Where the tensor `name` with these bytes lies: written now, or found
 * already written under that name with equal bytes. */
ember_status og_data_put(og_data *d, const char *name, const void *bytes, size_t n,
                         uint64_t *offset);
const char *og_data_location(const og_data *d);

#endif
