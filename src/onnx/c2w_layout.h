/* The shapes of the speech decoder's streaming graphs (c2w_graph.h):
 * their state tensors, the decoder's stages (for the per-stage graphs), the
 * chunk sizes exported and the files. Shared by the graph writer, the
 * manifest and the ONNX Runtime host loop. */
#ifndef EMBER_ONNX_C2W_LAYOUT_H
#define EMBER_ONNX_C2W_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "tts/code2wav_config.h"

#define C2W_MAX_STATES (2 * TTS_MAX_LAYERS + 2 + C2W_MAX_UPSAMPLE + 4 * C2W_MAX_BLOCKS)
#define C2W_GRAPH_KIND "code2wav"
#define C2W_STAGE_KIND "code2wav_stage"

/* One state tensor: graph input `name`, output "next_<name>". */
typedef struct c2w_state_info {
    char name[40];
    int rank;
    int64_t dims[3];
    char meaning[240];
} c2w_state_info;

/* The decoder's state tensors in graph-input order; returns their count. */
int c2w_graph_states(const c2w_config *c, c2w_state_info *out);

/* Columns of the attention mask: ring slots then the chunk's frames. */
static inline int64_t c2w_graph_mask_cols(const c2w_config *c, int64_t frames)
{
    return c->sliding_window - 1 + frames;
}

/* The chunk sizes exported by default: 1 (so any count of frames decomposes
 * into graphs) and the default chunk schedule's sizes (tts_pipeline.h). */
int c2w_graph_default_sizes(int32_t *sizes, int max);

/* The file of the N-frame graph ("code2wav_N.onnx"). */
void c2w_graph_file(int32_t frames, char *out, size_t size);

/* The decoder's stages in order (front: codes to latent frames; each
 * upsample stage; decoder.0; each decoder block; final Snake + conv +
 * clamp), each with its states (a contiguous range of c2w_graph_states)
 * and its input and output [1, channels, rows per frame x N]. */
#define C2W_MAX_STAGES (3 + C2W_MAX_UPSAMPLE + C2W_MAX_BLOCKS)
typedef struct c2w_stage_info {
    char name[32];
    int first_state, n_states;
    int64_t cin, in_rows, cout, out_rows; /* cin 0: the front reads codes */
} c2w_stage_info;
int c2w_graph_stages(const c2w_config *c, c2w_stage_info *out);
/* The file of stage `stage`'s N-frame graph ("code2wav_N_<stage>.onnx"). */
void c2w_graph_stage_file(int32_t frames, const char *stage, char *out, size_t size);

#endif
