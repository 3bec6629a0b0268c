#include "tts/tts_stack.h"

#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/ops.h"
#include "nn/attention.h"

int64_t tts_stack_max_cols(const tts_stack_config *c)
{
    int64_t q_dim = (int64_t)c->n_heads * c->head_dim, m = c->hidden;
    if (q_dim > m) m = q_dim;
    if (c->intermediate > m) m = c->intermediate;
    return m;
}

ember_status tts_stack_state_init(tts_stack_state *s, const tts_stack *w, const ek_exec *exec,
                                  void *qbuf, int n_workers, int32_t max_context,
                                  int32_t max_chunk)
{
    const tts_stack_config *c = w->cfg;
    memset(s, 0, sizeof *s);
    s->w = w;
    s->exec = exec;
    s->qbuf = qbuf;
    s->max_chunk = max_chunk;
    s->max_context = max_context;
    /* every layer here is of one type: full, or sliding in the speech decoder */
    kv_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.n_layers = c->n_layers;
    shape.kv_heads = c->n_kv_heads;
    shape.head_dim = c->head_dim;
    for (int32_t i = 0; i < c->n_layers && i < KV_MAX_LAYERS; i++) shape.window[i] = c->sliding_window;
    ember_status st = kv_cache_init(&s->kv, &shape, max_context, ET_F32);
    if (st) return st;

    const size_t n = (size_t)max_chunk, d = (size_t)c->head_dim, half = d / 2;
    const size_t q_dim = (size_t)c->n_heads * d, kv_dim = (size_t)c->n_kv_heads * d;
    s->scores_stride =
        (attn_scratch_floats(c->n_heads, c->n_kv_heads, c->head_dim, max_chunk) + 15) &
        ~(size_t)15;
    const size_t sizes[] = {n * (size_t)c->hidden, n * q_dim, n * kv_dim, n * kv_dim, n * q_dim,
                            n * (size_t)c->intermediate, n * (size_t)c->intermediate,
                            s->scores_stride * (size_t)n_workers, half, n * half, n * half};
    float **dst[] = {&s->h, &s->q, &s->k, &s->v, &s->attn, &s->ffn_g, &s->ffn_u,
                     &s->scores, &s->inv_freq, &s->cos_t, &s->sin_t};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) total += sizes[i];
    s->block = malloc(total * sizeof(float));
    if (!s->block) {
        kv_cache_free(&s->kv);
        return ember_fail(EMBER_ERR_NO_MEMORY, "TTS stack scratch: cannot allocate %zu bytes",
                          total * sizeof(float));
    }
    float *p = s->block;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = p;
        p += sizes[i];
    }
    ek_rope_inv_freq(s->inv_freq, c->head_dim, c->rope_theta);
    return EMBER_OK;
}

void tts_stack_state_free(tts_stack_state *s)
{
    kv_cache_free(&s->kv);
    free(s->block);
    memset(s, 0, sizeof *s);
}

/* Per-head RMSNorm with the shared head_dim weight (when there is one),
 * then RoPE. */
static void norm_and_rotate(float *x, int32_t heads, int32_t d, const float *w, float eps,
                            const float *cos_t, const float *sin_t)
{
    for (int32_t h = 0; h < heads; h++) {
        float *v = x + (int64_t)h * d;
        if (w) ek_rmsnorm(v, v, w, d, eps);
        ek_rope_apply(v, cos_t, sin_t, d);
    }
}

/* x += h, or x += scale * h per channel (LayerScale). */
static void add_residual(float *x, const float *h, const float *scale, int32_t n, int64_t hid)
{
    if (!scale) {
        for (int64_t i = 0; i < (int64_t)n * hid; i++) x[i] += h[i];
        return;
    }
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < hid; i++) x[t * hid + i] += scale[i] * h[t * hid + i];
}

static void attention_block(tts_stack_state *s, const tts_layer *W, kv_layer *L, float *x,
                            int64_t p0, int32_t n)
{
    const tts_stack_config *c = s->w->cfg;
    const int32_t d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads, half = d / 2;
    const int64_t q_dim = (int64_t)H * d, kv_dim = (int64_t)KV * d, hid = c->hidden;
    for (int32_t t = 0; t < n; t++)
        ek_rmsnorm(s->h + t * hid, x + t * hid, W->attn_norm, hid, c->rms_eps);
    const ek_matmul_out qkv[3] = {
        {s->q, q_dim, &W->wq, NULL}, {s->k, kv_dim, &W->wk, NULL}, {s->v, kv_dim, &W->wv, NULL}};
    ek_matmul_many(s->exec, s->h, n, qkv, 3, s->qbuf);
    for (int32_t t = 0; t < n; t++) {
        const float *ct = s->cos_t + (int64_t)t * half, *st = s->sin_t + (int64_t)t * half;
        norm_and_rotate(s->q + t * q_dim, H, d, W->q_norm, c->rms_eps, ct, st);
        norm_and_rotate(s->k + t * kv_dim, KV, d, W->k_norm, c->rms_eps, ct, st);
    }
    const attn_shape shape = {s->exec->kernels, H, KV, d, q_dim, kv_dim, q_dim};
    attn_run(s->exec->pool, L, &shape, p0, n, s->q, s->k, s->v, s->attn, s->scores, s->scores_stride);
    kv_store(L, KV, d, p0, n, s->k, s->v, kv_dim);
    ek_matmul(s->exec, s->h, hid, s->attn, n, &W->wo, NULL, s->qbuf);
    add_residual(x, s->h, W->attn_scale, n, hid);
}

static void mlp_block(tts_stack_state *s, const tts_layer *W, float *x, int32_t n)
{
    const tts_stack_config *c = s->w->cfg;
    const int64_t hid = c->hidden;
    for (int32_t t = 0; t < n; t++)
        ek_rmsnorm(s->h + t * hid, x + t * hid, W->mlp_norm, hid, c->rms_eps);
    const ek_glu_mats swiglu = {&W->w_gate, &W->w_up, NULL, NULL, EK_GLU_SILU};
    ek_matmul_glu(s->exec, s->ffn_g, s->ffn_u, s->h, n, &swiglu, s->qbuf);
    ek_matmul(s->exec, s->h, hid, s->ffn_g, n, &W->w_down, NULL, s->qbuf);
    add_residual(x, s->h, W->mlp_scale, n, hid);
}

void tts_stack_forward(tts_stack_state *s, float *x, int64_t p0, int32_t n)
{
    const tts_stack_config *c = s->w->cfg;
    const int32_t half = c->head_dim / 2;
    for (int32_t t = 0; t < n; t++)
        ek_rope_cos_sin(s->cos_t + (int64_t)t * half, s->sin_t + (int64_t)t * half, s->inv_freq,
                        c->head_dim, p0 + t);
    for (int32_t li = 0; li < c->n_layers; li++) {
        attention_block(s, &s->w->layers[li], &s->kv.layers[li], x, p0, n);
        mlp_block(s, &s->w->layers[li], x, n);
    }
}
