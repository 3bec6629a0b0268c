/* Loading a Qwen3-TTS checkpoint: the tensor-name table of the talker, the
 * text projection, the codec embeddings and heads, and the code predictor. */
#include "tts/qwen3_tts_load.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "nn/weights.h"
#include "tts/tts_bind.h"
#include "tts/tts_gguf.h"

typedef enum dim { D_HIDDEN, D_Q, D_KV, D_INTER, D_HEAD, D_NONE } dim;
typedef enum part { P_ALWAYS, P_QK_NORM, P_LAYER_SCALE } part;

typedef struct layer_tensor {
    const char *suffix; /* after "{prefix}.layers.{i}." */
    dim rows, cols;     /* cols == D_NONE: an fp32 vector */
    size_t field;       /* offsetof(tts_layer, ...) */
    part when;          /* present only in stacks with that feature */
} layer_tensor;

/* Every tensor of one Qwen3 decoder layer, as the official modeling code names them. */
static const layer_tensor layer_tensors[] = {
    {"input_layernorm.weight", D_HIDDEN, D_NONE, offsetof(tts_layer, attn_norm), P_ALWAYS},
    {"self_attn.q_proj.weight", D_Q, D_HIDDEN, offsetof(tts_layer, wq), P_ALWAYS},
    {"self_attn.k_proj.weight", D_KV, D_HIDDEN, offsetof(tts_layer, wk), P_ALWAYS},
    {"self_attn.v_proj.weight", D_KV, D_HIDDEN, offsetof(tts_layer, wv), P_ALWAYS},
    {"self_attn.o_proj.weight", D_HIDDEN, D_Q, offsetof(tts_layer, wo), P_ALWAYS},
    {"self_attn.q_norm.weight", D_HEAD, D_NONE, offsetof(tts_layer, q_norm), P_QK_NORM},
    {"self_attn.k_norm.weight", D_HEAD, D_NONE, offsetof(tts_layer, k_norm), P_QK_NORM},
    {"self_attn_layer_scale.scale", D_HIDDEN, D_NONE, offsetof(tts_layer, attn_scale),
     P_LAYER_SCALE},
    {"mlp_layer_scale.scale", D_HIDDEN, D_NONE, offsetof(tts_layer, mlp_scale), P_LAYER_SCALE},
    {"post_attention_layernorm.weight", D_HIDDEN, D_NONE, offsetof(tts_layer, mlp_norm), P_ALWAYS},
    {"mlp.gate_proj.weight", D_INTER, D_HIDDEN, offsetof(tts_layer, w_gate), P_ALWAYS},
    {"mlp.up_proj.weight", D_INTER, D_HIDDEN, offsetof(tts_layer, w_up), P_ALWAYS},
    {"mlp.down_proj.weight", D_HIDDEN, D_INTER, offsetof(tts_layer, w_down), P_ALWAYS},
};
#define N_LAYER_TENSORS (sizeof layer_tensors / sizeof *layer_tensors)

static int64_t dim_size(const tts_stack_config *c, dim d)
{
    switch (d) {
    case D_HIDDEN: return c->hidden;
    case D_Q: return (int64_t)c->n_heads * c->head_dim;
    case D_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case D_INTER: return c->intermediate;
    case D_HEAD: return c->head_dim;
    case D_NONE: return 0;
    }
    return 0;
}

static bool has_part(const tts_stack_config *c, part p)
{
    return p == P_ALWAYS || (p == P_QK_NORM && c->qk_norm) || (p == P_LAYER_SCALE && c->layer_scale);
}

size_t tts_stack_vector_floats(const tts_stack_config *c)
{
    size_t per_layer = 0;
    for (size_t k = 0; k < N_LAYER_TENSORS; k++)
        if (layer_tensors[k].cols == D_NONE && has_part(c, layer_tensors[k].when))
            per_layer += (size_t)dim_size(c, layer_tensors[k].rows);
    return (size_t)c->n_layers * per_layer + (size_t)c->hidden;
}

typedef ember_status (*bind_fn)(wt_loader *, const char *, int64_t, int64_t, ek_matrix *);

/* Binds through `bind` in the requested format; a matrix whose columns the
 * block format cannot hold (the tiny test shapes) is kept as stored, and
 * counted when it is one the matmuls read. */
