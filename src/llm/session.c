/* A Spark-X2.5 session: KV caches, scratch sized once at creation, and the
 * forward pass over a chunk of tokens (one token is the decode step). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/stats.h"
#include "base/status.h"
#include "kernels/exec.h"
#include "kernels/ops.h"
#include "nn/attention.h"
#include "nn/kv.h"
#include "llm/session_internal.h"
#include "llm/spark.h"
#include "onnx/backend.h"
#include "onnx/spark_ort.h"

et_dtype session_kv_dtype(ember_type t)
{
    return t == EMBER_TYPE_F16 ? ET_F16 : t == EMBER_TYPE_Q8_0 ? ET_Q8_0 : t == EMBER_TYPE_F32 ? ET_F32 : ET_DTYPE_COUNT;
}

ember_session_params ember_session_default_params(void)
{
    ember_session_params p;
    memset(&p, 0, sizeof p);
    p.max_context = 4096;
    p.prefill_chunk = 128;
    p.n_threads = 0;
    p.kv_type = EMBER_TYPE_F32;
    return p;
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
    /* on the onnx backend ORT's own threads run the step */
    ember_status st = p.n_threads > 1 && !model->onnx ? pool_create(p.n_threads, &s->exec.pool) : EMBER_OK;
    kv_shape shape;
    spark_kv_shape(&model->cfg, &shape);
    if (!st && model->onnx) {
        /* the exported graph holds its own caches: positions up to its bucket */
        if (p.max_context > model->onnx->context) s->p.max_context = p.max_context = model->onnx->context;
        const ort_choice rt = onnx_backend_choice(model->onnx);
        st = spark_ort_open(&model->cfg, model->onnx->dir, &rt, p.n_threads, &s->ort);
    }
    if (!st) st = kv_cache_init(&s->kv, &shape, s->ort ? 1 : p.max_context, session_kv_dtype(p.kv_type));
    if (!st) st = llm_work_init(&s->work, model, &s->exec, p.prefill_chunk);
    if (!st && !(s->logits = malloc((size_t)model->cfg.vocab * sizeof *s->logits)))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "session logits: cannot allocate %zu bytes",
                        (size_t)model->cfg.vocab * sizeof *s->logits);
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
    if (session->kept_free) session->kept_free(session->kept);
    llm_session_drop_marks(session, -1);
    pool_free(session->exec.pool);
    spark_ort_free(session->ort);
    kv_cache_free(&session->kv);
    llm_work_free(&session->work);
    free(session->logits);
    free(session);
}

void session_forward_chunk(ember_session *s, llm_work *w, const int32_t *ids, int32_t n,
                          int want_logits)
{
    const spark_config *c = &s->m->cfg;
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t qkv_dim = llm_qkv_stride(c), q_dim = (int64_t)H * d;
    const float *q = w->qkv, *k = w->qkv + q_dim, *v = w->qkv + q_dim + (int64_t)KV * d;
    const attn_shape shape = {w->exec.kernels, H, KV, d, qkv_dim, qkv_dim, q_dim};
    const int64_t p0 = s->pos;
    llm_embed(w, ids, p0, NULL, n);
    /* decode steps only: the time of each layer type (a branch when off) */
    ember_stats *st = n == 1 ? s->stats : NULL;
    double by_type[2] = {0, 0}, t = ember_stats_start(st);
    for (int32_t li = 0; li < c->n_layers; li++) {
        kv_layer *L = &s->kv.layers[li];
        llm_attn_in(w, li, n);
        attn_run(w->exec.pool, L, &shape, p0, n, q, k, v, w->attn, w->scores, w->scores_stride);
        kv_store(L, KV, d, p0, n, k, v, qkv_dim);
        llm_attn_out(w, li, n);
        llm_mlp(w, li, n);
        if (st) {
            double now = ember_clock_ms();
            by_type[c->layer_type[li] == SPARK_FULL] += now - t;
            t = now;
        }
    }
    if (st) {
        ember_stats_record(st, EMBER_STAT_DECODE_SLIDING, by_type[0]);
        ember_stats_record(st, EMBER_STAT_DECODE_FULL, by_type[1]);
    }
    s->pos += n;
    if (want_logits) {
        llm_logits(w, n - 1, 1, s->logits);
        s->has_logits = 1;
    }
}

