/* `ember export onnx` for a Qwen3-TTS checkpoint: talker.onnx,
 * predictor.onnx and optionally talker_prefill.onnx (tts_step_graph.h),
 * their shared weights.onnx.data and a manifest naming every input and
 * output with its shape, type and meaning. */
#ifndef EMBER_ONNX_TTS_EXPORT_H
#define EMBER_ONNX_TTS_EXPORT_H

#include "ember.h"
#include "onnx/spark_decode_layout.h"
#include "tts/code2wav.h"
#include "tts/qwen3_tts_load.h"

#define TTS_EXPORT_ARCHITECTURE "qwen3_tts"

/* Writes the folder dir (created if missing): whole, or nothing of it;
 * with talker_prefill.onnx (a chunk of `chunk` prompt rows) unless chunk
 * is 0, and with the speech decoder's streaming graphs (c2w_export.h)
 * when dec is not NULL (per_stage: also one graph per decoder stage at
 * the largest chunk size, for profiling). */
ember_status tts_onnx_export(const tts_model *m, const c2w_model *dec, const char *dir, int32_t context,
                             int32_t chunk, int per_stage, spark_onnx_form form);

#endif
