#include "onnx/c2w_ort.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "io/read_file.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "kernels/ops.h"
#include "onnx/c2w_graph.h"
#include "onnx/export_files.h"
#include "onnx/manifest_io.h"
#include "onnx/ort_api.h"
#include "onnx/tts_export.h"

#define MAX_GRAPHS 16

/* One chunk size's graph, its tensors over the shared buffers. */
typedef struct dec_run {
    int32_t frames;
    int stage; /* -1: the whole decoder; else one stage of a chain */
    ort_graph *g;
    ort_tensor **in, **out;
    const char **in_names, **out_names;
    size_t n_in, n_out;
} dec_run;

struct c2w_ort {
    c2w_config cfg;
    ort_runtime *rt;
    size_t es; /* bytes per float element of the graphs' I/O: 4 or 2 */
    dec_run runs[MAX_GRAPHS]; /* largest first, or the stages in order */
    int n_runs;
    int staged; /* the runs are the per-stage graphs of one chunk size, chained */
    c2w_stage_info stages[C2W_MAX_STAGES];
    void *act[C2W_MAX_STAGES]; /* stage k's output, stage k+1's input */
    double stage_ms[C2W_MAX_STAGES]; /* CPU time per stage so far */
    c2w_state_info *states;
    int n_states;
    char (*next_names)[48];
    void **state, **next; /* per state tensor: the input and the output buffer */
    size_t *state_bytes;
    int32_t *codes;
    void *cos, *sin, *mask, *pcm;
    float *inv_freq, *cos32, *sin32;
    int64_t pos; /* frames decoded in this utterance */
};

static void put(const c2w_ort *o, void *buf, size_t i, float v)
{
    if (o->es == 2)
        ((uint16_t *)buf)[i] = ek_f32_to_f16(v);
    else
        ((float *)buf)[i] = v;
}

static float get(const c2w_ort *o, const void *buf, size_t i)
{
    return o->es == 2 ? ek_f16_to_f32(((const uint16_t *)buf)[i]) : ((const float *)buf)[i];
}

/* The manifest's decoder graphs: their chunk sizes (*n 0: none) and form,
 * checked against the decoder's config. */
static ember_status read_manifest(const c2w_config *c, const char *dir, const char *want_kind, int32_t *sizes,
                                  int *n, spark_onnx_form *form)
{
    char path[4096];
    *n = 0;
    cJSON *root;
    ember_status st = manifest_read(dir, TTS_EXPORT_ARCHITECTURE, path, sizeof path, &root);
    if (st) return st;
    const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(root, "graphs"), *g;
    cJSON_ArrayForEach(g, graphs) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(g, "kind");
        if (st || !cJSON_IsString(kind) || strcmp(kind->valuestring, want_kind)) continue;
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(g, "form");
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(g, "state");
        int32_t frames = 0, q = 0, spf = 0, window = 0, layers = 0;
        spark_onnx_form gf;
        if (!manifest_int(g, "frames", &frames) || !manifest_int(g, "n_quantizers", &q) ||
            !manifest_int(g, "samples_per_frame", &spf) || !manifest_int(g, "sliding_window", &window) ||
            !manifest_int(g, "layers", &layers) || !cJSON_IsString(f) || spark_onnx_form_parse(f->valuestring, &gf) ||
            !cJSON_IsArray(state) || frames < 1 || frames > 4096) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: a %s graph without its frames, n_quantizers, "
                            "samples_per_frame, sliding_window, layers, form and state", path, C2W_GRAPH_KIND);
        } else if (q != c->n_quantizers || spf != c->samples_per_frame || window != c->sliding_window ||
                   layers != c->transformer.n_layers) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: the speech decoder graphs are for %d codebooks, %d "
                            "samples per frame, window %d, %d layers; the model has %d, %d, %d, %d", path, q,
                            spf, window, layers, c->n_quantizers, c->samples_per_frame, c->sliding_window,
                            c->transformer.n_layers);
        } else if (*n && gf != *form) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: the speech decoder graphs differ in form", path);
        } else if (*n == MAX_GRAPHS) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: more than %d speech decoder graphs", path, MAX_GRAPHS);
        } else {
            *form = gf;
            sizes[(*n)++] = frames;
        }
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

