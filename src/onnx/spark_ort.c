#include "onnx/spark_ort.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/read_file.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/ops.h"
#include "onnx/export_files.h"
#include "onnx/manifest_io.h"
#include "onnx/ort_api.h"

#define NAME_LEN 32

/* One graph (the decode step, or the prefill chunk) and its I/O buffers,
 * in the graph's element type; the caches are the spark_ort's, shared. */
typedef struct run_io {
    ort_graph *g;
    int32_t T;
    int32_t *tokens;
    void *cos[SPARK_LAYER_TYPES], *sin[SPARK_LAYER_TYPES];
    void *mask[SPARK_LAYER_TYPES], *chunk_mask[SPARK_LAYER_TYPES];
    void *logits;
    void **k_new, **v_new; /* per layer: [kv][d][T], [kv][T][d] */
    size_t n_in, n_out;
    char (*in_names)[NAME_LEN], (*out_names)[NAME_LEN];
    const char **in_ptrs, **out_ptrs;
    ort_tensor **inputs, **outputs;
} run_io;

struct spark_ort {
    spark_config c;
    spark_decode_layout lay;
    size_t es; /* bytes per float element of the graphs' I/O */
    ort_runtime *rt;
    run_io step, chunk;
    int32_t pos;
    float *inv_freq[SPARK_LAYER_TYPES], *cos32[SPARK_LAYER_TYPES], *sin32[SPARK_LAYER_TYPES];
    float *logits32; /* f16 graphs: their logits widened; f32: unused */
    void **k, **v;   /* per layer: past_key [kv][d][slots], past_value [kv][slots][d] */
    unsigned char *block;
};

/* A graph entry's layer types against the model's. */
static ember_status check_layers(const spark_config *c, const cJSON *g, const char *path)
{
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(g, "layer_types");
    if (!cJSON_IsArray(types))
        return ember_fail(EMBER_ERR_FORMAT, "%s: a graph without layer_types", path);
    if (cJSON_GetArraySize(types) != c->n_layers)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %d layers, the model has %d", path,
                          cJSON_GetArraySize(types), c->n_layers);
    for (int li = 0; li < c->n_layers; li++) {
        const cJSON *t = cJSON_GetArrayItem(types, li);
        if (!cJSON_IsString(t) || strcmp(t->valuestring, spark_decode_type_name(c->layer_type[li])))
            return ember_fail(EMBER_ERR_FORMAT, "%s: layer %d is not %s as in the model", path, li,
                              spark_decode_type_name(c->layer_type[li]));
    }
    return EMBER_OK;
}

/* The config fields an export's manifest records as "model". */
static const struct {
    const char *key;
    size_t offset; /* of an int32_t in spark_config */
} model_shape[] = {
    {"hidden_size", offsetof(spark_config, hidden)},      {"num_attention_heads", offsetof(spark_config, n_heads)},
    {"num_key_value_heads", offsetof(spark_config, n_kv_heads)}, {"head_dim", offsetof(spark_config, head_dim)},
    {"intermediate_size", offsetof(spark_config, intermediate)}, {"vocab_size", offsetof(spark_config, vocab)},
    {"sliding_window", offsetof(spark_config, sliding_window)},
};
#define N_MODEL_SHAPE (sizeof model_shape / sizeof *model_shape)

static int32_t shape_value(const spark_config *c, size_t i)
{
    int32_t v;
    memcpy(&v, (const char *)c + model_shape[i].offset, sizeof v);
    return v;
}

void spark_ort_model_shape_add(cJSON *root, const spark_config *c)
{
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    for (size_t i = 0; m && i < N_MODEL_SHAPE; i++) cJSON_AddNumberToObject(m, model_shape[i].key, shape_value(c, i));
}

/* The manifest's "model" against the checkpoint's config (a manifest
 * without one, from before it was written, is checked by its layers only). */
