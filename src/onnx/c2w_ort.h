/* ember's host loop around the speech decoder's streaming graphs
 * (c2w_graph.h) run by ONNX Runtime: it owns the decoder's state tensors
 * (conv histories, transposed-conv carries, attention rings) in the graphs'
 * element type, feeds each chunk's codes, rotary tables and mask, and
 * carries every `next_X` output back into `X`. A push of any number of
 * frames runs the folder's graphs largest first (the state does not depend
 * on the chunk size), so the samples are those of one stream whatever the
 * chunking. Everything is sized at open; a push allocates nothing. */
#ifndef EMBER_ONNX_C2W_ORT_H
#define EMBER_ONNX_C2W_ORT_H

#include <stdint.h>

#include "ember.h"
#include "onnx/ort_api.h"
#include "tts/code2wav_config.h"

typedef struct c2w_ort c2w_ort;

/* Opens the decoder graphs an `ember export onnx` folder of a Qwen3-TTS
 * model lists, for a decoder of config c, with the ONNX Runtime library,
 * execution provider and options of rt and `threads` intra-op threads (0: ORT's choice). *out is NULL
 * (and the status OK) when the folder has no decoder graphs: the caller
 * keeps its native decoder. Fails when the graphs are for another decoder. */
ember_status c2w_ort_open(const c2w_config *c, const char *dir, const ort_choice *rt, int threads,
                          c2w_ort **out);
/* The same over the folder's per-stage graphs (`export --per-layer`),
 * chained: every stage's graph runs in turn on each chunk of their one
 * size, for profiling (pushes must be multiples of it); fails when the
 * folder has none. */
ember_status c2w_ort_open_stages(const c2w_config *c, const char *dir, const ort_choice *rt, int threads,
                                 c2w_ort **out);
void c2w_ort_free(c2w_ort *o);

/* Forgets the utterance: every state tensor zero, position 0. */
void c2w_ort_reset(c2w_ort *o);
/* Decodes n_frames frames (codes frame-major, every code in range: the
 * caller checks) into pcm (n_frames x samples_per_frame floats). */
ember_status c2w_ort_push(c2w_ort *o, const int32_t *codes, int32_t n_frames, float *pcm);

/* The chunk sizes the folder has graphs for, largest first; returns the count. */
int c2w_ort_sizes(const c2w_ort *o, int32_t *sizes, int max);
/* Chained stages: each stage's name and the thread CPU ms its graph took
 * over every push so far; returns the count (0 for whole graphs). */
int c2w_ort_stage_times(const c2w_ort *o, const char **names, double *ms, int max);

#endif
