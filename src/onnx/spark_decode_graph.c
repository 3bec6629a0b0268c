#include "onnx/spark_decode_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "onnx/graph_ops.h"
#include "onnx/onnx_graph.h"


ember_status spark_decode_check_model(const ember_model *m)
{
    if (m->params.gelu != EMBER_GELU_ERF)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: only the exact erf GELU is exported");
    if (m->params.all_full_attention)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: all_full_attention is a benchmark mode");
    return EMBER_OK;
}

/* The builder plus the shapes and shared constants every layer uses. */
typedef struct step_ctx {
    go_ctx o;     /* the builder, the form and the weight buffers */
    const ember_model *m;
    const spark_config *c;
    const spark_decode_layout *lay;
    int64_t T;    /* tokens per run */
    const float *act_range; /* a16: calibrated [min, max] per slot */
    const char *one, *half_c, *sqrt2, *scale;
    const char *shape_q, *shape_k, *shape_knew, *shape_vnew, *shape_gate, *shape_flat;
    /* prefill chunks (T > 1) only */
    const char *shape_qt, *shape_q3, *shape_kt, *shape_n4, *shape_pn3, *shape_o4, *shape_o4t;
    const char *shape_s4[SPARK_LAYER_TYPES], *shape_p3[SPARK_LAYER_TYPES];
    const char *chunk_mask[SPARK_LAYER_TYPES];
    const char *cos[SPARK_LAYER_TYPES], *sin[SPARK_LAYER_TYPES], *mask[SPARK_LAYER_TYPES];
} step_ctx;

static const char *node2(step_ctx *s, const char *op, const char *hint, const char *a,
                         const char *b)
{
    return go_node2(&s->o, op, hint, a, b);
}

static const char *node1(step_ctx *s, const char *op, const char *hint, const char *a)
{
    return go_node1(&s->o, op, hint, a);
}

/* A weight MatMul whose input is calibration slot `slot` of layer li. */
static const char *linear(step_ctx *s, int li, int slot, const char *name, const char *x, const ek_matrix *w,
                          const float *b)
{
    s->o.in_range = s->act_range ? s->act_range + 2 * (li * SPARK_A16_PER_LAYER + slot) : NULL;
    return go_linear(&s->o, name, x, w, b);
}

static const char *rope(step_ctx *s, const char *x, int type)
{
    return go_rope(&s->o, x, s->cos[type], s->sin[type], s->lay->half[type], s->c->head_dim);
}