static ember_status check_model_shape(const spark_config *c, const cJSON *root, const char *path)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!m) return EMBER_OK;
    for (size_t i = 0; i < N_MODEL_SHAPE; i++) {
        int32_t v;
        if (!manifest_int(m, model_shape[i].key, &v))
            return ember_fail(EMBER_ERR_FORMAT, "%s: model.%s is missing or not an integer", path, model_shape[i].key);
        if (v != shape_value(c, i))
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: exported from a model with %s %d, this checkpoint has %d (another model's graphs)",
                              path, model_shape[i].key, v, shape_value(c, i));
    }
    return EMBER_OK;
}

ember_status spark_ort_manifest(const spark_config *c, const char *dir, spark_ort_info *info)
{
    export_paths paths;
    if (export_paths_of(dir, &paths)) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    char *text;
    size_t len;
    ember_status st = io_read_text_file(paths.manifest, (size_t)16 << 20, &text, &len);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(root, "graphs");
    const cJSON *g = manifest_graph(graphs, "decode"), *pg = manifest_graph(graphs, "prefill");
    const cJSON *form = cJSON_GetObjectItemCaseSensitive(g, "form");
    memset(info, 0, sizeof *info);
    if (!manifest_int(g, "context", &info->context))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: no decode graph with a context and layer_types",
                        paths.manifest);
    else if (form && (!cJSON_IsString(form) || spark_onnx_form_parse(form->valuestring, &info->form)))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: unknown form (f32, f16, qdq8)", paths.manifest);
    if (!st) st = check_layers(c, g, paths.manifest);
    if (!st) st = check_model_shape(c, root, paths.manifest);
    if (!st && pg) {
        int32_t ctx = 0;
        const cJSON *pform = cJSON_GetObjectItemCaseSensitive(pg, "form");
        spark_onnx_form pf = SPARK_ONNX_F32;
        if (!manifest_int(pg, "tokens", &info->prefill_chunk) || !manifest_int(pg, "context", &ctx) ||
            ctx != info->context || info->prefill_chunk < 2 || info->prefill_chunk > ctx ||
            (pform && (!cJSON_IsString(pform) || spark_onnx_form_parse(pform->valuestring, &pf))) ||
            pf != info->form)
            st = ember_fail(EMBER_ERR_FORMAT, "%s: the prefill graph's tokens, context or form do not "
                            "match the decode graph", paths.manifest);
        if (!st) st = check_layers(c, pg, paths.manifest);
    }
    cJSON_Delete(root);
    return st;
}

static ember_status add_io(spark_ort *s, run_io *r, int is_out, const char *name, void *data,
                           int rank, const int64_t *dims, int type, size_t elem)
{
    size_t i = is_out ? r->n_out++ : r->n_in++;
    char(*names)[NAME_LEN] = is_out ? r->out_names : r->in_names;
    snprintf(names[i], NAME_LEN, "%s", name);
    (is_out ? r->out_ptrs : r->in_ptrs)[i] = names[i];
    size_t count = 1;
    for (int k = 0; k < rank; k++) count *= (size_t)dims[k];
    return ort_tensor_wrap(s->rt, data, count * elem, dims, rank, type,
                           &(is_out ? r->outputs : r->inputs)[i]);
}

/* Carves every buffer out of one block (64-byte aligned pieces); returns
 * the bytes needed when s->block is NULL (a sizing pass). */
