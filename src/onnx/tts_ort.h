/* ember's host loop around the exported Qwen3-TTS steps (tts_step_graph.h)
 * run by ONNX Runtime: it owns both graphs' per-layer caches in the graphs'
 * layout, their masks and rotary tables, feeds one embedded row per step
 * and writes each new key and value into the slot of its position. The
 * talker keeps its position across steps (a request's prompt, in chunks
 * where the folder has a talker prefill graph, then one per frame); the
 * predictor starts over every frame. Graph I/O is f32 or
 * f16 as the folder's form says; what it hands back is f32. Everything is
 * sized when it is opened; a step allocates nothing. */
#ifndef EMBER_ONNX_TTS_ORT_H
#define EMBER_ONNX_TTS_ORT_H

#include <stdint.h>

#include "ember.h"
#include "onnx/ort_api.h"
#include "tts/qwen3_tts_config.h"

typedef struct tts_ort tts_ort;

/* Opens dir (an `ember export onnx` folder of a Qwen3-TTS model with
 * config c) with the ONNX Runtime library and provider rt names; threads: ORT's
 * intra-op threads (0: its choice). Fails when the manifest is not a
 * qwen3_tts one for a model of c's shape. */
ember_status tts_ort_open(const tts_config *c, const char *dir, const ort_choice *rt, int threads,
                          tts_ort **out);
void tts_ort_free(tts_ort *o);

/* The talker's bucket: positions 0..context-1. */
int32_t tts_ort_context(const tts_ort *o);
const char *tts_ort_runtime_version(const tts_ort *o);

/* Forgets the talker's positions (caches masked again). */
void tts_ort_talker_reset(tts_ort *o);
/* Runs the talker at its next position on `embedding` (talker hidden
 * floats): *logits (talker vocab) and *hidden (the normed state, talker
 * hidden) stay valid until the next talker step. EMBER_ERR_CONTEXT_FULL at
 * the bucket's end. */
ember_status tts_ort_talker_step(tts_ort *o, const float *embedding, const float **logits,
                                 const float **hidden);

/* The talker prefill graph's rows per run (0: the folder has none), and a
 * run of it on the next that many rows (rows x talker hidden floats):
 * *logits and *hidden are the last row's, valid until the next talker
 * run. EMBER_ERR_CONTEXT_FULL when the rows would pass the bucket's end. */
int32_t tts_ort_chunk_rows(const tts_ort *o);
ember_status tts_ort_talker_chunk(tts_ort *o, const float *rows, const float **logits,
                                  const float **hidden);

/* Starts a frame: the predictor at position 0 again. */
void tts_ort_predictor_reset(tts_ort *o);
/* Runs the predictor at its next position on `embedding` (talker hidden
 * floats) with lm head `head`: *logits (predictor vocab) valid until the
 * next predictor step. */
ember_status tts_ort_predictor_step(tts_ort *o, const float *embedding, int32_t head,
                                    const float **logits);

#endif
