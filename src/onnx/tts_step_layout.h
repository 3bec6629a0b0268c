/* The shapes of the exported Qwen3-TTS step graphs: the talker step (one
 * position of the 28-layer talker, the codec head's logits and the normed
 * state the code predictor starts from) and the code-predictor step (one
 * position of the predictor, one of its lm heads chosen by an index the
 * host feeds, so every shape stays static) and the talker's prefill chunk
 * (N prompt rows at once, the same caches). Shared by the graph writer, the
 * manifest and the ONNX Runtime host loop. */
#ifndef EMBER_ONNX_TTS_STEP_LAYOUT_H
#define EMBER_ONNX_TTS_STEP_LAYOUT_H

#include <stdint.h>

#include "ember.h"
#include "onnx/spark_decode_layout.h"
#include "tts/qwen3_tts_config.h"

typedef enum { TTS_GRAPH_TALKER = 0, TTS_GRAPH_PREDICTOR, TTS_GRAPH_TALKER_CHUNK } tts_graph_kind;

typedef struct tts_step_layout {
    tts_graph_kind kind;
    spark_onnx_form form;
    const tts_stack_config *stack; /* the talker's or the predictor's */
    int32_t context; /* positions 0..context-1 (the predictor: one frame's n_groups) */
    int32_t slots;   /* cache slots per layer: context - 1 */
    int32_t half;    /* rotary table width: head_dim / 2 */
    int32_t in_dim;  /* the embedding input's width: the talker's hidden size */
    int32_t heads;   /* the predictor's lm heads (n_groups - 1); 0 for the talker */
    int32_t tokens;  /* rows per run: 1, or the talker chunk's N */
} tts_step_layout;

/* The graph's file in the exported folder and its kind in the manifest. */
const char *tts_graph_file(tts_graph_kind kind);
const char *tts_graph_kind_name(tts_graph_kind kind);

/* The talker's layout for a context bucket (positions 0..context-1), the
 * predictor's (context is ignored: a frame's n_groups positions), or the
 * talker chunk's of `tokens` rows (ignored for the others). Fails
 * (EMBER_ERR_INVALID_ARG) on a context outside [2, max_positions] or a
 * chunk outside [2, context]. */
ember_status tts_step_layout_of(const tts_config *c, tts_graph_kind kind, int32_t context,
                                int32_t tokens, spark_onnx_form form, tts_step_layout *out);

#endif
