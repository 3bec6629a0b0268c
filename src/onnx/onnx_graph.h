/* A small builder for one ONNX graph, written with protobuf-c's messages for
 * Debian's onnx.proto: graph inputs and outputs with static shapes, nodes
 * with int/float/ints attributes, and initializers. Large float initializers
 * go to an external data file next to the model (offsets aligned to 4096 so a
 * runtime can map them), small ones inline.
 *
 * Errors are sticky: the first failure (allocation, I/O) is recorded and
 * every later call is a no-op returning a placeholder name, so a graph is
 * built without a check after each node and og_write reports the failure. */
#ifndef EMBER_ONNX_GRAPH_H
#define EMBER_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "onnx/onnx_data.h"

/* ONNX TensorProto.DataType values this builder writes. */
enum { OG_FLOAT = 1, OG_UINT8 = 2, OG_INT8 = 3, OG_UINT16 = 4, OG_INT32 = 6, OG_INT64 = 7, OG_FLOAT16 = 10, OG_INT4 = 22 };

#define OG_MAX_RANK 8

typedef struct og_graph og_graph;

typedef struct og_attr {
    const char *name;
    enum { OG_ATTR_INT = 1, OG_ATTR_FLOAT, OG_ATTR_INTS } kind;
    int64_t i;
    float f;
    const int64_t *ints;
    int n_ints;
} og_attr;

/* A graph named `name`; external tensors are appended to data_path, which
 * the model refers to as data_location (a name relative to the model's
 * folder). The data file is created now (truncated). */
ember_status og_create(const char *name, const char *data_path, const char *data_location,
                       og_graph **out);
/* The same writing into a data file the caller owns (and closes after the
 * last graph), which several graphs may share. */
ember_status og_create_shared(const char *name, og_data *data, og_graph **out);
void og_free(og_graph *g);

/* The sticky status: EMBER_OK while every call has succeeded. */
ember_status og_status(const og_graph *g);

/* Declares a graph input / output of element type `type` and a static
 * shape; an output is a value some node produced under that name. */
const char *og_input(og_graph *g, const char *name, int type, int rank, const int64_t *dims);
void og_output(og_graph *g, const char *name, int type, int rank, const int64_t *dims);

/* Float initializer (copied: inline when small, else to the data file). */
const char *og_init_f32(og_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *data);
/* An initializer of any element type from its raw little-endian bytes
 * (elem_bytes each): inline when small, else to the data file. */
const char *og_init_raw(og_graph *g, const char *name, int type, int rank, const int64_t *dims,
                        const void *data, size_t elem_bytes);
/* The same for a packed type (int4: two to a byte, the first element in the
 * low nibble) given its total bytes. */
const char *og_init_packed(og_graph *g, const char *name, int type, int rank,
                           const int64_t *dims, const void *data, size_t bytes);
/* int64 initializer, inline (shapes, slice bounds). rank 1 with n values.
 * Asking again for a name with the same values returns the existing one. */
const char *og_init_i64(og_graph *g, const char *name, int n, const int64_t *values);
/* A float scalar constant of shape [1] (broadcasts like a scalar). */
const char *og_const_f32(og_graph *g, const char *name, float value);
/* The same as float32 or float16 (type OG_FLOAT or OG_FLOAT16). */
const char *og_const_float(og_graph *g, const char *name, int type, float value);

/* Adds a node; its single output gets a fresh name derived from `hint` and
 * is returned. in[] may hold NULL only at the end (trimmed). */
const char *og_node(og_graph *g, const char *op, const char *hint, int n_in,
                    const char *const *in, int n_attr, const og_attr *attrs);
/* The same with the output named exactly `name` (a graph output's name). */
const char *og_node_named(og_graph *g, const char *op, const char *name, int n_in,
                          const char *const *in, int n_attr, const og_attr *attrs);
/* A node with several outputs named by the caller (hint + index). */
void og_node_multi(og_graph *g, const char *op, const char *hint, int n_in,
                   const char *const *in, int n_out, const char **outs, int n_attr,
                   const og_attr *attrs);

/* Writes the model (IR `ir_version`, ai.onnx opset `opset`) to path and
 * closes the data file. On failure nothing is left at path. */
ember_status og_write(og_graph *g, const char *path, int64_t ir_version, int64_t opset,
                      const char *producer_version);

#endif
