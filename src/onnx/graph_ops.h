/* The pieces every exported step graph is built from, in the forms
 * spark_decode_layout.h names (f32, f16, int8 or int4 QDQ weights): weight
 * initializers transposed for MatMul, linear layers, RMSNorm as primitives,
 * NeoX rotary embedding, and the score-space join of cached and new keys.
 * Shared by the Spark step graphs and the Qwen3-TTS talker and predictor
 * step graphs, so both stay in the form NPU compilers took well. */
#ifndef EMBER_ONNX_GRAPH_OPS_H
#define EMBER_ONNX_GRAPH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "kernels/matmul.h"
#include "onnx/onnx_graph.h"
#include "onnx/spark_decode_layout.h"

typedef struct go_ctx {
    og_graph *g;
    spark_onnx_form form;
    int et;           /* element type of activations and float I/O */
    const char *eps;  /* the RMSNorm epsilon constant (set by the caller) */
    float *tmp;       /* a transposed matrix plus one source row */
    void *packed;     /* the same converted to f16, int8 or int4 */
    /* a16 forms: the next go_linear's input range [min, max] from the
     * calibration (the caller sets it; NULL: the input stays float), and
     * the last input quantized, so projections of one input share a pair */
    const float *in_range;
    const char *q_src, *q_out;
} go_ctx;

/* Sets form and element type and allocates the weight buffers for
 * matrices of up to max_elems elements whose rows have up to max_cols. */
ember_status go_init(go_ctx *o, spark_onnx_form form, size_t max_elems, size_t max_cols);
void go_free(go_ctx *o);

const char *go_node1(go_ctx *o, const char *op, const char *hint, const char *a);
const char *go_node2(go_ctx *o, const char *op, const char *hint, const char *a, const char *b);

/* A [rows, cols] float matrix initializer in the graph's form: f32, f16,
 * or (quantize, in a QDQ form) int8 per column or int4 in blocks of 64 rows
 * behind a DequantizeLinear whose output is the f32 matrix. */
const char *go_matrix(go_ctx *o, const char *name, int64_t rows, int64_t cols, const float *data,
                      int quantize);
/* W^T of a [rows, cols] weight as a [cols, rows] initializer (quantized in
 * the QDQ forms): x @ W^T is a MatMul with a rank-2 initializer, which QNN
 * lowers to FullyConnected. */
const char *go_weight_t(go_ctx *o, const char *name, const ek_matrix *w);
/* A float initializer of any shape in the activations' type (f32 or f16). */
const char *go_tensor(go_ctx *o, const char *name, int rank, const int64_t *dims, const float *v);
/* A vector initializer in the activations' type. */
const char *go_vector(go_ctx *o, const char *name, const float *v, int64_t n);
/* x through a uint16 QuantizeLinear / DequantizeLinear pair whose
 * per-tensor scale and zero point cover [lo, hi] (and 0), named after name. */
const char *go_qdq16(go_ctx *o, const char *name, const char *x, float lo, float hi);
/* x @ W^T (+ b), the weight named "<name>.weight_t"; in an a16 form with
 * o->in_range set, x is quantized first (go_qdq16). */
const char *go_linear(go_ctx *o, const char *name, const char *x, const ek_matrix *w, const float *b);
/* x * 1/sqrt(mean(x^2) + eps) * w over the last axis (n wide). */
const char *go_rmsnorm(go_ctx *o, const char *name, const char *x, const float *w, int64_t n);
/* The same with its output named `out` (a graph output). */
const char *go_rmsnorm_to(go_ctx *o, const char *name, const char *out, const char *x, const float *w,
                          int64_t n);
const char *go_transpose(go_ctx *o, const char *name, const char *x, int rank, const int64_t *perm);
/* x[..., from:to] with constant bounds. */
const char *go_slice_last(go_ctx *o, const char *x, int64_t from, int64_t to);
/* NeoX rotate-half RoPE on the leading 2*half of d dims of the last axis
 * with tables cos/sin [.., half]; the rest pass through. */
const char *go_rope(go_ctx *o, const char *x, const char *cos, const char *sin, int64_t half,
                    int64_t d);
/* A chunk's additive mask [T, 1, n] joined to scores [KV, T*G, n] through
 * the view shape4 = [KV, T, G, n] (every query head of a token shares its
 * token's row), back to shape3 = [KV, T*G, n]. */
const char *go_masked_chunk(go_ctx *o, const char *scores, const char *shape4, const char *shape3,
                            const char *mask);
/* The score-space join: one softmax over the cached slots' scores (masked
 * by the caller) and the new keys' (T of them), scaled by `scale`, then
 * P_cache @ past_v + P_new @ v_new. */
const char *go_join(go_ctx *o, const char *s_cache, const char *s_new, const char *past_v,
                    const char *v_new, const char *scale, int64_t S, int64_t T);

#endif
