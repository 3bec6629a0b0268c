#include "onnx/spark_ort.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/read_file.h"
#include "kernels/ops.h"
#include "onnx/export_files.h"
#include "onnx/ort_api.h"
#include "onnx/spark_decode_layout.h"

#define NAME_LEN 32

typedef struct layer_io {
    float *k, *v;         /* past_key [kv][d][slots], past_value [kv][slots][d] */
    float *k_new, *v_new; /* [kv][d][1], [kv][1][d] */
} layer_io;

struct spark_ort {
    spark_config c;
    spark_decode_layout lay;
    ort_runtime *rt;
    ort_graph *g;
    int32_t pos;
    int32_t token[1];
    float *inv_freq[SPARK_LAYER_TYPES], *cos[SPARK_LAYER_TYPES], *sin[SPARK_LAYER_TYPES];
    float *mask[SPARK_LAYER_TYPES];
    float *logits;
    layer_io *layers;
    float *block;
    /* the graph's inputs and outputs, by name, as tensors over the buffers */
    size_t n_in, n_out;
    char (*in_names)[NAME_LEN], (*out_names)[NAME_LEN];
    const char **in_ptrs, **out_ptrs;
    ort_tensor **inputs, **outputs;
};

ember_status spark_ort_manifest(const spark_config *c, const char *dir, int32_t *context)
{
    export_paths paths;
    if (export_paths_of(dir, &paths)) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    char *text;
    size_t len;
    ember_status st = io_read_text_file(paths.manifest, (size_t)16 << 20, &text, &len);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(root, "graphs"), *g = NULL, *it;
    cJSON_ArrayForEach(it, graphs) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(it, "kind");
        if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "decode")) g = it;
    }
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(g, "context");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(g, "layer_types");
    st = EMBER_OK;
    if (!cJSON_IsNumber(ctx) || !cJSON_IsArray(types))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: no decode graph with a context and layer_types",
                        paths.manifest);
    else if (cJSON_GetArraySize(types) != c->n_layers)
        st = ember_fail(EMBER_ERR_FORMAT, "%s: %d layers, the model has %d", paths.manifest,
                        cJSON_GetArraySize(types), c->n_layers);
    for (int li = 0; !st && li < c->n_layers; li++) {
        const cJSON *t = cJSON_GetArrayItem(types, li);
        if (!cJSON_IsString(t) || strcmp(t->valuestring, spark_decode_type_name(c->layer_type[li])))
            st = ember_fail(EMBER_ERR_FORMAT, "%s: layer %d is not %s as in the model",
                            paths.manifest, li, spark_decode_type_name(c->layer_type[li]));
    }
    if (!st) *context = (int32_t)ctx->valuedouble;
    cJSON_Delete(root);
    return st;
}

static ember_status add_io(spark_ort *s, int is_out, const char *name, float *data, int rank,
                           const int64_t *dims, int type)
{
    size_t i = is_out ? s->n_out++ : s->n_in++;
    char(*names)[NAME_LEN] = is_out ? s->out_names : s->in_names;
    snprintf(names[i], NAME_LEN, "%s", name);
    (is_out ? s->out_ptrs : s->in_ptrs)[i] = names[i];
    size_t count = 1;
    for (int k = 0; k < rank; k++) count *= (size_t)dims[k];
    return ort_tensor_wrap(s->rt, data, count * 4, dims, rank, type,
                           &(is_out ? s->outputs : s->inputs)[i]);
}

/* Carves every buffer out of one block; returns the floats needed when
 * s->block is NULL (a sizing pass). */
static size_t carve(spark_ort *s)
{
    const spark_config *c = &s->c;
    const size_t kvd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    size_t used = 0;
#define TAKE(ptr, n)                                          \
    do {                                                      \
        (ptr) = s->block ? s->block + used : NULL;            \
        used += (n);                                          \
    } while (0)
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        TAKE(s->inv_freq[t], (size_t)s->lay.half[t]);
        TAKE(s->cos[t], (size_t)s->lay.half[t]);
        TAKE(s->sin[t], (size_t)s->lay.half[t]);
        TAKE(s->mask[t], (size_t)s->lay.slots[t]);
    }
    TAKE(s->logits, (size_t)c->vocab);
    for (int li = 0; li < c->n_layers; li++) {
        const size_t slots = (size_t)s->lay.slots[c->layer_type[li]];
        TAKE(s->layers[li].k, kvd * slots);
        TAKE(s->layers[li].v, kvd * slots);
        TAKE(s->layers[li].k_new, kvd);
        TAKE(s->layers[li].v_new, kvd);
    }
#undef TAKE
    return used;
}