static size_t carve(spark_ort *s)
{
    const spark_config *c = &s->c;
    const size_t kvd = (size_t)c->n_kv_heads * (size_t)c->head_dim, es = s->es;
    size_t used = 0;
#define TAKE(ptr, bytes)                                                    \
    do {                                                                    \
        *(void **)&(ptr) = s->block ? (void *)(s->block + used) : NULL;     \
        used += ((bytes) + 63) / 64 * 64;                                   \
    } while (0)
    run_io *runs[2] = {&s->step, &s->chunk};
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        const size_t half = (size_t)s->lay.half[t], slots = (size_t)s->lay.slots[t];
        TAKE(s->inv_freq[t], half * sizeof(float));
        TAKE(s->cos32[t], half * sizeof(float));
        TAKE(s->sin32[t], half * sizeof(float));
        for (int k = 0; k < 2; k++) {
            const size_t T = (size_t)runs[k]->T;
            TAKE(runs[k]->cos[t], T * half * es);
            TAKE(runs[k]->sin[t], T * half * es);
            TAKE(runs[k]->mask[t], T * slots * es);
            TAKE(runs[k]->chunk_mask[t], T * T * es);
        }
    }
    const size_t T_max = (size_t)(s->chunk.T > 1 ? s->chunk.T : 1);
    TAKE(s->logits32, T_max * (size_t)c->vocab * sizeof(float));
    for (int k = 0; k < 2; k++) {
        const size_t T = (size_t)runs[k]->T;
        TAKE(runs[k]->tokens, (T ? T : 1) * sizeof(int32_t));
        TAKE(runs[k]->logits, T * (size_t)c->vocab * es);
    }
    for (int li = 0; li < c->n_layers; li++) {
        const size_t slots = (size_t)s->lay.slots[c->layer_type[li]];
        TAKE(s->k[li], kvd * slots * es);
        TAKE(s->v[li], kvd * slots * es);
        for (int k = 0; k < 2; k++) {
            TAKE(runs[k]->k_new[li], kvd * (size_t)runs[k]->T * es);
            TAKE(runs[k]->v_new[li], kvd * (size_t)runs[k]->T * es);
        }
    }
#undef TAKE
    return used;
}

/* Binds a graph's inputs and outputs, named as the exporter names them. */
static ember_status bind_run(spark_ort *s, run_io *r)
{
    const spark_config *c = &s->c;
    const int64_t KV = c->n_kv_heads, d = c->head_dim, T = r->T;
    const int ft = s->es == 2 ? ORT_FLOAT16 : ORT_FLOAT, rank = T == 1 ? 2 : 3;
    const size_t es = s->es;
    char name[NAME_LEN];
    ember_status st = add_io(s, r, 0, T == 1 ? "token" : "tokens", r->tokens, 1, &T, ORT_INT32, 4);
    for (int t = 0; !st && t < SPARK_LAYER_TYPES; t++) {
        if (!s->lay.has_type[t]) continue;
        const char *ty = spark_decode_type_name(t);
        const int64_t rd[3] = {T, 1, s->lay.half[t]}, md[3] = {T, 1, s->lay.slots[t]}, cd[3] = {T, 1, T};
        const int64_t rd1[2] = {1, s->lay.half[t]}, md1[2] = {1, s->lay.slots[t]};
        if (s->lay.half[t]) {
            snprintf(name, sizeof name, "cos_%s", ty);
            st = add_io(s, r, 0, name, r->cos[t], rank, T == 1 ? rd1 : rd, ft, es);
            snprintf(name, sizeof name, "sin_%s", ty);
            if (!st) st = add_io(s, r, 0, name, r->sin[t], rank, T == 1 ? rd1 : rd, ft, es);
        }
        snprintf(name, sizeof name, "mask_%s", ty);
        if (!st) st = add_io(s, r, 0, name, r->mask[t], rank, T == 1 ? md1 : md, ft, es);
        snprintf(name, sizeof name, "chunk_mask_%s", ty);
        if (!st && T > 1) st = add_io(s, r, 0, name, r->chunk_mask[t], 3, cd, ft, es);
    }
    const int64_t ld[2] = {T, c->vocab}, knd[3] = {KV, d, T}, vnd[3] = {KV, T, d};
    if (!st) st = add_io(s, r, 1, "logits", r->logits, 2, ld, ft, es);
    for (int li = 0; !st && li < c->n_layers; li++) {
        const int64_t S = s->lay.slots[c->layer_type[li]];
        const int64_t kd[3] = {KV, d, S}, vd[3] = {KV, S, d};
        snprintf(name, sizeof name, "past_key_%d", li);
        st = add_io(s, r, 0, name, s->k[li], 3, kd, ft, es);
        snprintf(name, sizeof name, "past_value_%d", li);
        if (!st) st = add_io(s, r, 0, name, s->v[li], 3, vd, ft, es);
        snprintf(name, sizeof name, "new_key_%d", li);
        if (!st) st = add_io(s, r, 1, name, r->k_new[li], 3, knd, ft, es);
        snprintf(name, sizeof name, "new_value_%d", li);
        if (!st) st = add_io(s, r, 1, name, r->v_new[li], 3, vnd, ft, es);
    }
    return st;
}

