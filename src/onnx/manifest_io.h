/* One input or output of an exported graph as the manifest lists it:
 * name, element type, shape and what the host puts there or takes out;
 * and the lookups a host loop reads a manifest with. */
#ifndef EMBER_ONNX_MANIFEST_IO_H
#define EMBER_ONNX_MANIFEST_IO_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* Appends {"name", "type", "shape", "meaning"} to list; returns the entry. */
cJSON *manifest_io(cJSON *list, const char *name, const char *type, int rank, const int64_t *dims,
                   const char *meaning);

/* Reading one back: the last graph of `kind` in a manifest's graphs list
 * (NULL when none), and a graph's integer field (0 when absent). */
const cJSON *manifest_graph(const cJSON *graphs, const char *kind);
int manifest_int(const cJSON *g, const char *key, int32_t *out);

/* Reads and parses the manifest of the exported folder dir: *root (free
 * with cJSON_Delete; NULL when the text is not JSON) and its path in
 * path[cap]. With `architecture` non-NULL, a manifest naming another one
 * (or none) fails: "PATH: not a ARCHITECTURE export". */
ember_status manifest_read(const char *dir, const char *architecture, char *path, size_t cap, cJSON **root);

#endif
