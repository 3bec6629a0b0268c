/* ONNX Runtime, loaded at run time (dlopen) through its documented C API:
 * OrtGetApiBase() gives a table of entry points whose order is fixed by the
 * ABI; ort_api.c names the few it calls by their index in that table, so no
 * ORT header is needed to build ember and no ORT library to run it without
 * this backend. A phone app passes its own build (with the QNN provider);
 * the tests use the CPU build inside npm's onnxruntime-node.
 *
 * A runtime (library + environment) serves any number of graphs; tensors
 * wrap caller-owned buffers once, so a step runs without allocating. */
#ifndef EMBER_ONNX_ORT_API_H
#define EMBER_ONNX_ORT_API_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* Element types, as ONNX numbers them (ORT uses the same values). */
enum { ORT_FLOAT = 1, ORT_INT32 = 6, ORT_FLOAT16 = 10 };

/* GraphOptimizationLevel values. */
enum { ORT_OPTIMIZE_BASIC = 1, ORT_OPTIMIZE_ALL = 99 };

/* Which library runs the graphs, and on which execution provider. */
typedef struct ort_choice {
    const char *lib;      /* a libonnxruntime.so; NULL: libonnxruntime.so.1 */
    const char *provider; /* NULL or "cpu": ORT's CPU provider; else the name
                             SessionOptionsAppendExecutionProvider takes
                             ("qnn", "coreml", "xnnpack", ... in any case) */
    const char *options;  /* NULL, or "key=value" entries separated by ';':
                             keys starting "session." or "ep." are session
                             config entries (session.disable_cpu_ep_fallback,
                             ep.context_enable), the rest the provider's
                             options (backend_path=libQnnHtp.so) */
} ort_choice;

typedef struct ort_runtime ort_runtime;
typedef struct ort_graph ort_graph;
typedef struct ort_tensor ort_tensor; /* an OrtValue over a caller's buffer */

/* Opens the library at lib_path (a libonnxruntime.so). */
ember_status ort_runtime_open(const char *lib_path, ort_runtime **out);
/* Opens c's library and sets its provider and options (copied) for every
 * graph loaded afterwards; a malformed option fails here, a provider the
 * library lacks when a graph loads (naming it and the library's own). */
ember_status ort_runtime_open_choice(const ort_choice *c, ort_runtime **out);
void ort_runtime_close(ort_runtime *rt);
/* The library's version string ("1.30.0"). */
const char *ort_runtime_version(const ort_runtime *rt);

/* A session for the model file on the runtime's provider (CPU unless
 * ort_runtime_open_choice said otherwise) with `threads` intra-op threads
 * (0: ORT's choice) and graph optimizations up to `level`. */
ember_status ort_graph_load(ort_runtime *rt, const char *model_path, int threads, int level,
                            ort_graph **out);
void ort_graph_free(ort_graph *g);

/* Wraps data (bytes long, caller-owned, outliving the tensor) as a tensor
 * of `type` and shape dims[rank]. */
ember_status ort_tensor_wrap(ort_runtime *rt, void *data, size_t bytes, const int64_t *dims,
                             int rank, int type, ort_tensor **out);
void ort_tensor_free(ort_runtime *rt, ort_tensor *t);

/* Runs g: inputs by name, outputs written into the given tensors' buffers. */
ember_status ort_graph_run(ort_graph *g, const char *const *in_names,
                           ort_tensor *const *inputs, size_t n_in,
                           const char *const *out_names, ort_tensor **outputs, size_t n_out);

#endif
