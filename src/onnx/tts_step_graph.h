/* Qwen3-TTS's talker and code-predictor steps as ONNX graphs (one position
 * each, plus a talker chunk of N prompt rows; opset 17 / IR 8, or the int4
 * form's 21 / 10), in the Spark decode step's form (spark_decode_graph.h):
 * per-layer caches as inputs with static capacity (keys transposed
 * [kv_heads, head_dim, slots], values [kv_heads, slots, head_dim]), only
 * the new key and value as outputs,
 * the score-space join, GQA by reshaping the query, rotary tables and the
 * additive mask as inputs the host computes.
 *
 * Both take the embedded row as input (the host sums the codebook and text
 * embeddings, or feeds the talker's state): the lookups stay on the host.
 * A layer: RMSNorm, Q/K/V, per-head q/k RMSNorm, NeoX RoPE over the whole
 * head (the multimodal sections coincide for speech: every stream has the
 * same position), attention, output projection, SwiGLU MLP.
 *  - talker: outputs `hidden` (the final-normed state the predictor starts
 *    from) and `logits` (the codec head);
 *  - predictor: the small_to_mtp projection when the widths differ, and an
 *    int32 input `head` choosing one of the n_groups-1 lm heads, gathered
 *    from one [heads, hidden, vocab] table, so one graph serves every
 *    codebook with static shapes;
 *  - talker chunk (lay->tokens = N > 1): N prompt rows through the talker
 *    with the same caches, in the Spark prefill chunk's form (masks over
 *    the caches and among the rows as inputs), every row's `hidden` and
 *    `logits` and new keys and values out. */
#ifndef EMBER_ONNX_TTS_STEP_GRAPH_H
#define EMBER_ONNX_TTS_STEP_GRAPH_H

#include "ember.h"
#include "onnx/onnx_data.h"
#include "onnx/tts_step_layout.h"
#include "tts/qwen3_tts_load.h"

/* Fails (UNSUPPORTED) on what the graphs do not express: LayerScale, a
 * sliding window, a form whose int4 blocks do not divide the widths. */
ember_status tts_step_check_model(const tts_model *m, spark_onnx_form form);

/* Builds the graph of lay->kind and writes it to model_path, its weights
 * into data (shared with the other graph). */
ember_status tts_step_graph_write(const tts_model *m, const tts_step_layout *lay,
                                  const char *model_path, og_data *data);

#endif
