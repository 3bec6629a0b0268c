#include "onnx/spark_decode_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
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
    og_graph *g;
    const ember_model *m;
    const spark_config *c;
    const spark_decode_layout *lay;
    float *tmp;   /* the largest transposed matrix */
    void *packed; /* the same converted to f16 or int8 */
    int et;       /* element type of activations and float I/O */
    int64_t T;    /* tokens per run */
    const char *eps, *one, *half_c, *sqrt2, *scale;
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
    const char *in[2] = {a, b};
    return og_node(s->g, op, hint, 2, in, 0, NULL);
}

static const char *node1(step_ctx *s, const char *op, const char *hint, const char *a)
{
    return og_node(s->g, op, hint, 1, &a, 0, NULL);
}

/* Symmetric int8 per output channel: scale = max|w| / 127 over a column of
 * W^T (a row of W), q = round(w / scale). */
static void quantize_columns(const float *wt, int64_t cols, int64_t rows, int8_t *q, float *scale)
{
    for (int64_t r = 0; r < rows; r++) {
        float amax = 0;
        for (int64_t k = 0; k < cols; k++) amax = fmaxf(amax, fabsf(wt[k * rows + r]));
        scale[r] = amax > 0 ? amax / 127.0f : 1.0f;
    }
    for (int64_t k = 0; k < cols; k++)
        for (int64_t r = 0; r < rows; r++) {
            float v = roundf(wt[k * rows + r] / scale[r]);
            q[k * rows + r] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
}

/* Symmetric int4 in blocks of 64 rows of W^T (the input axis) per column:
 * scale = max|w| / 7 over the block, q in [-7, 7] packed two to a byte in
 * row-major order, the first in the low nibble. */
static void quantize_blocks4(const float *wt, int64_t cols, int64_t rows, uint8_t *q, float *scale)
{
    const int64_t B = SPARK_ONNX_INT4_BLOCK;
    memset(q, 0, (size_t)((cols * rows + 1) / 2));
    for (int64_t b = 0; b < cols / B; b++)
        for (int64_t r = 0; r < rows; r++) {
            float amax = 0;
            for (int64_t k = b * B; k < (b + 1) * B; k++) amax = fmaxf(amax, fabsf(wt[k * rows + r]));
            const float sc = amax > 0 ? amax / 7.0f : 1.0f;
            scale[b * rows + r] = sc;
            for (int64_t k = b * B; k < (b + 1) * B; k++) {
                float v = roundf(wt[k * rows + r] / sc);
                const int iv = v > 7 ? 7 : v < -7 ? -7 : (int)v;
                const int64_t i = k * rows + r;
                q[i / 2] |= (uint8_t)((iv & 15) << (i % 2 ? 4 : 0));
            }
        }
}

/* The int4 form's DequantizeLinear: weight [K, N], scales and int4 zero
 * points [K/64, N] (QNN reads 4-bit from the zero point's type). */
static const char *dequantize4(step_ctx *s, const char *name, int64_t rows, int64_t cols,
                               const float *data)
{
    const int64_t n = rows * cols, B = SPARK_ONNX_INT4_BLOCK;
    const int64_t dims[2] = {rows, cols}, sdims[2] = {rows / B, cols};
    const size_t qbytes = (size_t)(n + 1) / 2, sbytes = (size_t)(rows / B * cols) * sizeof(float);
    uint8_t *q = s->packed;
    float *scale = (float *)((char *)s->packed + (qbytes + 64) / 64 * 64);
    uint8_t *zero = (uint8_t *)scale + (sbytes + 64) / 64 * 64;
    quantize_blocks4(data, rows, cols, q, scale);
    memset(zero, 0, (size_t)(rows / B * cols + 1) / 2);
    char nm[160];
    snprintf(nm, sizeof nm, "%s.int4", name);
    const char *in[3] = {og_init_packed(s->g, nm, OG_INT4, 2, dims, q, qbytes), NULL, NULL};
    snprintf(nm, sizeof nm, "%s.scale", name);
    in[1] = og_init_f32(s->g, nm, 2, sdims, scale);
    snprintf(nm, sizeof nm, "%s.zero_point", name);
    in[2] = og_init_packed(s->g, nm, OG_INT4, 2, sdims, zero, (size_t)(rows / B * cols + 1) / 2);
    const og_attr attrs[2] = {{"axis", OG_ATTR_INT, 0, 0, NULL, 0}, {"block_size", OG_ATTR_INT, B, 0, NULL, 0}};
    return og_node(s->g, "DequantizeLinear", name, 3, in, 2, attrs);
}

/* A float matrix initializer in the graph's form: f32, f16, or (QDQ) int8
 * per column plus a DequantizeLinear whose output is the f32 matrix. */
static const char *float_matrix(step_ctx *s, const char *name, int64_t rows, int64_t cols,
                                const float *data, int quantize)
{
    const int64_t dims[2] = {rows, cols}, n = rows * cols;
    if (s->et == OG_FLOAT16) {
        uint16_t *h = s->packed;
        for (int64_t i = 0; i < n; i++) h[i] = ek_f32_to_f16(data[i]);
        return og_init_raw(s->g, name, OG_FLOAT16, 2, dims, h, 2);
    }
    if (!quantize) return og_init_f32(s->g, name, 2, dims, data);
    if (s->lay->form == SPARK_ONNX_QDQ4) return dequantize4(s, name, rows, cols, data);
    char nm[160];
    float *scale = (float *)((char *)s->packed + ((size_t)n + 64) / 64 * 64);
    quantize_columns(data, rows, cols, s->packed, scale);
    snprintf(nm, sizeof nm, "%s.int8", name);
    const char *q = og_init_raw(s->g, nm, OG_INT8, 2, dims, s->packed, 1);
    snprintf(nm, sizeof nm, "%s.scale", name);
    const char *in[2] = {q, og_init_f32(s->g, nm, 1, &cols, scale)};
    const og_attr axis = {"axis", OG_ATTR_INT, 1, 0, NULL, 0};
    return og_node(s->g, "DequantizeLinear", name, 2, in, 1, &axis);
}

/* W^T of a [rows, cols] weight as a [cols, rows] initializer: x @ W^T is
 * a MatMul whose second input is a rank-2 initializer (QNN FullyConnected). */
static const char *weight_t(step_ctx *s, const char *name, const ek_matrix *w)
{
    const int64_t rows = w->rows, cols = w->cols;
    float *row = s->tmp + rows * cols;
    for (int64_t r = 0; r < rows; r++) {
        ek_row_to_f32(row, w, r);
        for (int64_t k = 0; k < cols; k++) s->tmp[k * rows + r] = row[k];
    }
    return float_matrix(s, name, cols, rows, s->tmp,
                        s->lay->form == SPARK_ONNX_QDQ8 || s->lay->form == SPARK_ONNX_QDQ4);
}

static const char *vector(step_ctx *s, const char *name, const float *v, int64_t n)
{
    if (s->et == OG_FLOAT) return og_init_f32(s->g, name, 1, &n, v);
    uint16_t *h = s->packed;
    for (int64_t i = 0; i < n; i++) h[i] = ek_f32_to_f16(v[i]);
    return og_init_raw(s->g, name, OG_FLOAT16, 1, &n, h, 2);
}

static const char *transpose(step_ctx *s, const char *name, const char *x, int rank,
                             const int64_t *perm)
{
    const og_attr a = {"perm", OG_ATTR_INTS, 0, 0, perm, rank};
    return name ? og_node_named(s->g, "Transpose", name, 1, &x, 1, &a)
                : og_node(s->g, "Transpose", "transpose", 1, &x, 1, &a);
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
    const og_attr mean_attrs[2] = {{"keepdims", OG_ATTR_INT, 1, 0, NULL, 0},
                                   {"axes", OG_ATTR_INTS, 0, 0, &last, 1}};
    const char *sq = node2(s, "Mul", name, x, x);
    /* from opset 18 the axes are a (1-D, constant) input, no longer an attribute */
    const int axes_input = spark_onnx_opset(s->lay->form) >= 18;
    const char *in[2] = {sq, axes_input ? og_init_i64(s->g, "axes_last", 1, &last) : NULL};
    const char *ms = og_node(s->g, "ReduceMean", name, axes_input ? 2 : 1, in, axes_input ? 1 : 2, mean_attrs);
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

/* A prefill chunk's additive mask [T, 1, n] joined to scores [KV, T*G, n]:
 * through the view [KV, T, G, n] (every query head of a token shares its
 * token's row). */
static const char *masked_chunk(step_ctx *s, const char *scores, const char *shape4,
                                const char *shape3, const char *mask)
{
    const char *x = node2(s, "Add", "scores", node2(s, "Reshape", "scores", scores, shape4), mask);
    return node2(s, "Reshape", "scores", x, shape3);
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
    const char *past_k = og_input(s->g, key_in, s->et, 3, kdims);
    const char *past_v = og_input(s->g, val_in, s->et, 3, vdims);

    snprintf(nm, sizeof nm, "layers.%d.q", li);
    const char *q = linear(s, nm, h, &W->wq, W->bq);
    snprintf(nm, sizeof nm, "layers.%d.k", li);
    const char *k = linear(s, nm, h, &W->wk, W->bk);
    snprintf(nm, sizeof nm, "layers.%d.v", li);
    const char *v = linear(s, nm, h, &W->wv, W->bv);

    /* GQA: the query as [kv_heads, tokens * group, d], never K/V expanded.
     * One token needs only Reshapes; a chunk rotates per token first and
     * moves the kv-head axis to the front. */
    const char *k_new, *v_new;
    if (T == 1) {
        q = rope(s, node2(s, "Reshape", "q", q, s->shape_q), type);
        const char *in2[2] = {rope(s, node2(s, "Reshape", "k", k, s->shape_k), type), s->shape_knew};
        k_new = og_node_named(s->g, "Reshape", key_out, 2, in2, 0, NULL);
        const char *in3[2] = {v, s->shape_vnew};
        v_new = og_node_named(s->g, "Reshape", val_out, 2, in3, 0, NULL);
    } else {
        static const int64_t heads_first[4] = {1, 0, 2, 3}, key_t[3] = {1, 2, 0}, val_t[3] = {1, 0, 2};
        q = rope(s, node2(s, "Reshape", "q", q, s->shape_qt), type);          /* [T, H, d] */
        q = transpose(s, NULL, node2(s, "Reshape", "q", q, s->shape_o4), 4, heads_first);
        q = node2(s, "Reshape", "q", q, s->shape_q3);                         /* [KV, T*G, d] */
        k = rope(s, node2(s, "Reshape", "k", k, s->shape_kt), type);          /* [T, KV, d] */
        k_new = transpose(s, key_out, k, 3, key_t);
        v_new = transpose(s, val_out, node2(s, "Reshape", "v", v, s->shape_kt), 3, val_t);
    }
    og_output(s->g, key_out, s->et, 3, kndims);
    og_output(s->g, val_out, s->et, 3, vndims);

    /* score space: cached slots (masked) and the new keys, one softmax */
    const char *s_cache = node2(s, "MatMul", "scores", q, past_k);
    const char *s_new = node2(s, "MatMul", "score_new", q, k_new);
    if (T == 1) {
        s_cache = node2(s, "Add", "scores", s_cache, s->mask[type]);
    } else {
        s_cache = masked_chunk(s, s_cache, s->shape_s4[type], s->shape_p3[type], s->mask[type]);
        s_new = masked_chunk(s, s_new, s->shape_n4, s->shape_pn3, s->chunk_mask[type]);
    }
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    const char *both[2] = {s_cache, s_new};
    const char *scores = og_node(s->g, "Concat", "scores", 2, both, 1, &axis);
    scores = node2(s, "Mul", "scores", scores, s->scale);
    const char *p = og_node(s->g, "Softmax", "probs", 1, &scores, 1, &axis);
    const char *o = node2(s, "Add", "attn", node2(s, "MatMul", "attn", slice_last(s, p, 0, S), past_v),
                          node2(s, "MatMul", "attn", slice_last(s, p, S, S + T), v_new));
    if (T > 1) {
        static const int64_t tokens_first[4] = {1, 0, 2, 3};
        o = transpose(s, NULL, node2(s, "Reshape", "attn", o, s->shape_o4t), 4, tokens_first);
    }

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
            s->cos[t] = og_input(s->g, nm, s->et, rank, T == 1 ? rd1 : rdims);
            snprintf(nm, sizeof nm, "sin_%s", ty);
            s->sin[t] = og_input(s->g, nm, s->et, rank, T == 1 ? rd1 : rdims);
        }
        snprintf(nm, sizeof nm, "mask_%s", ty);
        s->mask[t] = og_input(s->g, nm, s->et, rank, T == 1 ? md1 : mdims);
        if (T > 1) {
            snprintf(nm, sizeof nm, "chunk_mask_%s", ty);
            s->chunk_mask[t] = og_input(s->g, nm, s->et, 3, cdims);
        }
    }
}

