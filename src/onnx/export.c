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
#include "onnx/manifest_io.h"
#include "onnx/calibrate.h"
#include "onnx/spark_decode_graph.h"
#include "onnx/spark_ort.h"

ember_export_params ember_export_default_params(void)
{
    ember_export_params p;
    memset(&p, 0, sizeof p);
    p.context = 1024;
    p.prefill_chunk = 128;
    p.form = EMBER_EXPORT_F32;
    return p;
}

/* The manifest's element type of the graph's float inputs and outputs. */
static const char *float_type(const spark_decode_layout *lay)
{
    return lay->form == SPARK_ONNX_F16 ? "float16" : "float32";
}

static void add_inputs(cJSON *in, const spark_config *c, const spark_decode_layout *lay)
{
    char name[48], meaning[400];
    const char *ft = float_type(lay);
    const int64_t T = lay->tokens;
    const int rank = T == 1 ? 2 : 3; /* a chunk's tables and masks: [T, 1, n] */
    manifest_io(in, T == 1 ? "token" : "tokens", "int32", 1, &T,
             T == 1 ? "the token id fed at this step" : "the chunk's token ids, in order");
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!lay->has_type[t]) continue;
        const char *ty = spark_decode_type_name(t);
        const int64_t rd1[2] = {1, lay->half[t]}, md1[2] = {1, lay->slots[t]};
        const int64_t rdims[3] = {T, 1, lay->half[t]}, mdims[3] = {T, 1, lay->slots[t]},
                      cdims[3] = {T, 1, T};
        if (lay->half[t]) {
            snprintf(meaning, sizeof meaning,
                     "cos of position * inv_freq[j] for j < %d, inv_freq[j] = %g^(-2j/%d), fp32 "
                     "product; the %s layers' NeoX rotate-half rotary table%s",
                     lay->half[t], (double)c->rope[t].theta, c->rope[t].rot_dims, ty,
                     T == 1 ? "" : ", one row per chunk token");
            snprintf(name, sizeof name, "cos_%s", ty);
            manifest_io(in, name, ft, rank, T == 1 ? rd1 : rdims, meaning);
            snprintf(name, sizeof name, "sin_%s", ty);
            memcpy(meaning, "sin", 3);
            manifest_io(in, name, ft, rank, T == 1 ? rd1 : rdims, meaning);
        }
        snprintf(name, sizeof name, "mask_%s", ty);
        snprintf(meaning, sizeof meaning,
                 "additive mask over the %s caches' slots%s: 0 where the slot holds a key this "
                 "token sees, %g elsewhere (slots not yet written%s)", ty,
                 T == 1 ? "" : ", one row per chunk token", (double)SPARK_ONNX_MASK_OFF,
                 t == SPARK_SLIDING ? ", or a position at or past the window behind the token" : "");
        manifest_io(in, name, ft, rank, T == 1 ? md1 : mdims, meaning);
        if (T > 1) {
            snprintf(name, sizeof name, "chunk_mask_%s", ty);
            snprintf(meaning, sizeof meaning,
                     "additive mask among the chunk's tokens for the %s layers: row i, column j "
                     "is 0 when token i sees token j (j <= i%s), %g elsewhere", ty,
                     t == SPARK_SLIDING ? " and i - j < sliding_window" : "",
                     (double)SPARK_ONNX_MASK_OFF);
            manifest_io(in, name, ft, 3, cdims, meaning);
        }
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
        manifest_io(in, name, ft, 3, kd, meaning);
        snprintf(name, sizeof name, "past_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d (%s) values [kv_head][slot][dim]; %s", li,
                 spark_decode_type_name(t), where);
        manifest_io(in, name, ft, 3, vd, meaning);
    }
}

static void add_outputs(cJSON *out, const spark_config *c, const spark_decode_layout *lay)
{
    char name[48], meaning[200];
    const char *ft = float_type(lay);
    const int64_t T = lay->tokens;
    const int64_t ld[2] = {T, c->vocab}, kd[3] = {c->n_kv_heads, c->head_dim, T},
                  vd[3] = {c->n_kv_heads, T, c->head_dim};
    manifest_io(out, "logits", ft, 2, ld,
             T == 1 ? "logits predicting the next token" : "per chunk token, logits predicting the token after it");
    for (int li = 0; li < c->n_layers; li++) {
        snprintf(name, sizeof name, "new_key_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: the rotated key of %s, to write into "
                 "past_key_%d's slot for its position", li, T == 1 ? "this token" : "each chunk token", li);
        manifest_io(out, name, ft, 3, kd, meaning);
        snprintf(name, sizeof name, "new_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: the value of %s, to write into "
                 "past_value_%d's slot for its position", li, T == 1 ? "this token" : "each chunk token", li);
        manifest_io(out, name, ft, 3, vd, meaning);
    }
}

