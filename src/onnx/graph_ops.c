#include "onnx/graph_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/convert.h"
#include "kernels/formats.h"

ember_status go_init(go_ctx *o, spark_onnx_form form, size_t max_elems, size_t max_cols)
{
    memset(o, 0, sizeof *o);
    o->form = form;
    o->et = form == SPARK_ONNX_F16 ? OG_FLOAT16 : OG_FLOAT;
    const size_t floats = max_elems + max_cols + 64;
    o->tmp = malloc(floats * sizeof *o->tmp);
    o->packed = malloc(floats * sizeof *o->tmp);
    if (!o->tmp || !o->packed) {
        go_free(o);
        return ember_fail(EMBER_ERR_NO_MEMORY, "export: cannot allocate a weight buffer");
    }
    return EMBER_OK;
}

void go_free(go_ctx *o)
{
    free(o->tmp);
    free(o->packed);
    o->tmp = NULL;
    o->packed = NULL;
}

const char *go_node2(go_ctx *o, const char *op, const char *hint, const char *a, const char *b)
{
    const char *in[2] = {a, b};
    return og_node(o->g, op, hint, 2, in, 0, NULL);
}

const char *go_node1(go_ctx *o, const char *op, const char *hint, const char *a)
{
    return og_node(o->g, op, hint, 1, &a, 0, NULL);
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

/* LPBQ: each column's block scales as uint8 integers u (1..255) times one
 * f32 scale per column, ch = max block scale / 255, u = round(scale / ch);
 * scale becomes u * ch, the scale the int4 values are then rounded with. */
static void lpbq_scales(float *scale, int64_t blocks, int64_t rows, uint8_t *u, float *ch)
{
    for (int64_t r = 0; r < rows; r++) {
        float top = 0;
        for (int64_t b = 0; b < blocks; b++) top = fmaxf(top, scale[b * rows + r]);
        ch[r] = top / 255.0f;
        for (int64_t b = 0; b < blocks; b++) {
            const float v = roundf(scale[b * rows + r] / ch[r]);
            u[b * rows + r] = (uint8_t)(v < 1 ? 1 : v > 255 ? 255 : v);
            scale[b * rows + r] = (float)u[b * rows + r] * ch[r];
        }
    }
}

/* Symmetric int4 in blocks of 64 rows of W^T (the input axis) per column:
 * scale = max|w| / 7 over the block (or, with u and ch, its LPBQ form),
 * q in [-7, 7] packed two to a byte in row-major order, the first in the
 * low nibble. */
static void quantize_blocks4(const float *wt, int64_t cols, int64_t rows, uint8_t *q, float *scale, uint8_t *u,
                             float *ch)
{
    const int64_t B = SPARK_ONNX_INT4_BLOCK;
    memset(q, 0, (size_t)((cols * rows + 1) / 2));
    for (int64_t b = 0; b < cols / B; b++)
        for (int64_t r = 0; r < rows; r++) {
            float amax = 0;
            for (int64_t k = b * B; k < (b + 1) * B; k++) amax = fmaxf(amax, fabsf(wt[k * rows + r]));
            scale[b * rows + r] = amax > 0 ? amax / 7.0f : 1.0f;
        }
    if (u) lpbq_scales(scale, cols / B, rows, u, ch);
    for (int64_t b = 0; b < cols / B; b++)
        for (int64_t r = 0; r < rows; r++) {
            const float sc = scale[b * rows + r];
            for (int64_t k = b * B; k < (b + 1) * B; k++) {
                float v = roundf(wt[k * rows + r] / sc);
                const int iv = v > 7 ? 7 : v < -7 ? -7 : (int)v;
                const int64_t i = k * rows + r;
                q[i / 2] |= (uint8_t)((iv & 15) << (i % 2 ? 4 : 0));
            }
        }
}

/* The int4 form's DequantizeLinear: weight [K, N], scales and int4 zero
 * points [K/64, N] (QNN reads 4-bit from the zero point's type). LPBQ: the
 * scales are themselves a DequantizeLinear of uint8 [K/64, N] by an f32
 * scale per column (axis 1), the pattern QNN fuses. */
static const char *dequantize4(go_ctx *o, const char *name, int64_t rows, int64_t cols,
                               const float *data)
{
    const int64_t n = rows * cols, B = SPARK_ONNX_INT4_BLOCK;
    const int64_t dims[2] = {rows, cols}, sdims[2] = {rows / B, cols};
    const size_t qbytes = (size_t)(n + 1) / 2, sbytes = (size_t)(rows / B * cols) * sizeof(float);
    uint8_t *q = o->packed;
    float *scale = (float *)((char *)o->packed + (qbytes + 64) / 64 * 64);
    uint8_t *zero = (uint8_t *)scale + (sbytes + 64) / 64 * 64;
    const int lpbq = o->form == SPARK_ONNX_LPBQ4A16;
    uint8_t *u = zero + ((size_t)(rows / B * cols + 1) / 2 + 64) / 64 * 64;
    float *ch = (float *)(u + ((size_t)(rows / B * cols) + 64) / 64 * 64);
    quantize_blocks4(data, rows, cols, q, scale, lpbq ? u : NULL, ch);
    memset(zero, 0, (size_t)(rows / B * cols + 1) / 2);
    char nm[160];
    snprintf(nm, sizeof nm, "%s.int4", name);
    const char *in[3] = {og_init_packed(o->g, nm, OG_INT4, 2, dims, q, qbytes), NULL, NULL};
    snprintf(nm, sizeof nm, "%s.scale", name);
    if (lpbq) {
        snprintf(nm, sizeof nm, "%s.block_scale_u8", name);
        const char *sin[2] = {og_init_raw(o->g, nm, OG_UINT8, 2, sdims, u, 1), NULL};
        snprintf(nm, sizeof nm, "%s.channel_scale", name);
        sin[1] = og_init_f32(o->g, nm, 1, &cols, ch);
        const og_attr axis1 = {"axis", OG_ATTR_INT, 1, 0, NULL, 0};
        snprintf(nm, sizeof nm, "%s.scale", name);
        in[1] = og_node(o->g, "DequantizeLinear", nm, 2, sin, 1, &axis1);
    } else {
        in[1] = og_init_f32(o->g, nm, 2, sdims, scale);
    }
    snprintf(nm, sizeof nm, "%s.zero_point", name);
    in[2] = og_init_packed(o->g, nm, OG_INT4, 2, sdims, zero, (size_t)(rows / B * cols + 1) / 2);
    const og_attr attrs[2] = {{"axis", OG_ATTR_INT, 0, 0, NULL, 0}, {"block_size", OG_ATTR_INT, B, 0, NULL, 0}};
    return og_node(o->g, "DequantizeLinear", name, 3, in, 2, attrs);
}

const char *go_matrix(go_ctx *o, const char *name, int64_t rows, int64_t cols, const float *data,
                      int quantize)
{
    const int64_t dims[2] = {rows, cols}, n = rows * cols;
    if (o->et == OG_FLOAT16) {
        uint16_t *h = o->packed;
        for (int64_t i = 0; i < n; i++) h[i] = ek_f32_to_f16(data[i]);
        return og_init_raw(o->g, name, OG_FLOAT16, 2, dims, h, 2);
    }
    if (!quantize || !spark_onnx_weight_bits(o->form)) return og_init_f32(o->g, name, 2, dims, data);
    if (spark_onnx_weight_bits(o->form) == 4) return dequantize4(o, name, rows, cols, data);
    char nm[160];
    float *scale = (float *)((char *)o->packed + ((size_t)n + 64) / 64 * 64);
    quantize_columns(data, rows, cols, o->packed, scale);
    snprintf(nm, sizeof nm, "%s.int8", name);
    const char *q = og_init_raw(o->g, nm, OG_INT8, 2, dims, o->packed, 1);
    snprintf(nm, sizeof nm, "%s.scale", name);
    const char *in[2] = {q, og_init_f32(o->g, nm, 1, &cols, scale)};
    const og_attr axis = {"axis", OG_ATTR_INT, 1, 0, NULL, 0};
    return og_node(o->g, "DequantizeLinear", name, 2, in, 1, &axis);
}

const char *go_weight_t(go_ctx *o, const char *name, const ek_matrix *w)
{
    const int64_t rows = w->rows, cols = w->cols;
    float *row = o->tmp + rows * cols;
    for (int64_t r = 0; r < rows; r++) {
        ek_row_to_f32(row, w, r);
        for (int64_t k = 0; k < cols; k++) o->tmp[k * rows + r] = row[k];
    }
    return go_matrix(o, name, cols, rows, o->tmp, 1);
}

const char *go_tensor(go_ctx *o, const char *name, int rank, const int64_t *dims, const float *v)
{
    if (o->et == OG_FLOAT) return og_init_f32(o->g, name, rank, dims, v);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    uint16_t *h = o->packed;
    for (int64_t i = 0; i < n; i++) h[i] = ek_f32_to_f16(v[i]);
    return og_init_raw(o->g, name, OG_FLOAT16, rank, dims, h, 2);
}

const char *go_vector(go_ctx *o, const char *name, const float *v, int64_t n)
{
    return go_tensor(o, name, 1, &n, v);
}

const char *go_transpose(go_ctx *o, const char *name, const char *x, int rank, const int64_t *perm)
{
    const og_attr a = {"perm", OG_ATTR_INTS, 0, 0, perm, rank};
    return name ? og_node_named(o->g, "Transpose", name, 1, &x, 1, &a)
                : og_node(o->g, "Transpose", "transpose", 1, &x, 1, &a);
}

const char *go_qdq16(go_ctx *o, const char *name, const char *x, float lo, float hi)
{
    /* asymmetric over the observed range, widened to hold 0 exactly */
    lo = fminf(lo, 0.0f);
    hi = fmaxf(hi, 0.0f);
    const float scale = hi > lo ? (hi - lo) / 65535.0f : 1.0f;
    const float z = roundf(-lo / scale);
    const uint16_t zero = (uint16_t)(z < 0 ? 0 : z > 65535 ? 65535 : z);
    char nm[160];
    snprintf(nm, sizeof nm, "%s.a16_scale", name);
    const char *in[3] = {x, og_init_f32(o->g, nm, 0, NULL, &scale), NULL};
    snprintf(nm, sizeof nm, "%s.a16_zero_point", name);
    in[2] = og_init_raw(o->g, nm, OG_UINT16, 0, NULL, &zero, sizeof zero);
    in[0] = og_node(o->g, "QuantizeLinear", name, 3, in, 0, NULL);
    return og_node(o->g, "DequantizeLinear", name, 3, in, 0, NULL);
}

const char *go_linear(go_ctx *o, const char *name, const char *x, const ek_matrix *w, const float *b)
{
    char nm[128];
    if (o->in_range && spark_onnx_a16(o->form)) {
        if (x != o->q_src) {
            o->q_src = x;
            o->q_out = go_qdq16(o, name, x, o->in_range[0], o->in_range[1]);
        }
        x = o->q_out;
    }
    snprintf(nm, sizeof nm, "%s.weight_t", name);
    const char *y = go_node2(o, "MatMul", name, x, go_weight_t(o, nm, w));
    if (!b) return y;
    snprintf(nm, sizeof nm, "%s.bias", name);
    return go_node2(o, "Add", name, y, go_vector(o, nm, b, w->rows));
}

const char *go_rmsnorm(go_ctx *o, const char *name, const char *x, const float *w, int64_t n)
{
    return go_rmsnorm_to(o, name, NULL, x, w, n);
}

const char *go_rmsnorm_to(go_ctx *o, const char *name, const char *out, const char *x, const float *w,
                          int64_t n)
{
    const int64_t last = -1;
    const og_attr mean_attrs[2] = {{"keepdims", OG_ATTR_INT, 1, 0, NULL, 0},
                                   {"axes", OG_ATTR_INTS, 0, 0, &last, 1}};
    const char *sq = go_node2(o, "Mul", name, x, x);
    /* from opset 18 the axes are a (1-D, constant) input, no longer an attribute */
    const int axes_input = spark_onnx_opset(o->form) >= 18;
    const char *in[2] = {sq, axes_input ? og_init_i64(o->g, "axes_last", 1, &last) : NULL};
    const char *ms = og_node(o->g, "ReduceMean", name, axes_input ? 2 : 1, in, axes_input ? 1 : 2, mean_attrs);
    const char *r = go_node1(o, "Reciprocal", name, go_node1(o, "Sqrt", name, go_node2(o, "Add", name, ms, o->eps)));
    const char *in2[2] = {go_node2(o, "Mul", name, x, r), go_vector(o, name, w, n)};
    return out ? og_node_named(o->g, "Mul", out, 2, in2, 0, NULL) : og_node(o->g, "Mul", name, 2, in2, 0, NULL);
}

const char *go_slice_last(go_ctx *o, const char *x, int64_t from, int64_t to)
{
    char nm[64];
    snprintf(nm, sizeof nm, "slice_%lld_%lld", (long long)from, (long long)to);
    const int64_t last = -1;
    /* initializers are shared by name: one per distinct bound */
    const char *in[4] = {x, NULL, NULL, NULL};
    char a[80], b[80];
    snprintf(a, sizeof a, "%s.start", nm);
    snprintf(b, sizeof b, "%s.end", nm);
    in[1] = og_init_i64(o->g, a, 1, &from);
    in[2] = og_init_i64(o->g, b, 1, &to);
    snprintf(a, sizeof a, "%s.axes", nm);
    in[3] = og_init_i64(o->g, a, 1, &last);
    return og_node(o->g, "Slice", "slice", 4, in, 0, NULL);
}

const char *go_rope(go_ctx *o, const char *x, const char *cs, const char *sn, int64_t half, int64_t d)
{
    if (half == 0) return x;
    const char *x1 = go_slice_last(o, x, 0, half), *x2 = go_slice_last(o, x, half, 2 * half);
    const char *parts[3] = {
        go_node2(o, "Sub", "rope", go_node2(o, "Mul", "rope", x1, cs), go_node2(o, "Mul", "rope", x2, sn)),
        go_node2(o, "Add", "rope", go_node2(o, "Mul", "rope", x2, cs), go_node2(o, "Mul", "rope", x1, sn)),
        2 * half < d ? go_slice_last(o, x, 2 * half, d) : NULL};
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    return og_node(o->g, "Concat", "rope", parts[2] ? 3 : 2, parts, 1, &axis);
}

const char *go_masked_chunk(go_ctx *o, const char *scores, const char *shape4, const char *shape3,
                            const char *mask)
{
    const char *x = go_node2(o, "Add", "scores", go_node2(o, "Reshape", "scores", scores, shape4), mask);
    return go_node2(o, "Reshape", "scores", x, shape3);
}

const char *go_join(go_ctx *o, const char *s_cache, const char *s_new, const char *past_v,
                    const char *v_new, const char *scale, int64_t S, int64_t T)
{
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    const char *both[2] = {s_cache, s_new};
    const char *scores = og_node(o->g, "Concat", "scores", 2, both, 1, &axis);
    scores = go_node2(o, "Mul", "scores", scores, scale);
    const char *p = og_node(o->g, "Softmax", "probs", 1, &scores, 1, &axis);
    return go_node2(o, "Add", "attn", go_node2(o, "MatMul", "attn", go_slice_last(o, p, 0, S), past_v),
                    go_node2(o, "MatMul", "attn", go_slice_last(o, p, S, S + T), v_new));
}
