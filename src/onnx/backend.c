#include "onnx/backend.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "onnx/spark_ort.h"

#define DEFAULT_RUNTIME "libonnxruntime.so.1"

ember_status onnx_backend_open(const spark_config *c, const char *backend, const char *runtime,
                               onnx_backend **out)
{
    *out = NULL;
    if (!backend || !strcmp(backend, "cpu")) return EMBER_OK;
    if (strncmp(backend, "onnx:", 5) || !backend[5])
        return ember_fail(EMBER_ERR_INVALID_ARG, "backend '%s': expected cpu or onnx:DIR", backend);
    spark_ort_info info;
    ember_status st = spark_ort_manifest(c, backend + 5, &info);
    if (st) return ember_fail_prefix(st, "backend %s", backend);
    onnx_backend *b = calloc(1, sizeof *b);
    if (b) {
        b->dir = strdup(backend + 5);
        b->runtime = strdup(runtime ? runtime : DEFAULT_RUNTIME);
        b->context = info.context;
        b->prefill_chunk = info.prefill_chunk;
    }
    if (!b || !b->dir || !b->runtime) {
        onnx_backend_free(b);
        return ember_fail(EMBER_ERR_NO_MEMORY, "backend %s: out of memory", backend);
    }
    *out = b;
    return EMBER_OK;
}

void onnx_backend_free(onnx_backend *b)
{
    if (!b) return;
    free(b->dir);
    free(b->runtime);
    free(b);
}
