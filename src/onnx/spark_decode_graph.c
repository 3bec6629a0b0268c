#include "onnx/spark_decode_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/status.h"
#include "onnx/onnx_graph.h"

#define OPSET 17
#define IR_VERSION 8 /* the newest Debian's onnx 1.12 checker accepts */

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
    og_graph *g;
    const ember_model *m;
    const spark_config *c;
    const spark_decode_layout *lay;
    float *tmp; /* the largest transposed matrix */
    const char *eps, *one, *half_c, *sqrt2, *scale;
    const char *shape_q, *shape_k, *shape_knew, *shape_vnew, *shape_gate, *shape_flat;
    const char *cos[SPARK_LAYER_TYPES], *sin[SPARK_LAYER_TYPES], *mask[SPARK_LAYER_TYPES];
} step_ctx;

static const char *node2(step_ctx *s, const char *op, const char *hint, const char *a,
                         const char *b)
{
    const char *in[2] = {a, b};
    return og_node(s->g, op, hint, 2, in, 0, NULL);
}

static const char *node1(step_ctx *s, const char *op, const char *hint, const char *a)
{
    return og_node(s->g, op, hint, 1, &a, 0, NULL);
}

/* W^T of a [rows, cols] weight as a [cols, rows] f32 initializer: x @ W^T is
 * a MatMul whose second input is a rank-2 initializer (QNN FullyConnected). */
static const char *weight_t(step_ctx *s, const char *name, const ek_matrix *w)
{
    const int64_t rows = w->rows, cols = w->cols;
    float *row = s->tmp + rows * cols;
    for (int64_t r = 0; r < rows; r++) {
        ek_row_to_f32(row, w, r);
        for (int64_t k = 0; k < cols; k++) s->tmp[k * rows + r] = row[k];
    }
    const int64_t dims[2] = {cols, rows};
    return og_init_f32(s->g, name, 2, dims, s->tmp);
}

static const char *vector(step_ctx *s, const char *name, const float *v, int64_t n)
{
    return og_init_f32(s->g, name, 1, &n, v);
}

/* x @ W^T (+ b) */
static const char *linear(step_ctx *s, const char *name, const char *x, const ek_matrix *w,
                          const float *b)
{
    char nm[128];
    snprintf(nm, sizeof nm, "%s.weight_t", name);
    const char *y = node2(s, "MatMul", name, x, weight_t(s, nm, w));
    if (!b) return y;
    snprintf(nm, sizeof nm, "%s.bias", name);
    return node2(s, "Add", name, y, vector(s, nm, b, w->rows));
}

/* x * 1/sqrt(mean(x^2) + eps) * w, over the last axis */
static const char *rmsnorm(step_ctx *s, const char *name, const char *x, const float *w)
{
    const int64_t last = -1;
    const og_attr mean_attrs[2] = {{"axes", OG_ATTR_INTS, 0, 0, &last, 1},
                                   {"keepdims", OG_ATTR_INT, 1, 0, NULL, 0}};
    const char *sq = node2(s, "Mul", name, x, x);
    const char *ms = og_node(s->g, "ReduceMean", name, 1, &sq, 2, mean_attrs);
    const char *r = node1(s, "Reciprocal", name, node1(s, "Sqrt", name, node2(s, "Add", name, ms, s->eps)));
    return node2(s, "Mul", name, node2(s, "Mul", name, x, r), vector(s, name, w, s->c->hidden));
}

static const char *slice_last(step_ctx *s, const char *x, int64_t from, int64_t to)
{
    char nm[64];
    snprintf(nm, sizeof nm, "slice_%lld_%lld", (long long)from, (long long)to);
    const int64_t last = -1;
    /* initializers are shared by name: one per distinct bound */
    const char *in[4] = {x, NULL, NULL, NULL};
    char a[80], b[80];
    snprintf(a, sizeof a, "%s.start", nm);
    snprintf(b, sizeof b, "%s.end", nm);
    in[1] = og_init_i64(s->g, a, 1, &from);
    in[2] = og_init_i64(s->g, b, 1, &to);
    snprintf(a, sizeof a, "%s.axes", nm);
    in[3] = og_init_i64(s->g, a, 1, &last);
    return og_node(s->g, "Slice", "slice", 4, in, 0, NULL);
}

/* NeoX rotate-half RoPE on the leading 2*half dims of the last axis. */
static const char *rope(step_ctx *s, const char *x, int type)
{
    const int64_t half = s->lay->half[type], d = s->c->head_dim;
    if (half == 0) return x;
    const char *x1 = slice_last(s, x, 0, half), *x2 = slice_last(s, x, half, 2 * half);
    const char *cs = s->cos[type], *sn = s->sin[type];
    const char *parts[3] = {
        node2(s, "Sub", "rope", node2(s, "Mul", "rope", x1, cs), node2(s, "Mul", "rope", x2, sn)),
        node2(s, "Add", "rope", node2(s, "Mul", "rope", x2, cs), node2(s, "Mul", "rope", x1, sn)),
        2 * half < d ? slice_last(s, x, 2 * half, d) : NULL};
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    return og_node(s->g, "Concat", "rope", parts[2] ? 3 : 2, parts, 1, &axis);
}