void session_forward(ember_session *s, llm_work *w, const int32_t *ids, size_t n_ids)
{
    for (size_t done = 0; done < n_ids;) {
        size_t n = n_ids - done < (size_t)w->rows ? n_ids - done : (size_t)w->rows;
        session_forward_chunk(s, w, ids + done, (int32_t)n, done + n == n_ids);
        done += n;
    }
}

/* The onnx backend: whole chunks of the prompt through the prefill graph
 * while one fits (its static shape takes exactly N tokens), the rest one
 * decode step per token; the last token's logits kept. Padding a short
 * tail into a chunk would cost a full chunk's compute for a few rows. */
static ember_status ort_forward(ember_session *s, const int32_t *ids, size_t n_ids)
{
    const float *logits = NULL;
    const size_t chunk = (size_t)spark_ort_chunk_tokens(s->ort);
    const size_t vocab = (size_t)s->m->cfg.vocab;
    size_t last_row = 0;
    for (size_t i = 0; i < n_ids;) {
        const int whole = chunk && n_ids - i >= chunk &&
                          spark_ort_position(s->ort) + chunk <= (size_t)spark_ort_context(s->ort);
        ember_status st = whole ? spark_ort_chunk(s->ort, ids + i, &logits)
                                : spark_ort_step(s->ort, ids[i], &logits);
        if (st) {
            s->has_logits = 0;
            return st;
        }
        const size_t n = whole ? chunk : 1;
        last_row = n - 1;
        s->pos += n;
        i += n;
    }
    memcpy(s->logits, logits + last_row * vocab, vocab * sizeof *s->logits);
    s->has_logits = 1;
    return EMBER_OK;
}

ember_status session_check_input(const ember_session *s, const int32_t *ids, size_t n_ids,
                                 const char *what)
{
    if (!s || (!ids && n_ids))
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: NULL argument", what);
    if (n_ids == 0) return ember_fail(EMBER_ERR_INVALID_ARG, "%s: no tokens", what);
    if (n_ids > (size_t)(s->p.max_context - s->pos))
        return ember_fail(EMBER_ERR_CONTEXT_FULL,
                          "%zu tokens do not fit: the session holds %lld of max_context %d",
                          n_ids, (long long)s->pos, s->p.max_context);
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= s->m->cfg.vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "token %zu: id %d is outside [0, %d)", i,
                              ids[i], s->m->cfg.vocab);
    return EMBER_OK;
}

ember_status ember_session_prefill(ember_session *s, const int32_t *ids, size_t n_ids)
{
    /* Validate everything before touching the caches: a rejected call leaves
     * the session as it was. */
    ember_status st = session_check_input(s, ids, n_ids, "ember_session_prefill");
    if (st) return st;
    if (s->ort) return ort_forward(s, ids, n_ids);
    session_forward(s, &s->work, ids, n_ids);
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
    llm_session_drop_marks(s, -1);
    if (s->ort) spark_ort_reset(s->ort);
}

size_t ember_session_cache_bytes(const ember_session *s) { return s ? s->kv.bytes : 0; }

void ember_session_set_stats(ember_session *s, ember_stats *stats)
{
    if (s) s->stats = stats;
}

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
    if (s->ort) return ember_fail(EMBER_ERR_UNSUPPORTED, "bench_fill: not with the onnx backend");
    /* Rows of unit-scale values, written through the cache's own format so
     * a quantized cache holds valid blocks. */
    const int32_t d = s->kv.head_dim, kv = s->kv.kv_heads;
    float *row = s->work.qkv; /* scratch that holds at least kv_heads x head_dim */
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
    llm_session_drop_marks(s, -1);
    return EMBER_OK;
}
