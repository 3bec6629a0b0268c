#include "llm/fingerprint.h"

#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "base/status.h"
#include "llm/spark.h"

static void feed_i64(cksum64 *h, int64_t v) { cksum64_feed(h, &v, sizeof v); }

static void feed_f32(cksum64 *h, float v) { cksum64_feed(h, &v, sizeof v); }

static uint64_t config_hash(const ember_model *m)
{
    const spark_config *c = &m->cfg;
    cksum64 h;
    cksum64_init(&h);
    const int64_t ints[] = {c->n_layers, c->hidden, c->intermediate, c->n_heads, c->n_kv_heads,
                            c->head_dim, c->vocab, c->sliding_window, c->max_positions, c->gate,
                            c->attention_bias, c->mlp_bias, c->tie_embeddings, m->params.gelu,
                            m->params.all_full_attention};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) feed_i64(&h, ints[i]);
    feed_f32(&h, c->rms_eps);
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        feed_f32(&h, c->rope[t].theta);
        feed_f32(&h, c->rope[t].factor);
        feed_i64(&h, c->rope[t].rot_dims);
    }
    cksum64_feed(&h, c->layer_type, (size_t)c->n_layers);
    return cksum64_final(&h);
}

static void feed_matrix(cksum64 *h, const ek_matrix *w, float *row)
{
    feed_i64(h, w->dtype);
    feed_i64(h, w->rows);
    feed_i64(h, w->cols);
    if (w->rows == 0) return;
    const int64_t at[] = {0, w->rows / 2, w->rows - 1};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        ek_row_to_f32(row, w, at[i]);
        cksum64_feed(h, row, (size_t)w->cols * sizeof *row);
    }
}

static void feed_vector(cksum64 *h, const float *v, int32_t n)
{
    if (v) cksum64_feed(h, v, (size_t)n * sizeof *v);
}

ember_status llm_fingerprint_of(const ember_model *m, llm_fingerprint *out)
{
    const spark_config *c = &m->cfg;
    int64_t widest = c->hidden > c->intermediate ? c->hidden : c->intermediate;
    if ((int64_t)c->n_heads * c->head_dim > widest) widest = (int64_t)c->n_heads * c->head_dim;
    float *row = malloc((size_t)widest * sizeof *row);
    if (!row) return ember_fail(EMBER_ERR_NO_MEMORY, "model fingerprint: out of memory");
    cksum64 h;
    cksum64_init(&h);
    feed_matrix(&h, &m->embed, row);
    feed_matrix(&h, &m->lm_head, row);
    feed_vector(&h, m->final_norm, c->hidden);
    for (int32_t i = 0; i < c->n_layers; i++) {
        const spark_layer *L = &m->layers[i];
        const ek_matrix *ms[] = {&L->wq, &L->wk, &L->wv, &L->wg, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t k = 0; k < sizeof ms / sizeof *ms; k++) feed_matrix(&h, ms[k], row);
        feed_vector(&h, L->attn_norm, c->hidden);
        feed_vector(&h, L->mlp_norm, c->hidden);
    }
    free(row);
    out->config = config_hash(m);
    out->weights = cksum64_final(&h);
    out->weight_format = c->n_layers ? m->layers[0].w_up.dtype : m->embed.dtype;
    return EMBER_OK;
}
