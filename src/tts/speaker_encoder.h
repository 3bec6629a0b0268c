/* The Qwen3-TTS Base speaker encoder (ECAPA-TDNN, `speaker_encoder.*` in
 * model.safetensors): a log mel [T][128] (tts/mel.h) in, the x-vector
 * [enc_dim] out; ../shared/spec/qwen3-tts-voices.md section 2.
 *
 *   blocks.0: TDNN (conv + ReLU) 128 -> C, k5
 *   blocks.1..n-2: SE-Res2Net: TDNN k1; Res2Net (the width split in `scale`
 *     chunks, chunk 0 passed through, chunk i>0 through TDNN(i-1) after adding
 *     the previous chunk's output for i>1); TDNN k1; squeeze-excitation
 *     (time mean -> conv -> ReLU -> conv -> sigmoid, scaling the channels);
 *     plus the block input
 *   mfa: TDNN over the blocks' outputs side by side (not blocks.0's)
 *   asp: attentive statistics pooling: per channel softmax over time of
 *     conv(tanh(TDNN([h; mean; std]))), then the weighted mean and std
 *     (sqrt of the variance clamped at 1e-12)
 *   fc: conv k1 of [mean; std] -> enc_dim. No normalisation of the result.
 *
 * Every conv is PyTorch's padding="same" with padding_mode="reflect": the
 * d(k-1) padding split floor/ceil, mirrored without the edge frame, so a
 * mel needs more frames than the widest half-padding (spk_encoder_min_frames).
 * Weights are any float dtype of the file, packed once as fp32 for the conv
 * kernels (kernels/conv.h); activations are fp32 and time-major. A loaded
 * encoder is immutable: any number of threads may run it. */
#ifndef EMBER_TTS_SPEAKER_ENCODER_H
#define EMBER_TTS_SPEAKER_ENCODER_H

#include <stdint.h>

#include "base/pool.h"
#include "ember.h"
#include "kernels/matmul.h"
#include "tts/speaker_config.h"

typedef struct spk_encoder spk_encoder;

/* Loads the speaker encoder of the Base checkpoint in `dir` (config.json +
 * model.safetensors; the talker's tensors are left alone). kernels NULL:
 * the best set for this CPU. Errors name the file, key or tensor. */
ember_status spk_encoder_load(const char *dir, const ek_kernel_set *kernels, spk_encoder **out);
void spk_encoder_free(spk_encoder *e);

const spk_config *spk_encoder_config(const spk_encoder *e);
/* The fewest mel frames the reflect paddings allow (5 with the real
 * kernel sizes and dilations: the k3 d4 convs pad 4 frames each side). */
int64_t spk_encoder_min_frames(const spk_encoder *e);

/* x-vector (enc_dim floats) of a [frames][mel_dim] log mel; pool may be
 * NULL (single-threaded). Too few frames is an error naming the minimum. */
ember_status spk_encoder_xvector(const spk_encoder *e, ember_pool *pool, const float *mel,
                                 int64_t frames, float *xvector);

#endif
