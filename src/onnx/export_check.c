/* ember_export_onnx_check: audits every graph an exported folder's manifest
 * lists. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "ember_export.h"
#include "io/read_file.h"
#include "onnx/export_files.h"
#include "onnx/onnx_audit.h"

/* Weights live in the external data file, so a graph file is small; this
 * bounds what a corrupt folder can make us read. */
#define MAX_GRAPH_BYTES ((size_t)1 << 30)
#define MAX_MANIFEST_BYTES ((size_t)16 << 20)

static ember_status check_graph(const char *dir, const cJSON *g, ember_line_fn line, void *user)
{
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(g, "file");
    if (!cJSON_IsString(file) || strchr(file->valuestring, '/') || !file->valuestring[0])
        return ember_fail(EMBER_ERR_FORMAT, "%s/%s: a graph without a plain \"file\" name", dir,
                          EXPORT_MANIFEST);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file->valuestring) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    char *bytes;
    size_t len;
    ember_status st = io_read_text_file(path, MAX_GRAPH_BYTES, &bytes, &len);
    if (st) return st;
    st = onnx_audit((const uint8_t *)bytes, len, path, line, user);
    free(bytes);
    return st;
}

ember_status ember_export_onnx_check(const char *dir, ember_line_fn line, void *user)
{
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_export_onnx_check: dir is NULL");
    export_paths paths;
    if (export_paths_of(dir, &paths)) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    char *text;
    size_t len;
    ember_status st = io_read_text_file(paths.manifest, MAX_MANIFEST_BYTES, &text, &len);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *graphs = root ? cJSON_GetObjectItemCaseSensitive(root, "graphs") : NULL;
    if (!cJSON_IsArray(graphs) || cJSON_GetArraySize(graphs) == 0) {
        cJSON_Delete(root);
        return ember_fail(EMBER_ERR_FORMAT, "%s: no \"graphs\" list", paths.manifest);
    }
    /* audit every graph, report the first failure */
    ember_status first = EMBER_OK;
    char message[1024] = "";
    const cJSON *g;
    cJSON_ArrayForEach(g, graphs) {
        st = check_graph(dir, g, line, user);
        if (st && !first) {
            first = st;
            snprintf(message, sizeof message, "%s", ember_last_error());
        }
    }
    cJSON_Delete(root);
    return first ? ember_fail(first, "%s", message) : EMBER_OK;
}
