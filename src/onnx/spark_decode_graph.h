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
 * spark_decode_layout() names every input and output; the exporter writes it
 * to the manifest and the ONNX Runtime host loop fills it. */
#ifndef EMBER_ONNX_SPARK_DECODE_GRAPH_H
#define EMBER_ONNX_SPARK_DECODE_GRAPH_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark.h"

/* What an additive mask holds for a slot the query must not see: finite, so
 * 16-bit activations and compilers that reject inf stay exact (exp of it
 * times the softmax scale underflows to 0 in f32 and f16). */
#define SPARK_ONNX_MASK_OFF (-65504.0f)

typedef struct spark_decode_layout {
    int32_t context;                    /* the bucket: positions 0..context-1 */
    int32_t slots[SPARK_LAYER_TYPES];   /* cache slots per layer of each type */
    int32_t half[SPARK_LAYER_TYPES];    /* rotary table width: rot_dims / 2 */
    int has_type[SPARK_LAYER_TYPES];
} spark_decode_layout;

/* Fails (EMBER_ERR_INVALID_ARG) on a context outside [2, max_positions]. */
ember_status spark_decode_layout_of(const spark_config *c, int32_t context,
                                    spark_decode_layout *out);

/* Fails (UNSUPPORTED) on model options the graph does not express: the
 * tanh GELU, the all-full-attention benchmark mode. */
ember_status spark_decode_check_model(const ember_model *m);

/* Builds the graph and writes model_path plus its weights to data_path
 * (named data_location inside the model). */
ember_status spark_decode_graph_write(const ember_model *m, const spark_decode_layout *lay,
                                      const char *model_path, const char *data_path,
                                      const char *data_location);

#endif