static void constants(step_ctx *s)
{
    const spark_config *c = s->c;
    const int64_t KV = c->n_kv_heads, G = c->n_heads / c->n_kv_heads, d = c->head_dim, T = s->T;
    s->eps = og_const_float(s->g, "rms_eps", s->et, c->rms_eps);
    s->one = og_const_float(s->g, "one", s->et, 1.0f);
    s->half_c = og_const_float(s->g, "one_half", s->et, 0.5f);
    s->sqrt2 = og_const_float(s->g, "sqrt2", s->et, (float)M_SQRT2);
    s->scale = og_const_float(s->g, "attn_scale", s->et, 1.0f / sqrtf((float)d));
    const int64_t q[3] = {KV, G, d}, k[2] = {KV, d}, kn[3] = {KV, d, 1}, vn[3] = {KV, 1, d},
                  gate[3] = {KV, G, 1}, gate_t[4] = {T, KV, G, 1}, flat[2] = {T, KV * G * d};
    s->shape_flat = og_init_i64(s->g, "shape_attn", 2, flat);
    if (T == 1) {
        s->shape_q = og_init_i64(s->g, "shape_q", 3, q);
        s->shape_k = og_init_i64(s->g, "shape_k", 2, k);
        s->shape_knew = og_init_i64(s->g, "shape_new_key", 3, kn);
        s->shape_vnew = og_init_i64(s->g, "shape_new_value", 3, vn);
        s->shape_gate = og_init_i64(s->g, "shape_gate", 3, gate);
        return;
    }
    s->shape_gate = og_init_i64(s->g, "shape_gate", 4, gate_t);
    const int64_t qt[3] = {T, KV * G, d}, q3[3] = {KV, T * G, d}, kt[3] = {T, KV, d},
                  n4[4] = {KV, T, G, T}, pn3[3] = {KV, T * G, T}, o4[4] = {T, KV, G, d},
                  o4t[4] = {KV, T, G, d};
    s->shape_qt = og_init_i64(s->g, "shape_q_tokens", 3, qt);
    s->shape_q3 = og_init_i64(s->g, "shape_q_heads", 3, q3);
    s->shape_kt = og_init_i64(s->g, "shape_kv_tokens", 3, kt);
    s->shape_n4 = og_init_i64(s->g, "shape_chunk_scores4", 4, n4);
    s->shape_pn3 = og_init_i64(s->g, "shape_chunk_scores", 3, pn3);
    s->shape_o4 = og_init_i64(s->g, "shape_tokens_heads", 4, o4);
    s->shape_o4t = og_init_i64(s->g, "shape_heads_tokens", 4, o4t);
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        if (!s->lay->has_type[t]) continue;
        const int64_t S = s->lay->slots[t], s4[4] = {KV, T, G, S}, p3[3] = {KV, T * G, S};
        char nm[48];
        snprintf(nm, sizeof nm, "shape_scores4_%s", spark_decode_type_name(t));
        s->shape_s4[t] = og_init_i64(s->g, nm, 4, s4);
        snprintf(nm, sizeof nm, "shape_scores_%s", spark_decode_type_name(t));
        s->shape_p3[t] = og_init_i64(s->g, nm, 3, p3);
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
                                      const char *model_path, og_data *data)
{
    const spark_config *c = &m->cfg;
    ember_status st = spark_decode_check_model(m);
    if (st) return st;
    const int64_t B = SPARK_ONNX_INT4_BLOCK;
    if (lay->form == SPARK_ONNX_QDQ4 &&
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
    s.et = lay->form == SPARK_ONNX_F16 ? OG_FLOAT16 : OG_FLOAT;
    /* the transposed matrix plus one source row */
    size_t cols_max = (size_t)(c->hidden > c->intermediate ? c->hidden : c->intermediate);
    if ((size_t)c->n_heads * (size_t)c->head_dim > cols_max) cols_max = (size_t)c->n_heads * (size_t)c->head_dim;
    const size_t floats = largest_matrix(m) + cols_max + 64;
    s.tmp = malloc(floats * sizeof *s.tmp);
    s.packed = malloc(floats * sizeof *s.tmp);
    if (!s.tmp || !s.packed) {
        free(s.tmp);
        free(s.packed);
        return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot allocate a weight buffer");
    }
    char name[64];
    if (s.T == 1)
        snprintf(name, sizeof name, "spark_decode_ar1_cl%d", lay->context);
    else
        snprintf(name, sizeof name, "spark_prefill_ar%d_cl%d", lay->tokens, lay->context);
    st = og_create_shared(name, data, &s.g);
    if (st) {
        free(s.tmp);
        free(s.packed);
        return st;
    }
    constants(&s);
    const int64_t tdims[1] = {s.T};
    const char *token = og_input(s.g, s.T == 1 ? "token" : "tokens", OG_INT32, 1, tdims);
    declare_inputs(&s);

    float *row = s.tmp;
    for (int64_t r = 0; r < c->vocab; r++) ek_row_to_f32(row + r * c->hidden, &m->embed, r);
    /* the table stays float in the QDQ form: a gathered row would need its
     * scale gathered too */
    const char *table = float_matrix(&s, "embedding", c->vocab, c->hidden, s.tmp, 0);
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
    const int64_t ldims[2] = {s.T, c->vocab};
    og_output(s.g, "logits", s.et, 2, ldims);

    st = og_write(s.g, model_path, spark_onnx_ir_version(lay->form), spark_onnx_opset(lay->form),
                  ember_version_string());
    og_free(s.g);
    free(s.tmp);
    free(s.packed);
    return st;
}