static void attention(step_ctx *s, int li, const char *h, const char **x)
{
    const spark_config *c = s->c;
    const spark_layer *W = &s->m->layers[li];
    const int type = c->layer_type[li];
    const int64_t KV = c->n_kv_heads, d = c->head_dim, S = s->lay->slots[type];
    char nm[96], key_in[48], val_in[48], key_out[48], val_out[48];
    snprintf(key_in, sizeof key_in, "past_key_%d", li);
    snprintf(val_in, sizeof val_in, "past_value_%d", li);
    snprintf(key_out, sizeof key_out, "new_key_%d", li);
    snprintf(val_out, sizeof val_out, "new_value_%d", li);
    const int64_t kdims[3] = {KV, d, S}, vdims[3] = {KV, S, d};
    const int64_t kndims[3] = {KV, d, 1}, vndims[3] = {KV, 1, d};
    const char *past_k = og_input(s->g, key_in, OG_FLOAT, 3, kdims);
    const char *past_v = og_input(s->g, val_in, OG_FLOAT, 3, vdims);

    snprintf(nm, sizeof nm, "layers.%d.q", li);
    const char *q = linear(s, nm, h, &W->wq, W->bq);
    snprintf(nm, sizeof nm, "layers.%d.k", li);
    const char *k = linear(s, nm, h, &W->wk, W->bk);
    snprintf(nm, sizeof nm, "layers.%d.v", li);
    const char *v = linear(s, nm, h, &W->wv, W->bv);

    /* GQA: the query as [kv_heads, group, d], never K/V expanded */
    q = rope(s, node2(s, "Reshape", "q", q, s->shape_q), type);
    const char *in2[2] = {rope(s, node2(s, "Reshape", "k", k, s->shape_k), type), s->shape_knew};
    const char *k_new = og_node_named(s->g, "Reshape", key_out, 2, in2, 0, NULL);
    const char *in3[2] = {v, s->shape_vnew};
    const char *v_new = og_node_named(s->g, "Reshape", val_out, 2, in3, 0, NULL);
    og_output(s->g, key_out, OG_FLOAT, 3, kndims);
    og_output(s->g, val_out, OG_FLOAT, 3, vndims);

    /* score space: cached slots (masked) and the new key, one softmax */
    const char *s_cache = node2(s, "Add", "scores", node2(s, "MatMul", "scores", q, past_k),
                                s->mask[type]);
    const char *s_new = node2(s, "MatMul", "score_new", q, k_new);
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    const char *both[2] = {s_cache, s_new};
    const char *scores = og_node(s->g, "Concat", "scores", 2, both, 1, &axis);
    scores = node2(s, "Mul", "scores", scores, s->scale);
    const char *p = og_node(s->g, "Softmax", "probs", 1, &scores, 1, &axis);
    const char *o = node2(s, "Add", "attn", node2(s, "MatMul", "attn", slice_last(s, p, 0, S), past_v),
                          node2(s, "MatMul", "attn", slice_last(s, p, S, S + 1), v_new));

    if (c->gate != SPARK_GATE_NONE) {
        snprintf(nm, sizeof nm, "layers.%d.gate", li);
        const char *gl = linear(s, nm, h, &W->wg, W->bg);
        const char *gate = node1(s, "Sigmoid", "gate", gl);
        if (c->gate == SPARK_GATE_SILU) gate = node2(s, "Mul", "gate", gl, gate);
        o = node2(s, "Mul", "attn", o, node2(s, "Reshape", "gate", gate, s->shape_gate));
    }
    o = node2(s, "Reshape", "attn", o, s->shape_flat);
    snprintf(nm, sizeof nm, "layers.%d.out", li);
    *x = node2(s, "Add", "resid", *x, linear(s, nm, o, &W->wo, W->bo));
}

static void mlp(step_ctx *s, int li, const char **x)
{
    const spark_layer *W = &s->m->layers[li];
    char nm[96];
    snprintf(nm, sizeof nm, "layers.%d.mlp_norm", li);
    const char *h = rmsnorm(s, nm, *x, W->mlp_norm);
    snprintf(nm, sizeof nm, "layers.%d.ffn_gate", li);
    const char *g = linear(s, nm, h, &W->w_gate, W->b_gate);
    snprintf(nm, sizeof nm, "layers.%d.ffn_up", li);
    const char *u = linear(s, nm, h, &W->w_up, W->b_up);
    /* exact GELU, as x * (erf(x / sqrt 2) + 1) * 0.5: the decomposition QNN
     * fuses into one GELU (Erf alone is not an HTP op) */
    const char *e = node1(s, "Erf", "gelu", node2(s, "Div", "gelu", g, s->sqrt2));
    const char *gelu = node2(s, "Mul", "gelu", node2(s, "Mul", "gelu", g, node2(s, "Add", "gelu", e, s->one)),
                             s->half_c);
    snprintf(nm, sizeof nm, "layers.%d.ffn_down", li);
    *x = node2(s, "Add", "resid", *x, linear(s, nm, node2(s, "Mul", "ffn", gelu, u), &W->w_down, W->b_down));
}