static ember_status run_alloc(run_io *r, int n_layers)
{
    const size_t max_io = 1 + 4 * SPARK_LAYER_TYPES + 4 * (size_t)n_layers + 1;
    r->k_new = calloc((size_t)n_layers, sizeof *r->k_new);
    r->v_new = calloc((size_t)n_layers, sizeof *r->v_new);
    r->in_names = calloc(max_io, NAME_LEN);
    r->out_names = calloc(max_io, NAME_LEN);
    r->in_ptrs = calloc(max_io, sizeof *r->in_ptrs);
    r->out_ptrs = calloc(max_io, sizeof *r->out_ptrs);
    r->inputs = calloc(max_io, sizeof *r->inputs);
    r->outputs = calloc(max_io, sizeof *r->outputs);
    if (!r->k_new || !r->v_new || !r->in_names || !r->out_names || !r->in_ptrs || !r->out_ptrs ||
        !r->inputs || !r->outputs)
        return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    return EMBER_OK;
}

static void run_free(ort_runtime *rt, run_io *r)
{
    for (size_t i = 0; r->inputs && i < r->n_in; i++) ort_tensor_free(rt, r->inputs[i]);
    for (size_t i = 0; r->outputs && i < r->n_out; i++) ort_tensor_free(rt, r->outputs[i]);
    ort_graph_free(r->g);
    free(r->k_new);
    free(r->v_new);
    free(r->in_names);
    free(r->out_names);
    free(r->in_ptrs);
    free(r->out_ptrs);
    free(r->inputs);
    free(r->outputs);
}

ember_status spark_ort_open(const spark_config *c, const char *dir, const ort_choice *rt,
                            int threads, spark_ort **out)
{
    *out = NULL;
    spark_ort_info info;
    ember_status st = spark_ort_manifest(c, dir, &info);
    if (st) return st;
    spark_ort *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    s->c = *c;
    st = spark_decode_layout_of(c, info.context, &s->lay);
    s->lay.form = info.form;
    s->es = spark_onnx_io_bytes(info.form);
    s->step.T = 1;
    s->chunk.T = info.prefill_chunk;
    s->k = calloc((size_t)c->n_layers, sizeof *s->k);
    s->v = calloc((size_t)c->n_layers, sizeof *s->v);
    if (!st && (!s->k || !s->v)) st = ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    if (!st) st = run_alloc(&s->step, c->n_layers);
    if (!st) st = run_alloc(&s->chunk, c->n_layers);
    if (!st) {
        size_t bytes = carve(s);
        s->block = calloc(1, bytes);
        if (!s->block)
            st = ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: cannot allocate %zu bytes of caches", bytes);
        else
            carve(s);
    }
    export_paths paths;
    if (!st && export_paths_of(dir, &paths)) st = ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    if (!st) st = ort_runtime_open_choice(rt, &s->rt);
    /* exact dequantize-then-MatMul for QDQ weights: at higher levels ORT
     * fuses DQ->MatMul into MatMulNBits, which quantizes activations */
    const int level = spark_onnx_weight_bits(info.form) ? ORT_OPTIMIZE_BASIC : ORT_OPTIMIZE_ALL;
    if (!st) st = ort_graph_load(s->rt, paths.model, threads, level, &s->step.g);
    if (!st) st = bind_run(s, &s->step);
    if (!st && s->chunk.T) st = ort_graph_load(s->rt, paths.prefill, threads, level, &s->chunk.g);
    if (!st && s->chunk.T) st = bind_run(s, &s->chunk);
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
    run_free(s->rt, &s->step);
    run_free(s->rt, &s->chunk);
    ort_runtime_close(s->rt);
    free(s->k);
    free(s->v);
    free(s->block);
    free(s);
}

