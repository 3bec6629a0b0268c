/* A Spark-X2.5 session: KV caches, scratch sized once at creation, and the
 * forward pass over a chunk of tokens (one token is the decode step). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/exec.h"
#include "kernels/ops.h"
#include "llm/attention.h"
#include "llm/kv.h"
#include "llm/spark.h"

struct ember_session {
    const ember_model *m;
    ember_session_params p;
    kv_cache kv;
    ek_exec exec;    /* the model's kernels on this session's thread pool */
    int64_t pos;     /* tokens held */
    int has_logits;

    /* Scratch, all from one allocation; rows are per token of a chunk. */
    float *x;        /* chunk x hidden: the fp32 residual stream */
    float *h;        /* chunk x hidden: normed input / projection output */
    float *qkv;      /* chunk x (heads + 2 kv_heads) * head_dim */
    float *gate;     /* chunk x heads */
    float *attn;     /* chunk x heads * head_dim */
    float *ffn_g, *ffn_u; /* chunk x intermediate */
    float *scores;   /* per worker: attention scratch (attn_scratch_floats) */
    size_t scores_stride;
    float *logits;   /* vocab */
    void *qbuf;      /* activations quantized for Q8_0/Q4_0 weights */
    float *inv_freq[SPARK_LAYER_TYPES];       /* rot/2 */
    float *cos_t[SPARK_LAYER_TYPES], *sin_t[SPARK_LAYER_TYPES]; /* chunk x rot/2 */
    float *scratch;
};

static et_dtype kv_dtype(ember_type t)
{
    return t == EMBER_TYPE_F16 ? ET_F16 : t == EMBER_TYPE_Q8_0 ? ET_Q8_0 : t == EMBER_TYPE_F32 ? ET_F32 : ET_DTYPE_COUNT;
}

ember_session_params ember_session_default_params(void)
{
    ember_session_params p;
    memset(&p, 0, sizeof p);
    p.max_context = 4096;
    p.prefill_chunk = 64;
    p.n_threads = 0;
    p.kv_type = EMBER_TYPE_F32;
    return p;
}

static ember_status alloc_scratch(ember_session *s)
{
    const spark_config *c = &s->m->cfg;
    const size_t n = (size_t)s->p.prefill_chunk;
    const size_t qkv_dim = (size_t)(c->n_heads + 2 * c->n_kv_heads) * (size_t)c->head_dim;
    const size_t q_dim = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t rope = 0;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        rope += (size_t)c->rope[t].rot_dims / 2 * (1 + 2 * n);

    /* the widest matrix input: hidden, heads*head_dim or intermediate */
    size_t max_cols = (size_t)c->hidden > q_dim ? (size_t)c->hidden : q_dim;
    if ((size_t)c->intermediate > max_cols) max_cols = (size_t)c->intermediate;
    size_t qbuf_floats = (ek_exec_qbuf_bytes((int)n, (int64_t)max_cols) + sizeof(float) - 1) /
                         sizeof(float);
    s->scores_stride =
        (attn_scratch_floats(c->n_heads, c->n_kv_heads, c->head_dim, (int32_t)n) + 15) &
        ~(size_t)15;
    size_t sizes[] = {n * (size_t)c->hidden, n * (size_t)c->hidden, n * qkv_dim,
                      n * (size_t)c->n_heads, n * q_dim, n * (size_t)c->intermediate,
                      n * (size_t)c->intermediate,
                      s->scores_stride * (size_t)pool_size(s->exec.pool), (size_t)c->vocab,
                      qbuf_floats};
    float *qbuf;
    float **dst[] = {&s->x, &s->h, &s->qkv, &s->gate, &s->attn, &s->ffn_g, &s->ffn_u,
                     &s->scores, &s->logits, &qbuf};
    size_t total = rope;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) total += sizes[i];
    s->scratch = malloc(total * sizeof(float));
    if (!s->scratch)
        return ember_fail(EMBER_ERR_NO_MEMORY, "session scratch: cannot allocate %zu bytes",
                          total * sizeof(float));
    float *p = s->scratch;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = p;
        p += sizes[i];
    }
    s->qbuf = qbuf;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        size_t half = (size_t)c->rope[t].rot_dims / 2;
        s->inv_freq[t] = p;
        p += half;
        s->cos_t[t] = p;
        p += half * n;
        s->sin_t[t] = p;
        p += half * n;
        ek_rope_inv_freq(s->inv_freq[t], c->rope[t].rot_dims, c->rope[t].theta);
    }
    return EMBER_OK;
}

