/* The speech decoder's part of a Qwen3-TTS export folder: the streaming
 * step graphs for each chunk size (c2w_graph.h) beside the talker and
 * predictor, and their manifest entries: every input and output with shape,
 * type and meaning, and the state list with how the host carries it. */
#ifndef EMBER_ONNX_C2W_EXPORT_H
#define EMBER_ONNX_C2W_EXPORT_H

#include <cjson/cJSON.h>

#include "ember.h"
#include "onnx/c2w_graph.h"

/* Appends the manifest entry of the N-frame graph (stage -1) or of one
 * stage's N-frame graph (kind "code2wav_stage", for profiling). */
void c2w_manifest_add(cJSON *graphs, const c2w_config *c, int32_t frames, int stage, spark_onnx_form form);

/* Writes dir/code2wav_N.onnx for each of sizes[0..n) and, when
 * stage_frames is not 0, dir/code2wav_<stage_frames>_<stage>.onnx for every
 * stage; weights into data. */
ember_status c2w_export_graphs(const c2w_model *m, const char *dir, const int32_t *sizes, int n,
                               int32_t stage_frames, spark_onnx_form form, og_data *data);
/* Removes the whole and the stage graphs of those sizes (a failed export
 * leaves nothing, a re-export nothing stale); c NULL: every stage name a
 * decoder may have. */
void c2w_export_remove(const char *dir, const c2w_config *c, const int32_t *sizes, int n);

#endif