/* Element i of a graph buffer, in the graph's element type. */
static void put(const spark_ort *s, void *buf, size_t i, float v)
{
    if (s->es == 2)
        ((uint16_t *)buf)[i] = ek_f32_to_f16(v);
    else
        ((float *)buf)[i] = v;
}

static void copy_el(const spark_ort *s, void *dst, size_t di, const void *src, size_t si)
{
    memcpy((char *)dst + di * s->es, (const char *)src + si * s->es, s->es);
}

/* Bytes of one sliding layer's K (or V) ring. */
static size_t ring_bytes(const spark_ort *s)
{
    return (size_t)s->c.n_kv_heads * (size_t)s->c.head_dim * (size_t)s->lay.slots[SPARK_SLIDING] * s->es;
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
            memcpy(p, s->k[li], ring_bytes(s));
            memcpy(p + ring_bytes(s), s->v[li], ring_bytes(s));
            p += 2 * ring_bytes(s);
        }
}

/* The decode step's masks: a slot is open when it holds one of the
 * positions before pos (a ring's slots all lie inside the next token's
 * window). */
static void set_masks(spark_ort *s, int32_t pos)
{
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        for (int32_t j = 0; j < s->lay.slots[t]; j++)
            put(s, s->step.mask[t], (size_t)j, j < pos ? 0.0f : SPARK_ONNX_MASK_OFF);
}