ember_status ember_session_create(const ember_model *model, const ember_session_params *params,
                                  ember_session **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_create: out is NULL");
    *out = NULL;
    if (!model) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_create: model is NULL");
    ember_session_params p = params ? *params : ember_session_default_params();
    if (p.max_context < 1 || p.max_context > model->cfg.max_positions)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "max_context %d must be in [1, %d] (max_position_embeddings)",
                          p.max_context, model->cfg.max_positions);
    if (p.prefill_chunk < 1 || p.prefill_chunk > 65536)
        return ember_fail(EMBER_ERR_INVALID_ARG, "prefill_chunk %d must be in [1, 65536]",
                          p.prefill_chunk);
    if (p.n_threads < 0 || p.n_threads > 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "n_threads %d must be in [0, 1024]", p.n_threads);
    if (p.n_threads == 0) p.n_threads = pool_cpu_count();

    ember_session *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a session");
    s->m = model;
    s->p = p;
    s->exec.kernels = model->kernels;
    ember_status st = p.n_threads > 1 ? pool_create(p.n_threads, &s->exec.pool) : EMBER_OK;
    if (!st) st = kv_cache_init(&s->kv, &model->cfg, p.max_context, kv_dtype(p.kv_type));
    if (!st) st = alloc_scratch(s);
    if (st) {
        ember_session_free(s);
        return st;
    }
    *out = s;
    return EMBER_OK;
}

void ember_session_free(ember_session *session)
{
    if (!session) return;
    pool_free(session->exec.pool);
    kv_cache_free(&session->kv);
    free(session->scratch);
    free(session);
}

static void apply_gate(const spark_config *c, float *gate, int32_t n)
{
    for (int32_t i = 0; i < n * c->n_heads; i++)
        gate[i] = c->gate == SPARK_GATE_SILU ? ek_silu(gate[i]) : ek_sigmoid(gate[i]);
}

/* Attention block of layer li for n tokens at positions p0..: x += attn(norm(x)). */
static void attention_block(ember_session *s, int32_t li, int64_t p0, int32_t n)
{
    const spark_config *c = &s->m->cfg;
    const spark_layer *W = &s->m->layers[li];
    kv_layer *L = &s->kv.layers[li];
    const int type = c->layer_type[li];
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t q_dim = (int64_t)H * d, kv_dim = (int64_t)KV * d;
    const int64_t qkv_dim = q_dim + 2 * kv_dim;
    const int32_t half = c->rope[type].rot_dims / 2;
    float *q = s->qkv, *k = s->qkv + q_dim, *v = s->qkv + q_dim + kv_dim;

    for (int32_t t = 0; t < n; t++)
        ek_rmsnorm(s->h + (int64_t)t * c->hidden, s->x + (int64_t)t * c->hidden, W->attn_norm,
                   c->hidden, c->rms_eps);
    ek_matmul(&s->exec, q, qkv_dim, s->h, n, &W->wq, W->bq, s->qbuf);
    ek_matmul(&s->exec, k, qkv_dim, s->h, n, &W->wk, W->bk, s->qbuf);
    ek_matmul(&s->exec, v, qkv_dim, s->h, n, &W->wv, W->bv, s->qbuf);
    if (c->gate != SPARK_GATE_NONE) {
        ek_matmul(&s->exec, s->gate, H, s->h, n, &W->wg, W->bg, s->qbuf);
        apply_gate(c, s->gate, n);
    }
    for (int32_t t = 0; t < n; t++) {
        const float *ct = s->cos_t[type] + (int64_t)t * half, *st = s->sin_t[type] + (int64_t)t * half;
        for (int32_t hh = 0; hh < H; hh++)
            ek_rope_apply(q + t * qkv_dim + (int64_t)hh * d, ct, st, 2 * half);
        for (int32_t g = 0; g < KV; g++)
            ek_rope_apply(k + t * qkv_dim + (int64_t)g * d, ct, st, 2 * half);
    }

    const attn_shape shape = {s->exec.kernels, H, KV, d, qkv_dim, qkv_dim, q_dim};
    attn_run(s->exec.pool, L, &shape, p0, n, q, k, v, s->attn, s->scores, s->scores_stride);
    kv_store(L, KV, d, p0, n, k, v, qkv_dim);

    if (c->gate != SPARK_GATE_NONE)
        for (int32_t t = 0; t < n; t++)
            for (int32_t hh = 0; hh < H; hh++) {
                float g = s->gate[t * H + hh], *o = s->attn + t * q_dim + (int64_t)hh * d;
                for (int32_t j = 0; j < d; j++) o[j] *= g;
            }
    ek_matmul(&s->exec, s->h, c->hidden, s->attn, n, &W->wo, W->bo, s->qbuf);
    for (int64_t i = 0; i < (int64_t)n * c->hidden; i++) s->x[i] += s->h[i];
}

