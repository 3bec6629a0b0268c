/* ember_export_onnx: the decode-step graph and the manifest that tells a
 * host (ember's own ONNX Runtime loop, or an app's) how to drive it. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "ember_export.h"
#include "io/write_file.h"
#include "onnx/export_files.h"
#include "onnx/spark_decode_graph.h"

ember_export_params ember_export_default_params(void)
{
    ember_export_params p;
    memset(&p, 0, sizeof p);
    p.context = 1024;
    return p;
}

static cJSON *io_entry(cJSON *list, const char *name, const char *type, int rank,
                       const int64_t *dims, const char *meaning)
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

static void add_inputs(cJSON *in, const spark_config *c, const spark_decode_layout *lay)
{
    char name[48], meaning[320];
    const int64_t one[1] = {1};
    io_entry(in, "token", "int32", 1, one, "the token id fed at this step");
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!lay->has_type[t]) continue;
        const int64_t rdims[2] = {1, lay->half[t]}, mdims[2] = {1, lay->slots[t]};
        if (lay->half[t]) {
            snprintf(meaning, sizeof meaning,
                     "cos of position * inv_freq[j] for j < %d, inv_freq[j] = %g^(-2j/%d), fp32 "
                     "product; the %s layers' NeoX rotate-half rotary table",
                     lay->half[t], (double)c->rope[t].theta, c->rope[t].rot_dims, spark_decode_type_name(t));
            snprintf(name, sizeof name, "cos_%s", spark_decode_type_name(t));
            io_entry(in, name, "float32", 2, rdims, meaning);
            snprintf(name, sizeof name, "sin_%s", spark_decode_type_name(t));
            memcpy(meaning, "sin", 3);
            io_entry(in, name, "float32", 2, rdims, meaning);
        }
        snprintf(name, sizeof name, "mask_%s", spark_decode_type_name(t));
        snprintf(meaning, sizeof meaning,
                 "additive mask over the %s caches' slots: 0 where the slot holds a key this "
                 "token sees, %g elsewhere (slots not yet written)",
                 spark_decode_type_name(t), (double)SPARK_ONNX_MASK_OFF);
        io_entry(in, name, "float32", 2, mdims, meaning);
    }
    for (int li = 0; li < c->n_layers; li++) {
        const int t = c->layer_type[li];
        const int64_t kd[3] = {c->n_kv_heads, c->head_dim, lay->slots[t]},
                      vd[3] = {c->n_kv_heads, lay->slots[t], c->head_dim};
        const char *where = t == SPARK_SLIDING ? "a ring: position p in slot p mod slots"
                                               : "position p in slot p";
        snprintf(name, sizeof name, "past_key_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d (%s) rotated keys, transposed "
                 "[kv_head][dim][slot]; %s", li, spark_decode_type_name(t), where);
        io_entry(in, name, "float32", 3, kd, meaning);
        snprintf(name, sizeof name, "past_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d (%s) values [kv_head][slot][dim]; %s", li,
                 spark_decode_type_name(t), where);
        io_entry(in, name, "float32", 3, vd, meaning);
    }
}

static void add_outputs(cJSON *out, const spark_config *c)
{
    char name[48], meaning[160];
    const int64_t ld[2] = {1, c->vocab}, kd[3] = {c->n_kv_heads, c->head_dim, 1},
                  vd[3] = {c->n_kv_heads, 1, c->head_dim};
    io_entry(out, "logits", "float32", 2, ld, "logits predicting the next token");
    for (int li = 0; li < c->n_layers; li++) {
        snprintf(name, sizeof name, "new_key_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: this token's rotated key, to write into "
                 "past_key_%d's slot for this position", li, li);
        io_entry(out, name, "float32", 3, kd, meaning);
        snprintf(name, sizeof name, "new_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: this token's value, to write into "
                 "past_value_%d's slot for this position", li, li);
        io_entry(out, name, "float32", 3, vd, meaning);
    }
}

static char *manifest_text(const spark_config *c, const spark_decode_layout *lay)
{
    cJSON *root = cJSON_CreateObject(), *graphs = cJSON_CreateArray(), *g = cJSON_CreateObject();
    cJSON *in = cJSON_CreateArray(), *out = cJSON_CreateArray(), *types = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "manifest_version", 1);
    cJSON_AddStringToObject(root, "producer", "ember");
    cJSON_AddStringToObject(root, "architecture", "spark2_5");
    cJSON_AddItemToObject(root, "graphs", graphs);
    cJSON_AddItemToArray(graphs, g);
    cJSON_AddStringToObject(g, "kind", "decode");
    cJSON_AddStringToObject(g, "form", "f32");
    cJSON_AddStringToObject(g, "file", EXPORT_DECODE_FILE);
    cJSON_AddStringToObject(g, "data_file", EXPORT_DECODE_DATA);
    cJSON_AddNumberToObject(g, "opset", 17);
    cJSON_AddNumberToObject(g, "ir_version", 8);
    cJSON_AddNumberToObject(g, "tokens", 1);
    cJSON_AddNumberToObject(g, "context", lay->context);
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!lay->has_type[t]) continue;
        char key[32];
        snprintf(key, sizeof key, "%s_slots", spark_decode_type_name(t));
        cJSON_AddNumberToObject(g, key, lay->slots[t]);
    }
    cJSON_AddNumberToObject(g, "sliding_window", c->sliding_window);
    cJSON_AddNumberToObject(g, "mask_off", SPARK_ONNX_MASK_OFF);
    for (int li = 0; li < c->n_layers; li++)
        cJSON_AddItemToArray(types, cJSON_CreateString(spark_decode_type_name(c->layer_type[li])));
    cJSON_AddItemToObject(g, "layer_types", types);
    add_inputs(in, c, lay);
    add_outputs(out, c);
    cJSON_AddItemToObject(g, "inputs", in);
    cJSON_AddItemToObject(g, "outputs", out);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

ember_status ember_export_onnx(const ember_model *model, const char *dir,
                               const ember_export_params *params)
{
    if (!model || !dir)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_export_onnx: model or dir is NULL");
    ember_export_params p = params ? *params : ember_export_default_params();
    spark_decode_layout lay;
    ember_status st = spark_decode_layout_of(&model->cfg, p.context, &lay);
    if (!st) st = spark_decode_check_model(model);
    if (st) return st;
    export_paths paths;
    if (export_paths_of(dir, &paths))
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    st = io_make_dirs(dir);
    if (st) return st;
    char *manifest = manifest_text(&model->cfg, &lay);
    if (!manifest) return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot build the manifest");
    st = spark_decode_graph_write(model, &lay, paths.model, paths.data, EXPORT_DECODE_DATA);
    if (!st) st = io_write_file_atomic(paths.manifest, manifest, strlen(manifest));
    free(manifest);
    if (st) {
        remove(paths.model);
        remove(paths.data);
    }
    return st;
}
