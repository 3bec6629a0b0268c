#include "onnx/tts_export.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/write_file.h"
#include "onnx/c2w_export.h"
#include "onnx/export_files.h"
#include "onnx/manifest_io.h"
#include "onnx/tts_step_graph.h"

static void add_inputs(cJSON *in, const tts_step_layout *lay, const char *ft)
{
    const tts_stack_config *sc = lay->stack;
    const int talker = lay->kind != TTS_GRAPH_PREDICTOR;
    const int64_t T = lay->tokens;
    const int rank = T == 1 ? 2 : 3; /* a chunk's tables and masks: [T, 1, n] */
    char name[48], meaning[600];
    const int64_t ed[2] = {T, lay->in_dim}, rd[3] = {T, 1, lay->half}, md[3] = {T, 1, lay->slots},
                  cd[3] = {T, 1, T}, one = 1;
    manifest_io(in, "embedding", ft, 2, ed,
                T > 1 ? "the chunk's prompt rows at positions p..p+N-1, each as the talker step's "
                        "`embedding`"
                : talker ? "the row at this position: a prompt row as ember's prompt builder sums it "
                         "(projected text embedding plus codec embedding or speaker x-vector), or per "
                         "frame the sum of its n_groups codebook embeddings (codec_embedding for "
                         "codebook 0, code_predictor embedding g-1 for codebook g) plus the text "
                         "stream's projected embedding (tts_pad once the text is consumed)"
                       : "position 0: the talker's `hidden` output; position 1: "
                         "codec_embedding[codebook 0]; position g+1 (g = 1..n_groups-2): code_predictor "
                         "embedding g-1 of codebook g's code; talker-hidden wide (the graph applies "
                         "small_to_mtp_projection when the predictor is narrower)");
    if (!talker) {
        snprintf(meaning, sizeof meaning, "int32 index of the lm head to apply, 0..%d: at position "
                 "g (g >= 1) head g-1 predicts codebook g; at position 0 any index (its logits are "
                 "not used)", lay->heads - 1);
        manifest_io(in, "head", "int32", 1, &one, meaning);
    }
    snprintf(meaning, sizeof meaning,
             "cos of position * inv_freq[j] for j < %d, inv_freq[j] = %g^(-2j/%d), an fp32 product; "
             "NeoX rotate-half over the whole head%s", lay->half, (double)sc->rope_theta,
             sc->head_dim, talker ? (T > 1 ? "; one row per chunk row" : "") : "; positions restart at 0 every frame");
    manifest_io(in, "cos", ft, rank, T == 1 ? rd + 1 : rd, meaning);
    memcpy(meaning, "sin", 3);
    manifest_io(in, "sin", ft, rank, T == 1 ? rd + 1 : rd, meaning);
    snprintf(meaning, sizeof meaning, "additive mask over the cache slots%s: 0 for slot j < position "
             "(written), %g elsewhere", T > 1 ? " (every row; p is the chunk's first position)" : "",
             (double)SPARK_ONNX_MASK_OFF);
    manifest_io(in, "mask", ft, rank, T == 1 ? md + 1 : md, meaning);
    if (T > 1) {
        snprintf(meaning, sizeof meaning, "additive mask among the chunk's rows: row i, column j is 0 "
                 "when j <= i, %g elsewhere", (double)SPARK_ONNX_MASK_OFF);
        manifest_io(in, "chunk_mask", ft, 3, cd, meaning);
    }
    for (int li = 0; li < sc->n_layers; li++) {
        const int64_t kd[3] = {sc->n_kv_heads, sc->head_dim, lay->slots},
                      vd[3] = {sc->n_kv_heads, lay->slots, sc->head_dim};
        snprintf(name, sizeof name, "past_key_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d rotated, normed keys, transposed "
                 "[kv_head][dim][slot]; position p in slot p%s", li, talker ? "" : " (cleared every frame)");
        manifest_io(in, name, ft, 3, kd, meaning);
        snprintf(name, sizeof name, "past_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d values [kv_head][slot][dim]; position p in slot p", li);
        manifest_io(in, name, ft, 3, vd, meaning);
    }
}

static void add_outputs(cJSON *out, const tts_step_layout *lay, const char *ft)
{
    const tts_stack_config *sc = lay->stack;
    const int talker = lay->kind != TTS_GRAPH_PREDICTOR;
    const int64_t T = lay->tokens;
    char name[48], meaning[200];
    const int64_t ld[2] = {T, sc->vocab}, hd[2] = {T, sc->hidden}, kd[3] = {sc->n_kv_heads, sc->head_dim, T},
                  vd[3] = {sc->n_kv_heads, T, sc->head_dim};
    manifest_io(out, "logits", ft, 2, ld,
                talker ? "raw codec-head logits for the next frame's codebook 0 (the host suppresses "
                         "the special ids, bans EOS before min frames, applies the penalty, samples)"
                       : "raw logits of the codebook the `head` input chose");
    if (talker)
        manifest_io(out, "hidden", ft, 2, hd, "the final-normed state: the predictor's position-0 "
                    "`embedding` for the frame these logits start");
    for (int li = 0; li < sc->n_layers; li++) {
        snprintf(name, sizeof name, "new_key_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: %s rotated key, to write into "
                 "past_key_%d's slot for the position", li, T > 1 ? "each row's" : "this position's", li);
        manifest_io(out, name, ft, 3, kd, meaning);
        snprintf(name, sizeof name, "new_value_%d", li);
        snprintf(meaning, sizeof meaning, "layer %d: %s value, to write into "
                 "past_value_%d's slot for the position", li, T > 1 ? "each row's" : "this position's", li);
        manifest_io(out, name, ft, 3, vd, meaning);
    }
}

