/* Loading a Spark-X2.5 checkpoint: the tensor-name table, shape and dtype
 * checks, and the split of the fused q_k_v_proj. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "llm/spark.h"
#include "llm/spark_gguf.h"
#include "nn/weights.h"
#include "onnx/backend.h"

/* The sizes a tensor dimension can be bound to. */
typedef enum dim {
    DIM_HIDDEN,
    DIM_QKV,     /* (heads + 2 kv_heads) * head_dim */
    DIM_HEADS,   /* one gate scalar per query head */
    DIM_Q,       /* heads * head_dim */
    DIM_INTER,
    DIM_VOCAB,
    DIM_NONE     /* a vector has no second dimension */
} dim;

/* When a tensor is present in the checkpoint. */
typedef enum presence { ALWAYS, IF_ATTN_BIAS, IF_MLP_BIAS, IF_GATE, IF_GATE_AND_BIAS } presence;

typedef struct tensor_spec {
    const char *suffix; /* after "model.layers.{i}." */
    dim rows, cols;     /* cols == DIM_NONE: a vector of `rows` values, kept as fp32 */
    presence when;
    size_t field;       /* offsetof(spark_layer, ...) of an ek_matrix or const float * */
} tensor_spec;

/* Every per-layer tensor of Spark-X2.5, exactly as modeling_spark.py names it. */
static const tensor_spec layer_tensors[] = {
    {"input_layernorm.weight", DIM_HIDDEN, DIM_NONE, ALWAYS, offsetof(spark_layer, attn_norm)},
    {"self_attn.q_k_v_proj.weight", DIM_QKV, DIM_HIDDEN, ALWAYS, offsetof(spark_layer, wq)},
    {"self_attn.q_k_v_proj.bias", DIM_QKV, DIM_NONE, IF_ATTN_BIAS, offsetof(spark_layer, bq)},
    {"self_attn.g_proj.weight", DIM_HEADS, DIM_HIDDEN, IF_GATE, offsetof(spark_layer, wg)},
    {"self_attn.g_proj.bias", DIM_HEADS, DIM_NONE, IF_GATE_AND_BIAS, offsetof(spark_layer, bg)},
    {"self_attn.out_proj.weight", DIM_HIDDEN, DIM_Q, ALWAYS, offsetof(spark_layer, wo)},
    {"self_attn.out_proj.bias", DIM_HIDDEN, DIM_NONE, IF_ATTN_BIAS, offsetof(spark_layer, bo)},
    {"post_attention_layernorm.weight", DIM_HIDDEN, DIM_NONE, ALWAYS,
     offsetof(spark_layer, mlp_norm)},
    {"mlp.gate_proj.weight", DIM_INTER, DIM_HIDDEN, ALWAYS, offsetof(spark_layer, w_gate)},
    {"mlp.gate_proj.bias", DIM_INTER, DIM_NONE, IF_MLP_BIAS, offsetof(spark_layer, b_gate)},
    {"mlp.up_proj.weight", DIM_INTER, DIM_HIDDEN, ALWAYS, offsetof(spark_layer, w_up)},
    {"mlp.up_proj.bias", DIM_INTER, DIM_NONE, IF_MLP_BIAS, offsetof(spark_layer, b_up)},
    {"mlp.down_proj.weight", DIM_HIDDEN, DIM_INTER, ALWAYS, offsetof(spark_layer, w_down)},
    {"mlp.down_proj.bias", DIM_HIDDEN, DIM_NONE, IF_MLP_BIAS, offsetof(spark_layer, b_down)},
};
#define N_LAYER_TENSORS (sizeof layer_tensors / sizeof *layer_tensors)

static int64_t dim_size(const spark_config *c, dim d)
{
    switch (d) {
    case DIM_HIDDEN: return c->hidden;
    case DIM_QKV: return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    case DIM_HEADS: return c->n_heads;
    case DIM_Q: return (int64_t)c->n_heads * c->head_dim;
    case DIM_INTER: return c->intermediate;
    case DIM_VOCAB: return c->vocab;
    case DIM_NONE: return 0;
    }
    return 0;
}

