/* The files of an exported folder, shared by the exporter, the audit and
 * the ONNX Runtime host loop. */
#ifndef EMBER_ONNX_EXPORT_FILES_H
#define EMBER_ONNX_EXPORT_FILES_H

#include <stdio.h>

#define EXPORT_DECODE_FILE "decode.onnx"
#define EXPORT_PREFILL_FILE "prefill.onnx"
/* the weights of both graphs, stored once */
#define EXPORT_DATA "weights.onnx.data"
#define EXPORT_MANIFEST "manifest.json"

typedef struct export_paths {
    char model[4096], data[4096], manifest[4096];
    char prefill[4096];
} export_paths;

/* Fills the paths of dir's files; non-zero when one would not fit. */
static inline int export_paths_of(const char *dir, export_paths *p)
{
    int a = snprintf(p->model, sizeof p->model, "%s/%s", dir, EXPORT_DECODE_FILE);
    int b = snprintf(p->data, sizeof p->data, "%s/%s", dir, EXPORT_DATA);
    int c = snprintf(p->manifest, sizeof p->manifest, "%s/%s", dir, EXPORT_MANIFEST);
    int d = snprintf(p->prefill, sizeof p->prefill, "%s/%s", dir, EXPORT_PREFILL_FILE);
    return a < 0 || b < 0 || c < 0 || d < 0 || (size_t)a >= sizeof p->model ||
           (size_t)b >= sizeof p->data || (size_t)c >= sizeof p->manifest ||
           (size_t)d >= sizeof p->prefill;
}

#endif
