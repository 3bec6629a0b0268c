/* Binding the matrices and decoder stacks of the Qwen3-TTS checkpoints (the
 * talker/predictor file and the speech tokenizer's decoder) through the
 * shared weight loader, with one rule for both: a matrix whose columns the
 * requested block format cannot hold (tiny test shapes) is kept as stored
 * and counted. Internal to src/tts. */
#ifndef EMBER_TTS_TTS_BIND_H
#define EMBER_TTS_TTS_BIND_H

#include "nn/weights.h"
#include "tts/qwen3_tts_load.h"

typedef struct tts_loader {
    wt_loader wt;
    int32_t *n_unconverted; /* incremented per matrix kept as stored */
} tts_loader;

ember_status tts_bind_matrix(tts_loader *ld, const char *name, int64_t rows, int64_t cols,
                             ek_matrix *out);
/* Every layer tensor of a stack named "{prefix}.layers.{i}.*" (q/k norms and
 * layer scales as the config says) and "{prefix}.norm.weight". */
ember_status tts_bind_stack(tts_loader *ld, const char *prefix, const tts_stack_config *c,
                            tts_stack *s);
/* fp32 floats the stack's vectors (norms, scales) take in the vector block. */
size_t tts_stack_vector_floats(const tts_stack_config *c);

#endif