static int present(const spark_config *c, presence p)
{
    switch (p) {
    case ALWAYS: return 1;
    case IF_ATTN_BIAS: return c->attention_bias;
    case IF_MLP_BIAS: return c->mlp_bias;
    case IF_GATE: return c->gate != SPARK_GATE_NONE;
    case IF_GATE_AND_BIAS: return c->gate != SPARK_GATE_NONE && c->attention_bias;
    }
    return 0;
}

static size_t vector_floats(const spark_config *c)
{
    size_t per_layer = 0;
    for (size_t i = 0; i < N_LAYER_TENSORS; i++)
        if (layer_tensors[i].cols == DIM_NONE && present(c, layer_tensors[i].when))
            per_layer += (size_t)dim_size(c, layer_tensors[i].rows);
    return per_layer * (size_t)c->n_layers + (size_t)c->hidden;
}

static ember_status bind_layer(wt_loader *ld, ember_model *m, int32_t i)
{
    const spark_config *c = &m->cfg;
    spark_layer *L = &m->layers[i];
    char name[160];
    ember_status st = EMBER_OK;
    /* The fused projection's rows are Q, then K, then V; so is its bias.
     * Splitting is free: each part is a view of consecutive rows, which the
     * interleaved layout allows at multiples of 8 rows only. */
    const int64_t q_rows = (int64_t)c->n_heads * c->head_dim;
    const int64_t kv_rows = (int64_t)c->n_kv_heads * c->head_dim;
    const int keep_rows = ld->keep_rows;
    ld->keep_rows = keep_rows || q_rows % 8 || kv_rows % 8;
    for (size_t k = 0; k < N_LAYER_TENSORS && !st; k++) {
        const tensor_spec *ts = &layer_tensors[k];
        if (!present(c, ts->when)) continue;
        snprintf(name, sizeof name, "model.layers.%d.%s", i, ts->suffix);
        void *field = (char *)L + ts->field;
        if (ts->cols == DIM_NONE)
            st = wt_bind_vector(ld, name, dim_size(c, ts->rows), (const float **)field);
        else
            st = wt_bind_matrix(ld, name, dim_size(c, ts->rows), dim_size(c, ts->cols),
                                (ek_matrix *)field);
    }
    ld->keep_rows = keep_rows;
    if (st) return st;
    ek_matrix fused = L->wq;
    L->wq = ek_matrix_rows(&fused, 0, q_rows);
    L->wk = ek_matrix_rows(&fused, q_rows, kv_rows);
    L->wv = ek_matrix_rows(&fused, q_rows + kv_rows, kv_rows);
    if (L->bq) {
        L->bk = L->bq + q_rows;
        L->bv = L->bk + kv_rows;
    }
    return EMBER_OK;
}

ember_model_params ember_model_default_params(void)
{
    ember_model_params p;
    memset(&p, 0, sizeof p);
    p.gelu = EMBER_GELU_ERF;
    return p;
}