static ember_status bind_with(tts_loader *ld, bind_fn bind, int count, const char *name,
                              int64_t rows, int64_t cols, ek_matrix *out)
{
    const et_dtype target = ld->wt.convert_to;
    if (target == ET_DTYPE_COUNT || cols % ek_format_of(target)->block == 0)
        return bind(&ld->wt, name, rows, cols, out);
    ld->wt.convert_to = ET_DTYPE_COUNT;
    ember_status st = bind(&ld->wt, name, rows, cols, out);
    ld->wt.convert_to = target;
    *ld->n_unconverted += count;
    return st;
}

ember_status tts_bind_matrix(tts_loader *ld, const char *name, int64_t rows, int64_t cols,
                             ek_matrix *out)
{
    return bind_with(ld, wt_bind_matrix, 1, name, rows, cols, out);
}

/* Embedding tables: only ever read a row at a time. */
static ember_status bind_table(tts_loader *ld, const char *name, int64_t rows, int64_t cols,
                               ek_matrix *out)
{
    return bind_with(ld, wt_bind_table, 0, name, rows, cols, out);
}

ember_status tts_bind_stack(tts_loader *ld, const char *prefix, const tts_stack_config *c,
                            tts_stack *s)
{
    char name[200];
    ember_status st;
    s->cfg = c;
    for (int32_t i = 0; i < c->n_layers; i++) {
        tts_layer *L = &s->layers[i];
        for (size_t k = 0; k < N_LAYER_TENSORS; k++) {
            const layer_tensor *lt = &layer_tensors[k];
            if (!has_part(c, lt->when)) continue;
            void *field = (char *)L + lt->field;
            snprintf(name, sizeof name, "%s.layers.%d.%s", prefix, i, lt->suffix);
            st = lt->cols == D_NONE
                     ? wt_bind_vector(&ld->wt, name, dim_size(c, lt->rows), (const float **)field)
                     : tts_bind_matrix(ld, name, dim_size(c, lt->rows), dim_size(c, lt->cols),
                                   (ek_matrix *)field);
            if (st) return st;
        }
    }
    snprintf(name, sizeof name, "%s.norm.weight", prefix);
    return wt_bind_vector(&ld->wt, name, c->hidden, &s->final_norm);
}

static ember_status read_configs(tts_model *m, const char *path, const char *label)
{
    ember_status st;
    if ((st = tts_config_parse(ck_config_json(m->ck), ck_config_len(m->ck), label, &m->cfg)))
        return st;
    tts_gen_config_default(&m->gen);
    char *text = NULL;
    size_t len = 0;
    if ((st = tts_read_generation_config(path, m->ck, &text, &len)) || !text) return st;
    char gen_label[1200];
    if (ck_gguf(m->ck)) snprintf(gen_label, sizeof gen_label, "%s (%s)", path, TTS_GGUF_KEY_GENERATION);
    else snprintf(gen_label, sizeof gen_label, "%s/generation_config.json", path);
    st = tts_gen_config_parse(text, len, gen_label, &m->gen);
    free(text);
    return st;
}