static ember_status bind_all(spark_ort *s)
{
    const spark_config *c = &s->c;
    const int64_t one[1] = {1}, KV = c->n_kv_heads, d = c->head_dim;
    char name[NAME_LEN];
    ember_status st = ort_tensor_wrap(s->rt, s->token, sizeof s->token, one, 1, ORT_INT32, &s->inputs[0]);
    snprintf(s->in_names[0], NAME_LEN, "token");
    s->in_ptrs[0] = s->in_names[0];
    s->n_in = 1;
    for (int t = 0; !st && t < SPARK_LAYER_TYPES; t++) {
        if (!s->lay.has_type[t]) continue;
        const int64_t rd[2] = {1, s->lay.half[t]}, md[2] = {1, s->lay.slots[t]};
        if (s->lay.half[t]) {
            snprintf(name, sizeof name, "cos_%s", spark_decode_type_name(t));
            st = add_io(s, 0, name, s->cos[t], 2, rd, ORT_FLOAT);
            snprintf(name, sizeof name, "sin_%s", spark_decode_type_name(t));
            if (!st) st = add_io(s, 0, name, s->sin[t], 2, rd, ORT_FLOAT);
        }
        snprintf(name, sizeof name, "mask_%s", spark_decode_type_name(t));
        if (!st) st = add_io(s, 0, name, s->mask[t], 2, md, ORT_FLOAT);
    }
    const int64_t ld[2] = {1, c->vocab}, knd[3] = {KV, d, 1}, vnd[3] = {KV, 1, d};
    if (!st) st = add_io(s, 1, "logits", s->logits, 2, ld, ORT_FLOAT);
    for (int li = 0; !st && li < c->n_layers; li++) {
        const int64_t S = s->lay.slots[c->layer_type[li]];
        const int64_t kd[3] = {KV, d, S}, vd[3] = {KV, S, d};
        layer_io *L = &s->layers[li];
        snprintf(name, sizeof name, "past_key_%d", li);
        st = add_io(s, 0, name, L->k, 3, kd, ORT_FLOAT);
        snprintf(name, sizeof name, "past_value_%d", li);
        if (!st) st = add_io(s, 0, name, L->v, 3, vd, ORT_FLOAT);
        snprintf(name, sizeof name, "new_key_%d", li);
        if (!st) st = add_io(s, 1, name, L->k_new, 3, knd, ORT_FLOAT);
        snprintf(name, sizeof name, "new_value_%d", li);
        if (!st) st = add_io(s, 1, name, L->v_new, 3, vnd, ORT_FLOAT);
    }
    return st;
}

ember_status spark_ort_open(const spark_config *c, const char *dir, const char *ort_lib,
                            int threads, spark_ort **out)
{
    *out = NULL;
    int32_t context = 0;
    ember_status st = spark_ort_manifest(c, dir, &context);
    if (st) return st;
    spark_ort *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    s->c = *c;
    st = spark_decode_layout_of(c, context, &s->lay);
    const size_t max_io = 1 + 3 * SPARK_LAYER_TYPES + 4 * (size_t)c->n_layers + 1;
    s->layers = calloc((size_t)c->n_layers, sizeof *s->layers);
    s->in_names = calloc(max_io, NAME_LEN);
    s->out_names = calloc(max_io, NAME_LEN);
    s->in_ptrs = calloc(max_io, sizeof *s->in_ptrs);
    s->out_ptrs = calloc(max_io, sizeof *s->out_ptrs);
    s->inputs = calloc(max_io, sizeof *s->inputs);
    s->outputs = calloc(max_io, sizeof *s->outputs);
    if (!st && (!s->layers || !s->in_names || !s->out_names || !s->in_ptrs || !s->out_ptrs ||
                !s->inputs || !s->outputs))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    if (!st) {
        size_t floats = carve(s);
        s->block = calloc(floats, sizeof(float));
        if (!s->block)
            st = ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: cannot allocate %zu bytes of caches",
                            floats * sizeof(float));
        else
            carve(s);
    }
    export_paths paths;
    if (!st && export_paths_of(dir, &paths)) st = ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    if (!st) st = ort_runtime_open(ort_lib, &s->rt);
    if (!st) st = ort_graph_load(s->rt, paths.model, threads, &s->g);
    if (!st) st = bind_all(s);
    if (st) {
        spark_ort_free(s);
        return st;
    }
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        ek_rope_inv_freq(s->inv_freq[t], c->rope[t].rot_dims, c->rope[t].theta);
    spark_ort_reset(s);
    *out = s;
    return EMBER_OK;
}

