#include "onnx/backend.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "onnx/spark_ort.h"

#define DEFAULT_RUNTIME "libonnxruntime.so.1"

/* A copy of s, or NULL for NULL; *bad set when out of memory. */
static char *copy(const char *s, int *bad)
{
    char *c = s ? strdup(s) : NULL;
    if (s && !c) *bad = 1;
    return c;
}

ember_status onnx_backend_open(const spark_config *c, const ember_model_params *p, onnx_backend **out)
{
    *out = NULL;
    const char *backend = p->backend;
    if (!backend || !strcmp(backend, "cpu")) return EMBER_OK;
    if (strncmp(backend, "onnx:", 5) || !backend[5])
        return ember_fail(EMBER_ERR_INVALID_ARG, "backend '%s': expected cpu or onnx:DIR", backend);
    spark_ort_info info;
    ember_status st = spark_ort_manifest(c, backend + 5, &info);
    if (st) return ember_fail_prefix(st, "backend %s", backend);
    onnx_backend *b = calloc(1, sizeof *b);
    int bad = !b;
    if (b) {
        b->dir = copy(backend + 5, &bad);
        b->runtime = copy(p->onnx_runtime ? p->onnx_runtime : DEFAULT_RUNTIME, &bad);
        b->provider = copy(p->onnx_provider, &bad);
        b->options = copy(p->onnx_options, &bad);
        b->context = info.context;
        b->prefill_chunk = info.prefill_chunk;
    }
    if (bad) {
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
    free(b->provider);
    free(b->options);
    free(b);
}

ort_choice onnx_backend_choice(const onnx_backend *b)
{
    return (ort_choice){b->runtime, b->provider, b->options};
}