void spark_ort_rewind(spark_ort *s, int32_t pos, const void *rings)
{
    const char *p = rings;
    for (int li = 0; p && li < s->c.n_layers; li++)
        if (s->c.layer_type[li] == SPARK_SLIDING) {
            memcpy(s->k[li], p, ring_bytes(s));
            memcpy(s->v[li], p + ring_bytes(s), ring_bytes(s));
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

/* Writes a run's T new keys and values of every layer into the slots of
 * positions pos..pos+T-1 in order (a ring keeps the latest); a full
 * layer's cache has no slot for the bucket's last position. */
static void store(spark_ort *s, const run_io *r, int32_t pos)
{
    const spark_config *c = &s->c;
    const int32_t KV = c->n_kv_heads, d = c->head_dim, T = r->T;
    for (int li = 0; li < c->n_layers; li++) {
        const int type = c->layer_type[li];
        const int32_t S = s->lay.slots[type];
        for (int32_t i = 0; i < T; i++) {
            const int32_t p = pos + i, slot = type == SPARK_SLIDING ? p % S : p;
            if (slot >= S) continue;
            for (int32_t g = 0; g < KV; g++)
                for (int32_t j = 0; j < d; j++) {
                    copy_el(s, s->k[li], ((size_t)g * d + j) * S + slot, r->k_new[li],
                            ((size_t)g * d + j) * T + i);
                    copy_el(s, s->v[li], ((size_t)g * S + slot) * d + j, r->v_new[li],
                            ((size_t)g * T + i) * d + j);
                }
        }
    }
}

/* The run's logits as f32 rows. */
static const float *logits_of(spark_ort *s, const run_io *r)
{
    if (s->es == 4) return r->logits;
    const size_t n = (size_t)r->T * (size_t)s->c.vocab;
    for (size_t i = 0; i < n; i++) s->logits32[i] = ek_f16_to_f32(((const uint16_t *)r->logits)[i]);
    return s->logits32;
}

/* Rotary tables of positions pos..pos+T-1, one row per token. */
static void set_rotary(spark_ort *s, run_io *r, int32_t pos)
{
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        const int32_t half = s->lay.half[t];
        if (!half) continue;
        for (int32_t i = 0; i < r->T; i++) {
            ek_rope_cos_sin(s->cos32[t], s->sin32[t], s->inv_freq[t], s->c.rope[t].rot_dims, pos + i);
            for (int32_t j = 0; j < half; j++) {
                put(s, r->cos[t], (size_t)i * half + j, s->cos32[t][j]);
                put(s, r->sin[t], (size_t)i * half + j, s->sin32[t][j]);
            }
        }
    }
}

ember_status spark_ort_step(spark_ort *s, int32_t id, const float **logits)
{
    if (id < 0 || id >= s->c.vocab)
        return ember_fail(EMBER_ERR_INVALID_ARG, "token id %d is outside the vocabulary [0, %d)",
                          id, s->c.vocab);
    if (s->pos >= s->lay.context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "the exported graph's context bucket (%d) is full",
                          s->lay.context);
    run_io *r = &s->step;
    r->tokens[0] = id;
    set_rotary(s, r, s->pos);
    ember_status st = ort_graph_run(r->g, r->in_ptrs, r->inputs, r->n_in, r->out_ptrs, r->outputs,
                                    r->n_out);
    if (st) return st;
    /* a ring slot pos % slots holds position pos - slots, still inside this
     * step's window (the new key is scored apart): it is overwritten only
     * after the step */
    store(s, r, s->pos);
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        if (s->lay.has_type[t])
            put(s, r->mask[t], (size_t)(t == SPARK_SLIDING ? s->pos % s->lay.slots[t] : s->pos), 0.0f);
    s->pos++;
    *logits = logits_of(s, r);
    return EMBER_OK;
}

int32_t spark_ort_chunk_tokens(const spark_ort *s)
{
    return s->chunk.T;
}

/* A chunk's masks at position p. Over the caches: a full slot j is open
 * when j < p; a ring slot j holds the latest position q < p with
 * q mod slots = j (none when j >= p), open for token i while p + i - q is
 * inside the window. Among the chunk: j <= i, and for sliding layers
 * i - j inside the window. */
static void set_chunk_masks(spark_ort *s, run_io *r, int32_t p)
{
    const int32_t T = r->T, W = s->c.sliding_window;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!s->lay.has_type[t]) continue;
        const int32_t S = s->lay.slots[t];
        for (int32_t i = 0; i < T; i++) {
            for (int32_t j = 0; j < S; j++) {
                int open = j < p;
                if (open && t == SPARK_SLIDING) {
                    const int32_t q = j + S * ((p - 1 - j) / S);
                    open = p + i - q < W;
                }
                put(s, r->mask[t], (size_t)i * S + j, open ? 0.0f : SPARK_ONNX_MASK_OFF);
            }
            for (int32_t j = 0; j < T; j++) {
                const int open = j <= i && (t != SPARK_SLIDING || i - j < W);
                put(s, r->chunk_mask[t], (size_t)i * T + j, open ? 0.0f : SPARK_ONNX_MASK_OFF);
            }
        }
    }
}

ember_status spark_ort_chunk(spark_ort *s, const int32_t *ids, const float **logits)
{
    run_io *r = &s->chunk;
    if (!r->T) return ember_fail(EMBER_ERR_UNSUPPORTED, "the exported folder has no prefill graph");
    for (int32_t i = 0; i < r->T; i++)
        if (ids[i] < 0 || ids[i] >= s->c.vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "token id %d is outside the vocabulary [0, %d)",
                              ids[i], s->c.vocab);
    if (s->pos + r->T > s->lay.context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "a %d-token chunk at position %d passes the exported "
                          "graph's context bucket (%d)", r->T, s->pos, s->lay.context);
    memcpy(r->tokens, ids, (size_t)r->T * sizeof *ids);
    set_rotary(s, r, s->pos);
    set_chunk_masks(s, r, s->pos);
    ember_status st = ort_graph_run(r->g, r->in_ptrs, r->inputs, r->n_in, r->out_ptrs, r->outputs,
                                    r->n_out);
    if (st) return st;
    store(s, r, s->pos);
    s->pos += r->T;
    set_masks(s, s->pos);
    *logits = logits_of(s, r);
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

spark_onnx_form spark_ort_form(const spark_ort *s)
{
    return s->lay.form;
}

const char *spark_ort_runtime_version(const spark_ort *s)
{
    return ort_runtime_version(s->rt);
}