static void attention(step_ctx *s, int li, const char *h, const char **x)
{
    const spark_config *c = s->c;
    const spark_layer *W = &s->m->layers[li];
    const int type = c->layer_type[li];
    const int64_t KV = c->n_kv_heads, d = c->head_dim, S = s->lay->slots[type], T = s->T;
    char nm[96], key_in[48], val_in[48], key_out[48], val_out[48];
    snprintf(key_in, sizeof key_in, "past_key_%d", li);
    snprintf(val_in, sizeof val_in, "past_value_%d", li);
    snprintf(key_out, sizeof key_out, "new_key_%d", li);
    snprintf(val_out, sizeof val_out, "new_value_%d", li);
    const int64_t kdims[3] = {KV, d, S}, vdims[3] = {KV, S, d};
    const int64_t kndims[3] = {KV, d, T}, vndims[3] = {KV, T, d};
    const char *past_k = og_input(s->o.g, key_in, s->o.et, 3, kdims);
    const char *past_v = og_input(s->o.g, val_in, s->o.et, 3, vdims);

    snprintf(nm, sizeof nm, "layers.%d.q", li);
    const char *q = linear(s, li, SPARK_A16_ATTN_IN, nm, h, &W->wq, W->bq);
    snprintf(nm, sizeof nm, "layers.%d.k", li);
    const char *k = linear(s, li, SPARK_A16_ATTN_IN, nm, h, &W->wk, W->bk);
    snprintf(nm, sizeof nm, "layers.%d.v", li);
    const char *v = linear(s, li, SPARK_A16_ATTN_IN, nm, h, &W->wv, W->bv);

    /* GQA: the query as [kv_heads, tokens * group, d], never K/V expanded.
     * One token needs only Reshapes; a chunk rotates per token first and
     * moves the kv-head axis to the front. */
    const char *k_new, *v_new;
    if (T == 1) {
        q = rope(s, node2(s, "Reshape", "q", q, s->shape_q), type);
        const char *in2[2] = {rope(s, node2(s, "Reshape", "k", k, s->shape_k), type), s->shape_knew};
        k_new = og_node_named(s->o.g, "Reshape", key_out, 2, in2, 0, NULL);
        const char *in3[2] = {v, s->shape_vnew};
        v_new = og_node_named(s->o.g, "Reshape", val_out, 2, in3, 0, NULL);
    } else {
        static const int64_t heads_first[4] = {1, 0, 2, 3}, key_t[3] = {1, 2, 0}, val_t[3] = {1, 0, 2};
        q = rope(s, node2(s, "Reshape", "q", q, s->shape_qt), type);          /* [T, H, d] */
        q = go_transpose(&s->o, NULL, node2(s, "Reshape", "q", q, s->shape_o4), 4, heads_first);
        q = node2(s, "Reshape", "q", q, s->shape_q3);                         /* [KV, T*G, d] */
        k = rope(s, node2(s, "Reshape", "k", k, s->shape_kt), type);          /* [T, KV, d] */
        k_new = go_transpose(&s->o, key_out, k, 3, key_t);
        v_new = go_transpose(&s->o, val_out, node2(s, "Reshape", "v", v, s->shape_kt), 3, val_t);
    }
    og_output(s->o.g, key_out, s->o.et, 3, kndims);
    og_output(s->o.g, val_out, s->o.et, 3, vndims);

    /* score space: cached slots (masked) and the new keys, one softmax */
    const char *s_cache = node2(s, "MatMul", "scores", q, past_k);
    const char *s_new = node2(s, "MatMul", "score_new", q, k_new);
    if (T == 1) {
        s_cache = node2(s, "Add", "scores", s_cache, s->mask[type]);
    } else {
        s_cache = go_masked_chunk(&s->o, s_cache, s->shape_s4[type], s->shape_p3[type], s->mask[type]);
        s_new = go_masked_chunk(&s->o, s_new, s->shape_n4, s->shape_pn3, s->chunk_mask[type]);
    }
    const char *o = go_join(&s->o, s_cache, s_new, past_v, v_new, s->scale, S, T);
    if (T > 1) {
        static const int64_t tokens_first[4] = {1, 0, 2, 3};
        o = go_transpose(&s->o, NULL, node2(s, "Reshape", "attn", o, s->shape_o4t), 4, tokens_first);
    }

    if (c->gate != SPARK_GATE_NONE) {
        snprintf(nm, sizeof nm, "layers.%d.gate", li);
        const char *gl = linear(s, li, SPARK_A16_ATTN_IN, nm, h, &W->wg, W->bg);
        const char *gate = node1(s, "Sigmoid", "gate", gl);
        if (c->gate == SPARK_GATE_SILU) gate = node2(s, "Mul", "gate", gl, gate);
        o = node2(s, "Mul", "attn", o, node2(s, "Reshape", "gate", gate, s->shape_gate));
    }
    o = node2(s, "Reshape", "attn", o, s->shape_flat);
    snprintf(nm, sizeof nm, "layers.%d.out", li);
    *x = node2(s, "Add", "resid", *x, linear(s, li, SPARK_A16_ATTN_OUT_IN, nm, o, &W->wo, W->bo));
}

static void mlp(step_ctx *s, int li, const char **x)
{
    const spark_layer *W = &s->m->layers[li];
    char nm[96];
    snprintf(nm, sizeof nm, "layers.%d.mlp_norm", li);
    const char *h = go_rmsnorm(&s->o, nm, *x, W->mlp_norm, s->c->hidden);
    snprintf(nm, sizeof nm, "layers.%d.ffn_gate", li);
    const char *g = linear(s, li, SPARK_A16_MLP_IN, nm, h, &W->w_gate, W->b_gate);
    snprintf(nm, sizeof nm, "layers.%d.ffn_up", li);
    const char *u = linear(s, li, SPARK_A16_MLP_IN, nm, h, &W->w_up, W->b_up);
    /* exact GELU, as x * (erf(x / sqrt 2) + 1) * 0.5: the decomposition QNN
     * fuses into one GELU (Erf alone is not an HTP op) */
    const char *e = node1(s, "Erf", "gelu", node2(s, "Div", "gelu", g, s->sqrt2));
    const char *gelu = node2(s, "Mul", "gelu", node2(s, "Mul", "gelu", g, node2(s, "Add", "gelu", e, s->one)),
                             s->half_c);
    snprintf(nm, sizeof nm, "layers.%d.ffn_down", li);
    *x = node2(s, "Add", "resid", *x, linear(s, li, SPARK_A16_DOWN_IN, nm, node2(s, "Mul", "ffn", gelu, u), &W->w_down, W->b_down));
}

