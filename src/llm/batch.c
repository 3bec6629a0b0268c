#include "llm/batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "nn/attention.h"
#include "llm/forward.h"
#include "llm/session_internal.h"

/* Prefill runs in chunks of at least this many rows, like a session's. */
#define BATCH_PREFILL_ROWS 64

struct llm_batch {
    const ember_model *m;
    ek_exec exec;
    int32_t max_rows;          /* sessions per step */
    llm_work work;             /* work.rows: rows per step, all sessions' together */
    int64_t *pos;              /* max_rows: each session's position */
    int32_t *first, *count;    /* max_rows: each session's first row and row count */
    int64_t *row_pos;          /* work.rows: each row's position */
    kv_layer **layer;          /* max_rows: session's cache layer of the current layer */
    float *logits;             /* work.rows x vocab */
    ember_stats *stats;        /* decode time by layer type; NULL: off */
};

void llm_batch_set_stats(llm_batch *b, ember_stats *stats)
{
    if (b) b->stats = stats;
}

ember_status llm_batch_create(const ember_model *model, int32_t max_rows, int n_threads,
                              llm_batch **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_create: out is NULL");
    *out = NULL;
    if (!model) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_create: model is NULL");
    if (max_rows < 1 || max_rows > 4096)
        return ember_fail(EMBER_ERR_INVALID_ARG, "batch rows %d must be in [1, 4096]", max_rows);
    if (model->onnx)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "batched decoding is not available with the onnx backend");
    if (n_threads < 0 || n_threads > 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "n_threads %d must be in [0, 1024]", n_threads);
    if (n_threads == 0) n_threads = pool_cpu_count();
    llm_batch *b = calloc(1, sizeof *b);
    if (!b) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a batch");
    b->m = model;
    b->max_rows = max_rows;
    b->exec.kernels = model->kernels;
    const size_t vocab = (size_t)model->cfg.vocab;
    ember_status st = n_threads > 1 ? pool_create(n_threads, &b->exec.pool) : EMBER_OK;
    if (!st)
        st = llm_work_init(&b->work, model, &b->exec,
                           max_rows > BATCH_PREFILL_ROWS ? max_rows : BATCH_PREFILL_ROWS);
    if (!st) {
        const size_t rows = (size_t)b->work.rows;
        b->pos = malloc((size_t)max_rows * sizeof *b->pos);
        b->first = malloc((size_t)max_rows * sizeof *b->first);
        b->count = malloc((size_t)max_rows * sizeof *b->count);
        b->row_pos = malloc(rows * sizeof *b->row_pos);
        b->layer = malloc((size_t)max_rows * sizeof *b->layer);
        b->logits = malloc(rows * vocab * sizeof *b->logits);
        if (!b->pos || !b->first || !b->count || !b->row_pos || !b->layer || !b->logits)
            st = ember_fail(EMBER_ERR_NO_MEMORY, "batch of %d rows: out of memory", max_rows);
    }
    if (st) {
        llm_batch_free(b);
        return st;
    }
    *out = b;
    return EMBER_OK;
}

void llm_batch_free(llm_batch *b)
{
    if (!b) return;
    llm_work_free(&b->work);
    pool_free(b->exec.pool);
    free(b->pos);
    free(b->first);
    free(b->count);
    free(b->row_pos);
    free(b->layer);
    free(b->logits);
    free(b);
}

typedef struct row_attn_task {
    llm_batch *b;
    const attn_shape *shape;
    int32_t kv_heads;
} row_attn_task;

/* Part p is kv head p % kv_heads of session p / kv_heads: its rows as one
 * chunk against that session's own cache. */
static void run_row_attention(void *ctx, int part, int n_parts, int worker)
{
    const row_attn_task *t = ctx;
    llm_work *w = &t->b->work;
    const int32_t i = part / t->kv_heads, g = part % t->kv_heads;
    const attn_shape *s = t->shape;
    const int64_t q_dim = (int64_t)s->n_heads * s->head_dim;
    const int64_t kv_dim = (int64_t)s->n_kv_heads * s->head_dim;
    const float *q = w->qkv + t->b->first[i] * s->q_stride;
    (void)n_parts;
    attn_chunk(t->b->layer[i], s, g, g + 1, t->b->pos[i], t->b->count[i], q, q + q_dim, q + q_dim + kv_dim,
               w->attn + t->b->first[i] * s->out_stride, w->scores + (size_t)worker * w->scores_stride);
}