static void add_graph(cJSON *graphs, const tts_step_layout *lay)
{
    const char *ft = lay->form == SPARK_ONNX_F16 ? "float16" : "float32";
    cJSON *g = cJSON_CreateObject(), *in = cJSON_CreateArray(), *out = cJSON_CreateArray();
    cJSON_AddItemToArray(graphs, g);
    cJSON_AddStringToObject(g, "kind", tts_graph_kind_name(lay->kind));
    cJSON_AddStringToObject(g, "form", spark_onnx_form_name(lay->form));
    cJSON_AddStringToObject(g, "file", tts_graph_file(lay->kind));
    cJSON_AddStringToObject(g, "data_file", EXPORT_DATA);
    cJSON_AddNumberToObject(g, "opset", spark_onnx_opset(lay->form));
    cJSON_AddNumberToObject(g, "ir_version", spark_onnx_ir_version(lay->form));
    cJSON_AddNumberToObject(g, "tokens", lay->tokens);
    cJSON_AddNumberToObject(g, "context", lay->context);
    cJSON_AddNumberToObject(g, "slots", lay->slots);
    cJSON_AddNumberToObject(g, "layers", lay->stack->n_layers);
    cJSON_AddNumberToObject(g, "hidden", lay->stack->hidden);
    cJSON_AddNumberToObject(g, "vocab", lay->stack->vocab);
    cJSON_AddNumberToObject(g, "rope_theta", lay->stack->rope_theta);
    cJSON_AddNumberToObject(g, "mask_off", SPARK_ONNX_MASK_OFF);
    if (lay->kind == TTS_GRAPH_PREDICTOR) cJSON_AddNumberToObject(g, "heads", lay->heads);
    add_inputs(in, lay, ft);
    add_outputs(out, lay, ft);
    cJSON_AddItemToObject(g, "inputs", in);
    cJSON_AddItemToObject(g, "outputs", out);
}

ember_status tts_onnx_export(const tts_model *m, const c2w_model *dec, const char *dir, int32_t context,
                             int32_t chunk, int per_stage, spark_onnx_form form)
{
    int32_t dec_sizes[8];
    const int n_dec = dec ? c2w_graph_default_sizes(dec_sizes, 8) : 0;
    /* per-stage graphs at the largest chunk size */
    const int32_t stage_frames = dec && per_stage ? dec_sizes[n_dec - 1] : 0;
    c2w_stage_info stages[C2W_MAX_STAGES];
    const int n_stages = stage_frames ? c2w_graph_stages(&dec->cfg, stages) : 0;
    tts_step_layout lay[3];
    const int n = chunk ? 3 : 2;
    ember_status st = EMBER_OK;
    for (int k = 0; k < n && !st; k++) st = tts_step_layout_of(&m->cfg, (tts_graph_kind)k, context, chunk, form, &lay[k]);
    if (!st) st = tts_step_check_model(m, form);
    if (!st && dec) st = c2w_graph_check(dec, form);
    if (st) return st;
    char paths[3][4096], data_path[4096], manifest_path[4096];
    int bad = 0;
    for (int k = 0; k < 3; k++)
        bad |= (size_t)snprintf(paths[k], sizeof paths[k], "%s/%s", dir, tts_graph_file((tts_graph_kind)k)) >= sizeof paths[k];
    bad |= (size_t)snprintf(data_path, sizeof data_path, "%s/%s", dir, EXPORT_DATA) >= sizeof data_path;
    bad |= (size_t)snprintf(manifest_path, sizeof manifest_path, "%s/%s", dir, EXPORT_MANIFEST) >= sizeof manifest_path;
    if (bad) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    if ((st = io_make_dirs(dir))) return st;

    cJSON *root = cJSON_CreateObject(), *graphs = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "manifest_version", 1);
    cJSON_AddStringToObject(root, "producer", "ember");
    cJSON_AddStringToObject(root, "architecture", TTS_EXPORT_ARCHITECTURE);
    cJSON_AddNumberToObject(root, "n_groups", m->cfg.n_groups);
    cJSON_AddItemToObject(root, "graphs", graphs);
    for (int k = 0; k < n; k++) add_graph(graphs, &lay[k]);
    if (dec) cJSON_AddNumberToObject(root, "sample_rate", dec->cfg.sample_rate);
    for (int k = 0; k < n_dec; k++) c2w_manifest_add(graphs, &dec->cfg, dec_sizes[k], -1, form);
    for (int k = 0; k < n_stages; k++) c2w_manifest_add(graphs, &dec->cfg, stage_frames, k, form);
    char *manifest = cJSON_Print(root);
    cJSON_Delete(root);
    if (!manifest) return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot build the manifest");

    og_data *data = NULL;
    st = og_data_open(data_path, EXPORT_DATA, &data);
    /* a folder exported before with a chunk or decoder graphs must not keep them */
    remove(paths[TTS_GRAPH_TALKER_CHUNK]);
    int32_t all_sizes[8];
    c2w_export_remove(dir, NULL, all_sizes, c2w_graph_default_sizes(all_sizes, 8));
    for (int k = 0; k < n && !st; k++) st = tts_step_graph_write(m, &lay[k], paths[k], data);
    if (!st && dec) st = c2w_export_graphs(dec, dir, dec_sizes, n_dec, stage_frames, form, data);
    if (!st) {
        st = og_data_close(data);
        data = NULL;
    }
    if (!st) st = io_write_file_atomic(manifest_path, manifest, strlen(manifest));
    free(manifest);
    og_data_discard(data);
    if (st) {
        for (int k = 0; k < 3; k++) remove(paths[k]);
        c2w_export_remove(dir, NULL, dec_sizes, n_dec);
        remove(data_path);
    }
    return st;
}