/* Rotary tables and masks of each layer type. One token: cos/sin [1, half],
 * mask [1, slots]. A chunk of T: cos/sin [T, 1, half], mask [T, 1, slots]
 * over the caches and chunk_mask [T, 1, T] among the chunk's own tokens. */
static void declare_inputs(step_ctx *s)
{
    const spark_decode_layout *lay = s->lay;
    const int64_t T = s->T;
    const int rank = T == 1 ? 2 : 3;
    char nm[32];
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!lay->has_type[t]) continue;
        const char *ty = spark_decode_type_name(t);
        const int64_t rdims[3] = {T, 1, lay->half[t]}, mdims[3] = {T, 1, lay->slots[t]},
                      cdims[3] = {T, 1, T};
        const int64_t rd1[2] = {1, lay->half[t]}, md1[2] = {1, lay->slots[t]};
        if (lay->half[t] > 0) {
            snprintf(nm, sizeof nm, "cos_%s", ty);
            s->cos[t] = og_input(s->o.g, nm, s->o.et, rank, T == 1 ? rd1 : rdims);
            snprintf(nm, sizeof nm, "sin_%s", ty);
            s->sin[t] = og_input(s->o.g, nm, s->o.et, rank, T == 1 ? rd1 : rdims);
        }
        snprintf(nm, sizeof nm, "mask_%s", ty);
        s->mask[t] = og_input(s->o.g, nm, s->o.et, rank, T == 1 ? md1 : mdims);
        if (T > 1) {
            snprintf(nm, sizeof nm, "chunk_mask_%s", ty);
            s->chunk_mask[t] = og_input(s->o.g, nm, s->o.et, 3, cdims);
        }
    }
}

static void constants(step_ctx *s)
{
    const spark_config *c = s->c;
    const int64_t KV = c->n_kv_heads, G = c->n_heads / c->n_kv_heads, d = c->head_dim, T = s->T;
    s->o.eps = og_const_float(s->o.g, "rms_eps", s->o.et, c->rms_eps);
    s->one = og_const_float(s->o.g, "one", s->o.et, 1.0f);
    s->half_c = og_const_float(s->o.g, "one_half", s->o.et, 0.5f);
    s->sqrt2 = og_const_float(s->o.g, "sqrt2", s->o.et, (float)M_SQRT2);
    s->scale = og_const_float(s->o.g, "attn_scale", s->o.et, 1.0f / sqrtf((float)d));
    const int64_t q[3] = {KV, G, d}, k[2] = {KV, d}, kn[3] = {KV, d, 1}, vn[3] = {KV, 1, d},
                  gate[3] = {KV, G, 1}, gate_t[4] = {T, KV, G, 1}, flat[2] = {T, KV * G * d};
    s->shape_flat = og_init_i64(s->o.g, "shape_attn", 2, flat);
    if (T == 1) {
        s->shape_q = og_init_i64(s->o.g, "shape_q", 3, q);
        s->shape_k = og_init_i64(s->o.g, "shape_k", 2, k);
        s->shape_knew = og_init_i64(s->o.g, "shape_new_key", 3, kn);
        s->shape_vnew = og_init_i64(s->o.g, "shape_new_value", 3, vn);
        s->shape_gate = og_init_i64(s->o.g, "shape_gate", 3, gate);
        return;
    }
    s->shape_gate = og_init_i64(s->o.g, "shape_gate", 4, gate_t);
    const int64_t qt[3] = {T, KV * G, d}, q3[3] = {KV, T * G, d}, kt[3] = {T, KV, d},
                  n4[4] = {KV, T, G, T}, pn3[3] = {KV, T * G, T}, o4[4] = {T, KV, G, d},
                  o4t[4] = {KV, T, G, d};
    s->shape_qt = og_init_i64(s->o.g, "shape_q_tokens", 3, qt);
    s->shape_q3 = og_init_i64(s->o.g, "shape_q_heads", 3, q3);
    s->shape_kt = og_init_i64(s->o.g, "shape_kv_tokens", 3, kt);
    s->shape_n4 = og_init_i64(s->o.g, "shape_chunk_scores4", 4, n4);
    s->shape_pn3 = og_init_i64(s->o.g, "shape_chunk_scores", 3, pn3);
    s->shape_o4 = og_init_i64(s->o.g, "shape_tokens_heads", 4, o4);
    s->shape_o4t = og_init_i64(s->o.g, "shape_heads_tokens", 4, o4t);
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!s->lay->has_type[t]) continue;
        const int64_t S = s->lay->slots[t], s4[4] = {KV, T, G, S}, p3[3] = {KV, T * G, S};
        char nm[48];
        snprintf(nm, sizeof nm, "shape_scores4_%s", spark_decode_type_name(t));
        s->shape_s4[t] = og_init_i64(s->o.g, nm, 4, s4);
        snprintf(nm, sizeof nm, "shape_scores_%s", spark_decode_type_name(t));
        s->shape_p3[t] = og_init_i64(s->o.g, nm, 3, p3);
    }
}