static ember_status load_into(ember_model *m, const char *dir)
{
    ember_status st;
    char label[1200];
    if ((st = gguf_is_gguf_file(dir) ? ck_open_gguf(dir, &spark_gguf_map, &m->ck)
                                     : ck_open(dir, &m->ck)))
        return st;
    snprintf(label, sizeof label, "%s/config.json", dir);
    if ((st = spark_config_parse(ck_config_json(m->ck), ck_config_len(m->ck), label, &m->cfg)))
        return st;
    if (m->params.all_full_attention)
        memset(m->cfg.layer_type, SPARK_FULL, (size_t)m->cfg.n_layers);
    const spark_config *c = &m->cfg;

    const size_t n_vector = vector_floats(c);
    /* at most every layer matrix, the embedding and lm_head are converted */
    const size_t max_converted = N_LAYER_TENSORS * (size_t)c->n_layers + 2;
    m->vectors = malloc(n_vector * sizeof(float));
    m->converted = calloc(max_converted, sizeof *m->converted);
    if (!m->vectors || !m->converted)
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    wt_loader ld = {m->ck, m->vectors, m->vectors + n_vector, m->converted, &m->n_converted,
                    max_converted, wt_dtype_of_type(m->params.weight_type), 0, NULL, 0, 0, m->kernels, 0};

    if ((st = wt_bind_matrix(&ld, "model.embedding.weight", c->vocab, c->hidden, &m->embed)) ||
        (st = wt_bind_vector(&ld, "model.norm.weight", c->hidden, &m->final_norm)))
        return st;
    for (int32_t i = 0; i < c->n_layers; i++)
        if ((st = bind_layer(&ld, m, i))) return st;

    if (c->tie_embeddings) {
        /* A tied checkpoint normally omits lm_head; if one is stored anyway the
         * model still uses the embedding (as transformers does when tying). */
        const et_tensor *ignored = ck_get(m->ck, "lm_head.weight", NULL);
        (void)ignored;
        m->lm_head = m->embed;
    } else if ((st = wt_bind_matrix(&ld, "lm_head.weight", c->vocab, c->hidden, &m->lm_head))) {
        return st;
    }
    if ((st = ck_check_all_used(m->ck))) return st;
    if (!ld.kept_mapped) ck_drop_resident(m->ck); /* everything lives in converted copies */
    return EMBER_OK;
}

ember_status ember_model_load(const char *dir, const ember_model_params *params,
                              ember_model **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_model_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_model_load: dir is NULL");
    ember_model *m = calloc(1, sizeof *m);
    if (!m) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    m->params = params ? *params : ember_model_default_params();
    const char *bad = NULL;
    if (m->params.gelu != EMBER_GELU_ERF && m->params.gelu != EMBER_GELU_TANH) bad = "gelu mode";
    else if (m->params.weight_type != EMBER_TYPE_NONE && wt_dtype_of_type(m->params.weight_type) == ET_DTYPE_COUNT)
        bad = "weight_type";
    else if (!(m->kernels = m->params.kernels ? ek_kernels_by_name(m->params.kernels)
                                              : ek_kernels_best()))
        bad = "kernel set (unknown, or this CPU cannot run it)";
    if (bad) {
        free(m);
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_model_load: invalid %s", bad);
    }
    m->params.kernels = NULL; /* the caller's string need not outlive the call */
    ember_status st = load_into(m, dir);
    if (!st) st = onnx_backend_open(&m->cfg, &m->params, &m->onnx);
    /* copied into m->onnx */
    m->params.backend = m->params.onnx_runtime = m->params.onnx_provider = m->params.onnx_options = NULL;
    if (st) {
        ember_model_free(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void ember_model_free(ember_model *model)
{
    if (!model) return;
    ck_close(model->ck);
    onnx_backend_free(model->onnx);
    for (size_t i = 0; i < model->n_converted; i++) free(model->converted[i]);
    free(model->converted);
    free(model->vectors);
    free(model);
}

int32_t ember_model_vocab_size(const ember_model *model) { return model ? model->cfg.vocab : 0; }
int32_t ember_model_n_layers(const ember_model *model) { return model ? model->cfg.n_layers : 0; }
int32_t ember_model_max_positions(const ember_model *model)
{
    return model ? model->cfg.max_positions : 0;
}

const char *ember_model_kernels(const ember_model *model)
{
    return model ? model->kernels->name : "";
}

static size_t matrix_bytes(const ek_matrix *m) { return (size_t)m->rows * ek_row_bytes(m->dtype, m->cols); }

size_t ember_model_weight_bytes(const ember_model *model)
{
    if (!model) return 0;
    size_t total = matrix_bytes(&model->lm_head);
    for (int32_t i = 0; i < model->cfg.n_layers; i++) {
        const spark_layer *L = &model->layers[i];
        const ek_matrix *ms[] = {&L->wq, &L->wk, &L->wv, &L->wg, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t k = 0; k < sizeof ms / sizeof *ms; k++) total += matrix_bytes(ms[k]);
    }
    return total;
}