static ember_status load_into(tts_model *m, const char *dir)
{
    ember_status st;
    char label[1200];
    if ((st = tts_ck_open(dir, TTS_PART_TALKER, &m->ck, label, sizeof label)) ||
        (st = read_configs(m, dir, label)))
        return st;
    const tts_config *c = &m->cfg;
    const tts_stack_config *tc = &c->talker, *pc = &c->predictor;
    const int32_t groups = c->n_groups - 1;
    m->has_mtp = pc->hidden != tc->hidden;

    const size_t n_vector = tts_stack_vector_floats(tc) + tts_stack_vector_floats(pc) +
                            (size_t)c->text_hidden + (size_t)tc->hidden + (size_t)pc->hidden;
    const size_t max_converted = N_LAYER_TENSORS * (size_t)(tc->n_layers + pc->n_layers) +
                                 2 * (size_t)groups + 8;
    m->vectors = malloc(n_vector * sizeof(float));
    m->converted = calloc(max_converted, sizeof *m->converted);
    if (!m->vectors || !m->converted)
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    tts_loader ld = {{m->ck, m->vectors, m->vectors + n_vector, m->converted, &m->n_converted,
                      max_converted, wt_dtype_of_type(m->weight_type), 0, NULL, 0, 0, m->kernels, 0},
                     &m->n_unconverted};

    if ((st = bind_table(&ld, "talker.model.text_embedding.weight", c->text_vocab,
                         c->text_hidden, &m->text_embed)) ||
        (st = tts_bind_matrix(&ld, "talker.text_projection.linear_fc1.weight", c->text_hidden,
                          c->text_hidden, &m->text_fc1)) ||
        (st = wt_bind_vector(&ld.wt, "talker.text_projection.linear_fc1.bias", c->text_hidden,
                             &m->text_fc1_b)) ||
        (st = tts_bind_matrix(&ld, "talker.text_projection.linear_fc2.weight", tc->hidden,
                          c->text_hidden, &m->text_fc2)) ||
        (st = wt_bind_vector(&ld.wt, "talker.text_projection.linear_fc2.bias", tc->hidden,
                             &m->text_fc2_b)) ||
        (st = bind_table(&ld, "talker.model.codec_embedding.weight", tc->vocab, tc->hidden,
                         &m->codec_embed)) ||
        (st = tts_bind_matrix(&ld, "talker.codec_head.weight", tc->vocab, tc->hidden,
                          &m->codec_head)) ||
        (st = tts_bind_stack(&ld, "talker.model", tc, &m->talker)) ||
        (st = tts_bind_stack(&ld, "talker.code_predictor.model", pc, &m->predictor)))
        return st;
    char name[160];
    for (int32_t g = 0; g < groups; g++) {
        snprintf(name, sizeof name, "talker.code_predictor.model.codec_embedding.%d.weight", g);
        if ((st = bind_table(&ld, name, pc->vocab, tc->hidden, &m->cp_embed[g]))) return st;
        snprintf(name, sizeof name, "talker.code_predictor.lm_head.%d.weight", g);
        if ((st = tts_bind_matrix(&ld, name, pc->vocab, pc->hidden, &m->cp_head[g]))) return st;
    }
    if (m->has_mtp &&
        ((st = tts_bind_matrix(&ld, "talker.code_predictor.small_to_mtp_projection.weight",
                           pc->hidden, tc->hidden, &m->mtp_proj)) ||
         (st = wt_bind_vector(&ld.wt, "talker.code_predictor.small_to_mtp_projection.bias",
                              pc->hidden, &m->mtp_b))))
        return st;
    /* Anything left over (a stray projection) would be silently ignored
     * otherwise; a Base checkpoint's speaker encoder is a model of its own
     * (speaker_encoder.c). */
    if (m->cfg.type == TTS_BASE) ck_skip_prefix(m->ck, "speaker_encoder.");
    if ((st = ck_check_all_used(m->ck))) return st;
    if (!ld.wt.kept_mapped) ck_drop_resident(m->ck);
    return EMBER_OK;
}

ember_status tts_model_load(const char *dir, const tts_model_params *params, tts_model **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_model_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_model_load: dir is NULL");
    tts_model *m = calloc(1, sizeof *m);
    if (!m) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    m->weight_type = params ? params->weight_type : EMBER_TYPE_NONE;
    const char *kernels = params ? params->kernels : NULL;
    if (m->weight_type != EMBER_TYPE_NONE && wt_dtype_of_type(m->weight_type) == ET_DTYPE_COUNT) {
        free(m);
        return ember_fail(EMBER_ERR_INVALID_ARG, "tts_model_load: invalid weight_type");
    }
    m->kernels = kernels ? ek_kernels_by_name(kernels) : ek_kernels_best();
    if (!m->kernels) {
        free(m);
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "tts_model_load: kernel set '%s' is unknown or this CPU cannot run it",
                          kernels);
    }
    ember_status st = load_into(m, dir);
    if (st) {
        tts_model_free(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void tts_model_free(tts_model *m)
{
    if (!m) return;
    ck_close(m->ck);
    for (size_t i = 0; i < m->n_converted; i++) free(m->converted[i]);
    free(m->converted);
    free(m->vectors);
    free(m);
}

static size_t matrix_bytes(const ek_matrix *w)
{
    return (size_t)w->rows * ek_row_bytes(w->dtype, w->cols);
}

static size_t stack_bytes(const tts_stack *s)
{
    size_t total = 0;
    for (int32_t i = 0; i < s->cfg->n_layers; i++) {
        const tts_layer *L = &s->layers[i];
        const ek_matrix *ms[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t k = 0; k < sizeof ms / sizeof *ms; k++) total += matrix_bytes(ms[k]);
    }
    return total;
}

size_t tts_model_talker_bytes(const tts_model *m)
{
    return m ? stack_bytes(&m->talker) + matrix_bytes(&m->codec_head) : 0;
}

size_t tts_model_predictor_pass_bytes(const tts_model *m)
{
    if (!m) return 0;
    return stack_bytes(&m->predictor) + matrix_bytes(&m->cp_head[0]) +
           (m->has_mtp ? matrix_bytes(&m->mtp_proj) : 0);
}
