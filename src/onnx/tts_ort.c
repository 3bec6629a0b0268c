#include "onnx/tts_ort.h"

#include <cjson/cJSON.h>
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
#include "onnx/tts_export.h"
#include "onnx/tts_step_layout.h"

#define IO_NAME 32

/* One graph, its caches and I/O buffers in the graph's element type (the
 * talker chunk binds the talker step's caches). */
typedef struct step_run {
    tts_step_layout lay;
    ort_graph *g;
    int32_t pos;
    int shares_caches;
    void *embedding, *cos, *sin, *mask, *chunk_mask, *logits, *hidden;
    int32_t *head;
    void **k, **v, **k_new, **v_new; /* per layer */
    float *inv_freq, *cos32, *sin32, *logits32, *hidden32;
    size_t n_in, n_out, cap;
    char (*names)[IO_NAME];
    const char **in_names, **out_names;
    ort_tensor **in, **out;
} step_run;

struct tts_ort {
    ort_runtime *rt;
    size_t es; /* bytes per float element of the graphs' I/O: 4 or 2 */
    step_run run[3]; /* by tts_graph_kind: talker, predictor, talker chunk */
    int n_runs;      /* 3 when the folder has a talker chunk */
};

/* One graph entry of the manifest against the model's stack. */
static ember_status check_graph(const cJSON *graphs, tts_graph_kind kind, const tts_stack_config *sc,
                                const char *path, int32_t *context, spark_onnx_form *form)
{
    const cJSON *g = manifest_graph(graphs, tts_graph_kind_name(kind));
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(g, "form");
    int32_t layers = 0, hidden = 0, vocab = 0;
    if (!g || !manifest_int(g, "context", context) || !manifest_int(g, "layers", &layers) ||
        !manifest_int(g, "hidden", &hidden) || !manifest_int(g, "vocab", &vocab) || !cJSON_IsString(f) ||
        spark_onnx_form_parse(f->valuestring, form))
        return ember_fail(EMBER_ERR_FORMAT, "%s: no %s graph with its context, layers, hidden, vocab "
                          "and form", path, tts_graph_kind_name(kind));
    if (layers != sc->n_layers || hidden != sc->hidden || vocab != sc->vocab)
        return ember_fail(EMBER_ERR_FORMAT, "%s: the %s graph has %d layers, hidden %d, vocab %d; the "
                          "model %d, %d, %d", path, tts_graph_kind_name(kind), layers, hidden, vocab,
                          sc->n_layers, sc->hidden, sc->vocab);
    return EMBER_OK;
}

static ember_status read_manifest(const tts_config *c, const char *dir, int32_t *context,
                                  int32_t *chunk, spark_onnx_form *form)
{
    char path[4096];
    cJSON *root;
    ember_status st = manifest_read(dir, TTS_EXPORT_ARCHITECTURE, path, sizeof path, &root);
    if (st) return st;
    const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(root, "graphs");
    int32_t pctx = 0;
    spark_onnx_form pform;
    st = check_graph(graphs, TTS_GRAPH_TALKER, &c->talker, path, context, form);
    if (!st) st = check_graph(graphs, TTS_GRAPH_PREDICTOR, &c->predictor, path, &pctx, &pform);
    if (!st && (pctx != c->n_groups || pform != *form))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: the predictor graph's context (%d) or form does not "
                        "match the model's %d codebooks and the talker's form", path, pctx, c->n_groups);
    *chunk = 0;
    if (!st && manifest_graph(graphs, tts_graph_kind_name(TTS_GRAPH_TALKER_CHUNK))) {
        st = check_graph(graphs, TTS_GRAPH_TALKER_CHUNK, &c->talker, path, &pctx, &pform);
        if (!st && (!manifest_int(manifest_graph(graphs, tts_graph_kind_name(TTS_GRAPH_TALKER_CHUNK)), "tokens", chunk) ||
                    pctx != *context || pform != *form || *chunk < 2 || *chunk > pctx))
            st = ember_fail(EMBER_ERR_FORMAT, "%s: the talker prefill graph's tokens, context or form do not "
                            "match the talker's", path);
    }
    cJSON_Delete(root);
    return st;
}

