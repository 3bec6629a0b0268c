#include "llm/forward.h"

#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/ops.h"
#include "nn/attention.h"

ember_status llm_work_init(llm_work *w, const ember_model *m, const ek_exec *exec, int32_t rows)
{
    memset(w, 0, sizeof *w);
    const spark_config *c = &m->cfg;
    const size_t n = (size_t)rows;
    const size_t qkv_dim = (size_t)llm_qkv_stride(c);
    const size_t q_dim = (size_t)c->n_heads * (size_t)c->head_dim;
    w->m = m;
    w->exec = *exec;
    w->rows = rows;
    size_t rope = 0;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++)
        rope += (size_t)c->rope[t].rot_dims / 2 * (1 + 2 * n);

    /* the widest matrix input: hidden, heads*head_dim or intermediate */
    size_t max_cols = (size_t)c->hidden > q_dim ? (size_t)c->hidden : q_dim;
    if ((size_t)c->intermediate > max_cols) max_cols = (size_t)c->intermediate;
    size_t qbuf_floats = (ek_exec_qbuf_bytes((int)n, (int64_t)max_cols) + sizeof(float) - 1) /
                         sizeof(float);
    w->scores_stride =
        (attn_scratch_floats(c->n_heads, c->n_kv_heads, c->head_dim, (int32_t)n) + 15) &
        ~(size_t)15;
    size_t sizes[] = {n * (size_t)c->hidden, n * (size_t)c->hidden, n * qkv_dim,
                      n * (size_t)c->n_heads, n * q_dim, n * (size_t)c->intermediate,
                      n * (size_t)c->intermediate,
                      w->scores_stride * (size_t)pool_size(w->exec.pool), qbuf_floats};
    float *qbuf;
    float **dst[] = {&w->x, &w->h, &w->qkv, &w->gate, &w->attn, &w->ffn_g, &w->ffn_u,
                     &w->scores, &qbuf};
    size_t total = rope;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) total += sizes[i];
    w->block = malloc(total * sizeof(float));
    if (!w->block)
        return ember_fail(EMBER_ERR_NO_MEMORY, "forward scratch: cannot allocate %zu bytes",
                          total * sizeof(float));
    float *p = w->block;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = p;
        p += sizes[i];
    }
    w->qbuf = qbuf;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        size_t half = (size_t)c->rope[t].rot_dims / 2;
        w->inv_freq[t] = p;
        p += half;
        w->cos_t[t] = p;
        p += half * n;
        w->sin_t[t] = p;
        p += half * n;
        ek_rope_inv_freq(w->inv_freq[t], c->rope[t].rot_dims, c->rope[t].theta);
    }
    return EMBER_OK;
}

void llm_work_free(llm_work *w)
{
    free(w->block);
    memset(w, 0, sizeof *w);
}

int64_t llm_qkv_stride(const spark_config *c)
{
    return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
}

void llm_embed(llm_work *w, const int32_t *ids, int64_t p0, const int64_t *pos, int32_t n)
{
    const spark_config *c = &w->m->cfg;
    for (int32_t t = 0; t < n; t++)
        ek_row_to_f32(w->x + (int64_t)t * c->hidden, &w->m->embed, ids[t]);
    for (int type = 0; type < SPARK_LAYER_TYPES; type++) {
        int32_t half = c->rope[type].rot_dims / 2;
        for (int32_t t = 0; t < n; t++)
            ek_rope_cos_sin(w->cos_t[type] + (int64_t)t * half, w->sin_t[type] + (int64_t)t * half,
                            w->inv_freq[type], c->rope[type].rot_dims, pos ? pos[t] : p0 + t);
    }
}

/* ---- per-row steps, split over the pool for a chunk --------------------
 * Norms, RoPE, the head gate and the residual adds treat every row alike.
 * Left on the calling thread they were ~9% of a 512-token prefill's wall
 * time at the 1.7B shape (perf: the other worker waits through them); a
 * chunk splits them by rows instead, a decode step's few rows stay inline
 * (a pool run costs more than they do). Rows are independent, so the
 * result is the same bit for bit whoever computes a row. */
