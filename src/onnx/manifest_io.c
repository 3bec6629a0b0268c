#include "onnx/manifest_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/read_file.h"
#include "onnx/export_files.h"

cJSON *manifest_io(cJSON *list, const char *name, const char *type, int rank, const int64_t *dims,
                   const char *meaning)
{
    cJSON *e = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    for (int i = 0; i < rank; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[i]));
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddItemToObject(e, "shape", shape);
    cJSON_AddStringToObject(e, "meaning", meaning);
    cJSON_AddItemToArray(list, e);
    return e;
}

const cJSON *manifest_graph(const cJSON *graphs, const char *kind)
{
    const cJSON *it, *g = NULL;
    cJSON_ArrayForEach(it, graphs) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "kind");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, kind)) g = it;
    }
    return g;
}

int manifest_int(const cJSON *g, const char *key, int32_t *out)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(g, key);
    if (!cJSON_IsNumber(n)) return 0;
    *out = (int32_t)n->valuedouble;
    return 1;
}

ember_status manifest_read(const char *dir, const char *architecture, char *path, size_t cap, cJSON **root)
{
    *root = NULL;
    if ((size_t)snprintf(path, cap, "%s/%s", dir, EXPORT_MANIFEST) >= cap)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    char *text;
    size_t len;
    ember_status st = io_read_text_file(path, (size_t)16 << 20, &text, &len);
    if (st) return st;
    *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!architecture) return EMBER_OK;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(*root, "architecture");
    if (cJSON_IsString(arch) && !strcmp(arch->valuestring, architecture)) return EMBER_OK;
    cJSON_Delete(*root);
    *root = NULL;
    return ember_fail(EMBER_ERR_FORMAT, "%s: not a %s export", path, architecture);
}
