#include "onnx/c2w_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "onnx/export_files.h"
#include "onnx/manifest_io.h"

void c2w_manifest_add(cJSON *graphs, const c2w_config *c, int32_t frames, int stage, spark_onnx_form form)
{
    c2w_stage_info stages[C2W_MAX_STAGES];
    const int n_stages = c2w_graph_stages(c, stages);
    const c2w_stage_info *sg = stage >= 0 ? &stages[stage] : NULL;
    const char *ft = form == SPARK_ONNX_F16 ? "float16" : "float32";
    const tts_stack_config *t = &c->transformer;
    const int64_t N = frames, W = c->sliding_window, cols = c2w_graph_mask_cols(c, N);
    char file[64], meaning[600], next[64];
    if (sg)
        c2w_graph_stage_file(frames, sg->name, file, sizeof file);
    else
        c2w_graph_file(frames, file, sizeof file);
    cJSON *g = cJSON_CreateObject(), *in = cJSON_CreateArray(), *out = cJSON_CreateArray(),
          *state = cJSON_CreateArray();
    cJSON_AddItemToArray(graphs, g);
    cJSON_AddStringToObject(g, "kind", sg ? C2W_STAGE_KIND : C2W_GRAPH_KIND);
    if (sg) cJSON_AddStringToObject(g, "stage", sg->name);
    cJSON_AddStringToObject(g, "form", spark_onnx_form_name(form));
    cJSON_AddStringToObject(g, "file", file);
    cJSON_AddStringToObject(g, "data_file", EXPORT_DATA);
    cJSON_AddNumberToObject(g, "opset", spark_onnx_opset(form));
    cJSON_AddNumberToObject(g, "ir_version", spark_onnx_ir_version(form));
    cJSON_AddNumberToObject(g, "frames", frames);
    cJSON_AddNumberToObject(g, "n_quantizers", c->n_quantizers);
    cJSON_AddNumberToObject(g, "samples_per_frame", c->samples_per_frame);
    cJSON_AddNumberToObject(g, "sample_rate", c->sample_rate);
    cJSON_AddNumberToObject(g, "sliding_window", W);
    cJSON_AddNumberToObject(g, "layers", t->n_layers);
    cJSON_AddNumberToObject(g, "rope_theta", t->rope_theta);
    cJSON_AddNumberToObject(g, "mask_off", SPARK_ONNX_MASK_OFF);
    cJSON_AddStringToObject(g, "carry", "after each run feed every output next_X back as input X "
                            "(same shape); at the start of an utterance every X is zeros; the state's "
                            "shapes do not depend on the chunk size, so graphs of different sizes "
                            "continue one stream");
    const int64_t cd[2] = {N, c->n_quantizers}, rd[3] = {N, 1, t->head_dim / 2}, md[3] = {N, 1, cols},
                  pd = N * c->samples_per_frame;
    if (sg && stage > 0) {
        const int64_t xd[3] = {1, sg->cin, N * sg->in_rows};
        manifest_io(in, "x", ft, 3, xd, "the previous stage's `y` (channels-first)");
    }
    if (!sg || stage == 0)
        manifest_io(in, "codes", "int32", 2, cd, "the chunk's frames, frame-major, n_quantizers codes each, "
                    "every code in [0, codebook_size)");
    snprintf(meaning, sizeof meaning, "cos of position * inv_freq[j], inv_freq[j] = %g^(-2j/%d) as an "
             "fp32 product, one row per frame of the chunk; position = frames decoded before it in the "
             "utterance + the row", (double)t->rope_theta, t->head_dim);
    if (!sg || stage == 0) manifest_io(in, "cos", ft, 3, rd, meaning);
    meaning[0] = 's', meaning[1] = 'i', meaning[2] = 'n';
    if (!sg || stage == 0) manifest_io(in, "sin", ft, 3, rd, meaning);
    snprintf(meaning, sizeof meaning, "additive mask, row i (position p + i, p = the chunk's first) over "
             "columns j < %lld (ring slot j: position p - %lld + j) then the chunk's frames (column %lld "
             "+ k: position p + k): 0 where the column's position q satisfies 0 <= q <= p + i and "
             "p + i - q < %lld, %g elsewhere", (long long)(W - 1), (long long)(W - 1), (long long)(W - 1),
             (long long)W, (double)SPARK_ONNX_MASK_OFF);
    if (!sg || stage == 0) manifest_io(in, "mask", ft, 3, md, meaning);
    if (!sg || stage == n_stages - 1)
        manifest_io(out, "pcm", ft, 1, &pd, "the chunk's samples at sample_rate, clamped to [-1, 1]");
    else {
        const int64_t yd[3] = {1, sg->cout, N * sg->out_rows};
        manifest_io(out, "y", ft, 3, yd, "the stage's output (channels-first): the next stage's `x`");
    }
    c2w_state_info *s = calloc(C2W_MAX_STATES, sizeof *s);
    const int n = s ? c2w_graph_states(c, s) : 0;
    for (int i = sg ? sg->first_state : 0; i < (sg ? sg->first_state + sg->n_states : n); i++) {
        snprintf(next, sizeof next, "next_%s", s[i].name);
        manifest_io(in, s[i].name, ft, s[i].rank, s[i].dims, s[i].meaning);
        snprintf(meaning, sizeof meaning, "%s after this chunk: feed back as %s", s[i].name, s[i].name);
        manifest_io(out, next, ft, s[i].rank, s[i].dims, meaning);
        cJSON *e = manifest_io(state, s[i].name, ft, s[i].rank, s[i].dims, s[i].meaning);
        cJSON_AddStringToObject(e, "output", next);
        cJSON_AddStringToObject(e, "initial", "zeros");
    }
    free(s);
    cJSON_AddItemToObject(g, "inputs", in);
    cJSON_AddItemToObject(g, "outputs", out);
    cJSON_AddItemToObject(g, "state", state);
}