typedef void (*rows_fn)(llm_work *w, int32_t li, int32_t t0, int32_t t1);

typedef struct rows_task {
    llm_work *w;
    int32_t li, n;
    rows_fn fn;
} rows_task;

enum { ROWS_SPLIT_MIN = 16 }; /* rows from which a step is split */

static void run_rows_part(void *p, int part, int n_parts, int worker)
{
    const rows_task *t = p;
    int64_t a, b;
    (void)worker;
    pool_split(t->n, 1, part, n_parts, &a, &b);
    if (b > a) t->fn(t->w, t->li, (int32_t)a, (int32_t)b);
}

static void for_rows(llm_work *w, int32_t li, int32_t n, rows_fn fn)
{
    if (n < ROWS_SPLIT_MIN || pool_size(w->exec.pool) < 2) {
        fn(w, li, 0, n);
        return;
    }
    rows_task task = {w, li, n, fn};
    pool_run(w->exec.pool, run_rows_part, &task, 2 * pool_size(w->exec.pool));
}

static void norm_rows(llm_work *w, const float *weight, int32_t t0, int32_t t1)
{
    const spark_config *c = &w->m->cfg;
    for (int32_t t = t0; t < t1; t++)
        ek_rmsnorm(w->h + (int64_t)t * c->hidden, w->x + (int64_t)t * c->hidden, weight, c->hidden,
                   c->rms_eps);
}

static void attn_norm_rows(llm_work *w, int32_t li, int32_t t0, int32_t t1)
{
    norm_rows(w, w->m->layers[li].attn_norm, t0, t1);
}

static void mlp_norm_rows(llm_work *w, int32_t li, int32_t t0, int32_t t1)
{
    norm_rows(w, w->m->layers[li].mlp_norm, t0, t1);
}

/* x += h: a block's output joins the residual stream */
static void residual_rows(llm_work *w, int32_t li, int32_t t0, int32_t t1)
{
    const int64_t hid = w->m->cfg.hidden;
    (void)li;
    for (int64_t i = t0 * hid; i < t1 * hid; i++) w->x[i] += w->h[i];
}

/* The head gate's activation, and RoPE on every q and k head. */
static void gate_rope_rows(llm_work *w, int32_t li, int32_t t0, int32_t t1)
{
    const spark_config *c = &w->m->cfg;
    const int type = c->layer_type[li];
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t qkv_dim = llm_qkv_stride(c), q_dim = (int64_t)H * d;
    const int32_t half = c->rope[type].rot_dims / 2;
    float *q = w->qkv, *k = w->qkv + q_dim;
    if (c->gate != SPARK_GATE_NONE)
        for (int64_t i = (int64_t)t0 * H; i < (int64_t)t1 * H; i++)
            w->gate[i] = c->gate == SPARK_GATE_SILU ? ek_silu(w->gate[i]) : ek_sigmoid(w->gate[i]);
    for (int32_t t = t0; t < t1; t++) {
        const float *ct = w->cos_t[type] + (int64_t)t * half, *st = w->sin_t[type] + (int64_t)t * half;
        for (int32_t hh = 0; hh < H; hh++)
            ek_rope_apply(q + t * qkv_dim + (int64_t)hh * d, ct, st, 2 * half);
        for (int32_t g = 0; g < KV; g++)
            ek_rope_apply(k + t * qkv_dim + (int64_t)g * d, ct, st, 2 * half);
    }
}

/* Each head's attention output times its gate. */
static void gate_mul_rows(llm_work *w, int32_t li, int32_t t0, int32_t t1)
{
    const spark_config *c = &w->m->cfg;
    const int32_t d = c->head_dim, H = c->n_heads;
    (void)li;
    for (int32_t t = t0; t < t1; t++)
        for (int32_t hh = 0; hh < H; hh++) {
            float g = w->gate[t * H + hh], *o = w->attn + (int64_t)t * H * d + (int64_t)hh * d;
            for (int32_t j = 0; j < d; j++) o[j] *= g;
        }
}