static void *buffer(size_t bytes, int *failed)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) *failed = 1;
    return p;
}

/* Registers buf as the graph input or output `name`. */
static ember_status bind(tts_ort *o, step_run *r, int is_out, const char *name, void *buf, int rank,
                         const int64_t *dims, int type, size_t elem)
{
    const size_t i = r->n_in + r->n_out;
    if (i >= r->cap) return ember_fail(EMBER_ERR_INVALID_ARG, "onnx backend: too many graph inputs");
    snprintf(r->names[i], IO_NAME, "%s", name);
    size_t count = 1;
    for (int k = 0; k < rank; k++) count *= (size_t)dims[k];
    ort_tensor **slot = is_out ? &r->out[r->n_out] : &r->in[r->n_in];
    if (is_out)
        r->out_names[r->n_out++] = r->names[i];
    else
        r->in_names[r->n_in++] = r->names[i];
    return ort_tensor_wrap(o->rt, buf, count * elem, dims, rank, type, slot);
}

static ember_status run_open(tts_ort *o, step_run *r, const char *dir, int threads)
{
    const tts_stack_config *sc = r->lay.stack;
    const size_t L = (size_t)sc->n_layers, es = o->es, KV = (size_t)sc->n_kv_heads,
                 d = (size_t)sc->head_dim, S = (size_t)r->lay.slots, half = (size_t)r->lay.half,
                 T = (size_t)r->lay.tokens;
    const step_run *owner = &o->run[TTS_GRAPH_TALKER];
    int failed = 0;
    r->cap = 4 * L + 9;
    r->shares_caches = r->lay.kind == TTS_GRAPH_TALKER_CHUNK;
    r->names = buffer(r->cap * IO_NAME, &failed);
    r->in_names = buffer(r->cap * sizeof *r->in_names, &failed);
    r->out_names = buffer(r->cap * sizeof *r->out_names, &failed);
    r->in = buffer(r->cap * sizeof *r->in, &failed);
    r->out = buffer(r->cap * sizeof *r->out, &failed);
    void ***per_layer[4] = {&r->k, &r->v, &r->k_new, &r->v_new};
    for (int j = r->shares_caches ? 2 : 0; j < 4; j++) *per_layer[j] = buffer(L * sizeof(void *), &failed);
    if (r->shares_caches) {
        r->k = owner->k;
        r->v = owner->v;
    }
    for (size_t li = 0; !failed && li < L; li++) {
        if (!r->shares_caches) r->k[li] = buffer(KV * d * S * es, &failed);
        if (!r->shares_caches) r->v[li] = buffer(KV * d * S * es, &failed);
        r->k_new[li] = buffer(KV * d * T * es, &failed);
        r->v_new[li] = buffer(KV * d * T * es, &failed);
    }
    r->embedding = buffer(T * (size_t)r->lay.in_dim * es, &failed);
    r->head = buffer(sizeof *r->head, &failed);
    r->cos = buffer(T * half * es, &failed);
    r->sin = buffer(T * half * es, &failed);
    r->mask = buffer(T * S * es, &failed);
    r->chunk_mask = buffer(T * T * es, &failed);
    r->logits = buffer(T * (size_t)sc->vocab * es, &failed);
    r->hidden = buffer(T * (size_t)sc->hidden * es, &failed);
    r->inv_freq = buffer(half * sizeof(float), &failed);
    r->cos32 = buffer(half * sizeof(float), &failed);
    r->sin32 = buffer(half * sizeof(float), &failed);
    r->logits32 = buffer((size_t)sc->vocab * sizeof(float), &failed);
    r->hidden32 = buffer((size_t)sc->hidden * sizeof(float), &failed);
    if (failed) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: cannot allocate the caches");
    ek_rope_inv_freq(r->inv_freq, sc->head_dim, sc->rope_theta);

    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, tts_graph_file(r->lay.kind)) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    /* exact dequantize-then-MatMul for QDQ weights (see spark_ort.c) */
    const int level = spark_onnx_weight_bits(r->lay.form) ? ORT_OPTIMIZE_BASIC : ORT_OPTIMIZE_ALL;
    ember_status st = ort_graph_load(o->rt, path, threads, level, &r->g);
    const int ft = es == 2 ? ORT_FLOAT16 : ORT_FLOAT;
    const int64_t Ti = (int64_t)T, ed[2] = {Ti, r->lay.in_dim}, rd[3] = {Ti, 1, (int64_t)half},
                  md[3] = {Ti, 1, (int64_t)S}, cd[3] = {Ti, 1, Ti}, ld[2] = {Ti, sc->vocab},
                  hd[2] = {Ti, sc->hidden}, one = 1;
    const int rank = T == 1 ? 2 : 3; /* a chunk's tables and masks: [T, 1, n] */
    if (!st) st = bind(o, r, 0, "embedding", r->embedding, 2, ed, ft, es);
    if (!st) st = bind(o, r, 0, "cos", r->cos, rank, T == 1 ? rd + 1 : rd, ft, es);
    if (!st) st = bind(o, r, 0, "sin", r->sin, rank, T == 1 ? rd + 1 : rd, ft, es);
    if (!st) st = bind(o, r, 0, "mask", r->mask, rank, T == 1 ? md + 1 : md, ft, es);
    if (!st && T > 1) st = bind(o, r, 0, "chunk_mask", r->chunk_mask, 3, cd, ft, es);
    if (!st && r->lay.kind == TTS_GRAPH_PREDICTOR) st = bind(o, r, 0, "head", r->head, 1, &one, ORT_INT32, 4);
    if (!st) st = bind(o, r, 1, "logits", r->logits, 2, ld, ft, es);
    if (!st && r->lay.kind != TTS_GRAPH_PREDICTOR) st = bind(o, r, 1, "hidden", r->hidden, 2, hd, ft, es);
    char name[IO_NAME];
    const int64_t kd[3] = {(int64_t)KV, (int64_t)d, (int64_t)S}, vd[3] = {(int64_t)KV, (int64_t)S, (int64_t)d},
                  knd[3] = {(int64_t)KV, (int64_t)d, Ti}, vnd[3] = {(int64_t)KV, Ti, (int64_t)d};
    /* per layer: the caches in, the new key and value out */
    static const char *const stem[4] = {"past_key", "past_value", "new_key", "new_value"};
    void **bufs[4] = {r->k, r->v, r->k_new, r->v_new};
    const int64_t *dims[4] = {kd, vd, knd, vnd};
    for (size_t i = 0; !st && i < 4 * L; i++) {
        snprintf(name, sizeof name, "%s_%zu", stem[i % 4], i / 4);
        st = bind(o, r, i % 4 >= 2, name, bufs[i % 4][i / 4], 3, dims[i % 4], ft, es);
    }
    return st;
}