void spark_ort_free(spark_ort *s)
{
    if (!s) return;
    for (size_t i = 0; s->inputs && i < s->n_in; i++) ort_tensor_free(s->rt, s->inputs[i]);
    for (size_t i = 0; s->outputs && i < s->n_out; i++) ort_tensor_free(s->rt, s->outputs[i]);
    ort_graph_free(s->g);
    ort_runtime_close(s->rt);
    free(s->layers);
    free(s->in_names);
    free(s->out_names);
    free(s->in_ptrs);
    free(s->out_ptrs);
    free(s->inputs);
    free(s->outputs);
    free(s->block);
    free(s);
}

/* Bytes of one sliding layer's K (or V) ring. */
static size_t ring_bytes(const spark_ort *s)
{
    return (size_t)s->c.n_kv_heads * (size_t)s->c.head_dim * (size_t)s->lay.slots[SPARK_SLIDING] *
           sizeof(float);
}

size_t spark_ort_ring_bytes(const spark_ort *s)
{
    return 2 * ring_bytes(s) * (size_t)spark_config_count_layers(&s->c, SPARK_SLIDING);
}

void spark_ort_ring_save(const spark_ort *s, void *dst)
{
    char *p = dst;
    for (int li = 0; li < s->c.n_layers; li++)
        if (s->c.layer_type[li] == SPARK_SLIDING) {
            memcpy(p, s->layers[li].k, ring_bytes(s));
            memcpy(p + ring_bytes(s), s->layers[li].v, ring_bytes(s));
            p += 2 * ring_bytes(s);
        }
}

/* Masks: a slot is open when it holds one of the positions before pos. */
static void set_masks(spark_ort *s, int32_t pos)
{
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        for (int32_t j = 0; j < s->lay.slots[t]; j++) s->mask[t][j] = j < pos ? 0.0f : SPARK_ONNX_MASK_OFF;
}

void spark_ort_rewind(spark_ort *s, int32_t pos, const void *rings)
{
    const char *p = rings;
    for (int li = 0; p && li < s->c.n_layers; li++)
        if (s->c.layer_type[li] == SPARK_SLIDING) {
            memcpy(s->layers[li].k, p, ring_bytes(s));
            memcpy(s->layers[li].v, p + ring_bytes(s), ring_bytes(s));
            p += 2 * ring_bytes(s);
        }
    /* full layers' rows before pos were never overwritten */
    set_masks(s, pos);
    s->pos = pos;
}

void spark_ort_reset(spark_ort *s)
{
    s->pos = 0;
    set_masks(s, 0);
}

/* Writes the step's new key and value of every layer into position pos's
 * slot, and opens that slot in its type's mask. */
static void store(spark_ort *s, int32_t pos)
{
    const spark_config *c = &s->c;
    const int32_t KV = c->n_kv_heads, d = c->head_dim;
    for (int li = 0; li < c->n_layers; li++) {
        const int type = c->layer_type[li];
        const int32_t S = s->lay.slots[type];
        const int32_t slot = type == SPARK_SLIDING ? pos % S : pos;
        layer_io *L = &s->layers[li];
        for (int32_t g = 0; g < KV; g++)
            for (int32_t j = 0; j < d; j++) {
                L->k[((size_t)g * d + j) * S + slot] = L->k_new[(size_t)g * d + j];
                L->v[((size_t)g * S + slot) * d + j] = L->v_new[(size_t)g * d + j];
            }
    }
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        if (s->lay.has_type[t]) s->mask[t][t == SPARK_SLIDING ? pos % s->lay.slots[t] : pos] = 0.0f;
}

ember_status spark_ort_step(spark_ort *s, int32_t id, const float **logits)
{
    if (id < 0 || id >= s->c.vocab)
        return ember_fail(EMBER_ERR_INVALID_ARG, "token id %d is outside the vocabulary [0, %d)",
                          id, s->c.vocab);
    if (s->pos >= s->lay.context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "the exported graph's context bucket (%d) is full",
                          s->lay.context);
    s->token[0] = id;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        if (s->lay.half[t])
            ek_rope_cos_sin(s->cos[t], s->sin[t], s->inv_freq[t], s->c.rope[t].rot_dims, s->pos);
    ember_status st = ort_graph_run(s->g, s->in_ptrs, s->inputs, s->n_in, s->out_ptrs, s->outputs,
                                    s->n_out);
    if (st) return st;
    /* a ring slot pos % slots holds position pos - slots, still inside this
     * step's window (the new key is scored apart): it is overwritten only
     * after the step */
    store(s, s->pos);
    s->pos++;
    *logits = s->logits;
    return EMBER_OK;
}

int32_t spark_ort_position(const spark_ort *s)
{
    return s->pos;
}

int32_t spark_ort_context(const spark_ort *s)
{
    return s->lay.context;
}

const char *spark_ort_runtime_version(const spark_ort *s)
{
    return ort_runtime_version(s->rt);
}