typedef struct geglu_task {
    float *g;
    const float *u;
    int64_t n;
    ek_glu_fn glu;
    ek_glu_act act;
} geglu_task;

/* g = gelu(g) * u, split over the workers: even vectorized, the exact erf
 * GELU is costly enough to matter at decode. */
static void run_geglu(void *p, int part, int n_parts, int worker)
{
    const geglu_task *t = p;
    int64_t a, b;
    (void)worker;
    pool_split(t->n, 64, part, n_parts, &a, &b);
    if (b > a) t->glu(t->g + a, t->u + a, b - a, t->act);
}

/* GeGLU MLP of layer li: x += down(gelu(gate(norm(x))) * up(norm(x))). */
static void mlp_block(ember_session *s, int32_t li, int32_t n)
{
    const spark_config *c = &s->m->cfg;
    const spark_layer *W = &s->m->layers[li];
    const int64_t inter = c->intermediate;

    for (int32_t t = 0; t < n; t++)
        ek_rmsnorm(s->h + (int64_t)t * c->hidden, s->x + (int64_t)t * c->hidden, W->mlp_norm,
                   c->hidden, c->rms_eps);
    ek_matmul(&s->exec, s->ffn_g, inter, s->h, n, &W->w_gate, W->b_gate, s->qbuf);
    ek_matmul(&s->exec, s->ffn_u, inter, s->h, n, &W->w_up, W->b_up, s->qbuf);
    geglu_task task = {s->ffn_g, s->ffn_u, (int64_t)n * inter, s->exec.kernels->glu,
                       s->m->params.gelu == EMBER_GELU_TANH ? EK_GLU_GELU_TANH : EK_GLU_GELU_ERF};
    pool_run(s->exec.pool, run_geglu, &task, 4 * pool_size(s->exec.pool));
    ek_matmul(&s->exec, s->h, c->hidden, s->ffn_g, n, &W->w_down, W->b_down, s->qbuf);
    for (int64_t i = 0; i < (int64_t)n * c->hidden; i++) s->x[i] += s->h[i];
}

/* Runs n <= prefill_chunk tokens through every layer; with want_logits, the
 * last token's logits land in s->logits. */
static void forward_chunk(ember_session *s, const int32_t *ids, int32_t n, int want_logits)
{
    const spark_config *c = &s->m->cfg;
    const int64_t p0 = s->pos;
    for (int32_t t = 0; t < n; t++)
        ek_row_to_f32(s->x + (int64_t)t * c->hidden, &s->m->embed, ids[t]);
    for (int type = 0; type < SPARK_LAYER_TYPES; type++) {
        int32_t half = c->rope[type].rot_dims / 2;
        for (int32_t t = 0; t < n; t++)
            ek_rope_cos_sin(s->cos_t[type] + (int64_t)t * half, s->sin_t[type] + (int64_t)t * half,
                            s->inv_freq[type], c->rope[type].rot_dims, p0 + t);
    }
    for (int32_t li = 0; li < c->n_layers; li++) {
        attention_block(s, li, p0, n);
        mlp_block(s, li, n);
    }
    s->pos += n;
    if (want_logits) {
        ek_rmsnorm(s->h, s->x + (int64_t)(n - 1) * c->hidden, s->m->final_norm, c->hidden,
                   c->rms_eps);
        ek_matmul(&s->exec, s->logits, c->vocab, s->h, 1, &s->m->lm_head, NULL, s->qbuf);
        s->has_logits = 1;
    }
}