static void run_free(tts_ort *o, step_run *r)
{
    for (size_t i = 0; r->in && i < r->n_in; i++) ort_tensor_free(o->rt, r->in[i]);
    for (size_t i = 0; r->out && i < r->n_out; i++) ort_tensor_free(o->rt, r->out[i]);
    ort_graph_free(r->g);
    for (int32_t li = 0; r->lay.stack && li < r->lay.stack->n_layers; li++) {
        if (r->k && !r->shares_caches) free(r->k[li]);
        if (r->v && !r->shares_caches) free(r->v[li]);
        if (r->k_new) free(r->k_new[li]);
        if (r->v_new) free(r->v_new[li]);
    }
    if (r->shares_caches) r->k = r->v = NULL;
    void *bufs[] = {r->names, r->in_names, r->out_names, r->in, r->out, r->k, r->v, r->k_new, r->v_new,
                    r->embedding, r->head, r->cos, r->sin, r->mask, r->chunk_mask, r->logits, r->hidden, r->inv_freq,
                    r->cos32, r->sin32, r->logits32, r->hidden32};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

/* Element i of a graph buffer in the graph's element type, and back. */
static void put(const tts_ort *o, void *buf, size_t i, float v)
{
    if (o->es == 2)
        ((uint16_t *)buf)[i] = ek_f32_to_f16(v);
    else
        ((float *)buf)[i] = v;
}

static float get(const tts_ort *o, const void *buf, size_t i)
{
    return o->es == 2 ? ek_f16_to_f32(((const uint16_t *)buf)[i]) : ((const float *)buf)[i];
}

static void run_reset(tts_ort *o, step_run *r)
{
    r->pos = 0;
    for (int32_t j = 0; j < r->lay.slots; j++) put(o, r->mask, (size_t)j, SPARK_ONNX_MASK_OFF);
}

ember_status tts_ort_open(const tts_config *c, const char *dir, const ort_choice *rt, int threads,
                          tts_ort **out)
{
    *out = NULL;
    int32_t context = 0, chunk = 0;
    spark_onnx_form form = SPARK_ONNX_F32;
    ember_status st = read_manifest(c, dir, &context, &chunk, &form);
    if (st) return st;
    tts_ort *o = calloc(1, sizeof *o);
    if (!o) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    o->es = spark_onnx_io_bytes(form);
    o->n_runs = chunk ? 3 : 2;
    for (int k = 0; k < o->n_runs && !st; k++)
        st = tts_step_layout_of(c, (tts_graph_kind)k, context, chunk, form, &o->run[k].lay);
    if (!st) st = ort_runtime_open_choice(rt, &o->rt);
    /* the talker first: the chunk binds its caches */
    for (int k = 0; k < o->n_runs && !st; k++) st = run_open(o, &o->run[k], dir, threads);
    if (st) {
        tts_ort_free(o);
        return st;
    }
    for (int k = 0; k < 2; k++) run_reset(o, &o->run[k]);
    *out = o;
    return EMBER_OK;
}

void tts_ort_free(tts_ort *o)
{
    if (!o) return;
    /* the chunk before the talker whose caches it binds */
    for (int k = 2; k >= 0; k--) run_free(o, &o->run[k]);
    ort_runtime_close(o->rt);
    free(o);
}

int32_t tts_ort_context(const tts_ort *o)
{
    return o->run[TTS_GRAPH_TALKER].lay.context;
}

const char *tts_ort_runtime_version(const tts_ort *o)
{
    return ort_runtime_version(o->rt);
}

void tts_ort_talker_reset(tts_ort *o)
{
    run_reset(o, &o->run[TTS_GRAPH_TALKER]);
}

void tts_ort_predictor_reset(tts_ort *o)
{
    run_reset(o, &o->run[TTS_GRAPH_PREDICTOR]);
}

/* One run of r (T rows from `rows`) at the position of `owner`, the run
 * whose caches and step mask the rows extend (r itself, or the talker for
 * its chunk): inputs filled, the graph run, each row's new key and value
 * written into its slot (key column, value row), the slots unmasked, the
 * last row's logits (and state) widened to f32. */
static ember_status run_rows(tts_ort *o, step_run *r, step_run *owner, const float *rows)
{
    const tts_stack_config *sc = r->lay.stack;
    const int32_t T = r->lay.tokens, p = owner->pos, S = r->lay.slots;
    if (p + T > r->lay.context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "the exported %s graph's context (%d) is full",
                          tts_graph_kind_name(r->lay.kind), r->lay.context);
    for (size_t i = 0; i < (size_t)T * (size_t)r->lay.in_dim; i++) put(o, r->embedding, i, rows[i]);
    for (int32_t i = 0; i < T; i++) {
        ek_rope_cos_sin(r->cos32, r->sin32, r->inv_freq, sc->head_dim, p + i);
        for (int32_t j = 0; j < r->lay.half; j++) {
            put(o, r->cos, (size_t)i * (size_t)r->lay.half + (size_t)j, r->cos32[j]);
            put(o, r->sin, (size_t)i * (size_t)r->lay.half + (size_t)j, r->sin32[j]);
        }
    }
    /* a chunk's masks: every row sees the slots before p, and the rows up to itself */
    for (int32_t i = 0; T > 1 && i < T; i++) {
        for (int32_t j = 0; j < S; j++) put(o, r->mask, (size_t)i * (size_t)S + (size_t)j, j < p ? 0.0f : SPARK_ONNX_MASK_OFF);
        for (int32_t j = 0; j < T; j++) put(o, r->chunk_mask, (size_t)(i * T + j), j <= i ? 0.0f : SPARK_ONNX_MASK_OFF);
    }
    ember_status st = ort_graph_run(r->g, r->in_names, r->in, r->n_in, r->out_names, r->out, r->n_out);
    if (st) return st;
    const size_t d = (size_t)sc->head_dim, es = o->es, Sz = (size_t)S, Tz = (size_t)T;
    /* the bucket's last position has no slot: nothing reads it */
    for (size_t i = 0; i < Tz && (size_t)p + i < Sz; i++) {
        const size_t slot = (size_t)p + i;
        for (int32_t li = 0; li < sc->n_layers; li++)
            for (size_t g = 0; g < (size_t)sc->n_kv_heads; g++)
                for (size_t j = 0; j < d; j++) {
                    memcpy((char *)owner->k[li] + ((g * d + j) * Sz + slot) * es,
                           (const char *)r->k_new[li] + ((g * d + j) * Tz + i) * es, es);
                    memcpy((char *)owner->v[li] + ((g * Sz + slot) * d + j) * es,
                           (const char *)r->v_new[li] + ((g * Tz + i) * d + j) * es, es);
                }
        put(o, owner->mask, slot, 0.0f);
    }
    owner->pos += T;
    const size_t last = Tz - 1;
    for (int32_t i = 0; i < sc->vocab; i++) r->logits32[i] = get(o, r->logits, last * (size_t)sc->vocab + (size_t)i);
    if (r->lay.kind != TTS_GRAPH_PREDICTOR)
        for (int32_t i = 0; i < sc->hidden; i++)
            r->hidden32[i] = get(o, r->hidden, last * (size_t)sc->hidden + (size_t)i);
    return EMBER_OK;
}

int32_t tts_ort_chunk_rows(const tts_ort *o)
{
    return o->n_runs == 3 ? o->run[TTS_GRAPH_TALKER_CHUNK].lay.tokens : 0;
}

ember_status tts_ort_talker_chunk(tts_ort *o, const float *rows, const float **logits,
                                  const float **hidden)
{
    if (o->n_runs < 3) return ember_fail(EMBER_ERR_UNSUPPORTED, "the exported folder has no talker prefill graph");
    step_run *r = &o->run[TTS_GRAPH_TALKER_CHUNK];
    ember_status st = run_rows(o, r, &o->run[TTS_GRAPH_TALKER], rows);
    if (st) return st;
    *logits = r->logits32;
    *hidden = r->hidden32;
    return EMBER_OK;
}

ember_status tts_ort_talker_step(tts_ort *o, const float *embedding, const float **logits,
                                 const float **hidden)
{
    step_run *r = &o->run[TTS_GRAPH_TALKER];
    ember_status st = run_rows(o, r, r, embedding);
    if (st) return st;
    *logits = r->logits32;
    *hidden = r->hidden32;
    return EMBER_OK;
}

ember_status tts_ort_predictor_step(tts_ort *o, const float *embedding, int32_t head,
                                    const float **logits)
{
    step_run *r = &o->run[TTS_GRAPH_PREDICTOR];
    if (head < 0 || head >= r->lay.heads)
        return ember_fail(EMBER_ERR_INVALID_ARG, "predictor head %d is outside [0, %d)", head, r->lay.heads);
    *r->head = head;
    ember_status st = run_rows(o, r, r, embedding);
    if (st) return st;
    *logits = r->logits32;
    return EMBER_OK;
}