static void add_graph(cJSON *graphs, const spark_config *c, const spark_decode_layout *lay,
                      const char *kind, const char *file, const char *data_file)
{
    cJSON *g = cJSON_CreateObject(), *in = cJSON_CreateArray(), *out = cJSON_CreateArray(),
          *types = cJSON_CreateArray();
    cJSON_AddItemToArray(graphs, g);
    cJSON_AddStringToObject(g, "kind", kind);
    cJSON_AddStringToObject(g, "form", spark_onnx_form_name(lay->form));
    cJSON_AddStringToObject(g, "file", file);
    cJSON_AddStringToObject(g, "data_file", data_file);
    cJSON_AddNumberToObject(g, "opset", spark_onnx_opset(lay->form));
    cJSON_AddNumberToObject(g, "ir_version", spark_onnx_ir_version(lay->form));
    cJSON_AddNumberToObject(g, "tokens", lay->tokens);
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
    add_outputs(out, c, lay);
    cJSON_AddItemToObject(g, "inputs", in);
    cJSON_AddItemToObject(g, "outputs", out);
}

static char *manifest_text(const spark_config *c, const spark_decode_layout *lay,
                           const spark_decode_layout *chunk, size_t calib_tokens)
{
    cJSON *root = cJSON_CreateObject(), *graphs = cJSON_CreateArray();
    if (calib_tokens) {
        cJSON *cal = cJSON_AddObjectToObject(root, "calibration");
        cJSON_AddNumberToObject(cal, "tokens", (double)calib_tokens);
        cJSON_AddNumberToObject(cal, "quantized_activations", spark_a16_slots(c));
        cJSON_AddStringToObject(cal, "what", "uint16 per-tensor QDQ on the input of every weight MatMul "
                                "(q/k/v/gate, output projection, ffn gate/up, ffn down, lm head), "
                                "asymmetric over the [min, max] ember's native forward pass recorded "
                                "over the sample tokens (widened to hold 0)");
    }
    cJSON_AddNumberToObject(root, "manifest_version", 1);
    cJSON_AddStringToObject(root, "producer", "ember");
    cJSON_AddStringToObject(root, "architecture", "spark2_5");
    spark_ort_model_shape_add(root, c);
    cJSON_AddItemToObject(root, "graphs", graphs);
    add_graph(graphs, c, lay, "decode", EXPORT_DECODE_FILE, EXPORT_DATA);
    if (chunk) add_graph(graphs, c, chunk, "prefill", EXPORT_PREFILL_FILE, EXPORT_DATA);
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
    spark_decode_layout lay, chunk;
    ember_status st = spark_decode_layout_of(&model->cfg, p.context, &lay);
    if (!st) st = spark_decode_check_model(model);
    if (st) return st;
    if (p.form < EMBER_EXPORT_F32 || p.form > EMBER_EXPORT_LPBQ4A16)
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: unknown form %d", (int)p.form);
    if (p.prefill_chunk != 0 && (p.prefill_chunk < 2 || p.prefill_chunk > p.context))
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: prefill chunk %d must be 0 or in [2, %d] (the context)",
                          p.prefill_chunk, p.context);
    lay.form = (spark_onnx_form)p.form;
    chunk = lay;
    chunk.tokens = p.prefill_chunk;
    export_paths paths;
    if (export_paths_of(dir, &paths))
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    st = io_make_dirs(dir);
    if (st) return st;
    float *range = NULL;
    if (spark_onnx_a16(lay.form)) {
        if (!(range = malloc(2 * (size_t)spark_a16_slots(&model->cfg) * sizeof *range)))
            return ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
        st = spark_a16_calibrate(model, p.calib_ids, p.n_calib_ids, p.context, range);
        if (st) {
            free(range);
            return st;
        }
    }
    char *manifest = manifest_text(&model->cfg, &lay, p.prefill_chunk ? &chunk : NULL,
                                   range ? p.n_calib_ids : 0);
    if (!manifest) {
        free(range);
        return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot build the manifest");
    }
    /* a folder exported before without a prefill graph must not keep one */
    remove(paths.prefill);
    og_data *data = NULL;
    st = og_data_open(paths.data, EXPORT_DATA, &data);
    if (!st) st = spark_decode_graph_write(model, &lay, range, paths.model, data);
    if (!st && p.prefill_chunk) st = spark_decode_graph_write(model, &chunk, range, paths.prefill, data);
    free(range);
    if (!st) {
        st = og_data_close(data);
        data = NULL;
    }
    if (!st) st = io_write_file_atomic(paths.manifest, manifest, strlen(manifest));
    free(manifest);
    og_data_discard(data);
    if (st) {
        remove(paths.model);
        remove(paths.data);
        remove(paths.prefill);
    }
    return st;
}