static int path_of(const char *dir, int32_t frames, char *path, size_t size)
{
    char file[64];
    c2w_graph_file(frames, file, sizeof file);
    return (size_t)snprintf(path, size, "%s/%s", dir, file) >= size;
}

static int stage_path_of(const char *dir, int32_t frames, const char *stage, char *path, size_t size)
{
    char file[96];
    c2w_graph_stage_file(frames, stage, file, sizeof file);
    return (size_t)snprintf(path, size, "%s/%s", dir, file) >= size;
}

ember_status c2w_export_graphs(const c2w_model *m, const char *dir, const int32_t *sizes, int n,
                               int32_t stage_frames, spark_onnx_form form, og_data *data)
{
    char path[4096];
    ember_status st = EMBER_OK;
    for (int i = 0; i < n && !st; i++) {
        if (path_of(dir, sizes[i], path, sizeof path)) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
        st = c2w_graph_write(m, sizes[i], -1, form, path, data);
    }
    c2w_stage_info stages[C2W_MAX_STAGES];
    const int n_stages = stage_frames ? c2w_graph_stages(&m->cfg, stages) : 0;
    for (int k = 0; k < n_stages && !st; k++) {
        if (stage_path_of(dir, stage_frames, stages[k].name, path, sizeof path))
            return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
        st = c2w_graph_write(m, stage_frames, k, form, path, data);
    }
    return st;
}

void c2w_export_remove(const char *dir, const c2w_config *c, const int32_t *sizes, int n)
{
    char path[4096];
    c2w_stage_info stages[C2W_MAX_STAGES];
    /* without a decoder: the names of the most stages a config can have */
    c2w_config most;
    memset(&most, 0, sizeof most);
    most.n_upsample = C2W_MAX_UPSAMPLE;
    most.n_blocks = C2W_MAX_BLOCKS;
    const int n_stages = c2w_graph_stages(c ? c : &most, stages);
    for (int i = 0; i < n; i++) {
        if (!path_of(dir, sizes[i], path, sizeof path)) remove(path);
        for (int k = 0; k < n_stages; k++)
            if (!stage_path_of(dir, sizes[i], stages[k].name, path, sizeof path)) remove(path);
    }
}
