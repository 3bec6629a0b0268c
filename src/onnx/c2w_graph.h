/* The Qwen3-TTS speech decoder (Code2Wav, tts/code2wav.h) as stateful
 * streaming ONNX step graphs: one graph per chunk size of N frames takes the
 * chunk's codes and the stream's state and returns the chunk's samples and
 * the next state. It is ember's streaming decoder, not a window: every
 * piece of state c2w_stream keeps is an explicit input `X` with an output
 * `next_X` of the same shape, which the host feeds back as `X` for the next
 * chunk (of any size: the state's shapes do not depend on N):
 *  - conv histories: the last (k-1)*dilation input rows of each causal conv
 *    with more than one tap, [1, channels, rows] (channels-first: the graph
 *    runs Conv / ConvTranspose on [1, C, T]);
 *  - transposed-conv carries: each decoder block's last (Snake'd) input row,
 *    [1, channels, 1], the overlap of its k = 2 * stride transposed conv;
 *  - attention rings: per transformer layer the previous sliding_window - 1
 *    frames' rotated keys [kv_heads, head_dim, W-1] and values
 *    [kv_heads, W-1, head_dim], oldest first (the graph concatenates the
 *    chunk's and keeps the last W-1: no modular slot arithmetic).
 * The host also feeds the chunk's rotary tables and its additive mask over
 * ring + chunk columns (they depend on the stream position). Everything is
 * static: shapes, Slice bounds, int32 codes; ops from the QNN HTP list. */
#ifndef EMBER_ONNX_C2W_GRAPH_H
#define EMBER_ONNX_C2W_GRAPH_H

#include <stdint.h>

#include "ember.h"
#include "onnx/c2w_layout.h"
#include "onnx/onnx_data.h"
#include "onnx/spark_decode_layout.h"
#include "tts/code2wav.h"

/* Fails (UNSUPPORTED) on a decoder the graphs do not express (a GQA whose
 * heads do not divide, an int4 form whose widths are not multiples of 64). */
ember_status c2w_graph_check(const c2w_model *m, spark_onnx_form form);

/* Builds the N-frame graph of the whole decoder (stage -1) or of one stage
 * (for profiling: input `x`, output `y`, or the front's codes, tables and
 * mask, the final stage's pcm; its own states) and writes it to path, its
 * weights into data. */
ember_status c2w_graph_write(const c2w_model *m, int32_t frames, int stage, spark_onnx_form form,
                             const char *path, og_data *data);

#endif
