/* The "onnx:DIR" model backend (ember_model_params.backend): what a model
 * keeps so each of its sessions can open the exported decode step on ONNX
 * Runtime (spark_ort.h) instead of running ember's kernels. */
#ifndef EMBER_ONNX_BACKEND_H
#define EMBER_ONNX_BACKEND_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark_config.h"
#include "onnx/ort_api.h"

typedef struct onnx_backend {
    char *dir;      /* the exported folder */
    char *runtime;  /* the libonnxruntime to load */
    char *provider; /* its execution provider (NULL: CPU) */
    char *options;  /* "key=value;..." (NULL: none) */
    int32_t context; /* the graph's context bucket */
    int32_t prefill_chunk; /* tokens per prefill graph run; 0: no prefill graph */
} onnx_backend;

/* Parses p->backend (NULL, "cpu" or "onnx:DIR") for a model with config
 * c: *out is NULL for ember's kernels, else a backend whose manifest
 * matched, with copies of p's onnx_runtime (NULL: the default library
 * name), onnx_provider and onnx_options. */
ember_status onnx_backend_open(const spark_config *c, const ember_model_params *p, onnx_backend **out);
void onnx_backend_free(onnx_backend *b);
/* The library and provider b names, for spark_ort_open. */
ort_choice onnx_backend_choice(const onnx_backend *b);

#endif