static ember_status bind(c2w_ort *o, dec_run *r, int is_out, const char *name, void *buf, int rank,
                         const int64_t *dims, int type, size_t elem)
{
    size_t count = 1;
    for (int k = 0; k < rank; k++) count *= (size_t)dims[k];
    ort_tensor **slot = is_out ? &r->out[r->n_out] : &r->in[r->n_in];
    if (is_out)
        r->out_names[r->n_out++] = name;
    else
        r->in_names[r->n_in++] = name;
    return ort_tensor_wrap(o->rt, buf, count * elem, dims, rank, type, slot);
}

static ember_status run_open(c2w_ort *o, dec_run *r, const char *dir, int threads, int level)
{
    const c2w_config *c = &o->cfg;
    const size_t cap = (size_t)o->n_states + 5;
    int failed = 0;
    r->in = buffer(cap * sizeof *r->in, &failed);
    r->out = buffer(cap * sizeof *r->out, &failed);
    r->in_names = buffer(cap * sizeof *r->in_names, &failed);
    r->out_names = buffer(cap * sizeof *r->out_names, &failed);
    if (failed) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    char file[96], path[4096];
    if (r->stage >= 0)
        c2w_graph_stage_file(r->frames, o->stages[r->stage].name, file, sizeof file);
    else
        c2w_graph_file(r->frames, file, sizeof file);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    ember_status st = ort_graph_load(o->rt, path, threads, level, &r->g);
    const int ft = o->es == 2 ? ORT_FLOAT16 : ORT_FLOAT;
    const int64_t N = r->frames, cd[2] = {N, c->n_quantizers}, rd[3] = {N, 1, c->transformer.head_dim / 2},
                  md[3] = {N, 1, c2w_graph_mask_cols(c, N)}, pd = N * c->samples_per_frame;
    const int k = r->stage, last = o->staged ? o->n_runs - 1 : 0;
    const c2w_stage_info *sg = k >= 0 ? &o->stages[k] : NULL;
    if (!st && k <= 0) {
        st = bind(o, r, 0, "codes", o->codes, 2, cd, ORT_INT32, 4);
        if (!st) st = bind(o, r, 0, "cos", o->cos, 3, rd, ft, o->es);
        if (!st) st = bind(o, r, 0, "sin", o->sin, 3, rd, ft, o->es);
        if (!st) st = bind(o, r, 0, "mask", o->mask, 3, md, ft, o->es);
    }
    if (!st && k > 0) {
        const int64_t xd[3] = {1, sg->cin, N * sg->in_rows};
        st = bind(o, r, 0, "x", o->act[k - 1], 3, xd, ft, o->es);
    }
    if (!st && (k < 0 || k == last)) st = bind(o, r, 1, "pcm", o->pcm, 1, &pd, ft, o->es);
    if (!st && k >= 0 && k < last) {
        const int64_t yd[3] = {1, sg->cout, N * sg->out_rows};
        st = bind(o, r, 1, "y", o->act[k], 3, yd, ft, o->es);
    }
    const int first = sg ? sg->first_state : 0, end = sg ? sg->first_state + sg->n_states : o->n_states;
    for (int i = first; !st && i < end; i++) {
        const c2w_state_info *s = &o->states[i];
        st = bind(o, r, 0, s->name, o->state[i], s->rank, s->dims, ft, o->es);
        if (!st) st = bind(o, r, 1, o->next_names[i], o->next[i], s->rank, s->dims, ft, o->es);
    }
    return st;
}