ember_status ember_session_prefill(ember_session *s, const int32_t *ids, size_t n_ids)
{
    if (!s || (!ids && n_ids))
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_prefill: NULL argument");
    if (n_ids == 0) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_prefill: no tokens");
    /* Validate everything before touching the caches: a rejected call leaves
     * the session as it was. */
    if (n_ids > (size_t)(s->p.max_context - s->pos))
        return ember_fail(EMBER_ERR_CONTEXT_FULL,
                          "%zu tokens do not fit: the session holds %lld of max_context %d",
                          n_ids, (long long)s->pos, s->p.max_context);
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= s->m->cfg.vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "token %zu: id %d is outside [0, %d)", i,
                              ids[i], s->m->cfg.vocab);
    for (size_t done = 0; done < n_ids;) {
        size_t n = n_ids - done < (size_t)s->p.prefill_chunk ? n_ids - done
                                                             : (size_t)s->p.prefill_chunk;
        forward_chunk(s, ids + done, (int32_t)n, done + n == n_ids);
        done += n;
    }
    return EMBER_OK;
}

ember_status ember_session_decode(ember_session *s, int32_t id)
{
    return ember_session_prefill(s, &id, 1);
}

const float *ember_session_logits(const ember_session *s)
{
    return s && s->has_logits ? s->logits : NULL;
}

int32_t ember_session_position(const ember_session *s) { return s ? (int32_t)s->pos : 0; }

void ember_session_reset(ember_session *s)
{
    if (!s) return;
    s->pos = 0;
    s->has_logits = 0;
}

size_t ember_session_cache_bytes(const ember_session *s) { return s ? s->kv.bytes : 0; }

size_t ember_session_cache_read_bytes(const ember_session *s)
{
    if (!s) return 0;
    size_t total = 0;
    for (int32_t i = 0; i < s->kv.n_layers; i++) {
        const kv_layer *L = &s->kv.layers[i];
        int64_t visible = L->window && s->pos > L->capacity ? L->capacity : s->pos;
        total += 2 * (size_t)visible * (size_t)s->kv.kv_heads * L->row_bytes;
    }
    return total;
}

ember_status ember_session_bench_fill(ember_session *s, int32_t n_tokens)
{
    if (!s || n_tokens < 0 || n_tokens > s->p.max_context)
        return ember_fail(EMBER_ERR_INVALID_ARG, "bench_fill: %d tokens do not fit max_context",
                          n_tokens);
    /* Rows of unit-scale values, written through the cache's own format so
     * a quantized cache holds valid blocks. */
    const int32_t d = s->kv.head_dim, kv = s->kv.kv_heads;
    float *row = s->qkv; /* scratch that holds at least kv_heads x head_dim */
    uint32_t state = 12345u;
    for (int32_t t = 0; t < (int32_t)((size_t)kv * d); t++) {
        state = state * 1664525u + 1013904223u;
        row[t] = (float)((state >> 9) & 0xffff) / 32768.0f - 1.0f;
    }
    for (int32_t li = 0; li < s->kv.n_layers; li++) {
        kv_layer *L = &s->kv.layers[li];
        int64_t first = L->window && n_tokens > L->capacity ? n_tokens - L->capacity : 0;
        for (int64_t p = first; p < n_tokens; p++)
            kv_store(L, kv, d, p, 1, row, row, 0);
    }
    s->pos = n_tokens;
    s->has_logits = 0;
    return EMBER_OK;
}
