/* The Qwen3-TTS speech tokenizer's encoder: 24 kHz mono audio -> codec
 * frames of 16 codes per 1920 samples (the reference codes of in-context
 * voice cloning); ../shared/spec/qwen3-tts-voices.md section 3, the
 * `encoder.*` tensors of speech_tokenizer/model.safetensors (a Mimi model
 * without its decoder half).
 *
 *   SEANet: causal conv k7 -> per stage (strides 4, 5, 6, 8): residual unit
 *     (ELU, conv k3 to half width, ELU, conv k1 back, plus the input), ELU,
 *     conv k=2s stride s doubling the width -> ELU, conv k3 to hidden
 *   transformer: pre-norm LayerNorm layers with LayerScale on both branches,
 *     RoPE from position 0, full causal attention, exact GELU MLP, no final
 *     norm
 *   downsample: conv k4 stride 2, no bias, the edge frame repeated as padding
 *   split RVQ: both quantizers project the same latent; code 0 = nearest row
 *     of the semantic codebook, codes 1..15 = residual nearest rows of the
 *     first 15 acoustic codebooks (rows = embed_sum / max(usage, 1e-5))
 *
 * Every conv is causal: k_eff - stride zeros (downsample: the first frame)
 * on the left and enough on the right for ceil(L / stride) outputs. A
 * strided conv with k = 2s reads its input as rows of s samples side by
 * side, which makes it a two-tap causal conv for the conv kernels. Weights
 * are widened to fp32 at load; a loaded encoder is immutable. */
#ifndef EMBER_TTS_SPEECH_ENCODER_H
#define EMBER_TTS_SPEECH_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"
#include "ember.h"
#include "kernels/matmul.h"

#define SE_MAX_STAGES 8
#define SE_MAX_CODES 64

typedef struct se_config {
    int32_t n_filters, hidden, intermediate, n_layers, n_heads, n_kv_heads, head_dim;
    int32_t kernel, last_kernel, residual_kernel, compress;
    int32_t n_stages, strides[SE_MAX_STAGES]; /* upsampling_ratios reversed: 4, 5, 6, 8 */
    int32_t codebook_size, codebook_dim, vq_hidden, n_quantizers, n_semantic;
    int32_t n_codes;           /* encoder_valid_num_quantizers: codes kept per frame (16) */
    int32_t samples_per_frame; /* encode_downsample_rate (1920) */
    float norm_eps, rope_theta;
} se_config;

/* speech_tokenizer/config.json text -> config; `label` names the file. */
ember_status se_config_parse(const char *json, size_t len, const char *label, se_config *out);

typedef struct se_encoder se_encoder;

/* Loads DIR/speech_tokenizer (or DIR itself when it holds the config). */
ember_status se_encoder_load(const char *dir, const ek_kernel_set *kernels, se_encoder **out);
void se_encoder_free(se_encoder *e);
const se_config *se_encoder_config(const se_encoder *e);

/* Frames of n samples: ceil(n / samples_per_frame). */
int64_t se_encoder_frames(const se_encoder *e, size_t n);

/* codes: frames x n_codes; gaps (optional): each choice's distance to the
 * second nearest codebook row minus the nearest; latent (optional): frames
 * x hidden, the quantizer's input. n >= 1. */
ember_status se_encoder_encode(const se_encoder *e, ember_pool *pool, const float *wave, size_t n,
                               int32_t *codes, float *gaps, float *latent);

#endif