/* Widens calibration slot `slot`'s [min, max] over x[0..n). */
static void record_range(const llm_work *w, int32_t slot, const float *x, int64_t n)
{
    if (!w->act_range) return;
    float *r = w->act_range + 2 * slot;
    for (int64_t i = 0; i < n; i++) {
        r[0] = x[i] < r[0] ? x[i] : r[0];
        r[1] = x[i] > r[1] ? x[i] : r[1];
    }
}

void llm_attn_in(llm_work *w, int32_t li, int32_t n)
{
    const spark_config *c = &w->m->cfg;
    const spark_layer *W = &w->m->layers[li];
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t q_dim = (int64_t)H * d, kv_dim = (int64_t)KV * d;
    const int64_t qkv_dim = llm_qkv_stride(c);
    float *q = w->qkv, *k = w->qkv + q_dim, *v = w->qkv + q_dim + kv_dim;

    for_rows(w, li, n, attn_norm_rows);
    record_range(w, li * LLM_RANGES_PER_LAYER + 0, w->h, (int64_t)n * c->hidden);
    /* one pass over the normed input for every projection that reads it:
     * one quantization of it and one split of all their rows over the threads */
    const ek_matmul_out proj[4] = {{q, qkv_dim, &W->wq, W->bq},
                                   {k, qkv_dim, &W->wk, W->bk},
                                   {v, qkv_dim, &W->wv, W->bv},
                                   {w->gate, H, &W->wg, W->bg}};
    ek_matmul_many(&w->exec, w->h, n, proj, c->gate != SPARK_GATE_NONE ? 4 : 3, w->qbuf);
    for_rows(w, li, n, gate_rope_rows);
}

void llm_attn_out(llm_work *w, int32_t li, int32_t n)
{
    const spark_config *c = &w->m->cfg;
    const spark_layer *W = &w->m->layers[li];
    const int64_t q_dim = (int64_t)c->n_heads * c->head_dim;
    if (c->gate != SPARK_GATE_NONE) for_rows(w, li, n, gate_mul_rows);
    record_range(w, li * LLM_RANGES_PER_LAYER + 1, w->attn, (int64_t)n * q_dim);
    ek_matmul(&w->exec, w->h, c->hidden, w->attn, n, &W->wo, W->bo, w->qbuf);
    for_rows(w, li, n, residual_rows);
}

void llm_mlp(llm_work *w, int32_t li, int32_t n)
{
    const spark_config *c = &w->m->cfg;
    const spark_layer *W = &w->m->layers[li];
    const int64_t inter = c->intermediate;

    for_rows(w, li, n, mlp_norm_rows);
    record_range(w, li * LLM_RANGES_PER_LAYER + 2, w->h, (int64_t)n * c->hidden);
    const ek_glu_mats geglu = {&W->w_gate, &W->w_up, W->b_gate, W->b_up,
                               w->m->params.gelu == EMBER_GELU_TANH ? EK_GLU_GELU_TANH
                                                                    : EK_GLU_GELU_ERF};
    ek_matmul_glu(&w->exec, w->ffn_g, w->ffn_u, w->h, n, &geglu, w->qbuf);
    record_range(w, li * LLM_RANGES_PER_LAYER + 3, w->ffn_g, (int64_t)n * inter);
    ek_matmul(&w->exec, w->h, c->hidden, w->ffn_g, n, &W->w_down, W->b_down, w->qbuf);
    for_rows(w, li, n, residual_rows);
}

void llm_logits(llm_work *w, int32_t first, int32_t n, float *out)
{
    const spark_config *c = &w->m->cfg;
    for (int32_t t = 0; t < n; t++)
        ek_rmsnorm(w->h + (int64_t)t * c->hidden, w->x + (int64_t)(first + t) * c->hidden,
                   w->m->final_norm, c->hidden, c->rms_eps);
    record_range(w, c->n_layers * LLM_RANGES_PER_LAYER, w->h, (int64_t)n * c->hidden);
    ek_matmul(&w->exec, out, c->vocab, w->h, n, &w->m->lm_head, NULL, w->qbuf);
}
