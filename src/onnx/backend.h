/* The "onnx:DIR" model backend (ember_model_params.backend): what a model
 * keeps so each of its sessions can open the exported decode step on ONNX
 * Runtime (spark_ort.h) instead of running ember's kernels. */
#ifndef EMBER_ONNX_BACKEND_H
#define EMBER_ONNX_BACKEND_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark_config.h"

typedef struct onnx_backend {
    char *dir;      /* the exported folder */
    char *runtime;  /* the libonnxruntime to load */
    int32_t context; /* the graph's context bucket */
    int32_t prefill_chunk; /* tokens per prefill graph run; 0: no prefill graph */
} onnx_backend;

/* Parses backend (NULL, "cpu" or "onnx:DIR") for a model with config c:
 * *out is NULL for ember's kernels, else a backend whose manifest matched.
 * runtime may be NULL (the default library name). */
ember_status onnx_backend_open(const spark_config *c, const char *backend, const char *runtime,
                               onnx_backend **out);
void onnx_backend_free(onnx_backend *b);

#endif