static void declare_inputs(step_ctx *s)
{
    const spark_decode_layout *lay = s->lay;
    char nm[32];
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!lay->has_type[t]) continue;
        const int64_t rdims[2] = {1, lay->half[t]}, mdims[2] = {1, lay->slots[t]};
        if (lay->half[t] > 0) {
            snprintf(nm, sizeof nm, "cos_%s", spark_decode_type_name(t));
            s->cos[t] = og_input(s->g, nm, OG_FLOAT, 2, rdims);
            snprintf(nm, sizeof nm, "sin_%s", spark_decode_type_name(t));
            s->sin[t] = og_input(s->g, nm, OG_FLOAT, 2, rdims);
        }
        snprintf(nm, sizeof nm, "mask_%s", spark_decode_type_name(t));
        s->mask[t] = og_input(s->g, nm, OG_FLOAT, 2, mdims);
    }
}

static void constants(step_ctx *s)
{
    const spark_config *c = s->c;
    const int64_t KV = c->n_kv_heads, G = c->n_heads / c->n_kv_heads, d = c->head_dim;
    s->eps = og_const_f32(s->g, "rms_eps", c->rms_eps);
    s->one = og_const_f32(s->g, "one", 1.0f);
    s->half_c = og_const_f32(s->g, "one_half", 0.5f);
    s->sqrt2 = og_const_f32(s->g, "sqrt2", (float)M_SQRT2);
    s->scale = og_const_f32(s->g, "attn_scale", 1.0f / sqrtf((float)d));
    const int64_t q[3] = {KV, G, d}, k[2] = {KV, d}, kn[3] = {KV, d, 1}, vn[3] = {KV, 1, d},
                  gate[3] = {KV, G, 1}, flat[2] = {1, KV * G * d};
    s->shape_q = og_init_i64(s->g, "shape_q", 3, q);
    s->shape_k = og_init_i64(s->g, "shape_k", 2, k);
    s->shape_knew = og_init_i64(s->g, "shape_new_key", 3, kn);
    s->shape_vnew = og_init_i64(s->g, "shape_new_value", 3, vn);
    s->shape_gate = og_init_i64(s->g, "shape_gate", 3, gate);
    s->shape_flat = og_init_i64(s->g, "shape_attn", 2, flat);
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
                                      const char *model_path, const char *data_path,
                                      const char *data_location)
{
    const spark_config *c = &m->cfg;
    ember_status st = spark_decode_check_model(m);
    if (st) return st;
    step_ctx s = {0};
    s.m = m;
    s.c = c;
    s.lay = lay;
    /* the transposed matrix plus one source row */
    size_t cols_max = (size_t)(c->hidden > c->intermediate ? c->hidden : c->intermediate);
    if ((size_t)c->n_heads * (size_t)c->head_dim > cols_max) cols_max = (size_t)c->n_heads * (size_t)c->head_dim;
    s.tmp = malloc((largest_matrix(m) + cols_max) * sizeof *s.tmp);
    if (!s.tmp) return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot allocate a weight buffer");
    char name[64];
    snprintf(name, sizeof name, "spark_decode_ar1_cl%d", lay->context);
    st = og_create(name, data_path, data_location, &s.g);
    if (st) {
        free(s.tmp);
        return st;
    }
    constants(&s);
    const int64_t one[1] = {1};
    const char *token = og_input(s.g, "token", OG_INT32, 1, one);
    declare_inputs(&s);

    const int64_t edims[2] = {c->vocab, c->hidden};
    float *row = s.tmp;
    for (int64_t r = 0; r < c->vocab; r++) ek_row_to_f32(row + r * c->hidden, &m->embed, r);
    const char *table = og_init_f32(s.g, "embedding", 2, edims, s.tmp);
    const char *gin[2] = {table, token};
    const char *x = og_node(s.g, "Gather", "embed", 2, gin, 0, NULL);

    for (int li = 0; li < c->n_layers && !og_status(s.g); li++) {
        snprintf(name, sizeof name, "layers.%d.attn_norm", li);
        attention(&s, li, rmsnorm(&s, name, x, m->layers[li].attn_norm), &x);
        mlp(&s, li, &x);
    }
    const char *h = rmsnorm(&s, "final_norm", x, m->final_norm);
    const char *lm_in[2] = {h, weight_t(&s, "lm_head.weight_t", &m->lm_head)};
    og_node_named(s.g, "MatMul", "logits", 2, lm_in, 0, NULL);
    const int64_t ldims[2] = {1, c->vocab};
    og_output(s.g, "logits", OG_FLOAT, 2, ldims);

    st = og_write(s.g, model_path, IR_VERSION, OPSET, ember_version_string());
    og_free(s.g);
    free(s.tmp);
    return st;
}
