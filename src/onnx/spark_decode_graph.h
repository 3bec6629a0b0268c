/* The Spark-X2.5 decode step as an ONNX graph (f32, one token, opset 17),
 * in the form that compiled well for phone NPUs (spark-x2.5.md):
 *  - caches per layer and per layer type, as graph inputs: a sliding layer a
 *    ring of min(window-1, context-1) slots, a full layer context-1 slots
 *    (one compiled graph per context bucket); keys stored transposed
 *    [kv_heads, head_dim, slots], values [kv_heads, slots, head_dim];
 *  - only the new token's key [kv_heads, head_dim, 1] and value
 *    [kv_heads, 1, head_dim] as outputs: the host writes them into the slot;
 *  - attention joined in score space: scores of the cached slots and of the
 *    new key are concatenated, one softmax, P_cache V + p_new v_new, all
 *    MatMuls; GQA by reshaping the query to [kv_heads, group, head_dim];
 *  - rotary cos/sin tables and additive masks as inputs, the token id int32;
 *  - RMSNorm as primitives, the exact erf GELU in the form QNN fuses.
 * spark_decode_layout.h sizes every input and output; the exporter writes
 * them to the manifest and the ONNX Runtime host loop fills them. */
#ifndef EMBER_ONNX_SPARK_DECODE_GRAPH_H
#define EMBER_ONNX_SPARK_DECODE_GRAPH_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark.h"
#include "onnx/onnx_data.h"
#include "onnx/spark_decode_layout.h"

/* Fails (UNSUPPORTED) on model options the graph does not express: the
 * tanh GELU, the all-full-attention benchmark mode. */
ember_status spark_decode_check_model(const ember_model *m);

/* The activations an a16 form quantizes, per layer: the input of q/k/v
 * (and the gate), of the output projection, of ffn gate/up, of ffn down;
 * then the lm head's input. act_range[2 * slot] holds [min, max]. */
enum { SPARK_A16_ATTN_IN, SPARK_A16_ATTN_OUT_IN, SPARK_A16_MLP_IN, SPARK_A16_DOWN_IN, SPARK_A16_PER_LAYER };
static inline int spark_a16_slots(const spark_config *c)
{
    return c->n_layers * SPARK_A16_PER_LAYER + 1;
}

/* Builds the graph (lay->tokens per run, in lay->form) and writes it to
 * model_path, its weights into data (shared with graphs written before:
 * weights already there are referenced, not written again). act_range:
 * the calibrated ranges (spark_a16_slots pairs) an a16 form needs; NULL
 * otherwise. */
ember_status spark_decode_graph_write(const ember_model *m, const spark_decode_layout *lay,
                                      const float *act_range, const char *model_path, og_data *data);

#endif
