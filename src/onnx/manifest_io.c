#include "onnx/manifest_io.h"

#include <string.h>

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