static int by_size_desc(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

static ember_status open_runs(const c2w_config *c, const char *dir, const ort_choice *rt, int threads,
                              int staged, c2w_ort **out)
{
    *out = NULL;
    int32_t sizes[MAX_GRAPHS];
    int n = 0;
    spark_onnx_form form = SPARK_ONNX_F32;
    ember_status st = read_manifest(c, dir, staged ? C2W_STAGE_KIND : C2W_GRAPH_KIND, sizes, &n, &form);
    if (st || !n) return st;
    qsort(sizes, (size_t)n, sizeof *sizes, by_size_desc);
    c2w_ort *o = calloc(1, sizeof *o);
    if (!o) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: out of memory");
    o->cfg = *c;
    o->staged = staged;
    const int n_stages = c2w_graph_stages(c, o->stages);
    if (staged && (n != n_stages || sizes[0] != sizes[n - 1])) {
        free(o);
        return ember_fail(EMBER_ERR_FORMAT, "%s: expected %d stage graphs of one chunk size, found %d", dir,
                          n_stages, n);
    }
    o->es = spark_onnx_io_bytes(form);
    int failed = 0;
    o->states = buffer(C2W_MAX_STATES * sizeof *o->states, &failed);
    if (!failed) o->n_states = c2w_graph_states(c, o->states);
    const size_t ns = (size_t)o->n_states, N = (size_t)sizes[0], half = (size_t)c->transformer.head_dim / 2;
    o->next_names = buffer(ns * sizeof *o->next_names, &failed);
    o->state = buffer(ns * sizeof *o->state, &failed);
    o->next = buffer(ns * sizeof *o->next, &failed);
    o->state_bytes = buffer(ns * sizeof *o->state_bytes, &failed);
    for (size_t i = 0; !failed && i < ns; i++) {
        const c2w_state_info *s = &o->states[i];
        snprintf(o->next_names[i], sizeof o->next_names[i], "next_%s", s->name);
        o->state_bytes[i] = (size_t)(s->dims[0] * s->dims[1] * s->dims[2]) * o->es;
        o->state[i] = buffer(o->state_bytes[i], &failed);
        o->next[i] = buffer(o->state_bytes[i], &failed);
    }
    o->codes = buffer(N * (size_t)c->n_quantizers * sizeof *o->codes, &failed);
    o->cos = buffer(N * half * o->es, &failed);
    o->sin = buffer(N * half * o->es, &failed);
    o->mask = buffer(N * (size_t)c2w_graph_mask_cols(c, (int64_t)N) * o->es, &failed);
    o->pcm = buffer(N * (size_t)c->samples_per_frame * o->es, &failed);
    o->inv_freq = buffer(half * sizeof(float), &failed);
    o->cos32 = buffer(half * sizeof(float), &failed);
    o->sin32 = buffer(half * sizeof(float), &failed);
    for (int k = 0; staged && k < n_stages - 1; k++)
        o->act[k] = buffer(N * (size_t)(o->stages[k].cout * o->stages[k].out_rows) * o->es, &failed);
    if (failed) st = ember_fail(EMBER_ERR_NO_MEMORY, "onnx backend: cannot allocate the decoder's state");
    if (!st) {
        ek_rope_inv_freq(o->inv_freq, c->transformer.head_dim, c->transformer.rope_theta);
        st = ort_runtime_open_choice(rt, &o->rt);
    }
    /* exact dequantize-then-MatMul for QDQ weights (see spark_ort.c) */
    const int level = form == SPARK_ONNX_QDQ8 || form == SPARK_ONNX_QDQ4 ? ORT_OPTIMIZE_BASIC : ORT_OPTIMIZE_ALL;
    o->n_runs = n; /* the stages' bindings need the count */
    for (int i = 0; i < n; i++) {
        o->runs[i].frames = sizes[i];
        o->runs[i].stage = staged ? i : -1;
    }
    for (int i = 0; i < n && !st; i++) st = run_open(o, &o->runs[i], dir, threads, level);
    if (st) {
        c2w_ort_free(o);
        return ember_fail_prefix(st, "speech decoder graphs in %s", dir);
    }
    *out = o;
    return EMBER_OK;
}

ember_status c2w_ort_open(const c2w_config *c, const char *dir, const ort_choice *rt, int threads,
                          c2w_ort **out)
{
    return open_runs(c, dir, rt, threads, 0, out);
}

ember_status c2w_ort_open_stages(const c2w_config *c, const char *dir, const ort_choice *rt, int threads,
                                 c2w_ort **out)
{
    ember_status st = open_runs(c, dir, rt, threads, 1, out);
    if (!st && !*out) st = ember_fail(EMBER_ERR_FORMAT, "%s: no per-stage speech decoder graphs", dir);
    return st;
}

void c2w_ort_free(c2w_ort *o)
{
    if (!o) return;
    for (int i = 0; i < o->n_runs; i++) {
        dec_run *r = &o->runs[i];
        for (size_t k = 0; r->in && k < r->n_in; k++) ort_tensor_free(o->rt, r->in[k]);
        for (size_t k = 0; r->out && k < r->n_out; k++) ort_tensor_free(o->rt, r->out[k]);
        ort_graph_free(r->g);
        free(r->in);
        free(r->out);
        free(r->in_names);
        free(r->out_names);
    }
    ort_runtime_close(o->rt);
    for (int k = 0; k < C2W_MAX_STAGES; k++) free(o->act[k]);
    for (int i = 0; i < o->n_states; i++) {
        if (o->state) free(o->state[i]);
        if (o->next) free(o->next[i]);
    }
    void *bufs[] = {o->states, o->next_names, o->state, o->next, o->state_bytes, o->codes, o->cos, o->sin,
                    o->mask, o->pcm, o->inv_freq, o->cos32, o->sin32};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(o);
}

void c2w_ort_reset(c2w_ort *o)
{
    for (int i = 0; i < o->n_states; i++) memset(o->state[i], 0, o->state_bytes[i]);
    o->pos = 0;
}

int c2w_ort_sizes(const c2w_ort *o, int32_t *sizes, int max)
{
    int n = 0;
    for (int i = 0; i < (o->staged ? 1 : o->n_runs) && n < max; i++) sizes[n++] = o->runs[i].frames;
    return n;
}

int c2w_ort_stage_times(const c2w_ort *o, const char **names, double *ms, int max)
{
    int n = 0;
    for (int k = 0; o->staged && k < o->n_runs && n < max; k++, n++) {
        names[n] = o->stages[k].name;
        ms[n] = o->stage_ms[k];
    }
    return n;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One run of r on its N frames at the stream's position. */
static ember_status run_chunk(c2w_ort *o, const dec_run *r, const int32_t *codes, float *pcm)
{
    const c2w_config *c = &o->cfg;
    const int64_t N = r->frames, p = o->pos, W = c->sliding_window, S = W - 1,
                  cols = c2w_graph_mask_cols(c, N), half = c->transformer.head_dim / 2;
    memcpy(o->codes, codes, (size_t)(N * c->n_quantizers) * sizeof *codes);
    for (int64_t i = 0; i < N; i++) {
        ek_rope_cos_sin(o->cos32, o->sin32, o->inv_freq, c->transformer.head_dim, p + i);
        for (int64_t j = 0; j < half; j++) {
            put(o, o->cos, (size_t)(i * half + j), o->cos32[j]);
            put(o, o->sin, (size_t)(i * half + j), o->sin32[j]);
        }
        /* column j's position: ring slot j holds p - S + j, chunk column S + k holds p + k */
        for (int64_t j = 0; j < cols; j++) {
            const int64_t q = j < S ? p - S + j : p + (j - S);
            const int open = q >= 0 && q <= p + i && p + i - q < W;
            put(o, o->mask, (size_t)(i * cols + j), open ? 0.0f : SPARK_ONNX_MASK_OFF);
        }
    }
    ember_status st = EMBER_OK;
    for (int k = 0; k < (o->staged ? o->n_runs : 1) && !st; k++) {
        const dec_run *g = o->staged ? &o->runs[k] : r;
        const double t0 = o->staged ? cpu_ms() : 0;
        st = ort_graph_run(g->g, g->in_names, g->in, g->n_in, g->out_names, g->out, g->n_out);
        if (o->staged) o->stage_ms[k] += cpu_ms() - t0;
    }
    if (st) return st;
    for (int i = 0; i < o->n_states; i++) memcpy(o->state[i], o->next[i], o->state_bytes[i]);
    for (int64_t i = 0; i < N * c->samples_per_frame; i++) pcm[i] = get(o, o->pcm, (size_t)i);
    o->pos += N;
    return EMBER_OK;
}

ember_status c2w_ort_push(c2w_ort *o, const int32_t *codes, int32_t n_frames, float *pcm)
{
    const c2w_config *c = &o->cfg;
    int32_t done = 0;
    while (done < n_frames) {
        const dec_run *r = NULL;
        for (int i = 0; i < (o->staged ? 1 : o->n_runs) && !r; i++)
            if (o->runs[i].frames <= n_frames - done) r = &o->runs[i];
        if (!r)
            return ember_fail(EMBER_ERR_UNSUPPORTED, "speech decoder graphs: %d frames are left and the "
                              "smallest graph takes %d (export a 1-frame graph)", n_frames - done,
                              o->runs[o->n_runs - 1].frames);
        ember_status st = run_chunk(o, r, codes + (size_t)done * (size_t)c->n_quantizers,
                                    pcm + (size_t)done * (size_t)c->samples_per_frame);
        if (st) return st;
        done += r->frames;
    }
    return EMBER_OK;
}