static size_t largest_matrix(const ember_model *m)
{
    const spark_config *c = &m->cfg;
    size_t best = (size_t)c->vocab * (size_t)c->hidden;
    size_t inter = (size_t)c->intermediate * (size_t)c->hidden;
    size_t q = (size_t)c->n_heads * (size_t)c->head_dim * (size_t)c->hidden;
    if (inter > best) best = inter;
    if (q > best) best = q;
    return best;
}

ember_status spark_decode_graph_write(const ember_model *m, const spark_decode_layout *lay,
                                      const float *act_range, const char *model_path, og_data *data)
{
    const spark_config *c = &m->cfg;
    ember_status st = spark_decode_check_model(m);
    if (st) return st;
    const int64_t B = SPARK_ONNX_INT4_BLOCK;
    if (spark_onnx_weight_bits(lay->form) == 4 &&
        (c->hidden % B || c->intermediate % B || ((int64_t)c->n_heads * c->head_dim) % B))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the int4 form needs hidden, intermediate "
                          "and heads x head_dim to be multiples of %d", (int)B);
    if (lay->tokens < 1 || lay->tokens > lay->context)
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: %d tokens per run do not fit the context %d",
                          lay->tokens, lay->context);
    step_ctx s = {0};
    s.m = m;
    s.c = c;
    s.lay = lay;
    s.T = lay->tokens;
    s.act_range = spark_onnx_a16(lay->form) ? act_range : NULL;
    if (spark_onnx_a16(lay->form) && !act_range)
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: the %s form needs calibrated activation ranges",
                          spark_onnx_form_name(lay->form));
    /* the transposed matrix plus one source row */
    size_t cols_max = (size_t)(c->hidden > c->intermediate ? c->hidden : c->intermediate);
    if ((size_t)c->n_heads * (size_t)c->head_dim > cols_max) cols_max = (size_t)c->n_heads * (size_t)c->head_dim;
    st = go_init(&s.o, lay->form, largest_matrix(m), cols_max);
    if (st) return st;
    char name[64];
    if (s.T == 1)
        snprintf(name, sizeof name, "spark_decode_ar1_cl%d", lay->context);
    else
        snprintf(name, sizeof name, "spark_prefill_ar%d_cl%d", lay->tokens, lay->context);
    st = og_create_shared(name, data, &s.o.g);
    if (st) {
        go_free(&s.o);
        return st;
    }
    constants(&s);
    const int64_t tdims[1] = {s.T};
    const char *token = og_input(s.o.g, s.T == 1 ? "token" : "tokens", OG_INT32, 1, tdims);
    declare_inputs(&s);

    float *row = s.o.tmp;
    for (int64_t r = 0; r < c->vocab; r++) ek_row_to_f32(row + r * c->hidden, &m->embed, r);
    /* the table stays float in the QDQ form: a gathered row would need its
     * scale gathered too */
    const char *table = go_matrix(&s.o, "embedding", c->vocab, c->hidden, s.o.tmp, 0);
    const char *gin[2] = {table, token};
    const char *x = og_node(s.o.g, "Gather", "embed", 2, gin, 0, NULL);

    for (int li = 0; li < c->n_layers && !og_status(s.o.g); li++) {
        snprintf(name, sizeof name, "layers.%d.attn_norm", li);
        attention(&s, li, go_rmsnorm(&s.o, name, x, m->layers[li].attn_norm, c->hidden), &x);
        mlp(&s, li, &x);
    }
    const char *h = go_rmsnorm(&s.o, "final_norm", x, m->final_norm, c->hidden);
    if (s.act_range) {
        const float *r = s.act_range + 2 * (c->n_layers * SPARK_A16_PER_LAYER);
        h = go_qdq16(&s.o, "lm_head", h, r[0], r[1]);
    }
    const char *lm_in[2] = {h, go_weight_t(&s.o, "lm_head.weight_t", &m->lm_head)};
    og_node_named(s.o.g, "MatMul", "logits", 2, lm_in, 0, NULL);
    const int64_t ldims[2] = {s.T, c->vocab};
    og_output(s.o.g, "logits", s.o.et, 2, ldims);

    st = og_write(s.o.g, model_path, spark_onnx_ir_version(lay->form), spark_onnx_opset(lay->form),
                  ember_version_string());
    og_free(s.o.g);
    go_free(&s.o);
    return st;
}