static ember_status check_run(const llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                              const int32_t *counts, int32_t n)
{
    if (!b || !sessions || !ids)
        return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_decode: NULL argument");
    if (n < 1 || n > b->max_rows)
        return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_decode: %d rows, the batch takes 1..%d",
                          n, b->max_rows);
    int64_t rows = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t c = counts ? counts[i] : 1;
        if (!sessions[i] || sessions[i]->m != b->m)
            return ember_fail(EMBER_ERR_INVALID_ARG,
                              "llm_batch_decode: row %d has no session of the batch's model", i);
        for (int32_t j = 0; j < i; j++)
            if (sessions[j] == sessions[i])
                return ember_fail(EMBER_ERR_INVALID_ARG,
                                  "llm_batch_decode: rows %d and %d are the same session", j, i);
        if (c < 1 || (rows += c) > b->work.rows)
            return ember_fail(EMBER_ERR_INVALID_ARG,
                              "llm_batch_run: session %d's %d rows (1 or more, %d in all at most)", i, c,
                              b->work.rows);
        ember_status st = session_check_input(sessions[i], ids + rows - c, (size_t)c, "llm_batch_decode");
        if (st) return ember_fail_prefix(st, "row %d", i);
    }
    return EMBER_OK;
}

/* llm_batch_decode and llm_batch_run: counts NULL is one row each. */
static ember_status run(llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                        const int32_t *counts, int32_t n, float *const *rows_out)
{
    ember_status st = check_run(b, sessions, ids, counts, n);
    if (st) return st;
    const spark_config *c = &b->m->cfg;
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t qkv_dim = llm_qkv_stride(c), q_dim = (int64_t)H * d;
    const attn_shape shape = {b->exec.kernels, H, KV, d, qkv_dim, qkv_dim, q_dim};
    llm_work *w = &b->work;
    int32_t rows = 0;
    for (int32_t i = 0; i < n; i++) {
        b->pos[i] = sessions[i]->pos;
        b->first[i] = rows;
        b->count[i] = counts ? counts[i] : 1;
        for (int32_t r = 0; r < b->count[i]; r++) b->row_pos[rows++] = b->pos[i] + r;
    }
    llm_embed(w, ids, 0, b->row_pos, rows);
    double by_type[2] = {0, 0}, t = ember_stats_start(b->stats);
    for (int32_t li = 0; li < c->n_layers; li++) {
        llm_attn_in(w, li, rows);
        for (int32_t i = 0; i < n; i++) b->layer[i] = &sessions[i]->kv.layers[li];
        row_attn_task task = {b, &shape, KV};
        pool_run(b->exec.pool, run_row_attention, &task, n * KV);
        for (int32_t i = 0; i < n; i++) {
            const float *k = w->qkv + b->first[i] * qkv_dim + q_dim;
            kv_store(b->layer[i], KV, d, b->pos[i], b->count[i], k, k + (int64_t)KV * d, qkv_dim);
        }
        llm_attn_out(w, li, rows);
        llm_mlp(w, li, rows);
        if (b->stats) {
            double now = ember_clock_ms();
            by_type[c->layer_type[li] == SPARK_FULL] += now - t;
            t = now;
        }
    }
    if (b->stats) {
        ember_stats_record(b->stats, EMBER_STAT_DECODE_SLIDING, by_type[0]);
        ember_stats_record(b->stats, EMBER_STAT_DECODE_FULL, by_type[1]);
    }
    llm_logits(w, 0, rows, b->logits); /* lm_head read once for every row */
    const size_t vocab = (size_t)c->vocab;
    for (int32_t i = 0; i < n; i++) {
        const float *mine = b->logits + (size_t)b->first[i] * vocab;
        if (rows_out && rows_out[i]) {
            memcpy(rows_out[i], mine, (size_t)b->count[i] * vocab * sizeof(float));
        } else {
            memcpy(sessions[i]->logits, mine + (size_t)(b->count[i] - 1) * vocab, vocab * sizeof(float));
            sessions[i]->has_logits = 1;
        }
        sessions[i]->pos += b->count[i];
    }
    return EMBER_OK;
}

ember_status llm_batch_decode(llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                              int32_t n)
{
    return run(b, sessions, ids, NULL, n, NULL);
}

ember_status llm_batch_run(llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                           const int32_t *counts, int32_t n, float *const *rows_out)
{
    if (!counts) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_run: counts is NULL");
    return run(b, sessions, ids, counts, n, rows_out);
}

int32_t llm_batch_max_total_rows(const llm_batch *b) { return b->work.rows; }

const ek_exec *llm_batch_exec(const llm_batch *b) { return &b->exec; }

ember_status llm_batch_prefill(llm_batch *b, ember_session *s, const int32_t *ids, size_t n_ids)
{
    if (!b || !s || s->m != b->m)
        return ember_fail(EMBER_ERR_INVALID_ARG, "llm_batch_prefill: no session of the batch's model");
    ember_status st = session_check_input(s, ids, n_ids, "llm_batch_prefill");
    if (st) return st;
    session_forward(s, &b->work, ids, n_ids);
    return EMBER_OK;
}

size_t llm_session_kv_bytes(const ember_model *model, int32_t max_context, ember_type kv_type)
{
    et_dtype t = session_kv_dtype(kv_type);
    kv_shape shape;
    spark_kv_shape(&model->cfg, &shape);
    return t == ET_DTYPE_COUNT ? 0 : kv_cache_bytes_for(&shape, max_context, t);
}
